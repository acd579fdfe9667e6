"""What the QDP test plugins share (no plugin is registered here): the PTX of ``add_one`` and a
CuPy view of a ``trtp.Tensor``'s buffer.

``view`` reads the tensor's pointer, not ``cupy.asarray(tensor)``: CuPy, as a consumer of the
CUDA Array Interface v3, synchronizes the ``stream`` the interface names (TensorRT's), which a
CUDA-graph capture of the engine cannot contain."""

from pathlib import Path

PTX = (Path(__file__).parent / "add_one.ptx").read_text()


def view(tensor, extra=0):
    """A flat float32 CuPy array on ``tensor``'s buffer, ``extra`` elements longer."""
    import cupy as cp

    n = tensor.numel() + extra
    # device_id given: no cudaPointerGetAttributes call, which a stream capture may refuse
    memory = cp.cuda.UnownedMemory(tensor.data_ptr, n * 4, tensor, cp.cuda.runtime.getDevice())
    return cp.ndarray((n,), cp.float32, cp.cuda.MemoryPointer(memory, 0))
