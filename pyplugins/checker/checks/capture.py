"""The ``capture_unsafe`` check: ``enqueue`` captured into a CUDA graph and replayed (§9).

An application may capture ``execute_async_v3`` into a CUDA graph, so a plugin's ``enqueue`` must
launch only on the stream it is given, allocate nothing and never synchronize or copy to the
host. :func:`capture_violation` captures one ``enqueue`` on the run's stream
(:meth:`pyplugins.checker.buffers.DeviceRun.capture`), replays the graph and compares the outputs
with the eager run's. It needs a GPU.

Example:
    >>> from pyplugins.checker.buffers import CaptureOutcome
    >>> print(capture_problems(CaptureOutcome(status=0, allocations=[512]), [], []))
    ['enqueue allocated device memory while the stream was captured (1 allocation(s), 512 bytes
    through CuPy): the graph would replay into memory it does not own']
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from pyplugins.checker import buffers
from pyplugins.checker.checks import Violation
from pyplugins.checker.checks.recorder import Recorder

__all__ = ["capture_problems", "capture_violation"]


def capture_problems(outcome: Any, raised: Sequence[str], eager: Sequence[np.ndarray]
                     ) -> List[str]:
    """What went wrong in one capture and replay, one sentence each.

    Args:
        outcome: the :class:`~pyplugins.checker.buffers.CaptureOutcome`.
        raised: the ``[ERROR]`` lines printed while the stream was captured.
        eager: the raw output buffers (guards included) after the eager run.
    """
    problems = []
    if outcome.allocations:
        problems.append(f"enqueue allocated device memory while the stream was captured "
                        f"({len(outcome.allocations)} allocation(s), "
                        f"{sum(outcome.allocations)} bytes through CuPy): the graph would "
                        f"replay into memory it does not own")
    if outcome.status != 0 or raised:
        problems.append("enqueue raised while the stream was captured: "
                        + (" | ".join(raised) or "(no message)"))
    problems.extend(outcome.errors)
    if not problems and outcome.replay is not None:
        differ = [i for i, (a, b) in enumerate(zip(eager, outcome.replay))
                  if not np.array_equal(a, b)]
        if differ:
            problems.append(f"replaying the captured graph left output(s) {differ} different "
                            f"from the eager run: work enqueue launched outside the given "
                            f"stream (the legacy default stream, another stream) is not in "
                            f"the graph")
    return problems


def capture_violation(run: buffers.DeviceRun, call: buffers.EnqueueFn, eager: List[np.ndarray],
                      recorder: Recorder) -> Optional[Violation]:
    """Capture ``call`` on ``run``'s stream, replay the graph, compare with the eager outputs.

    Args:
        run: the buffers the eager ``enqueue`` used.
        call: that ``enqueue``, through the trampoline.
        eager: the raw output buffers (guards included) after the eager run.
        recorder: the run's recorder (errors raised during the capture are read from it).

    Returns:
        A ``capture_unsafe`` violation listing every problem, or None.
    """
    recorder.step = "capture"
    try:
        outcome = run.capture(call)
    except Exception as err:  # noqa: BLE001 - any failure is the capture's outcome
        outcome = buffers.CaptureOutcome(status=-1, errors=[buffers.cuda_error_text(err)])
    recorder.step = "runtime"
    raised = [e[1] for e in recorder.errors if e[2] == "capture"]
    problems = capture_problems(outcome, raised, eager)
    if problems:
        msg = ("enqueue is not CUDA-graph capture safe: " + "; ".join(problems) + ". Launch "
               "only on the stream TensorRT passes (cp.cuda.ExternalStream(stream)); allocate "
               "in configure_plugin/initialize; never synchronize or copy to the host in "
               "enqueue (§9).")
        return Violation("capture_unsafe", msg, "enqueue")
    return None
