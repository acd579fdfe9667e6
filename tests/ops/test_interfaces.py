"""Every shipped op passes ``pyplugins check`` registered as IPluginV2DynamicExt, as IPluginV3 and
(``PYPLUGINS_INTERFACE=qdp``) as a tensorrt.plugin plugin with its AOT kernel (the same class;
``pp.register(interface=...)``), and the V3-only test plugins pass as V3."""

from __future__ import annotations

import json

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins._config import override
from pyplugins.cli import main
from pyplugins.runtime import qdp
from pyplugins.runtime.creator import register
from pyplugins.checker import lifecycle
from pyplugins.ops import (BarPlugin, CircPad, LeakyReLU, LeakyReLUNumba, Pool, RMSNorm, RoPE,
                           SeqRepeat)

from tests import v3_plugins
from .support import check_cli, run_demo

#: (class, module, --plugin, --input specs, --attr values): what each op's own CLI test checks.
CHECKS = [
    (CircPad, "pyplugins.ops.circ_pad", "CircPad", ["1-2-3x3x8x8:float32"], ["pads=1,1,2,2"]),
    (LeakyReLU, "pyplugins.ops.leaky_relu", "LReLU_TRT", ["1-2-4x3x5:float16"],
     ["neg_slope=0.2"]),
    (LeakyReLUNumba, "pyplugins.ops.leaky_relu", "LReLU_TRT:1:numba", ["1-2-4x3x5:float32"],
     ["neg_slope=0.2"]),
    (BarPlugin, "pyplugins.ops.bar", "BarPlugin", ["2x3x5:float16", "1-4-8x3x5:float16"], []),
    (Pool, "pyplugins.ops.pool", "Pool", ["1-2-4x3x9-12-16x9-9-16:float16"],
     ["mode=avg", "kernel=3,3", "stride=2,2", "padding=1,1"]),
    (RMSNorm, "pyplugins.ops.rmsnorm", "RMSNorm", ["1-2-4x7x48:float16", "48:float16"],
     ["eps=0.00001"]),
    (RoPE, "pyplugins.ops.rope", "RoPE", ["1-2-4x1-9-64x4x64:float32", "1-2-4x1-9-64:int32"],
     ["rotary_dim=32", "layout=gptj"]),
    (SeqRepeat, "pyplugins.ops.seq_repeat", "SeqRepeat", ["2x1-5-9x3:float32"], ["factor=3"]),
]


@pytest.fixture
def as_interface():
    """Register a class with an interface for one test; its V2 registration comes back after."""
    changed = []

    def use(cls, interface):
        changed.append(cls)
        register(cls, replace=True, interface=interface)
        return cls.creator

    yield use
    for cls in changed:
        register(cls, replace=True, interface="v2")


@pytest.mark.parametrize("interface", ["v2", "v3"])
@pytest.mark.parametrize("cls,module,plugin,inputs,attrs", CHECKS,
                         ids=[c[0].__name__ for c in CHECKS])
def test_check_passes_with_either_interface(capsys, as_interface, interface, cls, module, plugin,
                                            inputs, attrs):
    creator = as_interface(cls, interface)
    expected = trt.IPluginCreatorV3One if interface == "v3" else trt.IPluginCreator
    assert isinstance(creator, expected)
    out = check_cli(capsys, module, plugin, *inputs, attrs=attrs)
    assert f"{plugin if ':' in plugin else plugin + ':1:'}" in out and "OK" in out


#: The shipped ops as QDP (a fixed input count: RoPE takes x alone), each with an aot_launch;
#: QDP attributes have no defaults, so the node carries every field.
QDP_ATTRS = {Pool: ["in_scale=0", "out_scale=0"], RoPE: ["theta=10000", "position_offset=0"]}
QDP_CHECKS = [(cls, module, inputs[:1] if cls is RoPE else inputs, attrs + QDP_ATTRS.get(cls, []))
              for cls, module, _, inputs, attrs in CHECKS if cls is not LeakyReLUNumba]


@pytest.mark.parametrize("cls,module,inputs,attrs", QDP_CHECKS,
                         ids=[c[0].__name__ for c in QDP_CHECKS])
