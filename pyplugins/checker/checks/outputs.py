"""The output checks: poisoned, guarded output buffers (``output_mismatch``) and the plugin's
NumPy reference (``reference_mismatch``).

Each output buffer handed to ``enqueue`` starts filled with poison and is followed by
:data:`GUARD_BYTES` of it, so an element left unwritten or a byte written past the end shows.
:func:`written_outputs` runs an ``enqueue`` on such buffers (a second time on the other poison
pattern when some element holds the first, which an integer output may legitimately do) and
checks what it left; the buffers themselves live in :mod:`pyplugins.checker.buffers` (GPU) and
:mod:`pyplugins.checker.host_buffers` (numba's simulator).

Example:
    >>> import numpy as np
    >>> raw = np.frombuffer(poison_pattern(np.float32, 3), dtype=np.uint8).copy()
    >>> raw[:4] = np.frombuffer(np.float32(1).tobytes(), dtype=np.uint8)
    >>> [v.check for v in output_violations(0, raw, (2,), np.float32)]
    ['output_mismatch']
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins.checker.checks import Violation
from pyplugins.testing import assert_close

__all__ = ["GUARD_BYTES", "output_violations", "poison_pattern", "poisoned_elements",
           "reference_violation", "written_outputs"]

#: Bytes of poison after each output buffer; a multiple of every element size.
GUARD_BYTES = 256

# One element of poison, by item size: a NaN with a recognisable payload for float types
# (little-endian), a fixed byte pattern for the others.
_FLOAT_POISON = {2: 0x7DA5, 4: 0x7FA5A5A5, 8: 0x7FF4A5A5A5A5A5A5}
_BYTE_POISON = 0xA5
# A second pattern: an integer output may legitimately hold the first one (0xA5 is int8 -91), so
# an element counts as unwritten only if it holds the poison after two runs with different ones.
_FLOAT_POISON_ALT = {2: 0x7E5A, 4: 0x7F5A5A5A, 8: 0x7FF5A5A5A5A5A5A5}
_BYTE_POISON_ALT = 0x5A



def poison_pattern(dtype: Any, count: int, alt: bool = False) -> bytes:
    """``count`` elements of poison for ``dtype``: a NaN payload for floats, 0xA5 bytes else
    (``alt``: the second pattern, another NaN payload or 0x5A bytes)."""
    dt = np.dtype(dtype)
    floats, byte = (_FLOAT_POISON_ALT, _BYTE_POISON_ALT) if alt else (_FLOAT_POISON, _BYTE_POISON)
    if dt.kind == "f" and dt.itemsize in floats:
        one = floats[dt.itemsize].to_bytes(dt.itemsize, "little")
    else:
        one = bytes([byte]) * dt.itemsize
    return one * count


def poisoned_elements(raw: np.ndarray, shape: Sequence[int], dtype: Any,
                      alt: bool = False) -> np.ndarray:
    """Flat indices of the declared elements of ``raw`` that still hold the poison."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    if not n or not dt.itemsize:
        return np.zeros(0, dtype=np.int64)
    raw = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    body = raw[:n * dt.itemsize].view(f"<u{dt.itemsize}" if dt.itemsize in (1, 2, 4, 8)
                                      else np.uint8)
    pattern = np.frombuffer(poison_pattern(dt, 1, alt), dtype=body.dtype)[0]
    return np.flatnonzero(body == pattern)


