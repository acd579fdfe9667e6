"""The QDP lifecycle on a GPU: JIT impl enqueued on guarded, poisoned buffers and captured, the
AOT kernel launched through the driver in a process that never imports the plugin, both compared;
a planted defect per GPU check. Marked ``gpu``: skipped without one."""

from __future__ import annotations

import numpy as np
import pytest

from pyplugins.checker.runtime_enqueue import input_arrays
from pyplugins.emulator.enums import DataType, TensorFormat
from pyplugins.emulator.specs import TensorSpec

from .support import check, load

pytestmark = pytest.mark.gpu

SPEC = "1-4-8x300:float32"  # 1200 elements at opt: five blocks of 256, the last one partial


def expected():
    combo = [(DataType.FLOAT, TensorFormat.LINEAR)] * 2
    (x,), _ = input_arrays([TensorSpec.parse(SPEC)], combo, [DataType.FLOAT])
    return x + 1


def test_jit_and_aot_run_and_agree(trtp):
    load("add_one")
    report = check("add_one", SPEC, device="gpu", qdp="both")
    assert report.ok, report.format()
    assert report.enqueue_ran and report.qdp["compared"]
    runs = {r["implementation"]: r for r in report.qdp["runs"]}
    assert runs["aot"]["run"]["launched"] is True
    assert not any(runs["aot"]["run"]["modules"].values())
    assert len(runs["aot"]["timings_ms"]) == 2 and len(runs["jit"]["timings_ms"]) == 2
    np.testing.assert_array_equal(report.outputs[0], expected())
    assert report.qdp["aot_equals_jit"] == "bit for bit"
    assert "qdp AOT outputs equal JIT's (bit for bit)" in report.format()


@pytest.mark.parametrize("plugin, fragment", [("write_past", "past the end of output 0"),
                                              ("write_short", "left 600 of 1200 elements")])
def test_impl_writing_past_or_short_of_its_output(trtp, plugin, fragment):
    load("gpu_defects")
    report = check(plugin, SPEC, device="gpu")
    found = [v for v in report.violations if v.check == "output_mismatch"]
    assert found and fragment in found[0].message, report.format()


@pytest.mark.parametrize("plugin, also", [("del_stream", "impl_stream"),
                                          ("default_stream", None), ("allocates", None),
                                          ("syncs", None)])
def test_impl_off_tensorrts_stream_allocating_or_syncing_breaks_capture(trtp, plugin, also):
    load("gpu_defects")
    report = check(plugin, SPEC, device="gpu")
    assert "capture_unsafe" in report.checks(), report.format()
    if also:
        assert also in report.checks()


def test_aot_kernel_writing_short(trtp):
    load("gpu_defects")
    report = check("aot_short", SPEC, device="gpu")
    (found,) = [v for v in report.violations if v.check == "output_mismatch"]
    assert "the AOT kernel" in found.message and "left 1 of 1200" in found.message


def test_aot_outputs_that_differ_from_the_jit_impl(trtp):
    load("gpu_defects")
    report = check("aot_differs", SPEC, device="gpu", qdp="both")
    (found,) = [v for v in report.violations if v.check == "aot_jit_mismatch"]
    assert "output 0" in found.message
    assert report.qdp["aot_equals_jit"] == "differ"
