"""The AOT row of section ``threads``: the op's AOT artifact launched by C++ threads, no Python.

An engine whose plugin is an AOT kernel (QDP ``aot_impl``) runs no Python at enqueue, so the GIL
that caps the JIT rows (every ``enqueue`` takes it) is gone. ``benchmarks/cpp/aot_threads.cu``
starts T threads, each on its own stream (and device, thread i on device i mod the count), that
launch the stored artifact as TensorRT does: per launch the compiled expressions run for the
input shape, the shape-dependent parameters are rewritten and ``cuLaunchKernel`` is called
(``aot_driver.h``). The artifact is built through the emulator's QDP AOT path with the first
dimension dynamic (1 to :data:`MAX_ROWS`), so every launch evaluates its expressions.

Example::

    exe, why = build("sm_90", workdir)
    flat, why = prepare(cls, fields, (1024,), x_bytes, want_bytes, workdir)
    per_count, why = measure(exe, flat, [1, 2, 4, 8], 0.25, [0], (1024,))
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from benchmarks import aot_build, aot_export, nvcc

SOURCE = Path(__file__).resolve().parent / "cpp" / "aot_threads.cu"
#: The profile's max of the artifact's dynamic first dimension.
MAX_ROWS = 1 << 20

__all__ = ["MAX_ROWS", "SOURCE", "build", "measure", "prepare"]


def build(arch: str, workdir: Path) -> Tuple[Optional[Path], Optional[str]]:
    """nvcc-build ``aot_threads``; (binary, None) or (None, why not)."""
    return nvcc.build(workdir / "aot_threads", [SOURCE], arch, includes=[SOURCE.parent],
                      missing="nvcc not found: the AOT threads row is not measured")


def prepare(cls: Any, fields: Dict[str, Any], shape: Sequence[int], x: bytes, want: bytes,
            workdir: Path, dtype: str = "float32") -> Tuple[Optional[Path], Optional[str]]:
    """Build ``cls``'s AOT artifact (first dimension dynamic) and write what ``aot_threads``
    reads into ``workdir``: the flat export, the input bytes ``x`` and the output ``want`` the
    JIT plugin wrote for them, and ``plan.txt``, the launch Python evaluates for ``shape`` (which
    :func:`measure` names when the C++ side fails); (artifact path, None) or (None, why not)."""
    lo = [(1,) + tuple(shape[1:])]
    hi = [(max(MAX_ROWS, shape[0]),) + tuple(shape[1:])]
    try:
        built = aot_build.build(cls, fields, lo=lo, hi=hi, dtypes=[dtype])
        flat = aot_export.flat_bytes(built.artifact)
    except Exception as err:  # noqa: BLE001 - no AOT row, with the reason
        return None, f"the AOT artifact was not built: {type(err).__name__}: {err}"
    path = workdir / "threads.flat"
    path.write_bytes(flat)
    # The launch Python evaluates for the shape, which a failing aot_threads is compared with.
    plan = built.artifact.launch_plan({0: tuple(shape)})
    (workdir / "plan.txt").write_text(
        f"grid {list(plan['grid'])}, block {list(plan['block'])}, shared memory "
        f"{plan['shared_mem']}, extra arguments {plan['extra']}")
    (workdir / "in0.bin").write_bytes(x)
    (workdir / "want0.bin").write_bytes(want)
    return path, None


def measure(exe: Path, flat: Path, counts: Sequence[int], seconds: float,
            devices: Sequence[int], shape: Sequence[int]
            ) -> Tuple[Optional[Dict[str, float]], Optional[str]]:
    """One round of ``aot_threads`` for an input of ``shape`` (the one :func:`prepare` was given):
    {thread count: aggregate launches per second}, or (None, why) when it failed or an output
    differed from the JIT plugin's."""
    argv = [str(exe), str(flat), str(flat.parent), ",".join(map(str, counts)), str(seconds), "1",
            ",".join(map(str, devices)), ",".join(map(str, shape))]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        plan = flat.parent / "plan.txt"
        python = f" (Python evaluates the launch as {plan.read_text()})" if plan.is_file() else ""
        return None, f"aot_threads failed: {done.stderr.strip()[-1000:]}{python}"
    rounds: List[Dict[str, float]] = json.loads(done.stdout)["rounds"]
    return rounds[0], None
