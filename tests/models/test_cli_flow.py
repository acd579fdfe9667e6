"""The user's command-line flow on a model of its own: ``polygraphy plugin match|replace`` with
the shipped patterns, ``polygraphy run --onnxrt --save-outputs`` on the original,
``polygraphy run --pyplugins --load-outputs`` on the replaced model, ``pyplugins check``."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx_graphsurgeon")
pytest.importorskip("polygraphy")

from tests.models import builders as b

ROOT = Path(__file__).resolve().parents[2]
#: The ``pyplugins`` command of this checkout (the console script may be another install's).
PYPLUGINS = [sys.executable, "-c", "import sys; from pyplugins.cli import main; sys.exit(main())"]
pytestmark = pytest.mark.skipif(shutil.which("polygraphy") is None,
                                reason="the polygraphy command is not on PATH")


def _entry_point_shim(directory: Path) -> Path:
    """A dist-info declaring setup.cfg's ``polygraphy.run.plugins`` entry points, so Polygraphy
    finds the extension of this checkout without installing it."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    group = cfg["options.entry_points"]["polygraphy.run.plugins"].strip()
    info = directory / "pyplugins_checkout-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pyplugins-checkout\n"
                                   "Version: 0\n")
    (info / "entry_points.txt").write_text(f"[polygraphy.run.plugins]\n{group}\n")
    return directory


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    """The model, replaced by the CLI, and the environment the commands run in."""
    work = tmp_path_factory.mktemp("cli_flow")
    shim = _entry_point_shim(work / "shim")
    env = dict(os.environ, PYPLUGINS_TRT="emulator", PYTHONPATH=os.pathsep.join(
        [str(ROOT), str(shim), *filter(None, [os.environ.get("PYTHONPATH")])]))
    # Not the block the other tests use: other sizes, theta, slope and weights.
    onnx.save(b.export(b.block(batch=1, seq=5, heads=2, dim=12, eps=2e-5, theta=500000.0,
                               offset=0, slope=0.2, seed=7)), str(work / "model.onnx"))

    def run(*args, ok=True):
        proc = subprocess.run(list(args), cwd=work, env=env, capture_output=True, text=True,
                              timeout=300)
        if ok:
            assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    patterns = run(*PYPLUGINS, "patterns-dir").stdout.strip()
    run("polygraphy", "plugin", "match", "model.onnx", "--plugin-dir", patterns,
        "-o", "config.yaml")
    run("polygraphy", "plugin", "replace", "model.onnx", "--plugin-dir", patterns,
        "--config", "config.yaml", "-o", "replaced.onnx")
    run("polygraphy", "run", "model.onnx", "--onnxrt", "--save-outputs", "ref.json")
    return work, run


def test_replace_inserts_every_shipped_plugin(flow):
    work, _ = flow
    ops = [n.op_type for n in onnx.load(str(work / "replaced.onnx")).graph.node]
    assert sorted(o for o in ops if o in ("RMSNorm", "RoPE", "CircPad", "LReLU_TRT")) == [
        "CircPad", "LReLU_TRT", "RMSNorm", "RMSNorm", "RoPE"]
    rope = next(n for n in onnx.load(str(work / "replaced.onnx")).graph.node
                if n.op_type == "RoPE")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in rope.attribute}
    assert attrs == {"rotary_dim": 12, "theta": 500000.0, "layout": b"neox",
                     "position_offset": 0}


def test_pyplugins_runner_matches_onnxruntime_outputs(flow):
    _, run = flow
    proc = run("polygraphy", "run", "replaced.onnx", "--pyplugins", "--pyplugins-device", "cpu",
               "--load-outputs", "ref.json")
    text = proc.stdout + proc.stderr
    assert "PASSED | Output: 'block_out'" in text
    assert "ran its NumPy reference, not its kernel" in text


def test_check_first_runs_the_check_lifecycle_on_each_plugin_node(flow):
    work, run = flow
    model = onnx.load(str(work / "replaced.onnx"))
    norm = next(n for n in model.graph.node if n.op_type == "RMSNorm")
    next(a for a in norm.attribute if a.name == "eps").f = -1.0
    onnx.save(model, str(work / "bad_eps.onnx"))
    proc = run("polygraphy", "run", "bad_eps.onnx", "--pyplugins", "--pyplugins-device", "cpu",
               "--pyplugins-check-first", ok=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "failed TensorRT's plugin lifecycle (emulated)" in text
    proc = run("polygraphy", "run", "replaced.onnx", "--pyplugins", "--pyplugins-device", "cpu",
               "--pyplugins-check-first", "--load-outputs", "ref.json")
    assert "PASSED | Output: 'block_out'" in proc.stdout + proc.stderr


@pytest.mark.gpu
def test_pyplugins_runner_matches_onnxruntime_outputs_with_kernels(flow):
    _, run = flow
    proc = run("polygraphy", "run", "replaced.onnx", "--pyplugins", "--pyplugins-device", "gpu",
               "--load-outputs", "ref.json")
    text = proc.stdout + proc.stderr
    assert "PASSED | Output: 'block_out'" in text and "ran its kernel on the GPU" in text
    assert "NumPy reference" not in text


def test_a_wrong_attribute_is_a_clear_mismatch(flow):
    work, run = flow
    model = onnx.load(str(work / "replaced.onnx"))
    norm = next(n for n in model.graph.node if n.op_type == "RMSNorm")
    next(a for a in norm.attribute if a.name == "eps").f = 0.5
    onnx.save(model, str(work / "wrong_eps.onnx"))
    proc = run("polygraphy", "run", "wrong_eps.onnx", "--pyplugins", "--load-outputs",
               "ref.json", ok=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "FAILED | Output: 'block_out' | Difference exceeds tolerance" in text


def test_pyplugins_check_accepts_the_replaced_model(flow):
    _, run = flow
    proc = run(*PYPLUGINS, "check", "replaced.onnx", "--device", "cpu")
    assert "5 plugin node(s), 0 with problems" in proc.stdout


def test_pyplugins_check_reports_a_declared_shape_the_plugin_does_not_give(flow):
    work, run = flow
    model = onnx.load(str(work / "replaced.onnx"))
    pad = next(n for n in model.graph.node if n.op_type == "CircPad")
    pad.attribute[0].ints[:] = [2, 1, 1, 1]  # seq padded by 2 instead of 3
    onnx.save(model, str(work / "wrong_pads.onnx"))
    proc = run(*PYPLUGINS, "check", "wrong_pads.onnx", "--device", "cpu",
               ok=False)
    assert proc.returncode == 1
    assert ("mismatch: output 0 'block_out': the plugin gives shape (1, 7, 27), the graph "
            "declares (1, 8, 27)") in proc.stdout
