"""Device memory for the lifecycle driver's ``enqueue`` calls, and CUDA-graph capture of one.

Everything is allocated before ``enqueue`` runs (``enqueue`` must be capture-safe, so the driver
is too). Each output buffer is followed by :data:`~pyplugins.checker.checks.outputs.GUARD_BYTES` of
poison and the outputs themselves start poisoned, so that the checks can see writes past the end
and elements left unwritten. The stream handed to ``enqueue`` is a new, non-blocking CuPy stream,
and every allocation and copy of the driver's runs on it: nothing here touches the legacy default
stream or synchronizes the whole device, either of which would fail a CUDA-graph capture another
thread has under way on the same GPU (many checks may run at once, in threads, on one or several
GPUs). CuPy is imported only when a GPU is used.

Example:
    >>> from pyplugins.emulator import TensorFormat
    >>> padded_volume((1, 3, 4, 4), TensorFormat.CHW4), padded_volume((1, 3, 4, 4), TensorFormat.LINEAR)
    (64, 48)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins.runtime.device import import_cupy, no_device_reason
from pyplugins.checker.checks.outputs import GUARD_BYTES, poison_pattern
from pyplugins.emulator.enums import TensorFormat

__all__ = ["CaptureOutcome", "DeviceRun", "cuda_error_text", "cupy_or_reason", "padded_volume",
           "scratch_enqueue", "settle"]

#: Enqueue callable: (input pointers, output pointers, workspace pointer, stream) -> 0 or -1.
EnqueueFn = Callable[[List[int], List[int], int, int], int]

# Vectorized formats: (channel axis counted from the end, vector length).
_VECTORIZED = {
    TensorFormat.CHW2: (3, 2), TensorFormat.CHW4: (3, 4), TensorFormat.HWC8: (3, 8),
    TensorFormat.CHW16: (3, 16), TensorFormat.CHW32: (3, 32), TensorFormat.HWC16: (3, 16),
    TensorFormat.DHWC8: (4, 8), TensorFormat.CDHW32: (4, 32),
}


def padded_volume(shape: Sequence[int], fmt: TensorFormat) -> int:
    """Elements a tensor of ``shape`` occupies in format ``fmt`` (channels padded to the vector).

    DLA formats are sized generously (rows padded to 64 elements).
    """
    dims = [int(v) for v in shape]
    if fmt in _VECTORIZED:
        axis, vec = _VECTORIZED[fmt]
        if len(dims) >= axis:
            dims[-axis] = -(-dims[-axis] // vec) * vec
    elif fmt in (TensorFormat.DLA_LINEAR, TensorFormat.DLA_HWC4) and dims:
        dims[-1] = -(-dims[-1] // 64) * 64
        if fmt == TensorFormat.DLA_HWC4 and len(dims) >= 3:
            dims[-3] = -(-dims[-3] // 4) * 4
    return math.prod(dims)


def cupy_or_reason() -> Tuple[Optional[ModuleType], Optional[str]]:
    """``(cupy, None)`` when a CUDA GPU is usable, else ``(None, "no GPU (<what CUDA said>)")``,
    from :func:`pyplugins.runtime.device.no_device_reason`."""
    reason = no_device_reason()
    if reason is not None:
        return None, "no GPU " + reason.removeprefix("no usable CUDA GPU ")
    return import_cupy(), None


def settle(cp: Any, stream: Any) -> None:
    """Wait for ``stream``, then for the legacy default stream (work a plugin wrongly launched
    there, which the output and capture checks must see finished).

    Never ``cudaDeviceSynchronize``: it fails any capture under way on the device, in every
    capture mode and from any thread (cudaErrorStreamCaptureUnsupported; NVIDIA/TensorRT issue
    2888). A legacy-stream wait has no implicit dependency on the non-blocking streams the
    checker captures (an inference from CUDA's stream semantics: a non-blocking stream does not
    synchronize with the legacy stream). The trade: work a plugin put on a stream of its own is
    not waited for here; the capture check still reports it, since the replay lacks it.
    """
    stream.synchronize()
    cp.cuda.runtime.streamSynchronize(cp.cuda.runtime.streamLegacy)


def cuda_error_text(err: BaseException) -> str:
    """``"CUDARuntimeError: cudaErrorStreamCaptureUnsupported: ..."``."""
    return f"{type(err).__name__}: {err}"


@dataclass
class CaptureOutcome:
    """What happened when ``enqueue`` was captured into a CUDA graph and replayed.

    Attributes:
        status: what the captured ``enqueue`` returned to TensorRT (0, or -1 when it raised).
        errors: CUDA errors from ending the capture or synchronizing after it.
        allocations: sizes of the device allocations made through CuPy during the capture.
        replay: the output buffers (uint8, with guards) after replaying the graph, or None when
            no graph was obtained.
    """

    status: int
    errors: List[str] = field(default_factory=list)
    allocations: List[int] = field(default_factory=list)
    replay: Optional[List[np.ndarray]] = None


class DeviceRun:
    """Inputs, poisoned and guarded outputs, a workspace and a stream for one plugin object.

    Args:
        inputs: the input arrays (NumPy or CuPy), already of the types TensorRT chose.
        outputs: ``(shape, numpy dtype)`` per output.
        workspace: bytes of workspace (0: ``enqueue`` gets a null pointer).
    """

    def __init__(self, inputs: Sequence[Any], outputs: Sequence[Tuple[Sequence[int], Any]],
                 workspace: int) -> None:
        cp, reason = cupy_or_reason()
        if cp is None:
            raise RuntimeError(reason)
        self.cp = cp
        # Non-blocking: other threads' legacy-stream work neither waits for it nor, while it is
        # captured, fails the capture (a blocking stream's capture would be, cudaErrorStream-
        # CaptureImplicit); a plugin's own legacy-stream launch is caught by the poison instead.
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.meta = [(tuple(int(v) for v in s), np.dtype(d)) for s, d in outputs]
        if not all(isinstance(a, np.ndarray) for a in inputs):
            # CuPy inputs made on the caller's stream: a non-blocking stream does not wait for
            # the legacy one by itself, so the copies below wait for the caller's stream here.
            self.stream.wait_event(cp.cuda.get_current_stream().record())
        with self.stream:
            self.inputs = [cp.ascontiguousarray(cp.asarray(a)) for a in inputs]
            self.raw = []
            self._poison, self._poison_alt = [], []
            for shape, dt in self.meta:
                count = math.prod(shape) + GUARD_BYTES // dt.itemsize
                pattern = np.frombuffer(poison_pattern(dt, count), dtype=np.uint8)
                self._poison.append(cp.asarray(pattern))
                self._poison_alt.append(cp.asarray(np.frombuffer(
                    poison_pattern(dt, count, alt=True), dtype=np.uint8)))
                self.raw.append(cp.empty(pattern.size, dtype=np.uint8))
            self.workspace = cp.empty(workspace, dtype=np.uint8) if workspace > 0 else None
        self.stream.synchronize()
        self.in_ptrs = [int(a.data.ptr) for a in self.inputs]
        self.out_ptrs = [int(r.data.ptr) for r in self.raw]
        self.ws_ptr = 0 if self.workspace is None else int(self.workspace.data.ptr)

    def poison(self, alt: bool = False) -> None:
        """Fill every output buffer, guard included, with poison (``alt``: the second pattern)."""
        for raw, pattern in zip(self.raw, self._poison_alt if alt else self._poison):
            raw.data.copy_from_device_async(pattern.data, pattern.nbytes, self.stream)
        self.stream.synchronize()

    def sync(self) -> None:
        """Wait for the stream and the legacy default stream (:func:`settle`)."""
        settle(self.cp, self.stream)

    def call(self, enqueue: EnqueueFn, alt: bool = False) -> int:
        """Run ``enqueue`` on poisoned outputs and wait for it; its status."""
        self.poison(alt)
        status = enqueue(self.in_ptrs, self.out_ptrs, self.ws_ptr, int(self.stream.ptr))
        self.sync()
        return status

    def read_raw(self) -> List[np.ndarray]:
        """Every output buffer, guard included, as host uint8 arrays."""
        return [self.cp.asnumpy(r, stream=self.stream) for r in self.raw]

    def outputs(self, on_device: bool = False) -> List[Any]:
        """The declared part of each output, as NumPy arrays (CuPy copies with ``on_device``)."""
        result = []
        with self.stream:  # the copies on this stream, never the legacy one
            for raw, (shape, dt) in zip(self.raw, self.meta):
                body = raw[:math.prod(shape) * dt.itemsize].view(dt).reshape(shape)
                result.append(body.copy() if on_device
                              else self.cp.asnumpy(body, stream=self.stream))
        self.stream.synchronize()
        return result

    def capture(self, enqueue: EnqueueFn) -> CaptureOutcome:
        """Capture ``enqueue`` on the stream (thread-local capture mode), then replay the graph.

        The outputs are poisoned before the capture and again before the replay, so work that
        ran outside the graph (another stream, the legacy default stream) leaves poison behind.
        Thread-local mode (``cudaStreamCaptureModeThreadLocal``) still fails the capture on this
        thread's unsafe calls (an allocation through ``cudaMalloc``, a synchronization), and
        lets other threads check, run or capture on the same GPU meanwhile; in global mode one
        thread's unsafe call fails every other thread's capture. The deliberate trade: an
        unsafe call made during the capture by another thread the plugin started is no longer
        caught (only what ``enqueue``'s own thread does is).
        Allocations through CuPy's allocator during the capture are recorded (a cached pool block
        would not make the capture fail, but the graph would replay into memory it does not own).
        """
        cp = self.cp
        runtime = cp.cuda.runtime
        self.poison()
        outcome = CaptureOutcome(status=-1)
        current = cp.cuda.get_allocator()

        def counting_allocator(size: int) -> Any:
            outcome.allocations.append(int(size))
            return current(size)

        graph = None
        self.stream.begin_capture(runtime.streamCaptureModeThreadLocal)
        try:
            with cp.cuda.using_allocator(counting_allocator):
                outcome.status = enqueue(self.in_ptrs, self.out_ptrs, self.ws_ptr,
                                         int(self.stream.ptr))
        finally:
            try:
                graph = self.stream.end_capture()
            except Exception as err:  # noqa: BLE001 - CUDA fails in CuPy's many types
                outcome.errors.append(f"ending the capture: {cuda_error_text(err)}")
        try:
            self.sync()
        except Exception as err:  # noqa: BLE001 - CUDA fails in CuPy's many types
            outcome.errors.append(f"synchronizing after the capture: {cuda_error_text(err)}")
            return outcome
        if graph is not None:
            try:
                self.poison()
                graph.launch(self.stream)
                self.sync()
                outcome.replay = self.read_raw()
            except Exception as err:  # noqa: BLE001 - CUDA fails in CuPy's many types
                outcome.errors.append(f"replaying the graph: {cuda_error_text(err)}")
        return outcome


def scratch_buffers(in_bytes: Sequence[int], out_bytes: Sequence[int], workspace: int
                    ) -> Tuple[Any, Any, List[Any], List[Any], Any]:
    """``(cupy, stream, inputs, outputs, workspace or None)``: zeroed device buffers of these
    sizes (at least one byte each), allocated and synchronized on a new non-blocking stream, as
    the builder gives a plugin while it times a format combination or a tactic.

    Raises:
        RuntimeError: no usable GPU (the reason).
    """
    cp, reason = cupy_or_reason()
    if cp is None:
        raise RuntimeError(reason)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        ins = [cp.zeros(max(int(n), 1), dtype=np.uint8) for n in in_bytes]
        outs = [cp.zeros(max(int(n), 1), dtype=np.uint8) for n in out_bytes]
        ws = cp.zeros(workspace, dtype=np.uint8) if workspace > 0 else None
    stream.synchronize()
    return cp, stream, ins, outs, ws


def scratch_enqueue(in_bytes: Sequence[int], out_bytes: Sequence[int], workspace: int,
                    enqueue: EnqueueFn) -> int:
    """Run ``enqueue`` once on zeroed scratch buffers, as the builder times a format combination."""
    cp, stream, ins, outs, ws = scratch_buffers(in_bytes, out_bytes, workspace)
    status = enqueue([int(a.data.ptr) for a in ins], [int(a.data.ptr) for a in outs],
                     0 if ws is None else int(ws.data.ptr), int(stream.ptr))
    settle(cp, stream)
    return status
