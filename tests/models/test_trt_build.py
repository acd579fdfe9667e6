"""With real TensorRT: the replaced model builds through Polygraphy's loaders and the engine's
stamp refuses another GPU or TensorRT with a clear message."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("polygraphy")
gs = pytest.importorskip("onnx_graphsurgeon")
onnx = pytest.importorskip("onnx")

from pyplugins.models import trt_build
from pyplugins.models.polygraphy_plugins import apply
from tests.models import builders as b



@pytest.fixture()
def engine(tmp_path):
    graph = gs.import_onnx(b.export(b.block()))
    apply(graph)
    path = tmp_path / "replaced.onnx"
    onnx.save(gs.export_onnx(graph), str(path))
    return trt_build.build_engine(str(path), str(tmp_path / "block.engine"))


@pytest.mark.trt
@pytest.mark.gpu
def test_engine_builds_stamped_and_loads(engine):
    stamp = json.loads(engine.with_name("block.engine.json").read_text())
    assert stamp == trt_build.stamp()
    loaded = trt_build.load_engine(str(engine))
    assert loaded is not None and loaded.num_io_tensors == 2
    assert tuple(loaded.get_tensor_shape("block_out")) == (2, 9, 35)
    import tensorrt as trt

    assert loaded.get_tensor_dtype("block_out") == trt.DataType.FLOAT


@pytest.mark.trt
@pytest.mark.gpu
def test_an_engine_stamped_for_another_gpu_is_refused(engine):
    stamp_path = engine.with_name("block.engine.json")
    stamp = json.loads(stamp_path.read_text())
    stamp["gpu"], stamp["tensorrt"] = "Some Other GPU", "9.0.0"
    stamp_path.write_text(json.dumps(stamp))
    with pytest.raises(trt_build.EngineMismatchError,
                       match=r"gpu: built for 'Some Other GPU'.*tensorrt: built for '9.0.0'.*"
                             r"rebuild it on this machine"):
        trt_build.load_engine(str(engine))


@pytest.mark.trt
@pytest.mark.gpu
def test_an_unstamped_engine_is_refused(engine):
    engine.with_name("block.engine.json").unlink()
    with pytest.raises(trt_build.EngineMismatchError, match="no stamp"):
        trt_build.load_engine(str(engine))


def test_under_the_emulator_building_says_what_to_install(tmp_path):
    from pyplugins.errors import MissingDependencyError

    with pytest.raises(MissingDependencyError, match=r"pip install 'tensorrt>=10,<12'"):
        trt_build.build_engine(str(tmp_path / "m.onnx"), str(tmp_path / "m.engine"))


def test_ranges_from_shapes_accepts_static_and_ranges():
    assert trt_build.ranges_from_shapes({"x": (1, 2)}) == {"x": ((1, 2), (1, 2), (1, 2))}
    ranges = {"x": ((1, 2), (2, 2), (4, 2))}
    assert trt_build.ranges_from_shapes(ranges) == ranges