def output_violations(index: int, raw: np.ndarray, shape: Sequence[int], dtype: Any,
                      guard: int = GUARD_BYTES,
                      raw_alt: Optional[np.ndarray] = None) -> List[Violation]:
    """Check an output buffer read back after ``enqueue``.

    Args:
        index: the output's index.
        raw: the whole buffer as uint8: the declared elements, then ``guard`` poisoned bytes.
        shape: the declared (concrete) shape; ``dtype`` its element type.
        raw_alt: the same buffer after a second ``enqueue`` on outputs poisoned with the second
            pattern; an element is unwritten only if it holds the poison in both.
    """
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    nbytes = n * dt.itemsize
    raw = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    found = []
    tail = raw[nbytes:nbytes + guard]
    expected_tail = np.frombuffer(poison_pattern(dt, guard // dt.itemsize), dtype=np.uint8)
    changed = np.flatnonzero(tail != expected_tail[:len(tail)])
    if changed.size:
        past = int(changed[-1]) // dt.itemsize + 1
        msg = (f"enqueue wrote past the end of output {index} (declared {tuple(shape)} "
               f"{dt.name}, {nbytes} bytes): bytes changed up to {int(changed[-1]) + 1} bytes "
               f"after it (about {past} element(s) too many). The plugin's idea of this output's "
               f"shape or dtype disagrees with get_output_dimensions/get_output_datatype.")
        found.append(Violation("output_mismatch", msg, "enqueue"))
    if n and dt.itemsize:
        unwritten = poisoned_elements(raw, shape, dt)
        if unwritten.size and raw_alt is not None:
            unwritten = np.intersect1d(unwritten, poisoned_elements(raw_alt, shape, dt, alt=True))
        if unwritten.size:
            first = np.unravel_index(int(unwritten[0]), tuple(shape)) if len(shape) else ()
            msg = (f"enqueue left {unwritten.size} of {n} elements of output {index} (declared "
                   f"{tuple(shape)} {dt.name}) unwritten, the first at index "
                   f"{tuple(int(i) for i in first)}: the plugin writes fewer elements than it "
                   f"declared (its shape or dtype disagrees with get_output_dimensions/"
                   f"get_output_datatype), or it skips part of the output.")
            found.append(Violation("output_mismatch", msg, "enqueue"))
    return found




def written_outputs(run: Any, call: Callable[..., int], metas: Sequence[Tuple[Any, Any]],
                    step: Callable[[str], None]) -> Tuple[Optional[List[np.ndarray]],
                                                          List[Violation]]:
    """Run ``call`` on ``run``'s poisoned outputs and check what it left in them.

    Args:
        run: a :class:`~pyplugins.checker.buffers.DeviceRun` or
            :class:`~pyplugins.checker.host_buffers.HostRun` (``call(fn, alt)``, ``read_raw()``).
        call: the ``enqueue``, through the trampoline.
        metas: ``(shape, numpy dtype)`` per output.
        step: sets the recorder's step (``"enqueue"`` around each call, then ``"runtime"``).

    Returns:
        The raw output buffers (guards included) of the first run, or None when ``enqueue``
        returned non-zero (its ``[ERROR]`` line is a ``callback_error``), and the
        ``output_mismatch`` violations.
    """
    step("enqueue")
    try:
        status = run.call(call)
    finally:
        step("runtime")
    if status != 0:
        return None, []
    raw = run.read_raw()
    raw_alt: List[Any] = [None] * len(raw)
    if any(poisoned_elements(buf, shape, dt).size for (shape, dt), buf in zip(metas, raw)):
        # Some outputs hold the poison: unwritten, or a legitimate value equal to it (int8
        # -91). Run again on the second pattern; only elements holding both are unwritten.
        step("enqueue")
        try:
            if run.call(call, alt=True) == 0:
                raw_alt = run.read_raw()
        finally:
            step("runtime")
    found: List[Violation] = []
    for i, ((shape, dt), buf, alt) in enumerate(zip(metas, raw, raw_alt)):
        found.extend(output_violations(i, buf, shape, dt, raw_alt=alt))
    return raw, found


def reference_violation(plugin: Any, inputs: Sequence[np.ndarray],
                        outputs: Sequence[np.ndarray], where: str = "") -> Optional[Violation]:
    """Compare ``outputs`` with ``plugin.reference(*inputs)`` when the plugin has one.

    Args:
        plugin: the plugin object (its ``reference`` method, if any, is the expected result).
        inputs: the host input arrays ``enqueue`` got.
        outputs: the host outputs it produced.
        where: how ``enqueue`` ran, for the message (e.g. in numba's simulator).

    Returns:
        A ``reference_mismatch`` violation, or None (also when there is no ``reference``).
    """
    ref = getattr(plugin, "reference", None)
    if not callable(ref):
        return None
    try:
        expected = ref(*inputs)
        expected = expected if isinstance(expected, (tuple, list)) else (expected,)
        if len(expected) != len(outputs):
            msg = (f"reference() returned {len(expected)} array(s) for {len(outputs)} "
                   f"output(s)")
            raise AssertionError(msg)
        for i, (got, want) in enumerate(zip(outputs, expected)):
            assert_close(got, np.asarray(want), got.dtype, what=f"output {i}")
    except Exception as err:  # noqa: BLE001 - the plugin's reference may raise anything
        how = f" ({where})" if where else ""
        return Violation("reference_mismatch", f"enqueue's outputs differ from the plugin's "
                         f"reference{how}: {err}", "enqueue")
    return None
