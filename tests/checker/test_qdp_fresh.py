"""The fresh-process check of QDP plugins: a JIT engine re-created from its fields in a process that
only imports the plugin's module (fields, and outputs on a GPU, compared); an AOT engine's
artifact already runs in a process that never imports it."""

from __future__ import annotations

import numpy as np
import pytest

from pyplugins.checker import lifecycle
from pyplugins.checker._fresh import import_module

from .support import MODULES, load

ADD_K = str(MODULES.parent.parent / "models" / "plugins" / "qdp_add_k.py")

LATE_IMPL = '''
import tensorrt.plugin as trtp


@trtp.register("qdp_fresh::late")
def late_desc(inp0: trtp.TensorDesc) -> trtp.TensorDesc:
    return inp0.like()


def enable_late():
    @trtp.impl("qdp_fresh::late")
    def late_impl(inp0, outputs, stream) -> None:
        stream
'''


def _fresh(plugin, module, **kw):
    return lifecycle.run(plugin, ["2x8:float32"], kw.pop("fields", None), plugin_module=module,
                         device=kw.pop("device", "cpu"), fresh_process=True, **kw)


def test_a_jit_engine_is_re_created_from_its_fields_in_a_new_process():
    report = _fresh("add_k_jit:1:qdp_models", ADD_K, fields={"k": [3]})
    assert report.ok, report.format()
    assert report.fresh_process.startswith("ran (JIT: re-created from the engine's fields")
    assert "qdp_add_k.py" in report.fresh_process


def test_an_aot_engines_fresh_process_is_its_artifacts_run(trtp):
    load("add_one")  # under a made-up module name: the child imports its file
    report = _fresh("add_one:1:qdp_check", None, qdp="both")
    assert report.ok, report.format()
    assert "JIT: re-created" in report.fresh_process
    assert "AOT: its artifact ran in a process that never imported" in report.fresh_process
    assert "add_one.py" in report.fresh_process


def test_an_impl_the_module_does_not_define_on_import_fails_in_the_fresh_process(trtp, tmp_path):
    path = tmp_path / "late_impl.py"
    path.write_text(LATE_IMPL)
    import_module(str(path)).enable_late()  # what the author's script does before building
    report = _fresh("late:1:qdp_fresh", str(path))
    found = [v for v in report.violations if v.check == "fresh_process"]
    assert len(found) == 1, report.format()
    assert "late_impl.py" in found[0].message
    assert "create_plugin" in found[0].message and "RUNTIME" in found[0].message


def test_a_pp_plugin_registered_as_qdp_is_registered_as_qdp_in_the_fresh_process(monkeypatch):
    """LeakyReLU's module registers it as V2 on import; the child gets PYPLUGINS_INTERFACE=qdp,
    as the check's process defined it as QDP (without that it finds no QDP creator)."""
    from pyplugins.ops.leaky_relu import LeakyReLU
    from pyplugins.runtime import qdp

    monkeypatch.delenv("PYPLUGINS_INTERFACE", raising=False)
    creator = qdp.define(LeakyReLU)
    try:
        report = lifecycle.run(creator, ["2x8:float32"], {"neg_slope": 0.25}, device="cpu",
                               fresh_process=True, qdp="jit")
    finally:
        qdp.forget(LeakyReLU)
    assert report.ok, report.format()
    assert "'pyplugins.ops.leaky_relu' under PYPLUGINS_INTERFACE=qdp" in report.fresh_process


@pytest.mark.gpu
def test_a_jit_engines_outputs_agree_in_the_fresh_process():
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    from pyplugins.emulator.specs import TensorSpec

    report = lifecycle.run("add_k_jit:1:qdp_models", [TensorSpec(x.shape, x.dtype, data=x)],
                           {"k": [3]}, plugin_module=ADD_K, device="gpu", fresh_process=True)
    assert report.ok, report.format()
    assert "outputs compared" in report.fresh_process
    np.testing.assert_array_equal(report.outputs[0], x + 3)
