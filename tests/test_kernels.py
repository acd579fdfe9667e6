"""Tests of pyplugins.runtime.kernels and pyplugins.runtime.launch, and of the circ_pad and leaky_relu kernels.

CPU tests cover source discovery, ``@instantiate`` parsing, the compile cache's keys, error
messages, Launch's parameter packing and validation, and a line-by-line emulation of circ_pad's
index arithmetic. GPU tests (marked ``gpu``) run both kernels against NumPy through Launch on a
non-default stream, inside a CUDA graph too.

The ``*_plan`` helpers below compute each kernel's launch configuration from its launch contract
(``kernels_cu/*.cu`` header comments); a plugin's ``configure_plugin`` does the same.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pyplugins.runtime import kernels
from pyplugins.errors import KernelCompileError, LaunchError, MissingDependencyError
from pyplugins.runtime.kernels import (Kernel, instantiations, kernel_sources, kernels_dir,
                                       source_digest)
from pyplugins.runtime.launch import MAX_GRID, POINTER, ByValue, Launch
from pyplugins.ops.circ_pad import PARAMS_DTYPE, launch_plan, pad_widths
from pyplugins.ops.circ_pad import VARIANTS
from pyplugins.runtime.tactics import find

REPO = Path(__file__).resolve().parent.parent
BLOCK = 256


def _cu_define(source: str, name: str) -> int:
    """The value a ``#define NAME value`` line of ``kernels_cu/<source>`` gives."""
    text = (REPO / "kernels_cu" / source).read_text()
    return int(re.search(rf"^#define {name} (\d+)", text, flags=re.M).group(1))


# circ_pad.cu's default CIRC_PAD_STAGE_BYTES, read from the source the kernel compiles from.
STAGE_BYTES = _cu_define("circ_pad.cu", "CIRC_PAD_STAGE_BYTES")

# ---------------------------------------------------------------------------------------------
# Launch plans, straight from the launch contracts

