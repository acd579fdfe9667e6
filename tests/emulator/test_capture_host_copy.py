"""The capture check flags the README's fourth capture-unsafe action, a host copy (GPU).

Allocation, sync and another stream have their broken plugins in ``plugins/bad_capture.py``
(``test_checks.py::test_capture_unsafe``); this is the host copy's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pyplugins import emulator
from pyplugins.checker import _fresh, lifecycle

emulator.install()
PLUGIN = Path(__file__).parent / "plugins" / "bad_capture_host.py"


def test_the_host_copy_plugin_registers_on_the_cpu():
    _fresh.import_module(str(PLUGIN))
    report = lifecycle.run("PPTestCaptureHostCopy", ["4x6:float32"], device="cpu")
    assert report.ok and not report.enqueue_ran, report.format()


@pytest.mark.gpu
def test_host_copy_in_enqueue_is_capture_unsafe():
    _fresh.import_module(str(PLUGIN))
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    report = lifecycle.run("PPTestCaptureHostCopy", [x], device="gpu")
    assert report.enqueue_ran
    np.testing.assert_array_equal(report.outputs[0], 2 * x)  # eagerly it works
    assert report.checks() == ["capture_unsafe"], report.format()
    (message,) = [v.message for v in report.violations if v.check == "capture_unsafe"]
    assert ("raised while the stream was captured" in message
            or "ending the capture" in message), report.format()
    assert lifecycle.run("PPTestCaptureHostCopy", [x], device="gpu", check_capture=False).ok
