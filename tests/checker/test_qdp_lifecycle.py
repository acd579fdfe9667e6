"""The QDP lifecycle without a GPU: what TensorRT calls on a tensorrt.plugin plugin, JIT and AOT
chosen as TensorRT chooses, and a planted defect per host-side check."""

from __future__ import annotations

import json
import shutil

import pytest

from pyplugins._config import override
from pyplugins.checker.lifecycle_qdp import requests_for

from .support import check, load

needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None and shutil.which(
    "nvcc") is None, reason="needs ptxas (the CUDA toolkit) to assemble PTX")


def _runs(report):
    return {r["implementation"]: r for r in report.qdp["runs"]}


def test_a_correct_plugin_is_checked_both_ways_without_a_gpu(trtp):
    load("add_one")
    report = check("add_one", "1-4-8x32:float32", trace=True)
    assert report.ok, report.format()
    assert report.output_shapes == [(4, 32)] and report.enqueue_ran is False
    runs = _runs(report)
    assert [r["request"] for r in report.qdp["runs"]] == ["PREFER_JIT", "PREFER_AOT"]
    assert runs["jit"]["kept"] == {"combination": "[FLOAT LINEAR] -> [FLOAT LINEAR]", "tactic": 1}
    assert runs["aot"]["artifact"]["kernel"] == "add_one"
    plan = runs["aot"]["run"]["plan"]  # evaluated in the child at opt (4, 32): n = 128
    assert plan["grid"] == [1, 1, 1] and plan["block"] == [256, 1, 1] and plan["extra"] == [128]
    assert not any(runs["aot"]["run"]["modules"].values())  # no tensorrt, no plugin module
    assert any("both impl and aot_impl" in w for w in report.warnings)
    methods = [e.method for e in report.trace.entries]
    for method in ("get_output_data_types", "get_supported_format_combinations",
                   "get_launch_params", "get_kernel", "get_fields_to_serialize"):
        assert method in methods
    assert methods.count("get_supported_format_combinations") == 4  # twice per query, per run


@pytest.mark.parametrize("qdp_choice, made", [("jit", ["jit"]), ("aot", ["aot"])])
def test_the_network_flag_picks_one_implementation(trtp, qdp_choice, made):
    load("add_one")
    report = check("add_one", qdp=qdp_choice)
    assert [r["implementation"] for r in report.qdp["runs"]] == made
    assert report.qdp["runs"][0]["request"] == f"PREFER_{qdp_choice.upper()}"


def test_the_node_aot_attribute_is_a_strict_request_and_not_a_field(trtp):
    load("add_one")
    report = check("add_one", fields={"aot": 1})
    assert report.ok, report.format()
    assert [(r["request"], r["implementation"]) for r in report.qdp["runs"]] == [
        ("STRICT_AOT", "aot")]


def test_requests_follow_tensorrt_choice():
    assert requests_for(has_jit=True, has_aot=False, implementation=None, node_aot=None) == [
        ("jit", "UNKNOWN")]
    assert requests_for(has_jit=True, has_aot=True, implementation=None, node_aot=False) == [
        ("jit", "STRICT_JIT")]
    assert requests_for(has_jit=True, has_aot=False, implementation="both", node_aot=None) == [
        ("jit", "PREFER_JIT")]
    with pytest.raises(ValueError, match="implementation must be"):
        requests_for(has_jit=True, has_aot=True, implementation="fast", node_aot=None)


JIT_ONLY = (
    "import tensorrt.plugin as trtp\n"
    "@trtp.register('qdp_check::jit_only')\n"
    "def jit_only_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:\n"
    "    return inp0.like()\n"
    "@trtp.impl('qdp_check::jit_only')\n"
    "def jit_only_impl(inp0, outputs, stream) -> None:\n"
    "    stream\n")


def test_before_10_9_there_is_no_request_and_no_aot(trtp, tmp_path):
    (tmp_path / "jit_only.py").write_text(JIT_ONLY)
    from pyplugins.checker._fresh import import_module

    with override(trt_version="10.8"):
        import_module(str(tmp_path / "jit_only.py"))
        report = check("jit_only", trace=True)
        assert report.ok, report.format()
        assert [(r["request"], r["implementation"]) for r in report.qdp["runs"]] == [
            (None, "jit")]
        create = next(e for e in report.trace.entries if e.method == "create_plugin")
        assert create.args_summary.endswith("phase=BUILD")  # four arguments, no request
        with pytest.raises(ValueError, match="10.9"):
            check("jit_only", qdp="aot")


@pytest.mark.parametrize("version, raises", [("10.9", False), ("11.1", True)])
def test_shape_branch_on_a_symbolic_dimension(trtp, version, raises):
    with override(trt_version=version):
        load("defects")
        report = check("shape_branch", "1-4-8x32:float32", qdp="jit")
    found = [v for v in report.violations if v.check == "shape_branch"]
    assert found, report.format()
    assert "defects.py" in found[0].message and "shape_branch_desc" in found[0].message
    if raises:  # 10.16+: the truth test itself raises, and the network cannot add the plugin
        assert "callback_error" in report.checks()
    else:  # before: always true, so the output is (8, 32) for any first dim
        assert report.output_shapes == [(8, 32)]
        assert [v.method for v in found] == ["get_output_data_types", "get_output_shapes"]


