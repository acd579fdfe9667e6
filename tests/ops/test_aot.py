"""Every op with an aot_launch hook as a QDP AOT plugin: registered under the emulator, driven
through register/autotune/aot_impl as TensorRT calls them, its launch evaluated at concrete shapes
and compared with what plan computes there, its PTX checked host-side; on a GPU, the AOT launch
through the driver gives the JIT impl's bits."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.runtime import tactics
from pyplugins.errors import AotUnsupportedError, PluginDefinitionError
from pyplugins.ops import BarPlugin, CircPad, LeakyReLU, Pool, RMSNorm, RoPE, SeqRepeat
from pyplugins.runtime import aot, qdp
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import POINTER
from pyplugins.runtime.ptx_text import entries, entry_params

from tests.qdp_support import REQUEST, Built, create, dyn

F, H, I8, I32 = trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.INT8, trt.DataType.INT32
I64 = trt.DataType.INT64


@dataclass
class Case:
    """One op: its class, field values, network shapes (-1 dynamic), profile bounds, the
    concrete shapes to evaluate at, and the types of each tensor (inputs, outputs) to build."""

    cls: Any
    values: Dict[str, Any]
    shapes: List[Tuple[int, ...]]
    lo: List[Tuple[int, ...]]
    hi: List[Tuple[int, ...]]
    at: List[List[Tuple[int, ...]]]
    types: List[Any]
    #: type name -> the row plan is asked for where the AOT launch, choosing from what the build
    #: knows, takes another than plan's own choice (the op's docs say which and why)
    variant: Dict[str, str] = field(default_factory=dict)
    tactic: int = 0  #: the tactic TensorRT builds (0: the class's first, or none)

    @property
    def tactic_id(self) -> int:
        return self.tactic or (1 if tactics.declared(self.cls) else 0)


CASES = {
    "leaky_relu": Case(LeakyReLU, {"neg_slope": 0.2}, [(-1, 3, -1)], [(1, 3, 1)], [(64, 3, 4096)],
                       [[(1, 3, 1)], [(7, 3, 5)], [(64, 3, 4096)], [(2, 3, 1000)]], [F, H]),
    # inner 3: the "gather" grid; inner = one 16-byte vector: the "rows" grid, per type
    "seq_repeat": Case(SeqRepeat, {"factor": 3}, [(-1, -1, 3)], [(1, 1, 3)], [(8, 512, 3)],
                       [[(1, 1, 3)], [(2, 5, 3)], [(8, 512, 3)]], [F, H, I8, I32]),
    "seq_repeat_rows4": Case(SeqRepeat, {"factor": 2}, [(2, -1, 4)], [(2, 1, 4)],
                             [(2, 300, 4)], [[(2, 1, 4)], [(2, 300, 4)]], [F, I32]),
    "seq_repeat_rows8": Case(SeqRepeat, {"factor": 2}, [(2, -1, 8)], [(2, 1, 8)],
                             [(2, 300, 8)], [[(2, 300, 8)]], [H]),
    "seq_repeat_rows16": Case(SeqRepeat, {"factor": 4}, [(2, -1, 2, 8)], [(2, 1, 2, 8)],
                              [(2, 300, 2, 8)], [[(2, 300, 2, 8)]], [I8]),
    "seq_repeat_2d": Case(SeqRepeat, {"factor": 5}, [(-1, -1)], [(1, 1)], [(16, 64)],
                          [[(1, 1)], [(16, 64)], [(3, 7)]], [H]),
    # both dims dynamic, A and B of other lengths; one of them empty
    "bar": Case(BarPlugin, {}, [(-1, 5), (-1, 5)], [(0, 5), (1, 5)], [(4096, 5), (512, 5)],
                [[(2, 5), (3, 5)], [(4096, 5), (1, 5)], [(0, 5), (512, 5)], [(999, 5), (77, 5)]],
                [F, H, I8, I32]),
    # rows dynamic, d static: every row length class of rows_per_block, and 512-thread blocks
    "rmsnorm": Case(RMSNorm, {"eps": 1e-5}, [(-1, 7, 64), (64,)], [(1, 7, 64), (64,)],
                    [(9, 7, 64), (64,)], [[(1, 7, 64), (64,)], [(9, 7, 64), (64,)]], [F, H]),
    "rmsnorm_dynamic_d": Case(
        RMSNorm, {"eps": 1e-6}, [(-1, -1), (-1,)], [(1, 1), (1,)], [(64, 16384), (16384,)],
        [[(3, d), (d,)] for d in (1, 6, 8, 96, 100, 1000, 2048, 4095, 4096, 8192, 8200, 16384)] +
        [[(0, 64), (64,)], [(64, 3), (3,)]], [F, H]),
    # 3x3 stride 2 pad 1: pool2d (float), pool2d_b128 (INT8); every dim but C dynamic
    "pool_max": Case(Pool, {"mode": "max", "kernel": [3, 3], "stride": [2, 2],
                            "padding": [1, 1], "in_scale": 0.5, "out_scale": 0.25},
                     [(-1, 3, -1, -1)], [(1, 3, 3, 3)], [(4, 3, 40, 48)],
                     [[(1, 3, 3, 3)], [(2, 3, 9, 17)], [(4, 3, 40, 48)], [(0, 3, 5, 5)]],
                     [F, H, I8]),
    # 5x5 stride 2 pad 2 on whole chunks: pool2d_cols (every element size)
    "pool_cols": Case(Pool, {"mode": "avg", "kernel": [5, 5], "padding": [2, 2],
                             "stride": [2, 2], "in_scale": 0.1, "out_scale": 0.1},
                      [(-1, 4, -1, 64)], [(1, 4, 1, 64)], [(3, 4, 100, 64)],
                      [[(1, 4, 1, 64)], [(3, 4, 100, 64)], [(2, 4, 37, 64)]], [F, H, I8]),
    # 2x2 stride 2 at a unit ratio: pool2d_i8 (INT8), pool2d (float); 3x3 stride 2: pool2d_wide
    "pool_2x2": Case(Pool, {"mode": "avg", "kernel": [2, 2], "in_scale": 0.5, "out_scale": 0.5},
                     [(2, -1, 16, 16)], [(2, 1, 16, 16)], [(2, 64, 16, 16)],
                     [[(2, 1, 16, 16)], [(2, 64, 16, 16)]], [F, I8]),
    "pool_wide": Case(Pool, {"mode": "max", "kernel": [3, 3], "stride": [2, 2]},
                      [(1, 2, -1, -1)], [(1, 2, 3, 3)], [(1, 2, 64, 64)],
                      [[(1, 2, 3, 3)], [(1, 2, 64, 63)]], [F, H]),
    # batch and seq dynamic: rope (float, 4 waves), rope_table (half), an offset and gptj
    "rope": Case(RoPE, {"rotary_dim": 32, "layout": "gptj", "position_offset": 5,
                        "theta": 500.0}, [(-1, -1, 4, 64)], [(1, 1, 4, 64)], [(2, 300, 4, 64)],
                 [[(1, 1, 4, 64)], [(2, 300, 4, 64)], [(2, 17, 4, 64)], [(0, 5, 4, 64)]],
                 [F, H]),
    # rope_table tiles of one token and half its heads
    "rope_table_heads": Case(RoPE, {}, [(1, -1, 256, 128)], [(1, 1, 256, 128)],
                             [(1, 3, 256, 128)], [[(1, 1, 256, 128)], [(1, 3, 256, 128)],
                                                  [(1, 0, 256, 128)]], [H]),
    # heads and head_dim dynamic: no rope_table tiles at build time, so half takes rope_1x
    "rope_dynamic_heads": Case(RoPE, {"layout": "neox"}, [(-1, 8, -1, -1)], [(1, 8, 1, 2)],
                               [(3, 8, 16, 128)], [[(1, 8, 1, 2)], [(3, 8, 16, 128)],
                                                   [(2, 8, 5, 6)]], [F, H],
                               variant={"HALF": "rope_1x"}),
    # narrow rows of 16n input bytes: circ_pad_warp_narrow (float, half), circ_pad_narrow (INT8)
    "circ_pad_narrow_rows": Case(CircPad, {"pads": [1, 1, 1, 1]}, [(-1, 3, -1, 8)],
                                 [(1, 3, 1, 8)], [(2, 3, 40, 8)],
                                 [[(1, 3, 1, 8)], [(2, 3, 40, 8)], [(2, 3, 7, 8)]], [F, H, I8]),
    # wider rows of 16n bytes: circ_pad_warp, every size
    "circ_pad_wide_rows": Case(CircPad, {"pads": [1, 1, 0, 2]}, [(-1, 2, -1, 128)],
                               [(1, 2, 1, 128)], [(3, 2, 9, 128)],
                               [[(1, 2, 1, 128)], [(3, 2, 9, 128)], [(2, 2, 4, 128)]],
                               [F, H, I8, I64]),
    # rows of 200 bytes: circ_pad_flat (float), circ_pad_narrow (half, INT8)
    "circ_pad_flat": Case(CircPad, {"pads": [3, 2, 1, 0]}, [(-1, -1, 50)], [(1, 1, 50)],
                          [(4, 20, 50)], [[(1, 1, 50)], [(4, 20, 50)], [(3, 7, 50)]], [F, H, I8]),
    # W dynamic: no warp rows (their fit reads W's bytes): circ_pad_flat from the max
    "circ_pad_dynamic_w": Case(CircPad, {"pads": [2, 3]}, [(2, -1)], [(2, 1)], [(2, 4000)],
                               [[(2, 1)], [(2, 4000)], [(2, 5)], [(2, 333)]], [F],
                               variant={"FLOAT": "circ_pad_flat"}),
    # three padded dims, W dynamic: circ_pad, its strips plan over every group size
    "circ_pad_rows": Case(CircPad, {"pads": [1, 2, 0, 1, 1, 0]}, [(-1, 3, -1)], [(1, 3, 1)],
                          [(3, 3, 2000)], [[(1, 3, 2000)], [(3, 3, 700)], [(2, 3, 33)],
                                           [(1, 3, 5)], [(1, 3, 1)], [(2, 3, 120)], [(1, 3, 25)]], [F, H],
                          variant={"FLOAT": "circ_pad", "HALF": "circ_pad"}),
    # the IPluginV3/QDP tactic "strips" (id 2): circ_pad without its staged path
    "circ_pad_strips": Case(CircPad, {"pads": [2, 2, 1, 1]}, [(-1, 5, 64)], [(1, 5, 64)],
                            [(6, 5, 64)], [[(1, 5, 64)], [(6, 5, 64)]], [F, I8], tactic=2),
}
IDS = list(CASES)


class Recorded:
    """Stands in for the op module's ``Launch`` while ``plan`` runs without a GPU."""

    def __init__(self, function: Any, *, grid: Any, block: Any, args: Any, **kwargs: Any) -> None:
        self.function, self.grid, self.block, self.args = function, grid, block, tuple(args)
        self.shared_mem = kwargs.get("shared_mem", 0)


