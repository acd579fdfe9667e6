"""pyplugins.models.engine: refuses clearly under the emulator; real builds are marked ``trt``."""

from __future__ import annotations

import pytest

from pyplugins.models import engine
from pyplugins.errors import MissingDependencyError


def test_build_under_emulator_says_what_to_install():
    with pytest.raises(MissingDependencyError, match=r"pip install 'tensorrt>=10,<12'"):
        engine.build_from_onnx(b"not used")


def test_profiles_from_shapes_accepts_static_and_ranges():
    assert engine.profiles_from_shapes({"x": (1, 2)}) == {"x": ((1, 2), (1, 2), (1, 2))}
    ranges = {"x": ((1, 2), (2, 2), (4, 2))}
    assert engine.profiles_from_shapes(ranges) == ranges


@pytest.mark.trt
@pytest.mark.gpu
def test_engine_with_plugins_round_trips_in_a_fresh_process(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "build_and_run.py"
    script.write_text(
        "import sys, numpy as np, cupy as cp\n"
        "import pyplugins.ops\n"
        "from pyplugins import engine\n"
        "from demos.onnx_demo import make_model\n"
        "model, x = make_model()\n"
        "plan = engine.build_from_onnx(model.SerializeToString(),"
        " profiles={'x': (x.shape,) * 3})\n"
        "open(sys.argv[1], 'wb').write(plan)\n")
    plan_path = tmp_path / "plan.engine"
    subprocess.run([sys.executable, str(script), str(plan_path)], check=True)
    import cupy as cp

    import pyplugins.ops  # noqa: F401 - registers the creators in this process
    from demos.onnx_demo import make_model, reference

    _, x = make_model()
    outputs = engine.run_plan(plan_path.read_bytes(), {"x": cp.asarray(x)})
    (out,) = outputs.values()
    assert cp.allclose(out, cp.asarray(reference(x)), rtol=1e-3, atol=1e-3)
