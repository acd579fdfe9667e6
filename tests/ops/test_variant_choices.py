"""Each op's launch choice (kernel, compile options, block, grid, packed arguments) for a grid of
inputs equals the one recorded in ``variant_choices.txt`` (CPU: compiling and the GPU's resident
block count are faked, so the choice is compared, not the compiled function).

The file was recorded from the plugins' ``plan`` as it was before the variant tables (issue 22)
and is the contract that refactoring keeps: run ``python3 tests/ops/test_variant_choices.py``
to record it again only when a choice is meant to change, and say so in the commit. The grid's
resident block count is GPU-dependent, so every case is planned at two fake counts, each also
depending on the kernel (a grid rule that reads the wrong kernel's count shows). Options are
recorded without the shared constants each op now passes as ``-D`` options first (the values the
.cu files then defaulted to): the test expects them before the recorded ones.
"""

from __future__ import annotations

import functools
import importlib
import hashlib
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import pyplugins.trt as trt
from pyplugins.runtime.kernels import Kernel

RECORD = Path(__file__).with_name("variant_choices.txt")
#: Two resident-block counts per case (a small GPU and a large one).
RESIDENT = (5, 700)
DT = trt.DataType
TYPES = {"f4": DT.FLOAT, "f2": DT.HALF, "b2": DT.BF16, "i1": DT.INT8, "i8": DT.INT64,
         "i4": DT.INT32}


# -- the cases -------------------------------------------------------------------------------------

def circ_pad_cases() -> Iterator[Tuple[str, Tuple[int, ...], Tuple[int, ...], str]]:
    """(op, shape, pads, type): widths around every row-byte limit, heights, leading dims."""
    widths = (1, 7, 8, 31, 32, 62, 64, 126, 128, 254, 512, 1024, 4100)
    pads_list = ((), (1, 1), (1, 1, 1, 1), (0, 3, 2, 0), (5, 9, 4, 7), (1, 1, 0, 0, 1, 1))
    for w in widths:
        for h in (9, 700):
            for lead in ((), (3, 5)):
                shape = lead + (h, w)
                for pads in pads_list:
                    if len(pads) // 2 > len(shape):
                        continue
                    for t in ("f4", "f2", "i1", "i8"):
                        yield "circ_pad", shape, pads, t
    for shape, pads in (((0, 3, 4), (1, 1)), ((9,), (3, 0)), ((1, 2, 1, 3, 1, 2, 3, 5), (1, 2) * 8),
                        ((2, 4096, 8), (1, 1, 1, 1)), ((2, 2, 3), (0, 0, 20000, 20000)),
                        ((4, 3, 6, 1), (5, 4, 0, 0)), ((1, 64, 512, 8), (1, 1, 1, 1)),
                        ((1, 4, 512, 512), (1, 1, 1, 1)), ((2, 3000), (700, 1300))):
        for t in ("f4", "f2", "b2", "i1", "i4", "i8"):
            yield "circ_pad", shape, pads, t


POOL_WINDOWS = ((2, 2, 2, 2, 0, 0), (3, 3, 2, 2, 1, 1), (3, 3, 1, 1, 1, 1), (5, 5, 2, 2, 2, 2),
                (5, 5, 2, 2, 4, 2), (5, 5, 2, 2, 1, 2), (3, 3, 2, 2, 0, 0), (2, 2, 1, 1, 0, 0),
                (5, 5, 2, 2, 2, 1), (4, 4, 3, 3, 1, 1))


def pool_cases() -> Iterator[Tuple[str, Tuple[int, ...], Tuple[int, ...], str]]:
    """(op, shape, window + (ratio 1?,), type): every vector window, widths whole 16-byte chunks
    or not, INT8 at equal and unequal scales."""
    for window in POOL_WINDOWS:
        for w in (16, 33, 720):
            for h, nc in ((9, (2, 3)), (131, (1, 64))):
                for t in ("f4", "f2", "i1"):
                    for unit in ((1, 0) if t == "i1" else (1,)):
                        yield "pool", nc + (h, w), window + (unit,), t


def rope_cases() -> Iterator[Tuple[str, Tuple[int, ...], Tuple[int, ...], str]]:
    """(op, x shape, (rotary_dim, layout), type): head dims that are and are not whole vectors,
    rotary widths past the table, token counts of one tile and many."""
    for head_dim in (6, 8, 80, 128, 2100):
        for heads in (1, 64):
            for bs in ((2, 100), (1, 4096), (0, 5)):
                for rotary in (0, 32):
                    if rotary > head_dim:
                        continue
                    for layout in (0, 1):
                        for t in ("f4", "f2"):
                            yield "rope", bs + (heads, head_dim), (rotary, layout), t


def rmsnorm_cases() -> Iterator[Tuple[str, Tuple[int, ...], Tuple[int, ...], str]]:
    for d in (1, 6, 64, 1000, 4096, 4097, 8192, 65536):
        for rows in ((0,), (37,), (8192,)):
            for t in ("f4", "f2"):
                yield "rmsnorm", rows + (d,), (), t