def circ_pad_plan(in_shape: tuple[int, ...], pads: list[int], itemsize: int, *,
                  max_blocks: int, block: int = BLOCK) -> tuple[tuple[int, ...], np.void, int]:
    """(output shape, CircPadParams scalar, grid) for circ_pad<T>: the op's own launch_plan
    (one home for the kernel's parameters) and a grid capped at ``max_blocks``."""
    plan = launch_plan(in_shape, pads, itemsize)
    return plan.out_shape, plan.params, min(-(-plan.threads // block), max_blocks)


def leaky_relu_grid(n: int, itemsize: int, *, max_blocks: int = MAX_GRID[0],
                    block: int = BLOCK) -> int:
    """Grid for leaky_relu<T> per its launch contract (0 for an empty tensor): one 16-byte
    vector per thread; a smaller ``max_blocks`` makes the kernel loop grid-stride."""
    per_block = (16 // itemsize) * block
    return min(-(-n // per_block), max_blocks)


# (input shape, pads): ranks 1..5, odd sizes, zero pads, pads larger than the dim, rows shorter
# than a warp, rows longer than one strip, pads on some dims only.
CIRC_CASES = [
    ((7,), [2, 3]),
    ((1,), [4, 5]),
    ((3,), [10, 7]),
    ((5,), [0, 0]),
    ((2, 3), [1, 1, 2, 0]),
    ((4, 5), [7, 9]),
    ((3, 1, 6), [5, 6, 0, 0, 3, 2]),
    ((2, 3, 4, 5), [1, 1, 1, 1]),
    ((2, 3, 4, 5), [6, 0, 0, 7, 9, 1, 2, 2]),
    ((2, 1, 3, 2, 3), [1, 2, 3, 4, 5, 6, 1, 0, 2, 2]),
    ((3, 37), [1, 30]),
    ((2, 3, 1), [0, 0, 2, 2]),
]


def _pads_ok(in_shape, pads) -> bool:
    return len(pads) <= 2 * len(in_shape)


# ---------------------------------------------------------------------------------------------
# CPU: sources, instantiations, cache


def test_kernels_dir_holds_the_shipped_sources():
    names = {p.name for p in kernel_sources()}
    assert kernels_dir() == REPO / "kernels_cu"
    assert {"circ_pad.cu", "leaky_relu.cu"} <= names
    assert (kernels_dir() / "common.cuh").is_file()


def test_kernels_dir_found_after_install_layout(tmp_path):
    """Without a checkout beside the package, kernels_dir() finds pyplugins.kernels_cu."""
    pkg = tmp_path / "site" / "pyplugins"
    (pkg / "kernels_cu").mkdir(parents=True)
    (pkg / "runtime").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "runtime" / "__init__.py").write_text("")
    for name in ("errors.py", "runtime/kernels.py"):
        (pkg / name).write_bytes((REPO / "pyplugins" / name).read_bytes())
    (pkg / "kernels_cu" / "__init__.py").write_text("")
    (pkg / "kernels_cu" / "x.cu").write_text("// @instantiate x<float>\n")
    code = ("import pyplugins.runtime.kernels as k; print(k.kernels_dir()); "
            "print(k.instantiations('x.cu'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, env={"PYTHONPATH": str(tmp_path / "site")}, check=True)
    lines = out.stdout.splitlines()
    assert Path(lines[0]) == (pkg / "kernels_cu").resolve() or Path(lines[0]) == pkg / "kernels_cu"
    assert lines[1] == "['x<float>']"


def test_instantiations_of_shipped_files():
    assert instantiations("circ_pad.cu")[:2] == ["circ_pad<float>", "circ_pad<__half>"]
    assert instantiations("leaky_relu.cu") == [
        "leaky_relu<float>", "leaky_relu<__half>", "leaky_relu<__nv_bfloat16>",
        "leaky_relu_aot<float>", "leaky_relu_aot<__half>"]


def test_instantiations_parsing(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(textwrap.dedent("""\
        // k.cu -- something
        //   @instantiate  k<float, 4>
        // @instantiate k<__half>   
        // @instantiate k<float, 4>
        // instantiate k<double> (not a marker)
        int x; // @instantiate trailing<int> is not at the start of a comment line
        """))  # noqa: W291 - the trailing spaces after k<__half> are part of the case
    assert instantiations(src) == ["k<float, 4>", "k<__half>"]
    (tmp_path / "none.cu").write_text("__global__ void f() {}\n")
    assert instantiations(tmp_path / "none.cu") == []


def test_kernel_expression_and_supports():
    k = Kernel("circ_pad.cu", "circ_pad<{T}>")
    assert k.expression_for("signed char") == "circ_pad<signed char>"
    assert k.supports("float") and k.supports("__half") and not k.supports("double")
    assert k.compile_options()[:2] == ("-std=c++17", f"-I{kernels_dir()}")
    assert "circ_pad.cu" in repr(k)


@pytest.mark.parametrize("bad", [
    dict(source="", expression="k<{T}>"),
    dict(source=3, expression="k<{T}>"),
    dict(source="k.cu", expression=""),
    dict(source="k.cu", expression="k<{T}>", options="-O3"),
    dict(source="k.cu", expression="k<{T}>", options=(3,)),
])
def test_kernel_rejects_bad_definitions(bad):
    source, expression = bad.pop("source"), bad.pop("expression")
    with pytest.raises(TypeError):
        Kernel(source, expression, **bad)


def test_missing_source_names_file_kernel_and_options():
    k = Kernel("no_such_op.cu", "no_such_op<{T}>", options=("-DFOO=1",))
    with pytest.raises(KernelCompileError) as info:
        k.function("float", device=0)
    msg = str(info.value)
    assert "no_such_op.cu" in msg and "no_such_op<float>" in msg and "-DFOO=1" in msg
    assert "circ_pad.cu" in msg  # lists what exists
    assert info.value.source == "no_such_op.cu" and info.value.kernel == "no_such_op<float>"


def test_missing_header_is_a_compile_error(tmp_path):
    (tmp_path / "a.cu").write_text('#include "nope.cuh"\n// @instantiate a<float>\n')
    with pytest.raises(KernelCompileError, match="nope.cuh"):
        source_digest(tmp_path / "a.cu")


def test_digest_covers_included_headers(tmp_path):
    (tmp_path / "h.cuh").write_text("#define X 1\n")
    (tmp_path / "a.cu").write_text('#include "h.cuh"\n#include "common.cuh"\n')
    before = source_digest(tmp_path / "a.cu")
    assert source_digest(tmp_path / "a.cu") == before
    (tmp_path / "h.cuh").write_text("#define X 2\n")
    assert source_digest(tmp_path / "a.cu") != before


def test_nvrtc_code_keeps_line_numbers_and_carries_digest():
    code = kernels.nvrtc_code("k.cu", "line1\nline2", "abc123")
    lines = code.splitlines()
    assert lines[0] == '#line 1 "k.cu"' and lines[1:3] == ["line1", "line2"]
    assert "abc123" in lines[-1] and lines[-1].startswith("//")


class _FakeRuntime:
    device = 0

    def getDevice(self):  # noqa: N802 - CuPy's name
        return self.device


class _FakeCupy:
    def __init__(self):
        self.cuda = type("cuda", (), {"runtime": _FakeRuntime()})()


@pytest.fixture
def fake_compile(monkeypatch):
    """Replace CuPy by a stand-in that records what would be compiled."""
    calls = []
    fake = _FakeCupy()

    def compile_(cupy, path, text, digest, expr, options, device):
        calls.append((path.name, digest, expr, options, device))
        return object()

    kernels.clear_cache()
    monkeypatch.setattr(kernels, "_import_cupy", lambda: fake)
    monkeypatch.setattr(kernels, "_compile", compile_)
    yield calls, fake
    kernels.clear_cache()


def test_cache_key_is_device_digest_expression_options(fake_compile, tmp_path):
    calls, fake = fake_compile
    k = Kernel("leaky_relu.cu", "leaky_relu<{T}>")
    first = k.function("float")
    assert k.function("float") is first
    assert Kernel("leaky_relu.cu", "leaky_relu<{T}>").function("float", device=0) is first
    assert len(calls) == 1 and calls[0][2] == "leaky_relu<float>" and calls[0][4] == 0
    k.function("__half")
    k.function("float", device=1)
    fake.cuda.runtime.device = 1
    assert k.function("float") is k.function("float", device=1)
    Kernel("leaky_relu.cu", "leaky_relu<{T}>", options=("-DX",)).function("float")
    assert len(calls) == 4
    assert kernels.cached_count() == 4 and kernels.cached_count(1) == 2
    fake.cuda.runtime.device = 0

    # Editing an included header changes the digest, hence compiles again.
    (tmp_path / "h.cuh").write_text("// v1\n")
    (tmp_path / "a.cu").write_text('#include "h.cuh"\n')
    a = Kernel(str(tmp_path / "a.cu"), "a<{T}>")
    a.function("float")
    a.function("float")
    (tmp_path / "h.cuh").write_text("// v2\n")
    a.function("float")
    assert len(calls) == 6 and calls[4][1] != calls[5][1]
    kernels.clear_cache(1)
    assert kernels.cached_count(1) == 0 and kernels.cached_count(0) == 4


def test_import_does_not_import_cupy():
    code = ("import sys, pyplugins.runtime.kernels, pyplugins.runtime.launch; "
            "sys.exit(1 if any(m == 'cupy' or m.startswith(('cupy.', 'cupy_backends')) "
            "for m in sys.modules) else 0)")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_missing_cupy_is_actionable(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'cupy-cuda13x>=13' .*pip install '\.\[cuda\]'"):
        Kernel("leaky_relu.cu", "leaky_relu<{T}>").function("float")


# ---------------------------------------------------------------------------------------------
# CPU: Launch packing and validation (an empty grid needs neither CuPy nor a GPU)


def _empty_launch(args, **kw):
    return Launch(0x1000, grid=0, block=BLOCK, args=args, device=0, **kw)


def test_launch_packs_pointers_scalars_and_structs():
    dt = np.dtype([("a", "<i4"), ("b", "<i8"), ("c", "<f4")], align=True)
    st = np.zeros((), dt)[()]
    st["a"], st["b"], st["c"] = -3, 1 << 40, 2.5
    raw = ByValue(bytes(range(32)), align=16)
    launch = _empty_launch((POINTER, np.float32(0.25), POINTER, st, np.int8(-2), raw,
                            np.int64(-7), np.float16(1.5)))
    assert launch.pointer_count == 2
    expected = [b"\0" * 8, np.float32(0.25).tobytes(), b"\0" * 8, st.tobytes(),
                np.int8(-2).tobytes(), bytes(range(32)), np.int64(-7).tobytes(),
                np.float16(1.5).tobytes()]
    assert [launch.param_bytes(i) for i in range(8)] == expected
    base = launch._storage.ctypes.data
    aligns = [8, 4, 8, 8, 1, 16, 8, 2]
    for (offset, _), align in zip(launch.layout, aligns):
        assert (base + offset) % align == 0
    addresses = [int(a) for a in launch._params]
    assert addresses == [base + off for off, _ in launch.layout]
    launch(0, 0xAAAA, 0xBBBB)  # empty grid: fills the slots, launches nothing
    assert launch.param_bytes(0) == (0xAAAA).to_bytes(8, "little")
    assert launch.param_bytes(2) == (0xBBBB).to_bytes(8, "little")
    assert launch.skips


def test_launch_without_pointers():
    launch = _empty_launch((np.int32(1),))
    launch(0)
    assert launch.pointer_count == 0


@pytest.mark.parametrize("pointers", [(), (1,), (1, 2, 3), (1.5, 2), ("a", 2)])
def test_launch_rejects_wrong_pointers(pointers):
    launch = _empty_launch((POINTER, POINTER))
    with pytest.raises(LaunchError, match="2 device pointer"):
        launch(0, *pointers)


@pytest.mark.parametrize("arg, match", [
    (3, "ambiguous"), (0.5, "ambiguous"), (True, "ambiguous"), (b"abcd", "by value"),
    (np.zeros((), np.dtype([("a", "u1"), ("b", "<i8")]))[()], "align=True"),
    (np.complex64(1), "by value"), ("x", "by value"),
])
def test_launch_rejects_ambiguous_or_unlaid_arguments(arg, match):
    with pytest.raises(LaunchError, match=match):
        _empty_launch((POINTER, arg))


def test_launch_accepts_packed_dtype_with_c_layout():
    dt = np.dtype([("a", "<i8"), ("b", "<i8", 3)])  # no padding needed: same as aligned
    launch = _empty_launch((np.zeros((), dt)[()],))
    assert launch.layout[0] == (0, 32)
    assert launch.param_bytes(0) == bytes(32)


@pytest.mark.parametrize("data, align", [(b"", 8), (b"ab", 3), (b"ab", 0), ("ab", 2)])
def test_by_value_validation(data, align):
    with pytest.raises(LaunchError):
        ByValue(data, align)


@pytest.mark.parametrize("grid, block, match", [
    ((MAX_GRID[0] + 1,), 256, "exceeds"), ((1, 65536), 256, "exceeds"),
    ((1, 1, 65536), 256, "exceeds"), (1, 2048, "at most"), (1, (32, 32, 2), "at most"),
    (1, (1, 1, 65), "at most"), (1, 0, "at least 1"), (-1, 256, "negative"),
    ((1, 2, 3, 4), 256, "1 to 3"), (1.5, 256, "1 to 3"),
])
def test_launch_rejects_bad_dims(grid, block, match):
    with pytest.raises(LaunchError, match=match):
        Launch(0x1000, grid=grid, block=block, args=(), device=0)


def test_launch_error_names_kernel_config_and_cause():
    launch = _empty_launch((POINTER,), name="my_kernel")

    def refuse(stream, params, extra):
        raise RuntimeError("CUDA_ERROR_INVALID_VALUE: invalid argument")

    launch._go = refuse
    with pytest.raises(LaunchError) as info:
        launch(0x77, 1)
    msg = str(info.value)
    assert "my_kernel" in msg and "(0, 1, 1)" in msg and "(256, 1, 1)" in msg
    assert "CUDA_ERROR_INVALID_VALUE" in msg and "119" in msg


def test_launch_rejects_unknown_function_type():
    with pytest.raises(LaunchError, match="RawKernel"):
        Launch("circ_pad", grid=0, block=1, device=0)


def _recording_launch():
    """A Launch of a non-empty grid (a bare handle: no GPU needed to build it) whose driver call
    is replaced by a recorder of what cuLaunchKernel would read: stream and pointer slots."""
    launch = Launch(0x1000, grid=4, block=BLOCK, args=(POINTER, np.int32(3), POINTER), device=0)
    seen = []

    def record(stream, params, extra):
        assert params == launch._params.ctypes.data and extra == 0
        seen.append((stream, *(int.from_bytes(launch.param_bytes(i), "little") for i in (0, 2))))

    launch._go = record
    return launch, seen


def test_launch_reuses_its_buffer_only_while_stream_and_pointers_repeat():
    launch, seen = _recording_launch()
    calls = [(7, 0x10, 0x20), (7, 0x10, 0x20), (7, 0x30, 0x20), (7, 0x30, 0x40), (9, 0x30, 0x40),
             (7, 0x10, 0x20), (np.int64(7), np.uint64(0x10), 0x20)]
    bound = []
    for call in calls:
        launch(*call)
        bound.append(launch._bound)
    assert seen == [tuple(int(v) for v in c) for c in calls]  # every launch read its own pointers
    assert bound[1] is bound[0] and bound[6] is bound[5]  # a repeat is the prebound call alone
    assert len({id(b) for b in bound[:6]}) == 5  # any change of stream or pointer rebinds
    assert launch.param_bytes(1) == np.int32(3).tobytes()  # by-value bytes never rewritten


def test_launch_rewrites_after_a_refused_call():
    launch, seen = _recording_launch()
    launch(7, 0x10, 0x20)
    with pytest.raises(LaunchError, match="2 device pointer"):
        launch(7, 0x99, "x")  # writes slot 0, then fails on slot 1
    with pytest.raises(LaunchError, match="2 device pointer"):
        launch(7, np.array([1, 2]), 0x20)  # an array does not compare as an int: refused too
    launch(7, 0x10, 0x20)  # same as the last good call, but the buffer was touched since
    assert seen == [(7, 0x10, 0x20), (7, 0x10, 0x20)]


def test_launch_enqueue_takes_the_lists_and_reuses_the_buffer_while_they_repeat():
    """Launch.enqueue(descs, descs, inputs, outputs, workspace, stream) is launch(stream,
    *inputs, *outputs): the same bytes reach the driver, and only a repeat of stream and both
    lists skips the writing."""
    launch, seen = _recording_launch()
    ins, outs = [0x10], [0x20]
    calls = [(7, ins, outs), (7, [0x10], [0x20]), (7, [0x30], [0x20]), (7, [0x30], [0x40]),
             (9, [0x30], [0x40]), (7, [0x10], [0x20])]
    bound = []
    for stream, i, o in calls:
        launch.enqueue([], [], i, o, 0, stream)
        bound.append(launch._bound)
    assert seen == [(s, *i, *o) for s, i, o in calls]
    assert bound[1] is bound[0]  # equal lists, not the same objects: still a repeat
    assert len({id(b) for b in bound[1:]}) == 5  # any change of stream or pointer rebinds
    ins[0] = 0x50  # a caller refilling its own list in place is not a repeat
    launch.enqueue([], [], ins, [0x20], 0, 7)
    assert seen[-1] == (7, 0x50, 0x20)


def test_launch_enqueue_and_call_keep_one_cache():
    launch, seen = _recording_launch()
    launch.enqueue([], [], [0x10], [0x20], 0, 7)
    launch(7, 0x30, 0x40)  # writes the buffer: enqueue's lists no longer describe it
    launch.enqueue([], [], [0x10], [0x20], 0, 7)
    launch(7, 0x10, 0x20)  # enqueue wrote these: the prebound call alone
    assert seen == [(7, 0x10, 0x20), (7, 0x30, 0x40), (7, 0x10, 0x20), (7, 0x10, 0x20)]
    with pytest.raises(LaunchError, match="2 device pointer"):
        launch.enqueue([], [], [0x99], ["x"], 0, 7)  # writes slot 0, then fails
    with pytest.raises(LaunchError, match="2 device pointer"):
        launch.enqueue([], [], [np.array([1, 2])], [0x20], 0, 7)  # not an int: refused
    launch.enqueue([], [], [0x10], [0x20], 0, 7)  # as the last good call, but touched since
    assert seen[-1] == (7, 0x10, 0x20) and launch.param_bytes(0) == (0x10).to_bytes(8, "little")


def test_launch_enqueue_names_its_label_and_kernel_when_the_driver_refuses():
    launch = _empty_launch((POINTER, POINTER), name="my_kernel")

    def refuse(stream, params, extra):
        raise RuntimeError("CUDA_ERROR_INVALID_HANDLE")

    launch._go = refuse
    launch.label = "plugin 'Op' (layer 'l1')"
    with pytest.raises(LaunchError, match="^plugin 'Op' .layer 'l1'.: cuLaunchKernel refused "
                                          "kernel 'my_kernel'.*CUDA_ERROR_INVALID_HANDLE"):
        launch.enqueue([], [], [1], [2], 0, 0x77)
    with pytest.raises(LaunchError, match="^plugin 'Op' .layer 'l1'.: Launch of kernel"):
        launch.enqueue([], [], [1], [], 0, 0x77)


# ---------------------------------------------------------------------------------------------
# CPU: what the GPU tests of circ_pad rely on, read from the kernel's source


# CIRC_PAD_STAGE_BYTES values: the default (short rows staged), tiny (tiles of few rows, and
# longer rows on the strips path), 0 (the strips path only).
STAGINGS = [STAGE_BYTES, 256, 0]


def test_circ_pad_stage_bytes_comes_from_the_kernel_source():
    assert STAGE_BYTES > 256 and STAGE_BYTES % 16 == 0
    assert _cu_define("circ_pad.cu", "CIRC_PAD_TILE_OUT") > 0


def test_circ_pad_cases_take_both_paths():
    """The GPU cases reach the staged path (rows that fit CIRC_PAD_STAGE_BYTES) and, with
    stage_bytes 256, the strips path too, as the .cu header's path rule says."""
    def staged(shape, pads, itemsize, stage_bytes):
        out_shape, _, _ = circ_pad_plan(shape, pads, itemsize, max_blocks=1)
        return (stage_bytes > 0 and shape[-1] * itemsize + 47 <= stage_bytes
                and out_shape[-1] * itemsize <= stage_bytes)
    paths = {staged(shape, pads, 4, sb) for shape, pads in CIRC_CASES for sb in STAGINGS}
    assert paths == {True, False}


def test_circ_pad_params_dtype_matches_the_c_struct():
    assert PARAMS_DTYPE.itemsize == 288 and PARAMS_DTYPE.alignment == 8
    text = (REPO / "kernels_cu" / "circ_pad.cu").read_text()
    struct = re.search(r"struct CircPadParams \{(.*?)\};", text, flags=re.S).group(1)
    fields = re.findall(r"(?:pp::Dims8|long long)\s+(\w+);", struct)
    assert fields == [n for n in PARAMS_DTYPE.names], fields


# ---------------------------------------------------------------------------------------------
# GPU


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


@pytest.fixture
def stream(cp):
    s = cp.cuda.Stream(non_blocking=True)
    yield s
    s.synchronize()


CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float16): "__half",
          np.dtype(np.int8): "signed char", np.dtype(np.int64): "long long"}
CIRC_PAD = find(VARIANTS, "circ_pad").kernel  # with the -D options circ_pad.cu needs


def _circ_pad_kernel(stage_bytes: int) -> Kernel:
    """circ_pad.cu compiled with CIRC_PAD_STAGE_BYTES = ``stage_bytes`` (the default: as is)."""
    if stage_bytes == STAGE_BYTES:
        return CIRC_PAD
    return Kernel("circ_pad.cu", "circ_pad<{T}>",
                  options=CIRC_PAD.options + (f"-DCIRC_PAD_STAGE_BYTES={stage_bytes}",))
LEAKY = Kernel("leaky_relu.cu", "leaky_relu<{T}>")


def _random(cp, shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        host = rng.standard_normal(shape).astype(dtype)
    else:
        host = rng.integers(0, 100, size=shape).astype(dtype)
    return host, cp.asarray(host)


def _poisoned(cp, shape, dtype):
    dtype = np.dtype(dtype)
    return cp.full(shape, np.nan if dtype.kind == "f" else -1, dtype=dtype)


def _ready(cp):
    """Finish the set-up work queued on the legacy default stream (the test streams are
    non-blocking, so they would not wait for it)."""
    cp.cuda.Device().synchronize()


def _circ_pad_launch(cp, x, pads, max_blocks=None, stage_bytes=STAGE_BYTES):
    from pyplugins.runtime.device import resident_blocks

    fn = _circ_pad_kernel(stage_bytes).function(CTYPES[x.dtype])
    cap = 4 * resident_blocks(fn, BLOCK) if max_blocks is None else max_blocks
    out_shape, params, grid = circ_pad_plan(x.shape, pads, x.itemsize, max_blocks=cap)
    y = _poisoned(cp, out_shape, x.dtype)
    return Launch(fn, grid, BLOCK, (POINTER, POINTER, params)), y


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("in_shape, pads", CIRC_CASES + [
    ((0, 3), [1, 1]),                        # empty input and output: no launch
    ((2, 3, 700, 9), [3, 4, 0, 0, 1, 2]),
    ((2, 4099), [5000, 3]),                  # pads larger than the row, several strips
    ((4, 3, 65, 130), [1, 1, 1, 1]),
    ((3, 5, 126, 126), [1, 2, 1, 1]),        # rows of 129: vectors straddle rows
    ((2000, 6), [1, 1]),                     # rows of 8, many tiles
    ((5, 4100), [3, 9]),                     # staged for 2-byte elements, strips for 4
])
@pytest.mark.parametrize("max_blocks", [None, 3])
@pytest.mark.parametrize("stage_bytes", STAGINGS)
def test_circ_pad_matches_numpy(cp, stream, dtype, in_shape, pads, max_blocks, stage_bytes):
    rng = np.random.default_rng()
    host, x = _random(cp, in_shape, dtype, rng)
    launch, y = _circ_pad_launch(cp, x, pads, max_blocks, stage_bytes)
    _ready(cp)
    launch(stream.ptr, x.data.ptr, y.data.ptr)
    stream.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(y),
                                  np.pad(host, pad_widths(host.ndim, pads), mode="wrap"))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.int8, np.int64])
@pytest.mark.parametrize("stage_bytes", STAGINGS)
def test_circ_pad_other_element_sizes(cp, stream, dtype, stage_bytes):
    rng = np.random.default_rng()
    host, x = _random(cp, (3, 5, 67), dtype, rng)
    pads = [70, 2, 1, 9]
    launch, y = _circ_pad_launch(cp, x, pads, stage_bytes=stage_bytes)
    _ready(cp)
    launch(stream.ptr, x.data.ptr, y.data.ptr)
    stream.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(y), np.pad(host, pad_widths(3, pads), mode="wrap"))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.float32])
