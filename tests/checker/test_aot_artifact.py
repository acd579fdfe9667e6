"""The AOT artifact an engine keeps of a QDP plugin: its bytes, its evaluation, the PTX checks, and
its run in a child process that never imports the plugin."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pyplugins.checker import qdp_runtime
from pyplugins.checker.aot_artifact import AOTArtifact, evaluate
from pyplugins.checker.checks.aot import (
    launch_problems,
    ptx_entries,
    signature_problems,
)
from pyplugins.errors import AOTArtifactError

from .support import MODULES

N = {"op": "PROD", "a": {"input": 0, "dim": 0}, "b": {"input": 0, "dim": 1}}


def artifact(**changes):
    fields = dict(kernel_name="add_one", image=(MODULES / "add_one.ptx").read_bytes(),
                  image_kind="ptx",
                  launch={"grid_x": {"op": "CEIL_DIV", "a": N, "b": {"const": 256}},
                          "block_x": {"const": 256}},
                  extra_args=[{"dtype": "INT32", "expr": N}], output_shapes=[[
                      {"input": 0, "dim": 0}, {"input": 0, "dim": 1}]],
                  input_types=["FLOAT"], output_types=["FLOAT"], formats=["LINEAR", "LINEAR"],
                  tactic=0, plugin="qdp_check::add_one")
    fields.update(changes)
    return AOTArtifact(**fields)


def test_bytes_round_trip_and_refuse_damage():
    art = artifact()
    data = art.to_bytes()
    assert AOTArtifact.from_bytes(data) == art
    with pytest.raises(AOTArtifactError, match="truncated"):
        AOTArtifact.from_bytes(data[:-3])
    with pytest.raises(AOTArtifactError, match="magic"):
        AOTArtifact.from_bytes(b"not an artifact")


def test_launch_plan_evaluates_for_concrete_shapes():
    plan = artifact().launch_plan({0: (7, 100)})
    assert plan == {"grid": (3, 1, 1), "block": (256, 1, 1), "shared_mem": 0, "extra": [700],
                    "outputs": [(7, 100)]}
    assert evaluate({"size": 1, "opt": {"const": 2}, "upper": N}, {0: (2, 3)}) == 6
    assert evaluate({"size": 1, "opt": {"const": 2}, "upper": N}, {0: (2, 3), ("size", 1): 4}) == 4
    with pytest.raises(AOTArtifactError, match="divides by zero"):
        evaluate({"op": "FLOOR_DIV", "a": {"const": 1}, "b": {"const": 0}}, {})


def test_ptx_parameters_and_signature():
    text = (MODULES / "add_one.ptx").read_text()
    assert ptx_entries(text) == {"add_one": [8, 4, 8]}
    layout = artifact().argument_layout()
    assert signature_problems([8, 4, 8], layout) == ([], [])
    problems, _ = signature_problems([8, 8, 8], layout)
    assert problems == [("parameter 1 is 8 bytes, but TensorRT passes an INT32 argument (extra) "
                         "there (4 bytes)")]
    problems, warnings = signature_problems([8, 4, 8, 8, 8], layout)  # Triton's scratch pointers
    assert problems == [] and "Triton" in warnings[0]


def test_launch_problems_name_each_bad_value():
    plan = {"grid": (0, 1, 1), "block": (32, 32, 2), "shared_mem": 300 * 1024, "extra": [2**31]}
    problems = launch_problems(plan)
    assert problems == ["grid_x is 0 (must be 1..2147483647)",
                        "the block has 2048 threads (at most 1024)",
                        "shared_mem is 307200 bytes (0..232448)",
                        "extra argument 0 is 2147483648, outside int32"]


def test_the_child_evaluates_the_artifact_without_the_plugin_or_tensorrt():
    result, raw = qdp_runtime.run_artifact(artifact().to_bytes(), [], [(3, 512)], ["<f4"],
                                           launch=False, plugin_module="qdp_check_add_one_x")
    assert result["error"] is None and raw is None
    assert result["plan"]["grid"] == [6, 1, 1] and result["plan"]["extra"] == [1536]
    assert result["modules"] == {"tensorrt": False, "tensorrt.plugin": False,
                                 "pyplugins.emulator": False, "pyplugins.emulator.plugin": False,
                                 "qdp_check_add_one_x": False}
    assert qdp_runtime.artifact_run_violations(result, "ns::p") == []


def test_a_damaged_artifact_or_an_import_in_the_child_is_a_violation():
    result, _ = qdp_runtime.run_artifact(artifact().to_bytes()[:-1], [], [(3, 512)], ["<f4"],
                                         launch=False, plugin_module=None)
    (found,) = qdp_runtime.artifact_run_violations(result, "ns::p")
    assert found.check == "aot_artifact" and "truncated" in found.message
    seen = {"error": None, "modules": {"tensorrt": True, "tensorrt.plugin": False}}
    (found,) = qdp_runtime.artifact_run_violations(seen, "ns::p")
    assert "imported ['tensorrt']" in found.message


def test_an_aot_kernels_size_tensor_cuts_its_data_dependent_output():
    from types import SimpleNamespace

    from pyplugins.checker.qdp_execution import real_shapes
    from pyplugins.checker.size_tensors import SizeTensorBuilder
    from pyplugins.emulator.dims import expr_tree
    from pyplugins.emulator.enums import DimensionOperation
    from pyplugins.emulator.specs import TensorSpec

    eb = SizeTensorBuilder()
    x = eb._input(0, (-1, 4))
    n = eb.declare_size_tensor(1, eb.constant(2), eb.operation(DimensionOperation.PROD, x[0],
                                                                x[1]))
    found = []
    run = SimpleNamespace(declared={1: n}, add=found.extend,
                          ctx=SimpleNamespace(specs=[TensorSpec.parse("1-3-4x4:float32")]),
                          artifact=artifact(output_shapes=[[expr_tree(n), {"const": 2}], []]))
    uppers = [(12, 2), ()]
    dtypes = [np.dtype(np.int32), np.dtype(np.int64)]
    raw = [np.zeros(24, np.int32).view(np.uint8), np.int64([5]).view(np.uint8)]
    assert real_shapes(run, raw, uppers, dtypes) == [(5, 2), ()] and found == []
    raw[1] = np.int64([99]).view(np.uint8)  # past the declared upper bound (3 * 4)
    assert real_shapes(run, raw, uppers, dtypes) == uppers
    assert [v.check for v in found] == ["size_tensor"]


def _with_params(*extra_params):
    """add_one's PTX with ``extra_params`` (PTX parameter lines) appended to its entry, as Triton
    3.5 appends ``global_scratch`` and ``profile_scratch`` (NVIDIA's sample: 17 for 15)."""
    text = (MODULES / "add_one.ptx").read_text()
    tail = ".param .u64 add_one_param_2"
    added = "".join(f",\n\t{p}" for p in extra_params)
    return text.replace(tail, tail + added).encode()


def test_trailing_scratch_pointers_get_null_pointers_as_tensorrt_gives_them():
    from pyplugins.checker.aot_launch import launch_arguments
    from pyplugins.checker.checks.aot import artifact_violations

    art = artifact(image=_with_params(".param .u64 global_scratch", ".param .u64 profile_scratch"))
    found, warnings = artifact_violations(art, {"opt": {0: (2, 8)}}, "80", "tactic 0",
                                          on_device=False)
    assert [v.check for v in found if v.check == "aot_signature"] == []
    assert any("5 parameters, 2 more than the 3" in w and "null pointers" in w for w in warnings)
    plan = art.launch_plan({0: (2, 8)})
    assert launch_arguments(art, plan, [111], [222]) == ([111, 16, 222, 0, 0],
                                                          ["ptr", "INT32", "ptr", "ptr", "ptr"])
    assert launch_arguments(artifact(), plan, [111], [222])[0] == [111, 16, 222]  # as declared


@pytest.mark.parametrize(("params", "words"), [
    ((".param .u32 extra_int",), ["takes 4 parameter(s) and TensorRT passes 3", "1 more"]),
    ((".param .u64 a", ".param .u32 b"), ["takes 5 parameter(s) and TensorRT passes 3"]),
])
def test_other_extra_parameters_are_a_defect_named_before_any_launch(params, words):
    from pyplugins.checker.aot_launch import launch_arguments
    from pyplugins.checker.checks.aot import artifact_violations

    art = artifact(image=_with_params(*params))
    found, _ = artifact_violations(art, {"opt": {0: (2, 8)}}, "80", "tactic 0", on_device=False)
    (sig,) = [v for v in found if v.check == "aot_signature"]
    assert "qdp_check::add_one" in sig.message and "'add_one'" in sig.message
    with pytest.raises(AOTArtifactError) as err:
        launch_arguments(art, art.launch_plan({0: (2, 8)}), [1], [2])
    for word in ["'add_one'", "'qdp_check::add_one'", "not launched", *words]:
        assert word in str(err.value)


def test_a_kernel_with_too_few_parameters_is_not_launched():
    from pyplugins.checker.aot_launch import launch_arguments

    short = (MODULES / "add_one.ptx").read_text().replace(
        ",\n\t.param .u64 add_one_param_2", "").encode()
    art = artifact(image=short)
    with pytest.raises(AOTArtifactError, match=r"takes 2 parameter\(s\) and TensorRT passes 3"):
        launch_arguments(art, art.launch_plan({0: (2, 8)}), [1], [2])


def test_ptx_for_a_later_target_is_assembled_for_that_target_with_a_warning():
    """PTX whose .target is sm_90 (what a pp.Plugin compiles on an H100 while the check runs with
    device='cpu') is assembled for sm_90, not the check's default sm_80, which ptxas refuses."""
    from pyplugins.checker.checks import aot as aot_checks

    text = (MODULES / "add_one.ptx").read_text()
    later = re.sub(r"\.target\s+sm_\d+", ".target sm_90",
                   re.sub(r"\.version\s+[\d.]+", ".version 7.8", text)).encode()
    seen = []
    real = aot_checks.assemble

    def recording(image, arch, on_device=False):
        seen.append(arch)
        return real(image, arch, on_device)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(aot_checks, "assemble", recording)
        found, warnings = aot_checks.artifact_violations(artifact(image=later),
                                                         {"opt": {0: (2, 8)}}, "80", "tactic 0")
    assert seen == ["90"]
    assert [v.check for v in found if v.check == "aot_ptx_compile"] == []
    assert any("targets sm_90" in w and "9.0 or later" in w for w in warnings)
