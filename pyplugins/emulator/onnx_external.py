"""ONNX external data read only from regular files inside the model's folder, size-checked.

ONNX keeps large tensors outside the ``.onnx`` file: a tensor with ``data_location = EXTERNAL``
names a ``location`` (relative to the model's folder), an ``offset`` and a ``length``. A model
is untrusted input, so :func:`external_bytes` is the one place pyplugins reads such data, and it
(and :func:`resolve_external`, which checks without reading) refuses, without opening anything:

- a location that is empty, absolute, or has a ``..`` part;
- a location with a symlink anywhere in it (a symlinked file or folder), which could lead out of
  the folder even when it happens not to;
- anything but a regular file (a folder, ``/dev/zero``, a FIFO that would block, a socket);
- an offset or length that is not a non-negative integer, a length other than what the tensor's
  dims and type need, data past the end of the file, or more bytes than ``max_bytes``.

The file is opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked again with ``fstat`` before it
is read, so a file swapped for a symlink or a FIFO in between is refused too.

Example:
    >>> import os, tempfile
    >>> from onnx import TensorProto
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "w.bin"), "wb") as f:
    ...     _ = f.write(b"\\0\\0\\x80\\x3f")
    >>> t = TensorProto(data_type=TensorProto.FLOAT, dims=[1], data_location=TensorProto.EXTERNAL)
    >>> entry = t.external_data.add(); entry.key, entry.value = "location", "w.bin"
    >>> external_bytes("initializer 'w'", t, folder, 4)
    b'\\x00\\x00\\x80?'
    >>> entry.value = "../w.bin"
    >>> external_bytes("initializer 'w'", t, folder, 4)
    Traceback (most recent call last):
    ...
    pyplugins.emulator.onnx_external.ExternalDataError: initializer 'w': ... '../w.bin' is not a ...
"""

from __future__ import annotations

import os
import stat
from typing import Any, Optional, Tuple

from pyplugins._config import knobs
from pyplugins.echo import echo
from pyplugins.errors import PyPluginsError