def test_check_passes_as_qdp_with_the_aot_artifact_built_and_validated(
        capsys, as_interface, cls, module, inputs, attrs):
    with override(interface="qdp"):  # as PYPLUGINS_INTERFACE=qdp
        creator = as_interface(cls, None)
    assert isinstance(creator, trt.IPluginCreatorV3Quick)
    argv = ["check", module, "--plugin", f"pyplugins::{cls.name}", "--qdp", "aot",
            "--device", "cpu", "--json"]
    for spec in inputs:
        argv += ["--input", spec]
    for attr in attrs:
        argv += ["--attr", attr]
    try:
        code = main(argv)
    finally:
        qdp.forget(cls)  # the V2 creator comes back after the test; the QDP one goes now
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 0 and data["exit_status"] == 0, out + err
    (run,) = data["qdp"]["runs"]
    assert run["implementation"] == "aot" and "aot_unsupported" not in data["qdp"], run
    assert "_aot" in run["artifact"]["kernel"] and run["run"]["launched"] is False, run


def test_v3_check_times_every_tactic_of_circ_pad(as_interface):
    as_interface(CircPad, "v3")
    report = lifecycle.run(CircPad.creator, ["2x3x8x8:float32"], {"pads": [1, 1, 2, 2]},
                           device="cpu", trace=True)
    assert report.ok, report
    timed = [e.args_summary for e in report.trace.entries
             if e.method == "set_tactic" and (e.phase or "").startswith("build: tactics")]
    assert timed == ["tactic=1", "tactic=2"]


def test_size_tensor_plugin_passes_as_v3():
    report = lifecycle.run(v3_plugins.NonZero.creator, ["3x4:float32"], device="cpu")
    assert report.ok, report


def test_shape_input_plugin_passes_as_v3():
    report = lifecycle.run(v3_plugins.Tile.creator, ["3:float32"], device="cpu",
                           shape_inputs=[(7,)])
    assert report.ok, report
    assert tuple(report.output_shapes[0]) == (7,)


@pytest.mark.parametrize("aliased_io", [False, True])
def test_aliased_plugin_passes_as_v3(aliased_io):
    """With and without PreviewFeature.ALIASED_PLUGIN_IO_10_03 (the alias honoured or not)."""
    report = lifecycle.run(v3_plugins.LeakyReLUInPlace.creator, ["2x3:float32"],
                           {"neg_slope": 0.1}, device="cpu", aliased_io=aliased_io)
    assert report.ok, report


def test_in_place_leaky_relu_reference_is_the_shipped_ops():
    x = np.float32([-2.0, 3.0])
    (want,) = LeakyReLU(neg_slope=0.5).reference(x)
    (got,) = v3_plugins.LeakyReLUInPlace(neg_slope=0.5).reference(x)
    assert np.array_equal(got, want)


OP_DEMOS = ["bar_demo.py", "circ_pad_demo.py", "leaky_relu_demo.py", "pool_demo.py",
            "rmsnorm_demo.py", "rope_demo.py", "seq_repeat_demo.py"]


@pytest.mark.parametrize("demo", OP_DEMOS)
def test_demo_runs_as_v3_on_cpu(demo):
    out = run_demo(demo, "--device", "cpu", "--interface", "v3", "--trace")
    assert "not run" in out and "OK" in out
    assert "attach_to_context" in out and "get_fields_to_serialize" in out  # the V3 lifecycle


@pytest.mark.gpu
def test_circ_pad_demo_matches_numpy_as_v3():
    assert "matches np.pad" in run_demo("circ_pad_demo.py", "--interface", "v3")


@pytest.mark.parametrize("plugin,argv", [
    ("PPTile", ["--input", "3:float32", "--shape-input", "7"]),
    ("PPNonZero", ["--input", "3x4:float32"]),
    ("PPLeakyReLUInPlace", ["--input", "2x3:float32", "--aliased-io"]),
])
def test_check_command_on_the_v3_test_plugins(capsys, plugin, argv):
    from pyplugins import cli

    status = cli.main(["check", "tests.v3_plugins", "--plugin", plugin, *argv])  # same module
    out = capsys.readouterr()
    assert status == 0, out.out + out.err
    assert f"{plugin}:1:: OK" in out.out