#: The resident blocks plan's and the AOT launch's wave caps read here (there is no GPU).
RESIDENT = 48


@pytest.fixture(autouse=True)
def resident(monkeypatch):
    """Both sides see RESIDENT resident blocks: plan's variant launch and the AOT build's."""
    monkeypatch.setattr(tactics, "resident_blocks", lambda fn, block, device=None: RESIDENT)
    monkeypatch.setattr(aot, "build_resident_blocks", lambda row, ctype: RESIDENT)


def planned(monkeypatch: Any, case: Case, at: Sequence[Tuple[int, ...]], dtype: Any,
            out_shapes: Sequence[Tuple[int, ...]]) -> Recorded:
    """What ``plan`` computes for these concrete shapes (kernels and Launch stubbed), after
    ``check_configure`` where the class has one (Pool's INT8 scales: the fields)."""
    module = __import__(case.cls.__module__, fromlist=["Launch"])
    monkeypatch.setattr(module, "Launch", Recorded)
    monkeypatch.setattr(tactics, "Launch", Recorded)  # ops whose plan reads a variant table
    # On the class: patching each Kernel instance would leave, after the undo, an instance
    # attribute (the bound method) that hides later tests' patches of Kernel.function.
    monkeypatch.setattr(Kernel, "function",
                        lambda self, ctype, device=None: f"{self.expression_for(ctype)}")
    plugin = case.cls(**case.values)
    plugin.tactic = tactics.tactic_name(case.cls, case.tactic_id)
    desc = lambda s: trt.PluginTensorDesc(list(s), dtype, trt.TensorFormat.LINEAR)  # noqa: E731
    if plugin.check_configure is not None:
        plugin.check_configure([dyn(s, dtype) for s in at], [dyn(s, dtype) for s in out_shapes])
    ins, outs = [desc(s) for s in at], [desc(s) for s in out_shapes]
    variant = case.variant.get(dtype.name)
    return plugin.plan(ins, outs, 0, variant=variant) if variant else plugin.plan(ins, outs, 0)