def all_cases() -> List[Tuple[str, Tuple[int, ...], Tuple[int, ...], str]]:
    return [*circ_pad_cases(), *pool_cases(), *rope_cases(), *rmsnorm_cases()]


def case_key(case: Tuple[str, Tuple[int, ...], Tuple[int, ...], str]) -> str:
    op, shape, extra, t = case
    return (f"{op} {'x'.join(map(str, shape)) or '-'} {','.join(map(str, extra)) or '-'} {t}")


# -- planning with compiling and the GPU faked -----------------------------------------------------

class _Fakes:
    """Kernel.function returns a distinct int per (expression, options); resident_blocks a count
    that depends on the kernel and the block."""

    def __init__(self, resident: int) -> None:
        self.resident = resident
        self.tokens: Dict[Tuple[str, Tuple[str, ...]], int] = {}

    def function(self, kernel: Kernel, ctype: str, device: Any = None) -> int:
        key = (kernel.expression_for(ctype), tuple(kernel.options))
        return self.tokens.setdefault(key, 0x1000 + 16 * len(self.tokens))

    def resident_blocks(self, fn: Any, block: int, shared_mem: int = 0, *, device: Any = None
                        ) -> int:
        return self.resident * (1 + (int(fn) >> 4) % 3) * 256 // int(block)

    def key_of(self, fn: int) -> Tuple[str, Tuple[str, ...]]:
        return next(k for k, v in self.tokens.items() if v == fn)


def _plugin(op: str, extra: Tuple[int, ...]) -> Any:
    if op == "circ_pad":
        from pyplugins.ops.circ_pad import CircPad
        return CircPad(pads=list(extra))
    if op == "pool":
        from pyplugins.ops.pool import Pool
        kh, kw, sh, sw, ph, pw, unit = extra
        p = Pool(mode="avg", kernel=[kh, kw], stride=[sh, sw], padding=[ph, pw])
        p.scales = (0.5, 0.5) if unit else (0.5, 0.25)
        return p
    if op == "rope":
        from pyplugins.ops.rope import RoPE
        return RoPE(rotary_dim=extra[0], layout=("neox", "gptj")[extra[1]])
    from pyplugins.ops.rmsnorm import RMSNorm
    return RMSNorm()


def _pool_fits(shape: Sequence[int], window: Sequence[int]) -> bool:
    kh, kw, sh, sw, ph, pw = window[:6]
    return (shape[2] + 2 * ph - kh) // sh + 1 > 0 and (shape[3] + 2 * pw - kw) // sw + 1 > 0


def plan_choice(case: Tuple[str, Tuple[int, ...], Tuple[int, ...], str], fakes: _Fakes,
                **plan_kwargs: Any) -> Tuple[str, Tuple[str, ...], int, int, int, str]:
    """(kernel expression, options, block, grid, shared memory, digest of the packed
    arguments)."""
    op, shape, extra, t = case
    plugin = _plugin(op, extra)
    desc = trt.PluginTensorDesc(list(shape), TYPES[t], trt.TensorFormat.LINEAR)
    inputs = [desc]
    if op == "rmsnorm":
        inputs.append(trt.PluginTensorDesc([shape[-1]], TYPES[t], trt.TensorFormat.LINEAR))
    launch = plugin.plan(inputs, [], 0, **plan_kwargs)
    args = b"".join(launch.param_bytes(i) for i in range(len(launch.layout)))
    expression, options = fakes.key_of(launch.function_ptr)
    return (expression, options, launch.block[0], launch.grid[0], launch.shared_mem,
            hashlib.sha256(args).hexdigest()[:8])


def _patched(monkeypatch: Any, fakes: _Fakes) -> None:
    import pyplugins.ops  # noqa: F401 - every op module imported, so the scan below sees its kernels
    def function(kernel: Kernel, ctype: str, device: Any = None) -> int:
        return fakes.function(kernel, ctype, device)

    monkeypatch.setattr(Kernel, "function", function)
    # Kernel objects that hold their own "function" (a per-instance patch elsewhere) are
    # patched too, in their __dict__: setitem's undo deletes the key it added, where setattr's
    # would leave behind the bound method it read, which is this class-level fake (it leaked
    # fake handles into later GPU tests: a segfault in resident_blocks).
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("pyplugins.ops."):
            continue
        for value in list(vars(module).values()):
            held = list(vars(value).values()) if isinstance(value, type) else (
                [getattr(r, "kernel", None) for r in value] if isinstance(value, tuple) else [])
            for kernel in held:
                if isinstance(kernel, Kernel):
                    monkeypatch.setitem(vars(kernel), "function", functools.partial(function, kernel))
    for name in ("pyplugins.ops.circ_pad", "pyplugins.ops.pool", "pyplugins.ops.rope",
                 "pyplugins.ops.rmsnorm", "pyplugins.runtime.tactics"):
        module = importlib.import_module(name)  # imported now: the file alone imports none yet
        if hasattr(module, "resident_blocks"):
            monkeypatch.setattr(module, "resident_blocks", fakes.resident_blocks)


