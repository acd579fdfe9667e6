"""CircPad's narrow-row kernel (``circ_pad_narrow``): when the plan picks it (CPU), and its
output bit for bit against ``np.pad(mode="wrap")`` (GPU)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.dtypes import ctype_from_trt
from pyplugins.emulator.specs import TensorSpec
from pyplugins.kernels import instantiations
from pyplugins.ops import circ_pad as circ_pad_op
from pyplugins.ops.circ_pad import NARROW_DATA, NARROW_ROW_BYTES, CircPad, launch_plan

from .test_circ_pad import OFFERED, gpu_check, random_array

SOURCE = Path(__file__).resolve().parents[2] / "kernels_cu" / "circ_pad.cu"


def test_every_offered_type_is_instantiated_for_the_narrow_kernel():
    listed = instantiations("circ_pad.cu")
    for data_type in OFFERED:
        assert f"circ_pad_narrow<{ctype_from_trt(data_type)}>" in listed, data_type


def test_host_knows_the_kernels_stage_size():
    found = re.search(r"#define CIRC_PAD_NARROW_DATA (\d+)", SOURCE.read_text())
    assert found and int(found.group(1)) == NARROW_DATA


@pytest.mark.parametrize("shape, pads, itemsize, planes", [
    ((1, 64, 512, 8), [1, 1, 1, 1], 4, 64),       # the benchmark's narrow rows: 40-byte rows
    ((1, 64, 512, 8), [1, 1, 1, 1], 2, 64),
    ((3, 5, 7), [2, 3], 8, 3),                    # rank 3: three planes of 5 x 12
    ((9,), [3, 0], 1, 1),                         # rank 1: a plane of one row
    ((4, 3, 6, 1), [5, 4, 0, 0], 4, 12),          # W = 1, pads larger than W
    ((2, 3, 4, 5), [7, 11, 5, 6], 2, 6),
])
def test_narrow_rows_take_the_narrow_kernel(shape, pads, itemsize, planes):
    plan = launch_plan(shape, pads, itemsize)
    assert plan.narrow_planes == planes
    assert plan.out_shape[-1] * itemsize <= NARROW_ROW_BYTES


@pytest.mark.parametrize("shape, pads, itemsize, why", [
    ((1, 4, 512, 512), [1, 1, 1, 1], 4, "wide rows"),
    ((1, 4, 33), [0, 0], 4, "132-byte rows"),
    ((2, 4096, 8), [1, 1, 1, 1], 4, "a 128 KiB plane does not fit a stage"),
    ((2, 2, 3), [0, 0, 20000, 20000], 4, "one block would write too large a plane"),
    ((0, 3, 4), [1, 1], 4, "empty output"),
])
def test_other_shapes_keep_the_row_kernel(shape, pads, itemsize, why):
    assert launch_plan(shape, pads, itemsize).narrow_planes == 0, why


def test_narrow_switch_off_reverts_to_the_row_kernel(monkeypatch):
    monkeypatch.setattr(circ_pad_op, "NARROW_ROW_BYTES", 0)
    assert launch_plan((1, 64, 512, 8), [1, 1, 1, 1], 4).narrow_planes == 0


# -- GPU -------------------------------------------------------------------------------------------

NARROW_TYPES = (np.float32, np.float16, np.int8, np.int64)


def _launch_name(shape, dtype, pads):
    data_type = {np.float32: trt.DataType.FLOAT, np.float16: trt.DataType.HALF,
                 np.int8: trt.DataType.INT8, np.int64: trt.DataType.INT64}[dtype]
    plugin = CircPad(pads=list(pads))
    desc = trt.PluginTensorDesc(shape, data_type, trt.TensorFormat.LINEAR)
    return plugin.plan([desc], [], 0).name


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NARROW_TYPES)
@pytest.mark.parametrize("shape, pads", [
    ((2, 3, 16, 8), [1, 1, 1, 1]),                 # rank 4, the benchmark's geometry, small
    ((3, 7, 9), [2, 3, 1, 2]),                     # odd W, odd H: unaligned planes and rows
    ((5, 4, 6, 1), [3, 4, 2, 0]),                  # W = 1, pads larger than W
    ((2, 2, 3, 2), [5, 7, 9, 4]),                  # pads larger than H and W, several wraps
    ((11, 5), [1, 2, 3, 0]),                       # rank 2: a single plane
    ((64, 300, 7, 3), [1, 1, 2, 1]),               # many small planes: tiles of many planes,
                                                   # several tiles per block (the pipeline)
    ((3, 40, 120, 5), [0, 2, 1, 0]),               # planes of 600 elements, pads on one side
])
def test_gpu_narrow_kernel_matches_np_pad(dtype, shape, pads, monkeypatch):
    monkeypatch.setattr(circ_pad_op, "FLAT", False)  # these shapes take circ_pad_flat otherwise
    assert _launch_name(shape, dtype, pads).startswith("circ_pad_narrow")
    gpu_check(TensorSpec(shape, dtype, data=random_array(shape, dtype, seed=len(shape))), pads)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NARROW_TYPES)
def test_gpu_narrow_plane_that_fills_a_stage(dtype, monkeypatch):
    """A plane of about NARROW_DATA bytes: one plane a tile, slots at the stage's end."""
    monkeypatch.setattr(circ_pad_op, "FLAT", False)
    itemsize = np.dtype(dtype).itemsize
    h = (NARROW_DATA - 32) // (8 * itemsize)
    shape = (3, 5, h, 8)
    assert _launch_name(shape, dtype, [1, 1, 1, 1]).startswith("circ_pad_narrow")
    gpu_check(TensorSpec(shape, dtype, data=random_array(shape, dtype, seed=3)), [1, 1, 1, 1])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", NARROW_TYPES)
def test_gpu_narrow_empty_tensor(dtype):
    gpu_check(TensorSpec((0, 3, 4, 5), dtype, data=np.zeros((0, 3, 4, 5), dtype)), [1, 1, 1, 1])