@pytest.mark.parametrize("x_off, y_off", [(1, 0), (0, 3), (5, 7), (2, 2)])
@pytest.mark.parametrize("stage_bytes", STAGINGS)
def test_circ_pad_unaligned_pointers(cp, stream, dtype, x_off, y_off, stage_bytes):
    rng = np.random.default_rng()
    host, _ = _random(cp, (4, 5, 37), dtype, rng)
    pads = [3, 40, 1, 2]
    expected = np.pad(host, pad_widths(3, pads), mode="wrap").reshape(-1)
    xbuf = cp.asarray(np.concatenate([host.reshape(-1)[:x_off], host.reshape(-1)]))
    ybuf = _poisoned(cp, expected.size + y_off + 9, dtype)
    fn = _circ_pad_kernel(stage_bytes).function(CTYPES[np.dtype(dtype)])
    _, params, grid = circ_pad_plan(host.shape, pads, host.itemsize, max_blocks=5)
    launch = Launch(fn, grid, BLOCK, (POINTER, POINTER, params))
    _ready(cp)
    launch(stream.ptr, xbuf.data.ptr + x_off * host.itemsize,
           ybuf.data.ptr + y_off * host.itemsize)
    stream.synchronize()
    got = cp.asnumpy(ybuf)
    np.testing.assert_array_equal(got[y_off:y_off + expected.size], expected)
    untouched = np.concatenate([got[:y_off], got[y_off + expected.size:]])
    assert (np.isnan(untouched) if host.dtype.kind == "f" else untouched == -1).all()


