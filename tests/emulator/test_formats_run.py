"""Every accepted format combination: the layouts (CPU, hand-worked) and the runs (GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyplugins import emulator
from pyplugins.checker import _fresh, buffers, lifecycle
from pyplugins.emulator.enums import TensorFormat as F
from pyplugins.emulator.layouts import LAYOUTS, from_format, runnable, to_format

emulator.install()

PLUGINS = Path(__file__).parent / "plugins"

# x[c, 0, w] = 10*c + w with C=3, H=1, W=2 (docs/formats.md, "A small example")
X = np.array([[[[0, 1]], [[10, 11]], [[20, 21]]]], dtype=np.float32)


@pytest.mark.parametrize("fmt, expected", [
    (F.LINEAR, [0, 1, 10, 11, 20, 21]),
    (F.HWC8, [0, 10, 20, 0, 0, 0, 0, 0, 1, 11, 21, 0, 0, 0, 0, 0]),
    (F.CHW4, [0, 10, 20, 0, 1, 11, 21, 0]),
    (F.CHW2, [0, 10, 1, 11, 20, 0, 21, 0]),
    (F.HWC, [0, 10, 20, 1, 11, 21]),
])
def test_layouts_match_the_hand_worked_example(fmt, expected):
    assert to_format(X, fmt).tolist() == expected
    assert from_format(np.array(expected, np.float32), X.shape, fmt).tolist() == X.tolist()


def test_three_d_layouts_by_hand():
    x = np.arange(2 * 2 * 1 * 2, dtype=np.int32).reshape(1, 2, 2, 1, 2)  # C=2 D=2 H=1 W=2
    # DHWC8: for each (d, h, w) the 2 channels then 6 zeros
    expected = []
    for d in range(2):
        for w in range(2):
            expected += [int(x[0, 0, d, 0, w]), int(x[0, 1, d, 0, w])] + [0] * 6
    assert to_format(x, F.DHWC8).tolist() == expected
    # CDHW32: one block of 32 channels, channel innermost
    flat = to_format(x, F.CDHW32).reshape(2, 1, 2, 32)
    assert flat[..., :2].tolist() == np.moveaxis(x[0], 0, -1).tolist() and not flat[..., 2:].any()


@pytest.mark.parametrize("fmt", list(LAYOUTS))
def test_round_trip_and_padded_size_agree_with_the_buffers(fmt):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 3, 3, 2)).astype(np.float32)
    flat = to_format(x, fmt)
    assert flat.size == buffers.padded_volume(x.shape, fmt)
    assert np.array_equal(from_format(flat, x.shape, fmt), x)


def test_what_cannot_be_laid_out():
    assert not runnable(F.DLA_HWC4, 4) and not runnable(F.CHW4, 2) and runnable(F.LINEAR, 1)
    with pytest.raises(ValueError, match="rank >= 3"):
        to_format(np.zeros((2, 3)), F.HWC8)


def test_without_a_gpu_the_report_lists_the_combinations_not_run():
    _fresh.import_module(str(PLUGINS / "formats.py"))
    report = lifecycle.run("PPTestFormatCHW4Linear", ["2x3x4x4:float32"], device="cpu")
    assert report.ok, report.format()
    (note,) = [n for n in report.notes if "not run" in n]
    assert "[FLOAT/CHW4, FLOAT/CHW4]" in note
    assert "no GPU" not in note  # the verdict says why enqueue did not run, once
    assert "the CPU was asked for" in report.format().splitlines()[0]


@pytest.mark.gpu
def test_a_format_accepted_but_indexed_as_linear_is_reported():
    _fresh.import_module(str(PLUGINS / "formats.py"))
    report = lifecycle.run("PPTestFormatCHW4Linear", ["2x3x4x4:float32"], device="gpu")
    assert report.enqueue_ran
    assert report.checks() == ["format_unimplemented"], report.format()
    assert "[FLOAT/CHW4, FLOAT/CHW4]" in report.violations[0].message


@pytest.mark.gpu
def test_a_format_truly_implemented_passes():
    _fresh.import_module(str(PLUGINS / "formats.py"))
    report = lifecycle.run("PPTestFormatHWC8", ["2x3x4x4:float32"], device="gpu")
    assert report.ok, report.format()
    assert any("2 accepted format combination(s)" in n and "HWC8" in n for n in report.notes)