#: Fields of CircPad's flat struct that its AOT entries derive instead of taking them.
DERIVED = {"magic_plane", "shift_plane", "magic_wo", "shift_wo"}


def scalars(args: Sequence[Any]) -> List[int]:
    """plan's by-value arguments as AOT passes them: ints, floats as their float32 bits, a
    struct field by field (CircPad's); pointers, packed or by value, are not among them."""
    out: List[int] = []
    for a in args:
        if a is POINTER or isinstance(a, np.uint64):  # a pointer, or RoPE's null positions
            continue                                 # pointer by value (QDP's RoPE has none)
        if isinstance(a, np.void):
            for name in a.dtype.names:
                if name not in DERIVED:
                    out += np.atleast_1d(a[name]).astype(int).tolist()
            continue
        out.append(aot.float32_bits(float(a)) if np.issubdtype(type(a), np.floating) else int(a))
    return out


#: AOT entries that take one of plan's 64-bit counts as two int32 words, low then high: the
#: count's index among plan's scalar arguments (rope_aot's tokens, kernels_cu/rope.cu).
SPLIT_WORDS = {"rope_aot": 0}


#: AOT entries that take a count in place of one of plan's: the entry -> (the argument's index,
#: the index of what plan's argument is divided by): circ_pad_warp_aot's plane count in place of
#: total, total / plane_out (kernels_cu/circ_pad.cu).
QUOTIENTS = {"circ_pad_warp_aot": (0, 2)}


