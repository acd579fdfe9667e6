"""The kernel check without a GPU: planted defects are reported with the compiler's words, the
shipped ops pass, results are cached on disk, and plugins that are not pp.Plugin are untouched.

Compiles with nvcc (always on this project's machines) unless NVRTC's library loads; the NVRTC
test skips where it does not.
"""

from __future__ import annotations

import shutil
import types

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.runtime import kernel_ptx
from pyplugins._config import override
from pyplugins.runtime.creator import register, unregister
from pyplugins.checker import lifecycle
from pyplugins.checker.checks import CHECKS
from pyplugins.checker.checks.kernels import kernel_attributes, kernel_types, kernel_violations
from pyplugins.runtime.fields import Field
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.plugin import Plugin

HAS_COMPILER = shutil.which("nvcc") is not None or kernel_ptx._nvrtc() is not None

pytestmark = pytest.mark.skipif(not HAS_COMPILER, reason="no CUDA compiler (nvcc or NVRTC)")

GOOD = """\
// @instantiate scale<float>
// @instantiate scale<__half>
#include <cuda_fp16.h>
template <typename T>
__global__ void scale(const T* x, T* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"""

BROKEN = """\
// @instantiate scale<float>
template <typename T>
__global__ void scale(const T* x, T* y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + undeclared_thing;
}
"""

FLOAT_ONLY = """\
// @instantiate scale<float>
#include <cuda_fp16.h>
template <typename T>
__global__ void scale(const T* x, T* y, long long n) {
    static_assert(sizeof(T) == 4, "scale supports 4-byte element types only");
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"""


def _plugin(name: str, kernel: Kernel, dtypes=(trt.DataType.FLOAT, trt.DataType.HALF)) -> type:
    cls = type(name, (Plugin,), {
        "name": name, "dtypes": dtypes, "kernel": kernel, "alpha": Field.float(default=1.0),
        "get_output_dimensions": lambda self, i, inputs, eb: inputs[0],
        "enqueue": lambda self, *args: 0})
    return cls


def _creator(cls: type):
    return types.SimpleNamespace(plugin_class=cls)


@pytest.fixture
def cu(tmp_path):
    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)
    return write


def test_check_is_registered():
    assert "kernel_compile" in CHECKS


def test_missing_source_file_is_reported_with_the_sources_there_are():
    cls = _plugin("KcMissingFile", Kernel("no_such_file.cu", "scale<{T}>"))
    found, warnings = kernel_violations(_creator(cls))
    assert warnings == [] and len(found) == 1
    text = found[0].message
    assert found[0].check == "kernel_compile"
    assert "'KcMissingFile'" in text and "'kernel'" in text
    assert "no_such_file.cu' does not exist" in text and "circ_pad.cu" in text


def test_unknown_kernel_name_is_reported_with_the_compiler_message(cu):
    cls = _plugin("KcUnknownName", Kernel(cu("good.cu", GOOD), "sacle<{T}>"))
    found, _ = kernel_violations(_creator(cls))
    messages = [v.message for v in found]
    assert any("no kernel named 'sacle' is defined in" in m and "good.cu" in m
               and 'identifier "sacle" is undefined' in m for m in messages), messages


def test_compile_error_names_file_line_and_carries_the_log(cu):
    path = cu("broken.cu", BROKEN)
    cls = _plugin("KcBroken", Kernel(path, "scale<{T}>"), dtypes=(trt.DataType.FLOAT,))
    found, _ = kernel_violations(_creator(cls))
    assert len(found) == 1, [str(v) for v in found]
    text = found[0].message
    assert f"it does not compile at {path}:5" in text
    assert 'identifier "undeclared_thing" is undefined' in text
    assert "    5 |     if (i < n) y[i] = x[i] + undeclared_thing;" in text  # the source line


def test_missing_dtype_instantiation_is_reported_with_the_compiler_message(cu):
    path = cu("float_only.cu", FLOAT_ONLY)
    cls = _plugin("KcHalfMissing", Kernel(path, "scale<{T}>"))  # FLOAT and HALF
    found, _ = kernel_violations(_creator(cls))
    messages = [v.message for v in found]
    assert len(found) == 2, messages
    unlisted = next(m for m in messages if "lists no '// @instantiate' line" in m)
    assert "scale<__half>" in unlisted and "// @instantiate scale<__half>" in unlisted
    failed = next(m for m in messages if "cannot be built" in m)
    assert "scale<__half> cannot be built" in failed and "scale<float> cannot" not in failed
    assert "scale supports 4-byte element types only" in failed and f"{path}:5" in failed


def test_unlisted_instantiation_that_compiles_is_still_a_defect(cu):
    cls = _plugin("KcUnlisted", Kernel(cu("good.cu", GOOD), "scale<{T}>"),
                  dtypes=(trt.DataType.FLOAT, trt.DataType.INT32))
    found, _ = kernel_violations(_creator(cls))
    assert [v.check for v in found] == ["kernel_compile"]
    assert "scale<int>" in found[0].message and "lists no" in found[0].message