def choices(monkeypatch: Any, cases: Sequence[Any]) -> Dict[str, str]:
    """``{case key: recorded line}`` for ``cases`` at both resident counts."""
    out: Dict[str, str] = {}
    per_r = []
    for resident in RESIDENT:
        fakes = _Fakes(resident)
        _patched(monkeypatch, fakes)
        per_r.append([plan_choice(c, fakes) for c in cases])
    for i, case in enumerate(cases):
        (name, options, block, g1, shared, digest), rest = per_r[0][i], per_r[1][i]
        assert rest[:3] == (name, options, block) and rest[4:] == (shared, digest), case
        out[case_key(case)] = (f"{name} ; {' '.join(options) or '-'} ; b{block} g{g1},{rest[3]} "
                               f"s{shared} {digest}")
    return out


def recorded() -> Dict[str, str]:
    lines = RECORD.read_text().splitlines()
    return dict(line.split(" | ") for line in lines if line and not line.startswith("#"))


def runnable_cases() -> List[Any]:
    return [c for c in all_cases() if c[0] != "pool" or _pool_fits(c[1], c[2])]


# -- the test --------------------------------------------------------------------------------------

def _shared_options(op: str) -> Tuple[str, ...]:
    """The ``-D`` options of the constants ``op`` shares with its .cu (none recorded): its
    module's ``DEFINES``."""
    import importlib

    from pyplugins.runtime.tactics import define_options

    return define_options(getattr(importlib.import_module(f"pyplugins.ops.{op}"), "DEFINES", {}))


def with_shared(line: str, op: str) -> str:
    """The recorded ``line`` as the op now launches it: its shared options first."""
    name, options, rest = line.split(" ; ")
    both = list(_shared_options(op)) + ([] if options == "-" else options.split(" "))
    return " ; ".join([name, " ".join(both) or "-", rest])


def without_shared(line: str, op: str) -> str:
    """A choice as the file records it: ``line`` without its op's shared options (the inverse of
    :func:`with_shared`)."""
    name, options, rest = line.split(" ; ")
    shared = _shared_options(op)
    given = options.split(" ")
    assert tuple(given[:len(shared)]) == shared, (line, shared)
    return " ; ".join([name, " ".join(given[len(shared):]) or "-", rest])


def test_every_op_chooses_as_recorded(monkeypatch):
    cases = runnable_cases()
    want = recorded()
    got = choices(monkeypatch, cases)
    assert set(got) == set(want), "the case grid changed: record the file again"
    wrong = [f"{k}: want {want[k]!r}, got {v!r}" for k, v in got.items()
             if v != with_shared(want[k], k.split(" ", 1)[0])]
    assert not wrong, f"{len(wrong)} of {len(got)} choices changed, e.g.\n" + "\n".join(wrong[:8])


def test_the_record_covers_every_kernel_the_plans_take():
    kernels = {line.split("<", 1)[0] for line in recorded().values()}
    assert {"circ_pad", "circ_pad_narrow", "circ_pad_flat", "circ_pad_warp",
            "circ_pad_warp_narrow", "pool2d", "pool2d_wide", "pool2d_i8", "pool2d_cols",
            "rope", "rope_table", "rmsnorm"} <= kernels


def _record() -> None:
    mp = pytest.MonkeyPatch()
    try:
        got = choices(mp, runnable_cases())
    finally:
        mp.undo()
    head = ("# case (op shape extra type) | kernel expression ; options ; block, grid at "
            f"resident {RESIDENT[0]},{RESIDENT[1]}, shared bytes, sha256[:8] of the arguments\n")
    RECORD.write_text(head + "".join(f"{k} | {without_shared(v, k.split(' ', 1)[0])}\n"
                                     for k, v in got.items()))
    print(f"recorded {len(got)} choices in {RECORD}")


if __name__ == "__main__":
    _record()


def test_the_patches_leave_no_fake_function_on_any_kernel_after_their_undo():
    """After the class-level and per-kernel patches are undone, every Kernel the ops hold
    answers with the real Kernel.function again (a per-kernel setattr's undo used to leave the
    class-level fake bound on each kernel, and later GPU tests launched fake handles)."""
    import pyplugins.ops  # noqa: F401 - every op module, so each holds its kernels

    def held_kernels() -> List[Kernel]:
        found = []
        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith("pyplugins.ops."):
                for value in list(vars(module).values()):
                    held = list(vars(value).values()) if isinstance(value, type) else (
                        [getattr(r, "kernel", None) for r in value]
                        if isinstance(value, tuple) else [])
                    found += [k for k in held if isinstance(k, Kernel)]
        return found

    kernels = held_kernels()
    assert kernels
    some = kernels[0]
    with pytest.MonkeyPatch.context() as mp:  # a kernel another test patched on its own
        mp.setitem(vars(some), "function", lambda ctype, device=None: 1)
        with pytest.MonkeyPatch.context() as inner:
            _patched(inner, _Fakes(4))
            assert isinstance(some.function("float"), int)
        assert some.function("float") == 1
    leftovers = [k.expression for k in held_kernels() if "function" in vars(k)]
    assert leftovers == []