@pytest.mark.parametrize("version", ["10.9", "11.1"])
def test_a_branch_on_known_values_only_is_no_defect(trtp, version):
    with override(trt_version=version):
        load("defects")
        static = check("guarded_branch", "4x32:float32", qdp="jit")
        dynamic = check("guarded_branch", "1-4-8x32:float32", qdp="jit")
    assert static.ok and dynamic.ok, static.format() + dynamic.format()
    assert static.output_shapes == [(8, 32)] and dynamic.output_shapes == [(4, 32)]


def test_output_dtype_that_changes_between_passes(trtp):
    load("defects")
    report = check("pass_dtype", qdp="jit")
    (found,) = [v for v in report.violations if v.check == "impl_output_desc"]
    assert "['HALF']" in found.message and "['FLOAT']" in found.message


def test_autotune_types_inconsistent_with_the_registered_types(trtp):
    load("defects")
    report = check("autotune_types", qdp="jit")
    (found,) = [v for v in report.violations if v.check == "autotune_types"]
    assert "[HALF LINEAR] -> [FLOAT LINEAR]" in found.message
    assert report.qdp["runs"][0]["kept"]["combination"] == "[FLOAT LINEAR] -> [FLOAT LINEAR]"


def test_no_combination_with_the_network_types_fails_the_build(trtp):
    load("defects")
    report = check("fp16_only", qdp="jit")
    assert report.checks() == ["format"]
    assert "Offered: [HALF LINEAR] -> [HALF LINEAR]" in report.violations[0].message
    assert report.skipped == "the build failed: no combination with the network's types"


def test_impl_that_never_reads_its_stream(trtp):
    load("defects")
    report = check("no_stream", qdp="jit")
    (found,) = [v for v in report.violations if v.check == "impl_stream"]
    assert "no_stream_impl" in found.message and "ExternalStream" in found.message
    assert "impl_stream" not in check("guarded_branch", qdp="jit").checks()


def test_aot_kernel_name_missing_from_the_ptx(trtp):
    load("defects")
    report = check("wrong_name")
    (found,) = [v for v in report.violations if v.check == "aot_kernel_name"]
    assert "'add_two'" in found.message and "add_one" in found.message


@needs_ptxas
def test_aot_ptx_that_does_not_assemble(trtp):
    load("defects")
    report = check("bad_ptx")
    (found,) = [v for v in report.violations if v.check == "aot_ptx_compile"]
    assert "add.f33" in found.message or "f33" in found.message
    assert "aot_ptx_compile" not in check("big_block").checks()  # the good PTX assembles


def test_aot_argument_count_against_the_ptx_signature(trtp):
    load("defects")
    report = check("extra_arg")
    (found,) = [v for v in report.violations if v.check == "aot_signature"]
    assert "takes 3 parameter(s), but TensorRT passes 4" in found.message


def test_aot_launch_params_no_launch_accepts(trtp):
    load("defects")
    report = check("big_block")
    (found,) = [v for v in report.violations if v.check == "aot_launch_params"]
    assert "block_x is 2048" in found.message and "at min" in found.message


def test_json_report_says_what_ran(trtp):
    load("add_one")
    data = json.loads(json.dumps(check("add_one", qdp="aot").to_dict(), default=str))
    (run,) = data["qdp"]["runs"]
    assert run["implementation"] == "aot" and run["run"]["launched"] is False
    assert data["enqueue_ran"] is False


def test_trace_shows_the_quick_calls_with_their_parameter_names(trtp):
    load("add_one")
    report = check("add_one", qdp="aot", trace=True)
    text = report.trace.format_timeline()
    assert "create_plugin(name='add_one', namespace='qdp_check', fc={}, phase=BUILD, " \
           "request=PREFER_AOT)" in text
    assert "launch_params=launch(grid_x=CEIL_DIV(" in text and "block_x=256" in text
    assert "get_output_data_types(input_types=[FLOAT], ranks=[2])" in text


def test_a_plugin_without_impl_names_the_set_up_function(trtp, tmp_path):
    source = (
        "import tensorrt.plugin as trtp\n"
        "@trtp.register('qdp_check::later')\n"
        "def later_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:\n"
        "    return inp0.like()\n"
        "def enable_later():\n"
        "    @trtp.impl('qdp_check::later')\n"
        "    def later_impl(inp0, outputs, stream) -> None:\n"
        "        pass\n")
    path = tmp_path / "later.py"
    path.write_text(source)
    from pyplugins.checker._fresh import import_module

    module = import_module(str(path))
    report = check("later")
    assert "lifecycle" in report.checks()
    assert "--call enable_later" in report.format()
    module.enable_later()
    assert "lifecycle" not in check("later").checks()