__all__ = ["ExternalDataError", "external_bytes", "resolve_external"]

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(
    os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class ExternalDataError(PyPluginsError, ValueError):
    """External data that pyplugins refuses to read, or that does not hold what the tensor needs;
    the message names the tensor (or attribute) and the location."""


def _where(what: str, location: str) -> str:
    return f"{what}: external data location {echo(location)}"


def _resolve(what: str, location: str, model_dir: str) -> str:
    """The absolute path of ``location`` inside ``model_dir``, refusing anything that could lead
    out of it (see the module docstring)."""
    parts = location.replace("\\", "/").split("/")
    if (not location or os.path.isabs(location) or location.startswith(("/", "\\"))
            or ".." in parts or "\0" in location):
        msg = (f"{_where(what, location)} is not a relative path inside the model's directory; "
               "refused")
        raise ExternalDataError(msg)
    base = os.path.realpath(model_dir)
    path = base
    for part in (p for p in parts if p not in ("", ".")):
        path = os.path.join(path, part)
        try:
            info = os.lstat(path)
        except OSError as err:
            msg = f"{_where(what, location)} cannot be read ({err.strerror or type(err).__name__})"
            raise ExternalDataError(msg) from err
        if stat.S_ISLNK(info.st_mode):
            target = os.path.realpath(path)
            inside = os.path.commonpath([base, target]) == base
            how = ("stays inside the folder, but symlinks are refused: copy the data into the "
                   "model's directory" if inside else "leads out of the model's directory")
            msg = (f"{_where(what, location)} goes through the symlink "
                   f"{os.path.relpath(path, base)!r}, which {how}; refused")
            raise ExternalDataError(msg)
    return path


def resolve_external(what: str, tensor: Any, model_dir: Optional[str], expected: int,
                     max_bytes: Optional[int] = None) -> Tuple[str, int]:
    """``(path, offset)`` of ``tensor``'s external data after every check above but the read
    itself (nothing is opened): a model can be vetted before anything runs.

    Args:
        what: the tensor as messages name it (``"initializer 'w'"``, ``"Attribute 'w'"``).
        tensor: an ``onnx.TensorProto`` whose ``data_location`` is EXTERNAL.
        model_dir: the model's folder (None: nothing is read; the error says to give one).
        expected: the bytes its dims and element type need.
        max_bytes: the most bytes allowed (default: ``PYPLUGINS_MAX_TENSOR_BYTES``).

    Raises:
        ExternalDataError: a refused location, file or size, naming ``what`` and the location.
    """
    info = {e.key: e.value for e in tensor.external_data}
    location = info.get("location", "")
    if model_dir is None:
        msg = (f"{what}: TENSOR with external data ({echo(location)}) but no model directory was "
               "given, so it is not read; pass model_dir= (the .onnx file's directory), as "
               "TensorRT's parser reads it relative to the model")
        raise ExternalDataError(msg)
    if max_bytes is None:
        max_bytes = knobs.max_tensor_bytes
    if expected > max_bytes:
        msg = (f"{_where(what, location)}: the tensor needs {expected} bytes, more than the "
               f"{max_bytes} allowed (PYPLUGINS_MAX_TENSOR_BYTES); refused")
        raise ExternalDataError(msg)
    try:
        offset = int(info.get("offset", "0") or 0)
        length = int(info.get("length", str(expected)) or expected)
    except ValueError as err:
        msg = (f"{what}: external data offset/length are not integers "
               f"({echo(info.get('offset'))}, {echo(info.get('length'))})")
        raise ExternalDataError(msg) from err
    if offset < 0 or length != expected:
        msg = (f"{what}: external data length {length} (offset {offset}) does not match the "
               f"{expected} bytes its dims and type need")
        raise ExternalDataError(msg)
    path = _resolve(what, location, model_dir)
    found = os.lstat(path)
    kind = stat.S_IFMT(found.st_mode)
    if kind != stat.S_IFREG:
        msg = (f"{_where(what, location)} is not a regular file ({_KINDS.get(kind, 'special')}); "
               "refused without reading it")
        raise ExternalDataError(msg)
    _fits(what, location, offset, expected, found.st_size)
    return path, offset


def _fits(what: str, location: str, offset: int, expected: int, size: int) -> None:
    if offset + expected > size:
        msg = (f"{_where(what, location)}: {expected} bytes at offset {offset} run past the end "
               f"of the file ({size} bytes)")
        raise ExternalDataError(msg)


def external_bytes(what: str, tensor: Any, model_dir: Optional[str], expected: int,
                   max_bytes: Optional[int] = None) -> bytes:
    """The ``expected`` bytes of ``tensor``'s external data, read under the rules above (the
    arguments and errors are :func:`resolve_external`'s)."""
    path, offset = resolve_external(what, tensor, model_dir, expected, max_bytes)
    location = {e.key: e.value for e in tensor.external_data}.get("location", "")
    try:
        fd = os.open(path, _FLAGS)
    except OSError as err:
        msg = f"{_where(what, location)} cannot be read ({err.strerror or type(err).__name__})"
        raise ExternalDataError(msg) from err
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):  # swapped after resolve_external's lstat
            msg = f"{_where(what, location)} is not a regular file; refused without reading it"
            raise ExternalDataError(msg)
        _fits(what, location, offset, expected, opened.st_size)
        data = os.pread(fd, expected, offset) if expected else b""
    except OSError as err:
        msg = f"{_where(what, location)} cannot be read ({err.strerror or type(err).__name__})"
        raise ExternalDataError(msg) from err
    finally:
        os.close(fd)
    if len(data) != expected:
        msg = (f"{_where(what, location)} holds {len(data)} bytes at offset {offset}; its dims "
               f"and type need {expected}")
        raise ExternalDataError(msg)
    return data


_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFLNK: "a symlink"}
