"""Reading an untrusted ``.onnx`` file: a regular file of at most 2 GiB that parses as a model
with a graph, its external data never followed while loading.

``onnx.load`` reads every tensor's external data as it loads (onnx 1.15, which ``setup.cfg``
allows, without any check of where it points), so :func:`load_model` parses the bytes itself;
external data is read later, only through :func:`pyplugins.emulator.onnx_external.external_bytes`
(:func:`check_external_data` vets every reference without reading; :func:`inline_external_data`
reads them all). What is refused raises :class:`ModelFileError`, whose message is
one line naming the file and what is wrong.

Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "m.onnx")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"")
    >>> load_model(path)
    Traceback (most recent call last):
    ...
    pyplugins.models.model_file.ModelFileError: ...m.onnx: the file is empty (0 bytes), not an ...
"""

from __future__ import annotations

import math
import os
import stat
from typing import Any, Iterator, Optional, Tuple

from pyplugins.echo import echo
from pyplugins.emulator.onnx_external import ExternalDataError, external_bytes, resolve_external
from pyplugins.errors import PyPluginsError
from pyplugins.errors import require

__all__ = ["MAX_MODEL_BYTES", "ModelFileError", "check_external_data", "inline_external_data",
           "load_model", "model_tensors"]

#: A serialized protobuf message is at most 2 GiB; larger models keep weights in external data.
MAX_MODEL_BYTES = 2**31 - 1

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class ModelFileError(PyPluginsError, ValueError):
    """A model file or graph pyplugins cannot read, or a construct it does not support (exit 2 of
    ``pyplugins check MODEL.onnx``); the message names the file, node or tensor."""


def load_model(path: Any) -> Any:
    """The ``onnx.ModelProto`` in the file ``path``, without reading external data.

    Raises:
        ModelFileError: no such file, a directory or special file (a FIFO is not opened), an
            empty or over-2-GiB file, bytes that are not an ONNX model, or a model without a graph.
    """
    onnx = require("onnx", "reading an ONNX model")
    name = os.fspath(path)
    name = name.decode("utf-8", "replace") if isinstance(name, bytes) else name
    try:
        info = os.stat(path)
    except OSError as err:
        raise ModelFileError(f"{name}: {_reason(err)}") from err
    _check_kind(name, info)
    try:
        fd = os.open(path, _FLAGS)
    except OSError as err:
        raise ModelFileError(f"{name}: cannot be opened ({_reason(err)})") from err
    try:
        info = os.fstat(fd)  # the file opened, not the one stat saw
        _check_kind(name, info)
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 24)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_MODEL_BYTES:
                raise ModelFileError(f"{name}: grew past 2 GiB while being read; refused")
    except OSError as err:
        raise ModelFileError(f"{name}: cannot be read ({_reason(err)})") from err
    finally:
        os.close(fd)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(b"".join(chunks))
    except Exception as err:  # google.protobuf.message.DecodeError (or RuntimeError in upb)
        msg = (f"{name}: not an ONNX model: the bytes do not parse as an onnx.ModelProto "
               f"(truncated, corrupt or another format; protobuf says: {str(err)[:120]})")
        raise ModelFileError(msg) from err
    if not model.HasField("graph"):
        msg = (f"{name}: not an ONNX model: it parses, but holds no graph (ir_version "
               f"{model.ir_version}, {len(model.opset_import)} opset import(s))")
        raise ModelFileError(msg)
    return model


def _check_kind(name: str, info: os.stat_result) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise ModelFileError(f"{name}: is a directory, not an ONNX model file")
    if not stat.S_ISREG(info.st_mode):
        raise ModelFileError(f"{name}: is not a regular file (a FIFO, device or socket); refused "
                             "without reading it")
    if info.st_size == 0:
        raise ModelFileError(f"{name}: the file is empty (0 bytes), not an ONNX model")
    if info.st_size > MAX_MODEL_BYTES:
        raise ModelFileError(f"{name}: {info.st_size} bytes is more than a protobuf can hold "
                             "(2 GiB); not an ONNX model")


def _reason(err: OSError) -> str:
    if isinstance(err, FileNotFoundError):
        return "no such file"
    return err.strerror or type(err).__name__


