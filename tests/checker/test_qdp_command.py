"""``pyplugins check`` on tensorrt.plugin (QDP) modules: ``--plugin NS::NAME``, ``--qdp``, the
node's ``aot`` attribute, ``--call`` for set-up functions, ``--json`` and ``--trace``."""

from __future__ import annotations

import json
import shutil

from pyplugins.cli import main

from .support import MODULES

LATER = '''
import tensorrt.plugin as trtp


@trtp.register("qdp_check::later")
def later_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    return inp0.like()


def enable_later():
    @trtp.impl("qdp_check::later")
    def later_impl(inp0, outputs, stream) -> None:
        stream
'''


def copy_module(tmp_path, name):
    """A copy of qdp_modules/<name>.py under a new path (so it is imported afresh)."""
    for suffix in (".py", ".ptx"):
        source = MODULES / f"{name}{suffix}"
        if source.is_file():
            shutil.copy(source, tmp_path / source.name)
    for shared in ("add_one.ptx", "helpers.py"):
        shutil.copy(MODULES / shared, tmp_path / shared)
    return str(tmp_path / f"{name}.py")


def run_main(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_says_which_implementation_ran(trtp, tmp_path, capsys):
    code, out, _ = run_main(["check", copy_module(tmp_path, "add_one"), "--plugin",
                             "qdp_check::add_one", "--input", "1-4-8x32:float32", "--qdp", "aot",
                             "--device", "cpu", "--json"], capsys)
    data = json.loads(out)
    assert code == 0, data
    (run,) = data["qdp"]["runs"]
    assert (run["request"], run["implementation"]) == ("PREFER_AOT", "aot")
    assert run["artifact"]["kernel"] == "add_one" and run["run"]["launched"] is False
    assert data["enqueue_ran"] is False and data["exit_status"] == 0


def test_node_aot_attribute_and_trace(trtp, tmp_path, capsys):
    code, out, err = run_main(["check", copy_module(tmp_path, "add_one"), "--input",
                               "4x32:float32", "--attr", "aot=0", "--device", "cpu", "--trace"],
                              capsys)
    assert code == 0, out + err
    assert "qdp JIT (request STRICT_JIT)" in out
    assert "not in the creator's field_names" not in err  # the parser reads `aot` itself
    assert "get_supported_format_combinations(in_out=" in out and "request=STRICT_JIT" in out


def test_call_runs_the_set_up_function_the_error_names(trtp, tmp_path, capsys):
    path = tmp_path / "later.py"
    path.write_text(LATER)
    code, out, _ = run_main(["check", path, "--input", "4x32:float32", "--device", "cpu"],
                            capsys)
    assert code == 1 and "--call enable_later" in out
    code, out, _ = run_main(["check", path, "--input", "4x32:float32", "--device", "cpu",
                             "--call", "enable_later"], capsys)
    assert code == 0, out


def test_call_of_a_missing_function_is_a_usage_error(trtp, tmp_path, capsys):
    path = tmp_path / "later2.py"
    path.write_text(LATER.replace("qdp_check::later", "qdp_check::later2"))
    code, _, err = run_main(["check", path, "--input", "4x32:float32", "--call", "enable_nope"],
                            capsys)
    assert code == 2 and "enable_nope" in err and "enable_later" in err


def test_qdp_flag_on_a_plugin_that_is_not_qdp_is_a_usage_error(capsys):
    code, _, err = run_main(["check", "pyplugins.ops.leaky_relu", "--plugin", "LReLU_TRT",
                             "--input", "4:float32", "--qdp", "aot"], capsys)
    assert code == 2 and "not a tensorrt.plugin (QDP) plugin" in err


NO_AOT = '''
import pyplugins as pp
from pyplugins.ops.leaky_relu import LeakyReLU


@pp.register(interface="qdp")
class NoHook(LeakyReLU):
    name, namespace, aot_launch = "NoHookCheck", "qdp_no_aot", None


@pp.register(interface="qdp")
class Scratch(LeakyReLU):
    name, namespace = "ScratchCheck", "qdp_no_aot"

    def get_workspace_size(self, input_desc, output_desc):
        return 0
'''


def test_check_says_why_a_class_cannot_be_aot(trtp, tmp_path, capsys):
    path = tmp_path / "no_aot.py"
    path.write_text(NO_AOT)
    for plugin, why in (("NoHookCheck", "defines no aot_launch hook"),
                        ("ScratchCheck", "overrides get_workspace_size")):
        argv = ["check", path, "--plugin", f"qdp_no_aot::{plugin}", "--input", "4x8:float32",
                "--qdp", "aot", "--device", "cpu"]
        code, out, err = run_main(argv + ["--json"], capsys)
        data = json.loads(out)
        reason = data["qdp"]["aot_unsupported"]
        assert f"plugin '{plugin}'" in reason and why in reason, reason
        assert [r["implementation"] for r in data["qdp"]["runs"]] == ["jit"]
        code, out, err = run_main(argv, capsys)
        assert f"qdp AOT not possible: plugin '{plugin}'" in out and why in out, out + err
    code, out, _ = run_main(["check", copy_module(tmp_path, "add_one"), "--plugin",
                             "qdp_check::add_one", "--input", "4x32:float32", "--qdp", "aot",
                             "--device", "cpu", "--json"], capsys)
    assert "aot_unsupported" not in json.loads(out)["qdp"]  # it has an aot_impl
