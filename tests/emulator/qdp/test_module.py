"""``import tensorrt.plugin`` under the emulator: one module, imported on demand, present from 10.6,
with the names of the emulated version and TensorRT's experimental warning (§8)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pyplugins import emulator as trt
from pyplugins._config import override
from pyplugins.emulator.surface_table import PLUGIN_MODULE, PLUGIN_SINCE

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent('''
    import json, os, sys
    os.environ["PYPLUGINS_TRT_VERSION"] = "10.5"
    from pyplugins import emulator
    trt = emulator.install()
    out = {"attr_before": hasattr(trt, "plugin")}
    try:
        import tensorrt.plugin
    except ModuleNotFoundError as err:
        out["missing"] = [err.name, "10.6" in str(err)]
    os.environ["PYPLUGINS_TRT_VERSION"] = "10.6"
    from tensorrt import plugin  # imports pyplugins.emulator.plugin (tensorrt's real name)
    import tensorrt.plugin  # through the alias finder: the same module, not a second copy
    out["same"] = [trt.plugin is plugin, sys.modules["tensorrt.plugin"] is plugin,
                   sys.modules["pyplugins.emulator.plugin"] is plugin,
                   plugin.__spec__.name, hasattr(plugin, "aot_impl")]
    os.environ["PYPLUGINS_TRT_VERSION"] = "11.1"
    import tensorrt.plugin as trtp
    out["aot_later"] = [trtp is plugin, hasattr(trtp, "aot_impl")]
    emulator.uninstall()
    out["after_uninstall"] = ["tensorrt.plugin" in sys.modules,
                              any(type(f).__name__ == "SubpackageAlias" for f in sys.meta_path)]
    print(json.dumps(out))
''')


def test_import_wiring_version_check_and_experimental_warning():
    run = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, env={"PATH": "/usr/bin:/bin",
                                                     "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["attr_before"] is False
    assert out["missing"] == ["tensorrt.plugin", True]
    assert out["same"] == [True, True, True, "pyplugins.emulator.plugin", False]
    assert out["aot_later"] == [True, True]
    assert out["after_uninstall"] == [False, False]
    warnings = [line for line in run.stderr.splitlines() if "tensorrt.plugin" in line]
    assert warnings == ["[TRT] [W] Functionality provided through tensorrt.plugin module is "
                        "experimental in TensorRT 10.6."]  # once, with 10.6's wording


@pytest.mark.parametrize("version", ["10.6", "10.8", "10.9", "10.16", "11.1"])
def test_public_names_follow_the_emulated_version(trtp, version):
    major, minor = (int(p) for p in version.split("."))
    expected = {name for name, since in PLUGIN_MODULE.items() if since <= (major, minor)}
    with override(trt_version=version):
        assert set(trtp.__all__) == expected
        assert expected <= set(dir(trtp))
        for name in expected:
            assert getattr(trtp, name) is not None
        for name in set(PLUGIN_MODULE) - expected:
            assert not hasattr(trtp, name)


def test_binding_names_of_qdp_follow_the_minor_version():
    assert PLUGIN_SINCE["QuickPluginCreationRequest"] == (10, 9)
    with override(trt_version="10.8"):
        assert hasattr(trt, "IPluginV3QuickCore") and not hasattr(trt, "ISymExpr")
        assert not hasattr(trt, "QuickPluginCreationRequest")  # QDP's IS_AOT_ENABLED is False
    with override(trt_version="10.5"):
        with pytest.raises(AttributeError, match="binds it from 10.6"):
            trt.IPluginCreatorV3Quick
    with override(trt_version="11.1"):
        assert trt.QuickPluginCreationRequest.STRICT_AOT.value == 4
        assert trt.PluginArgDataType.INT32.value == 2


def test_quick_binding_objects_behave_as_bound(trtp):
    with pytest.raises(TypeError, match="No constructor defined"):
        trt.KernelLaunchParams()
    with pytest.raises(TypeError, match="No constructor defined"):
        trt.ISymExprs()
    sym = trt.ISymExpr()
    sym.type = trt.PluginArgType.INT
    with pytest.raises(AttributeError):
        sym.type  # TensorRT binds a setter only
    args = trt.ISymExprs._make()
    args.nbSymExprs = 1
    args[3] = sym  # out of range: ignored, as TensorRT's setter returning False
    assert len(args) == 1 and args[0] is None and args[3] is None
    with pytest.raises(TypeError, match="must be a tensorrt.ISymExpr"):
        args[0] = 5
