"""Every public name of TensorRT 10.x/11.x's module resolves in the emulator (§12, issue 8)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from pyplugins import emulator as trt
from pyplugins._config import override
from pyplugins.emulator import surface
from pyplugins.emulator.surface_table import NAMES

ROOT = Path(__file__).resolve().parents[2]
MIRROR = Path("/work/.mirror/NVIDIA+TensorRT/repo")


@pytest.mark.parametrize("version", ["10.16", "11.1"])
def test_every_public_name_resolves(version):
    major = int(version.split(".")[0])
    with override(trt_version=version):
        missing = []
        for name, kind in surface.names(major).items():
            try:
                value = getattr(trt, name)
            except AttributeError:
                missing.append(name)
                continue
            if kind in ("class", "enum", "exception"):
                assert isinstance(value, type), (name, value)
        assert missing == []
        assert set(surface.names(major)) <= set(dir(trt))


def test_names_follow_the_version():
    with override(trt_version="10.16"):
        assert trt.IAlgorithmSelector.__name__ == "IAlgorithmSelector"
    with override(trt_version="11.1"):
        with pytest.raises(AttributeError, match="IAlgorithmSelector"):
            trt.IAlgorithmSelector  # removed in 11.0
        assert trt.CausalMaskKind.__name__ == "CausalMaskKind"
    with pytest.raises(AttributeError, match="NoSuchThing"):
        trt.NoSuchThing


def test_the_names_plugin_modules_touch_at_import():
    def annotated(engine: trt.ICudaEngine, context: trt.IExecutionContext) -> trt.Runtime:
        return engine

    assert typing.get_type_hints(annotated)["engine"] is trt.ICudaEngine
    assert (trt.float32, trt.float16, trt.int8, trt.int32, trt.int64, trt.bool, trt.uint8) == (
        trt.DataType.FLOAT, trt.DataType.HALF, trt.DataType.INT8, trt.DataType.INT32,
        trt.DataType.INT64, trt.DataType.BOOL, trt.DataType.UINT8)
    assert [t.itemsize for t in (trt.float32, trt.float16, trt.int4)] == [4, 2, 0.5]
    assert trt.volume(trt.Dims([2, 3, 4])) == 24 and trt.volume([]) == 1
    assert trt.init_libnvinfer_plugins(trt.Logger(), "") is True
    assert trt.Logger.Severity.WARNING == trt.Logger.WARNING
    assert issubclass(trt.IPluginV2DynamicExt, trt.IPluginV2DynamicExtBase)
    assert issubclass(trt.IPluginV2DynamicExtBase, trt.IPluginV2Ext)
    assert issubclass(trt.IPluginV2Ext, trt.IPluginV2)
    with pytest.raises(TypeError, match="No constructor defined"):
        trt.IPluginV2()
    assert tuple(trt.Dims3(1, 2, 3)) == (1, 2, 3) and tuple(trt.DimsHW(4, 5)) == (4, 5)


@pytest.mark.parametrize("name", ["Builder", "Runtime", "OnnxParser", "ICudaEngine",
                                  "IExecutionContext", "IBuilderConfig"])
def test_stand_ins_raise_one_clear_error_when_used(name):
    cls = getattr(trt, name)
    with pytest.raises(surface.NeedsTensorRT,
                       match=f"^{name} needs TensorRT: the emulator covers the plugin-facing API$"):
        cls(trt.Logger())

    class Sub(cls):  # subclassing at import time works
        pass

    with pytest.raises(surface.NeedsTensorRT, match=name):
        Sub()


def test_functions_raise_when_called_not_when_named():
    fn = trt.get_nv_onnx_parser_version
    with pytest.raises(surface.NeedsTensorRT, match="get_nv_onnx_parser_version needs TensorRT"):
        fn()


def test_v3_one_and_quick_classes_are_emulated_and_resources_raise_on_use():
    assert trt.IPluginV3.__module__ == "pyplugins.emulator.bases_v3"
    assert trt.IPluginCreatorV3One.__module__ == "pyplugins.emulator.bases_v3"
    assert trt.IPluginV3QuickCore.__module__ == "pyplugins.emulator.bases_quick"

    class Resource(trt.IPluginResource):
        pass

    with pytest.raises(surface.NeedsTensorRT, match="IPluginResource is not emulated"):
        Resource()
    assert surface.V3_NAMES == {"IPluginResource"}
    assert surface.V3_NAMES <= set(surface.names(10))


def test_enums_of_the_rest_have_their_members():
    assert trt.TensorIOMode.INPUT != trt.TensorIOMode.OUTPUT
    assert trt.TensorIOMode.INPUT == trt.TensorIOMode(trt.TensorIOMode.INPUT.value)
    assert "FP16" in trt.BuilderFlag.__members__


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no TensorRT mirror to re-read the names from")
def test_table_matches_the_binding_sources():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "extract_trt_surface.py"),
                          str(MIRROR)], check=True, capture_output=True, text=True).stdout
    committed = (ROOT / "pyplugins" / "emulator" / "surface_table.py").read_text()
    assert out == committed
    spec = importlib.util.spec_from_loader("table", loader=None)
    table = importlib.util.module_from_spec(spec)
    exec(out, table.__dict__)  # our own generated table
    assert table.NAMES == NAMES
    assert {"ICudaEngine", "IPluginV2", "init_libnvinfer_plugins", "float32"} <= set(NAMES[10])