def aot_scalars(entry: str, args: Sequence[Any]) -> List[int]:
    """:func:`scalars` as ``entry`` takes them (a count of SPLIT_WORDS as its two words, a
    QUOTIENTS count in place of its argument)."""
    out = scalars(args)
    if entry in SPLIT_WORDS:
        i = SPLIT_WORDS[entry]
        out[i:i + 1] = [out[i] & 0xFFFFFFFF, out[i] >> 32]
    if entry in QUOTIENTS:
        i, by = QUOTIENTS[entry]
        out[i] = out[i] // out[by] if out[by] else 0
    return out


@pytest.fixture
def aot_defined():
    made = []

    def define(cls):
        made.append(cls)
        qdp.define(cls)

    yield define
    for cls in made:
        qdp.forget(cls)


def _ptxas(ptx: bytes, tmp_path: Any) -> subprocess.CompletedProcess:
    path = tmp_path / "kernel.ptx"
    path.write_bytes(ptx)
    return subprocess.run([shutil.which("ptxas"), "-arch=sm_90", str(path), "-o",
                           str(tmp_path / "kernel.cubin")], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("op", IDS)
def test_aot_launch_equals_plan_and_the_ptx_is_launchable(op, aot_defined, monkeypatch, tmp_path):
    case = CASES[op]
    aot_defined(case.cls)
    plugin = create(case.cls, case.values, REQUEST.STRICT_AOT)
    assert isinstance(plugin, trt.IPluginV3QuickAOTBuild)
    n_in, n_out = len(case.shapes), case.cls.outputs
    for dtype in case.types:
        built = Built(plugin, case.shapes, [dtype] * n_in, case.lo, case.hi)
        in_out = built.configure([dtype] * (n_in + n_out), case.tactic_id)
        for at in case.at:
            got = built.launch(in_out, at)
            want = planned(monkeypatch, case, at, dtype, built.out_shapes(at))
            where = f"{op} {dtype.name} at {at}"
            assert got["grid"] == (max(want.grid, 1), 1, 1), where
            assert got["block"] == (want.block, 1, 1), where
            assert got["shared_mem"] == want.shared_mem, where
            # the kernel plan launched, as its AOT entry (a mangled name holds len + name)
            entry = want.function.split("<")[0] + "_aot"
            assert got["args"] == aot_scalars(entry, want.args), where
            assert set(got["arg_types"]) <= {"INT32"}
            assert f"{len(entry)}{entry}I" in got["name"], (where, got["name"])
        ptx, name = got["ptx"], got["name"]
        assert name in entries(ptx.decode()), (op, name)
        params = entry_params(ptx.decode(), name)
        assert len(params) == n_in + len(got["args"]) + n_out, params
        if shutil.which("ptxas"):
            done = _ptxas(ptx, tmp_path)
            assert done.returncode == 0, done.stderr


def test_every_shipped_op_is_aot_and_a_class_that_cannot_be_says_why():
    for cls in (BarPlugin, CircPad, LeakyReLU, Pool, RMSNorm, RoPE, SeqRepeat):
        assert qdp.aot_support(cls) is None, cls.name

    class NoHook(LeakyReLU):
        name, namespace, aot_launch = "LReLU_nohook", "qdp_tests", None

    class Scratch(LeakyReLU):
        name, namespace = "LReLU_scratch", "qdp_tests"

        def get_workspace_size(self, input_desc, output_desc):
            return 64

    for cls, why in ((NoHook, "defines no aot_launch hook"),
                     (Scratch, "overrides get_workspace_size")):
        reason = qdp.aot_support(cls)
        assert reason is not None and f"plugin {cls.name!r}" in reason and why in reason
        with pytest.raises(AotUnsupportedError, match=cls.name):
            qdp.require_aot(cls)


def test_an_aot_launch_that_does_not_fit_its_kernel_is_refused(aot_defined):
    class Short(LeakyReLU):
        name, namespace = "LReLU_short", "qdp_tests"

        def aot_launch(self, inputs, outputs):
            real = super().aot_launch(inputs, outputs)
            return aot.AotLaunch(real.kernel, real.ctype, real.grid, real.block, real.args[:1])

    aot_defined(Short)
    plugin = create(Short, {"neg_slope": 0.5}, REQUEST.STRICT_AOT)
    built = Built(plugin, [(4, 8)], [F])
    in_out = built.configure([F, F])
    with pytest.raises(PluginDefinitionError, match="has 4 parameters.*passes 3"):
        built.launch(in_out, [(4, 8)])
    with pytest.raises(PluginDefinitionError, match="float32_bits"):
        aot.AotLaunch(LeakyReLU.aot_kernel, "float", 1, 256, (0.5,))
    with pytest.raises(PluginDefinitionError, match="32-bit int cannot hold"):
        aot.AotLaunch(LeakyReLU.aot_kernel, "float", 1, 256, (2**31,))


# -- on a GPU: the AOT launch through the driver, bit for bit against the JIT impl ---------------

def _random(shape: Sequence[int], dtype: Any, rng: np.random.Generator) -> np.ndarray:
    np_type = np.dtype(trt.nptype(dtype))
    if np_type.kind == "f":
        return rng.uniform(-4, 4, size=shape).astype(np_type)
    info = np.iinfo(np_type)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(np_type)


def _strides(shape: Sequence[int]) -> Any:
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= max(int(d), 1)
    return trt.Dims(tuple(reversed(out)))


def _check(result: Any, what: str) -> Any:
    from cuda.bindings import driver

    err, *rest = result if isinstance(result, tuple) else (result,)
    assert err == driver.CUresult.CUDA_SUCCESS, f"{what}: {err}"
    return rest[0] if len(rest) == 1 else rest


def _launch_aot(got: Dict[str, Any], inputs: Sequence[Any], outputs: Sequence[Any],
                stream: Any) -> None:
    """cuModuleLoadData + cuLaunchKernel with the evaluated parameters, in TensorRT's argument
    order (input pointers, extra int32 arguments, output pointers)."""
    import ctypes

    from cuda.bindings import driver

    _check(driver.cuInit(0), "cuInit")
    image = np.frombuffer(got["ptx"] + b"\0", np.uint8)
    module = _check(driver.cuModuleLoadData(image.ctypes.data), "cuModuleLoadData")
    try:
        function = _check(driver.cuModuleGetFunction(module, got["name"].encode()),
                          "cuModuleGetFunction")
        values = ([a.data.ptr for a in inputs] + list(got["args"]) +
                  [a.data.ptr for a in outputs])
        types = ([ctypes.c_void_p] * len(inputs) + [ctypes.c_int] * len(got["args"]) +
                 [ctypes.c_void_p] * len(outputs))
        _check(driver.cuLaunchKernel(function, *got["grid"], *got["block"], got["shared_mem"],
                                     driver.CUstream(stream.ptr), (tuple(values), tuple(types)),
                                     0), "cuLaunchKernel")
        stream.synchronize()
    finally:
        driver.cuModuleUnload(module)


def _poisoned(cp: Any, shape: Sequence[int], np_type: Any, byte: int) -> Any:
    count = int(np.prod(shape)) * np.dtype(np_type).itemsize
    return cp.full(count, byte, np.uint8).view(np_type).reshape(tuple(shape))


def _descs(shapes: Sequence[Sequence[int]], dtype: Any) -> List[Any]:
    return [trt.PluginTensorDesc(list(s), dtype, trt.TensorFormat.LINEAR, -1.0) for s in shapes]


@pytest.mark.gpu
@pytest.mark.parametrize("op", IDS)
def test_aot_kernel_through_the_driver_equals_the_jit_impl_bit_for_bit(op, aot_defined):
    cp = pytest.importorskip("cupy")
    pytest.importorskip("cuda.bindings.driver")
    case = CASES[op]
    aot_defined(case.cls)
    rng = np.random.default_rng(21)
    n_in, n_out = len(case.shapes), case.cls.outputs
    stream = cp.cuda.Stream(non_blocking=True)
    for dtype in case.types:
        jit = create(case.cls, case.values, REQUEST.STRICT_JIT)
        ahead = create(case.cls, case.values, REQUEST.STRICT_AOT)
        types = [dtype] * (n_in + n_out)
        built_jit = Built(jit, case.shapes, [dtype] * n_in, case.lo, case.hi)
        built_jit.configure(types, case.tactic_id)
        built_aot = Built(ahead, case.shapes, [dtype] * n_in, case.lo, case.hi)
        in_out = built_aot.configure(types, case.tactic_id)
        np_type = trt.nptype(dtype)
        for at in case.at:
            inputs = [cp.asarray(_random(s, dtype, rng)) for s in at]
            out_shapes = built_jit.out_shapes(at)
            # different poison in each: an element neither writes cannot compare equal
            by_jit = [_poisoned(cp, s, np_type, 0xA5) for s in out_shapes]
            by_aot = [_poisoned(cp, s, np_type, 0x5A) for s in out_shapes]
            jit.enqueue(_descs(at, dtype), _descs(out_shapes, dtype), [a.data.ptr for a in inputs],
                        [a.data.ptr for a in by_jit], [_strides(s) for s in at],
                        [_strides(s) for s in out_shapes], stream.ptr)
            stream.synchronize()
            _launch_aot(built_aot.launch(in_out, at), inputs, by_aot, stream)
            for k, (a, b) in enumerate(zip(by_jit, by_aot)):
                assert cp.asnumpy(a).tobytes() == cp.asnumpy(b).tobytes(), \
                    f"{op} {dtype.name} at {at}: output {k} differs between JIT and AOT"