@pytest.mark.gpu
def test_launch_with_new_pointers_each_call_writes_each_output(cp, stream):
    """The parameter cache: calls alternating between buffers (and repeating) land where asked,
    eagerly and inside a captured graph."""
    rng = np.random.default_rng()
    n = 4097
    launch = _leaky_launch(cp, n, np.float32)(0.5)
    pairs = [_random(cp, (n,), np.float32, rng) for _ in range(3)]
    outs = [_poisoned(cp, (n,), np.float32) for _ in range(4)]
    order = [(0, 0), (0, 0), (1, 1), (2, 2), (0, 3), (0, 3), (1, 0)]
    _ready(cp)
    for i, o in order:
        launch(stream.ptr, pairs[i][1].data.ptr, outs[o].data.ptr)
    stream.synchronize()
    last = {o: i for i, o in order}  # the input each output was written from last
    for o, i in last.items():
        np.testing.assert_array_equal(cp.asnumpy(outs[o]), _leaky_reference(pairs[i][0], 0.5))
    for y in outs:
        y.fill(np.nan)
    _ready(cp)
    stream.begin_capture()
    for i, o in order:
        launch(stream.ptr, pairs[i][1].data.ptr, outs[o].data.ptr)
    graph = stream.end_capture()
    graph.launch(stream)
    stream.synchronize()
    for o, i in last.items():
        np.testing.assert_array_equal(cp.asnumpy(outs[o]), _leaky_reference(pairs[i][0], 0.5))