def model_tensors(model: Any) -> Iterator[Tuple[str, Any]]:
    """``(what, TensorProto)`` for every tensor of ``model``: initializers, sparse initializers'
    values and indices, and TENSOR/TENSORS attributes, in nested graphs and local functions too
    (an iterative walk, so deep nesting cannot exhaust the stack). ``what`` names it for
    messages: ``initializer 'w'`` or ``attribute 'w' of node 'n'``.

    Example:
        >>> from onnx import helper, numpy_helper
        >>> import numpy as np
        >>> node = helper.make_node("Constant", [], ["c"], name="k",
        ...                         value=numpy_helper.from_array(np.ones(2, np.float32)))
        >>> model = helper.make_model(helper.make_graph([node], "g", [], []))
        >>> [what for what, _ in model_tensors(model)]
        ["attribute 'value' of node 'k'"]
    """
    graphs = [model.graph]
    nodes = [n for f in model.functions for n in f.node]
    while graphs or nodes:
        if graphs:
            graph = graphs.pop()
            for tensor in graph.initializer:
                yield f"initializer {echo(tensor.name)}", tensor
            for sparse in graph.sparse_initializer:
                yield f"sparse initializer {echo(sparse.values.name)}", sparse.values
                yield f"sparse initializer {echo(sparse.values.name)} (indices)", sparse.indices
            nodes.extend(graph.node)
            continue
        node = nodes.pop()
        label = node.name or (f"node_of_{node.output[0]}" if len(node.output) else node.op_type)
        for attr in node.attribute:
            what = f"attribute {echo(attr.name)} of node {echo(label)}"
            if attr.HasField("t"):
                yield what, attr.t
            for tensor in attr.tensors:
                yield what, tensor
            if attr.HasField("g"):
                graphs.append(attr.g)
            graphs.extend(attr.graphs)


def _external(model: Any) -> Iterator[Tuple[Any, str, int]]:
    """``(tensor, what, bytes needed)`` for each tensor of ``model`` with external data."""
    onnx = require("onnx", "reading an ONNX model")
    packed = {getattr(onnx.TensorProto, name, -1)  # onnx 1.15 has none of them
              for name in ("INT4", "UINT4", "FLOAT4E2M1")}
    for what, tensor in model_tensors(model):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        try:
            itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        except Exception as err:  # KeyError/ValueError: no numpy type for it
            msg = f"{what}: element type {tensor.data_type} cannot be read from external data"
            raise ModelFileError(msg) from err
        if any(d < 0 for d in tensor.dims):
            raise ModelFileError(f"{what}: negative dims {echo(list(tensor.dims))}")
        count = math.prod(tensor.dims)
        yield tensor, what, (count + 1) // 2 if tensor.data_type in packed else count * itemsize


def check_external_data(model: Any, model_dir: Optional[str], where: str = "the model") -> int:
    """Vet every external-data reference of ``model`` without reading any (see
    :func:`~pyplugins.emulator.onnx_external.resolve_external`); returns how many there are.

    Raises:
        ModelFileError: a refused location or size, naming the model (``where``), the tensor
            and the location.
    """
    count = 0
    for tensor, what, expected in _external(model):
        try:
            resolve_external(what, tensor, model_dir, expected)
        except ExternalDataError as err:
            raise ModelFileError(f"{where}: {err}") from err
        count += 1
    return count


def inline_external_data(model: Any, model_dir: Optional[str], where: str = "the model") -> int:
    """Replace every external-data reference in ``model`` (a ModelProto, changed in place) by the
    bytes :func:`~pyplugins.emulator.onnx_external.external_bytes` reads; returns how many.

    Raises:
        ModelFileError: a refused location or size, or a tensor whose type has no fixed size.
    """
    onnx = require("onnx", "reading an ONNX model")
    done = 0
    for tensor, what, expected in list(_external(model)):
        try:
            data = external_bytes(what, tensor, model_dir, expected)
        except ExternalDataError as err:
            raise ModelFileError(f"{where}: {err}") from err
        tensor.raw_data = data
        tensor.data_location = onnx.TensorProto.DEFAULT
        del tensor.external_data[:]
        done += 1
    return done