def test_kernel_dtypes_narrow_the_types_checked(cu):
    kernel = Kernel(cu("float_only.cu", FLOAT_ONLY), "scale<{T}>", dtypes=("float32",))
    cls = _plugin("KcNarrowed", kernel)
    assert [t.name for t in kernel_types(cls, kernel)] == ["FLOAT"]
    assert kernel_violations(_creator(cls)) == ([], [])
    with pytest.raises(TypeError, match="Kernel dtypes must be"):
        Kernel("x.cu", "x<{T}>", dtypes="int8")


def test_every_shipped_op_passes():
    from pyplugins import ops

    checked = 0
    for name in ops.__all__:
        cls = getattr(ops, name)
        if not (isinstance(cls, type) and issubclass(cls, Plugin)) or not kernel_attributes(cls):
            continue
        found, warnings = kernel_violations(_creator(cls))
        assert (found, warnings) == ([], []), [str(v) for v in found]
        checked += 1
    assert checked >= 6


def test_plugins_that_are_not_pp_plugin_are_not_checked():
    assert kernel_violations(types.SimpleNamespace()) == ([], [])
    assert kernel_violations(types.SimpleNamespace(plugin_class=int)) == ([], [])


def test_results_are_cached_on_disk_and_in_memory(cu, tmp_path, monkeypatch):
    cls = _plugin("KcCached", Kernel(cu("cached.cu", GOOD), "scale<{T}>"))
    calls = []
    chosen = kernel_ptx._compiler("auto")
    counting = kernel_ptx._Compiler(chosen.name, lambda *a: calls.append(a) or chosen.run(*a),
                                    chosen.include)
    monkeypatch.setattr(kernel_ptx, "_compiler", lambda choice: counting)
    with override(cache_dir=str(tmp_path / "cache")):
        assert kernel_violations(_creator(cls)) == ([], [])
        assert len(calls) == 1 and list((tmp_path / "cache" / "ptx").glob("*.json"))
        assert kernel_violations(_creator(cls)) == ([], [])  # memory
        kernel_ptx.clear_cache()
        assert kernel_violations(_creator(cls)) == ([], [])  # disk
        assert len(calls) == 1
        (tmp_path / "cached.cu").write_text(GOOD + "// edited\n")  # new digest: compiles again
        assert kernel_violations(_creator(cls)) == ([], [])
        assert len(calls) == 2


def test_no_compiler_is_a_warning_and_off_skips_the_check(monkeypatch):
    cls = _plugin("KcNoCompiler", Kernel("no_such_file.cu", "scale<{T}>"))
    with override(kernel_compiler="off"):
        found, warnings = kernel_violations(_creator(cls))
        assert warnings == [] and len(found) == 1  # the missing file needs no compiler
    cls = _plugin("KcNoCompiler2", Kernel("leaky_relu.cu", "leaky_relu<{T}>"))
    monkeypatch.setattr(kernel_ptx, "_nvrtc", lambda: None)
    monkeypatch.setattr(kernel_ptx, "_nvcc", lambda: None)
    kernel_ptx.clear_cache()
    found, warnings = kernel_violations(_creator(cls))
    assert found == [] and len(warnings) == 1
    assert "'KcNoCompiler2' were not compiled" in warnings[0] and "nvcc" in warnings[0]
    with override(kernel_compiler="bogus"), pytest.raises(ValueError, match="bogus"):
        kernel_ptx.compiler_name()


def test_lifecycle_without_a_gpu_reports_the_defect(cu):
    cls = register(_plugin("KcLifecycle", Kernel(cu("broken.cu", BROKEN), "scale<{T}>"),
                           dtypes=(trt.DataType.FLOAT,)), replace=True)
    try:
        report = lifecycle.run(cls.creator, ["2x3:float32"], device="cpu")
        assert report.checks() == ["kernel_compile"]
        assert "undeclared_thing" in report.format()
    finally:
        unregister(cls)
    from pyplugins.ops import LeakyReLU
    assert lifecycle.run(LeakyReLU.creator, [np.zeros((2, 3), np.float32)], device="cpu").ok


@pytest.mark.skipif(kernel_ptx._nvrtc() is None, reason="NVRTC's library does not load here")
def test_nvrtc_and_nvcc_agree(cu):
    path = cu("float_only.cu", FLOAT_ONLY)
    cls = _plugin("KcAgree", Kernel(path, "scale<{T}>"))
    verdicts = {}
    for choice in ("nvrtc", "nvcc"):
        kernel_ptx.clear_cache()
        with override(kernel_compiler=choice):
            prog = cls.kernel.program("float", "__half")
            verdicts[choice] = {e: v.ok for e, v in kernel_ptx.compile_program(prog).items()}
            found, _ = kernel_violations(_creator(cls))
            assert any("4-byte element types only" in v.message for v in found)
    assert verdicts["nvrtc"] == verdicts["nvcc"] == {"scale<float>": True, "scale<__half>": False}