def _leaky_reference(host, slope):
    wide = host.astype(np.float32)
    return np.where(wide >= 0, wide, wide * np.float32(slope)).astype(host.dtype)


def _leaky_launch(cp, n, dtype, max_blocks=MAX_GRID[0]):
    fn = LEAKY.function(CTYPES[np.dtype(dtype)])
    grid = leaky_relu_grid(n, np.dtype(dtype).itemsize, max_blocks=max_blocks)
    return lambda slope: Launch(fn, grid, BLOCK, (POINTER, POINTER, np.int64(n),
                                                  np.float32(slope)))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 4097, 65536 + 5,
                               (1 << 20) + 3])
@pytest.mark.parametrize("offsets", [(0, 0), (1, 1), (3, 3), (1, 0), (0, 5)])
def test_leaky_relu_matches_numpy(cp, stream, dtype, n, offsets):
    rng = np.random.default_rng()
    slope = float(rng.uniform(0.01, 0.5))
    ox, oy = offsets
    host, xbuf = _random(cp, n + ox, dtype, rng)
    ybuf = _poisoned(cp, n + oy, dtype)
    launch = _leaky_launch(cp, n, dtype)(slope)
    _ready(cp)
    launch(stream.ptr, xbuf.data.ptr + ox * xbuf.itemsize, ybuf.data.ptr + oy * ybuf.itemsize)
    stream.synchronize()
    got = cp.asnumpy(ybuf)
    np.testing.assert_array_equal(got[oy:], _leaky_reference(host[ox:], slope))
    assert np.isnan(got[:oy]).all()  # nothing written before y


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_leaky_relu_in_place_and_small_grid(cp, stream, dtype):
    rng = np.random.default_rng()
    n = 12345
    host, x = _random(cp, n, dtype, rng)
    launch = _leaky_launch(cp, n, dtype, max_blocks=2)(0.2)
    _ready(cp)
    launch(stream.ptr, x.data.ptr, x.data.ptr)
    stream.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(x), _leaky_reference(host, 0.2))


