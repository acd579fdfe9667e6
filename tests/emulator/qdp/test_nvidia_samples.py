"""NVIDIA's own QDP sample module (samples/python/quickly_deployable_plugins/qdp_defs.py of 10.6,
10.9 and 11.1) imports unmodified under the emulator, registers its plugins, and they answer the
build-time calls. Read from a TensorRT mirror at test time (never stored here); skipped without
one. The sample imports torch at the top for its impl bodies: a stub stands in (no impl runs)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MIRROR = Path("/work/.mirror/NVIDIA+TensorRT/repo")
SAMPLE = "samples/python/quickly_deployable_plugins/qdp_defs.py"

DRIVE = textwrap.dedent('''
    import json, numpy as np
    from pyplugins import emulator
    trt = emulator.install()
    import qdp_defs
    from pyplugins.emulator.plugin.creator import QDP_REGISTRY
    from pyplugins.emulator.plugin.attributes import fields_from_attrs
    from pyplugins.emulator.plugin_field import PluginFieldCollection_
    from pyplugins.checker.size_tensors import SizeTensorBuilder, evaluate
    for helper in sorted(n for n in dir(qdp_defs) if n.startswith(("enable_", "register_"))):
        getattr(qdp_defs, helper)()  # each defines autotune/impl/aot_impl again; all must pass
    attrs = {"block_size": 256, "delta": 2, "pads": np.array([1, 1, 1, 1], np.int32)}
    out = {}
    for plugin_id, definition in sorted(QDP_REGISTRY.items()):
        ns, name = plugin_id.split("::")
        creator = trt.get_plugin_registry().get_creator(name, "1", ns)
        fields = fields_from_attrs({k: attrs[k] for k in definition.input_attrs})
        row = {"fields": [(f.name, f.type.name) for f in creator.field_names]}
        try:
            plugin = creator.create_plugin(name, ns, PluginFieldCollection_(fields),
                                           trt.TensorRTPhase.BUILD)
        except TypeError as err:  # int attributes under NumPy 2.x, as in TensorRT
            row["create"] = "TypeError"
            out[plugin_id] = row
            continue
        row["types"] = [t.name for t in plugin.get_output_data_types(
            [trt.DataType.FLOAT], [4 if "circ" in name else 2])]
        eb = SizeTensorBuilder()
        dims = (-1, 3, 32, 32) if "circ" in name else (-1, 8)
        shapes = plugin.get_output_shapes([eb._input(0, dims)], [], eb)
        concrete = {0: (2, 3, 32, 32) if "circ" in name else (4, 8)}
        row["shapes"] = [list(evaluate(s, concrete)) for s in shapes]
        out[plugin_id] = row
    print(json.dumps(out))
''')


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no TensorRT mirror to read NVIDIA's sample from")
@pytest.mark.parametrize("version", ["10.6", "10.9", "11.1"])
def test_nvidia_qdp_sample_imports_and_registers(tmp_path, version):
    source = subprocess.run(["git", "-C", str(MIRROR), "show", f"release/{version}:{SAMPLE}"],
                            capture_output=True, text=True, check=True).stdout
    (tmp_path / "qdp_defs.py").write_text(source)
    (tmp_path / "torch.py").write_text('"""Stub: qdp_defs imports torch for impl bodies."""\n')
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{tmp_path}:{ROOT}",
           "PYPLUGINS_TRT_VERSION": version}
    run = subprocess.run([sys.executable, "-c", DRIVE], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert set(out) == {"sample::circ_pad_plugin", "sample::elemwise_add_plugin",
                        "sample::elemwise_add_plugin_", "sample::non_zero_plugin"}
    assert out["sample::circ_pad_plugin"] == {"fields": [["pads", "INT32"]], "types": ["FLOAT"],
                                              "shapes": [[2, 3, 34, 34]]}
    size_type = "INT64" if version == "11.1" else "INT32"  # st.dtype = trt.int64 came later
    assert out["sample::non_zero_plugin"] == {"fields": [], "types": ["INT32", size_type],
                                              "shapes": [[32, 2], []]}
    assert out["sample::elemwise_add_plugin"]["fields"] == [["block_size", "INT64"]]
    try:
        int(__import__("numpy").array([1]))
    except TypeError:  # this NumPy: TensorRT's own create_plugin fails on the int attribute
        assert out["sample::elemwise_add_plugin"]["create"] == "TypeError"
    else:
        assert out["sample::elemwise_add_plugin"]["types"] == ["FLOAT"]
