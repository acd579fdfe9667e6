"""benchmarks/numba_cases.py: skips cleanly without a GPU; on a GPU both kernels agree."""

from __future__ import annotations

import pytest

pytest.importorskip("numba_cuda", reason="numba kernels need the 'numba' extra")

from benchmarks import numba_cases
from tests.conftest import gpu_available


def test_without_a_gpu_it_says_why():
    if gpu_available():
        pytest.skip("a GPU is present")
    result = numba_cases.run(("64K",), calls=10)
    assert result["skipped"].startswith("no GPU")


@pytest.mark.gpu
def test_gpu_small_run_measures_both_kernels_and_the_host_cost():
    result = numba_cases.run(("64K",), calls=400)
    (row,) = result["kernel"]
    assert row["outputs_equal"] and row["numba"]["median"] > 0 and row["cuda_cpp"]["median"] > 0
    assert {"numba", "cuda_cpp", "numba_view_only"} <= set(result["enqueue"])