@pytest.mark.gpu
def test_launch_captured_in_a_cuda_graph(cp, stream):
    rng = np.random.default_rng()
    host, x = _random(cp, (3, 17, 40), np.float32, rng)
    pads = [2, 5, 20, 1]
    launch, y = _circ_pad_launch(cp, x, pads)
    n = y.size
    leaky = _leaky_launch(cp, n, np.float32)(0.1)
    z = _poisoned(cp, y.shape, np.float32)
    _ready(cp)
    stream.begin_capture()
    launch(stream.ptr, x.data.ptr, y.data.ptr)
    leaky(stream.ptr, y.data.ptr, z.data.ptr)
    graph = stream.end_capture()
    for _ in range(2):  # fresh data each replay: the graph reads the same buffers
        host = rng.standard_normal(x.shape).astype(np.float32)
        with stream:
            x.set(host)
            y.fill(np.nan)
            z.fill(np.nan)
        graph.launch(stream)
        stream.synchronize()
        padded = np.pad(host, pad_widths(3, pads), mode="wrap")
        np.testing.assert_array_equal(cp.asnumpy(y), padded)
        np.testing.assert_array_equal(cp.asnumpy(z), _leaky_reference(padded, 0.1))


@pytest.mark.gpu
def test_compile_error_carries_log_with_line_numbers(tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text(textwrap.dedent("""\
        // @instantiate broken<float>
        #include "common.cuh"
        template <typename T>
        __global__ void broken(T* x) {
            x[0] = undefined_name;
        }
        """))
    k = Kernel(str(src), "broken<{T}>", options=("-DPROBE=1",))
    with pytest.raises(KernelCompileError) as info:
        k.function("float")
    err = info.value
    msg = str(err)
    assert "broken.cu" in msg and "broken<float>" in msg and "-DPROBE=1" in msg
    assert "undefined_name" in err.log and "broken.cu(5)" in err.log
    assert "    5 | " in msg  # the offending source line, numbered
    assert err.kernel == "broken<float>" and "-DPROBE=1" in err.options


@pytest.mark.gpu
def test_function_is_cached_per_device(cp):
    dev = cp.cuda.runtime.getDevice()
    fn = LEAKY.function("float")
    assert LEAKY.function("float", device=dev) is fn
    assert fn.kernel.ptr != 0


@pytest.mark.gpu
def test_device_view_and_external_stream(cp, stream):
    from pyplugins.runtime.device import device_view, external_stream

    x = cp.arange(24, dtype=cp.float32)
    _ready(cp)
    dev = x.device.id
    view = device_view(x.data.ptr, (2, 3, 4), np.float32, device=dev)
    assert view.shape == (2, 3, 4) and view.data.ptr == x.data.ptr
    ext = external_stream(stream.ptr, device=dev)
    assert external_stream(stream.ptr, device=dev) is ext
    with ext:
        view *= 2
    stream.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(x), np.arange(24, dtype=np.float32) * 2)


@pytest.mark.gpu
def test_launch_refuses_impossible_shared_memory(cp):
    fn = LEAKY.function("float")
    with pytest.raises(LaunchError, match="shared memory"):
        Launch(fn, 1, BLOCK, (POINTER, POINTER, np.int64(0), np.float32(0)),
               shared_mem=64 * 1024 * 1024)


@pytest.mark.gpu
def test_resident_blocks_covers_every_sm(cp):
    from pyplugins.runtime.device import resident_blocks

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    assert resident_blocks(LEAKY.function("float"), BLOCK) >= sms


def test_deepcopied_launch_has_its_own_parameter_buffer():
    """Plugin clones deep-copy their Launch: two contexts must not share the pointer buffer."""
    import copy

    from pyplugins.runtime.launch import POINTER, Launch

    launch = Launch(0x1234, grid=0, block=256, device=0,
                    args=(POINTER, POINTER, np.int64(5), np.float32(0.25)), name="k")
    twin = copy.deepcopy(launch)
    assert twin is not launch and twin._storage is not launch._storage
    assert [twin.param_bytes(i) for i in (2, 3)] == [launch.param_bytes(i) for i in (2, 3)]
    twin(0, 0x10, 0x20)
    launch(0, 0x30, 0x40)
    assert twin.param_bytes(0) != launch.param_bytes(0)
