"""Versioned, typed, deterministic encoding of a plugin's fields: no pickle, no eval.

Engine files travel between machines, so what a plugin's ``serialize()`` returns is data that
must never execute anything when read back. TensorRT calls ``serialize()`` two or three times per
engine (docs/trt-protocol.md §4.1), so the same fields must give the same bytes every time.

Layout (all integers little-endian)::

    magic          4 bytes   b"PYPL"
    format         u16       FORMAT_VERSION (1)
    plugin name    u16 n  +  n bytes UTF-8
    plugin version u16 n  +  n bytes UTF-8
    field count    u16
    per field, in the plugin's declaration order:
        name       u16 n  +  n bytes UTF-8
        tag        u8        a :class:`Tag`
        length     u32       payload bytes
        payload              INT: i64; FLOAT: f64; BOOL: u8 0/1; INTS: i64 * k;
                             FLOATS: f64 * k; STR: UTF-8 bytes

Decoding checks every length against the bytes that remain (so a corrupt length cannot make it
read, allocate or loop without bound), the magic, the format version, the plugin's name and
version, each tag and payload, unknown, duplicate and missing fields, and trailing bytes; any
problem raises :class:`~pyplugins.errors.SerializationError` naming the plugin. A list or string
payload is measured before it is read: more elements than the field's ``max_len`` (with
:func:`loads_fields`) or ``knobs.max_field_elements`` (``PYPLUGINS_MAX_FIELD_ELEMENTS``) is
refused at once, naming the field and the limit, so a huge corrupt or hostile blob costs no
memory; lists are read with ``numpy.frombuffer``.

Plugins rarely call this module: :class:`pyplugins.Plugin` serializes its fields with it.

Example:
    >>> from pyplugins.runtime import serialize
    >>> from pyplugins.runtime.serialize import Tag
    >>> blob = serialize.dumps("CircPad", "1", [("pads", Tag.INTS, [1, 1, 2, 2])])
    >>> blob[:4]
    b'PYPL'
    >>> serialize.loads(blob, plugin_name="CircPad", plugin_version="1")
    {'pads': (<Tag.INTS: 3>, [1, 1, 2, 2])}
"""

from __future__ import annotations

import enum
import struct
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import numpy as np

from pyplugins._config import knobs
from pyplugins.echo import echo
from pyplugins.errors import SerializationError

MAGIC = b"PYPL"
FORMAT_VERSION = 1
#: Upper bound on the number of fields a blob may declare (a corrupt count fails fast).
MAX_FIELDS = 4096

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U8 = struct.Struct("<B")


class Tag(enum.IntEnum):
    """Type tag of one serialized field value."""

    INT = 1
    FLOAT = 2
    INTS = 3
    FLOATS = 4
    STR = 5
    BOOL = 6


# -- encoding -------------------------------------------------------------------------------------

def _text(value: str, what: str, plugin: str) -> bytes:
    data = value.encode("utf-8")
    if len(data) > 0xFFFF:
        msg = f"cannot serialize plugin {plugin!r}: {what} is longer than 65535 bytes"
        raise SerializationError(msg)
    return _U16.pack(len(data)) + data


def _payload(tag: Tag, value: Any) -> bytes:
    if tag is Tag.INT:
        return struct.pack("<q", value)
    if tag is Tag.FLOAT:
        return struct.pack("<d", value)
    if tag is Tag.BOOL:
        return _U8.pack(1 if value else 0)
    if tag is Tag.INTS:
        return struct.pack(f"<{len(value)}q", *value)
    if tag is Tag.FLOATS:
        return struct.pack(f"<{len(value)}d", *value)
    if tag is Tag.STR:
        return value.encode("utf-8")
    msg = f"unknown tag {tag!r}"
    raise ValueError(msg)


def dumps(plugin_name: str, plugin_version: str,
          entries: Iterable[Tuple[str, Tag, Any]]) -> bytes:
    """Encode ``(field name, tag, value)`` entries, in the order given.

    Args:
        plugin_name: the plugin's type name (checked again by :func:`loads`).
        plugin_version: the plugin's version string (checked again by :func:`loads`).
        entries: field name, :class:`Tag` and value (int, float, bool, str, or a list of ints
            or floats).

    Returns:
        The encoded bytes; equal inputs always give equal bytes.

    Raises:
        SerializationError: a value does not fit its tag (an int outside int64, a list holding
            a non-number, a name longer than 65535 bytes).
    """
    items = list(entries)
    if len(items) > MAX_FIELDS:
        msg = f"cannot serialize plugin {plugin_name!r}: more than {MAX_FIELDS} fields"
        raise SerializationError(msg)
    parts = [MAGIC, _U16.pack(FORMAT_VERSION), _text(plugin_name, "the plugin name", plugin_name),
             _text(plugin_version, "the plugin version", plugin_name), _U16.pack(len(items))]
    for name, tag, value in items:
        tag = Tag(tag)
        try:
            payload = _payload(tag, value)
        except (struct.error, TypeError, ValueError, OverflowError, AttributeError) as err:
            msg = (f"cannot serialize field {name!r} of plugin {plugin_name!r}: value {echo(value)} "
                   f"does not fit type {tag.name} ({err})")
            raise SerializationError(msg) from err
        if len(payload) > 0xFFFFFFFF:
            msg = f"cannot serialize field {name!r} of plugin {plugin_name!r}: value too large"
            raise SerializationError(msg)
        parts += [_text(name, f"field name {name[:40]!r}", plugin_name), _U8.pack(tag),
                  _U32.pack(len(payload)), payload]
    return b"".join(parts)


# -- decoding -------------------------------------------------------------------------------------

class _Reader:
    """Bounds-checked cursor over the blob; every read failure names the plugin."""

    def __init__(self, data: bytes, plugin: str) -> None:
        self.data = data
        self.view = memoryview(data)  # payloads are sliced without copies
        self.pos = 0
        self.plugin = plugin

    def fail(self, what: str) -> SerializationError:
        return SerializationError(
            f"cannot deserialize plugin {self.plugin!r}: {what} (at byte {self.pos} of "
            f"{len(self.data)}); the engine or blob is corrupt or was not written by pyplugins")

    def take(self, n: int, what: str) -> memoryview:
        if n > len(self.data) - self.pos:
            msg = (f"truncated data: {what} needs {n} bytes but only "
                   f"{len(self.data) - self.pos} remain")
            raise self.fail(msg)
        chunk = self.view[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def u8(self, what: str) -> int:
        return _U8.unpack(self.take(1, what))[0]

    def u16(self, what: str) -> int:
        return _U16.unpack(self.take(2, what))[0]

    def u32(self, what: str) -> int:
        return _U32.unpack(self.take(4, what))[0]

    def text(self, what: str) -> str:
        raw = self.take(self.u16(f"the length of {what}"), what)
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not valid UTF-8") from None


def _decode_payload(reader: _Reader, name: str, tag: Tag, raw: memoryview) -> Any:
    def bad(expected: str) -> SerializationError:
        return reader.fail(f"field {name!r} ({tag.name}) has a {len(raw)}-byte payload; "
                           f"expected {expected}")

    if tag in (Tag.INT, Tag.FLOAT):
        if len(raw) != 8:
            raise bad("8 bytes")
        return struct.unpack("<q" if tag is Tag.INT else "<d", raw)[0]
    if tag is Tag.BOOL:
        if len(raw) != 1 or raw[0] > 1:
            raise bad("1 byte holding 0 or 1")
        return bool(raw[0])
    if tag in (Tag.INTS, Tag.FLOATS):
        if len(raw) % 8:
            raise bad("a multiple of 8 bytes")
        return np.frombuffer(raw, "<i8" if tag is Tag.INTS else "<f8").tolist()
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise reader.fail(f"field {name!r} is not valid UTF-8") from None


def read_header(data: bytes, *, plugin_name: str = "?") -> Tuple[int, str, str]:
    """The (format version, plugin name, plugin version) a blob declares.

    Raises:
        SerializationError: the blob is not pyplugins data or its header is truncated.
    """
    reader = _Reader(_as_bytes(data, plugin_name), plugin_name)
    return _header(reader)


def _header(reader: _Reader) -> Tuple[int, str, str]:
    if bytes(reader.take(4, "the magic number")) != MAGIC:
        raise reader.fail(f"it does not start with {MAGIC!r}")
    version = reader.u16("the format version")
    if version != FORMAT_VERSION:
        hint = "a newer pyplugins wrote it; upgrade" if version > FORMAT_VERSION else "unknown"
        raise reader.fail(f"format version {version} is not supported (this pyplugins reads "
                          f"version {FORMAT_VERSION}; {hint})")
    return version, reader.text("the plugin name"), reader.text("the plugin version")


def _as_bytes(data: Any, plugin: str) -> bytes:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    msg = (f"cannot deserialize plugin {plugin!r}: expected bytes (got a "
           f"{type(data).__name__})")
    raise SerializationError(msg)


#: A field's element limit and where it comes from, as :func:`_entries` takes it.
Limit = Tuple[int, str]


def _global_limit() -> Limit:
    return knobs.max_field_elements, "PYPLUGINS_MAX_FIELD_ELEMENTS"


def _entries(data: Any, plugin_name: str, plugin_version: str,
             limits: Optional[Mapping[str, Limit]] = None
             ) -> Tuple[_Reader, Dict[str, Tuple[Tag, memoryview]]]:
    """The reader and ``{field name: (tag, raw payload)}`` of a blob, every length checked and
    every list or string payload measured against its limit before it is read."""
    reader = _Reader(_as_bytes(data, plugin_name), plugin_name)
    _, name, version = _header(reader)
    if (name, version) != (plugin_name, plugin_version):
        raise reader.fail(f"it was written by plugin {name!r} version {version!r}, not "
                          f"{plugin_name!r} version {plugin_version!r}")
    count = reader.u16("the field count")
    if count > MAX_FIELDS:
        raise reader.fail(f"it declares {count} fields (at most {MAX_FIELDS})")
    out: Dict[str, Tuple[Tag, memoryview]] = {}
    for _ in range(count):
        field_name = reader.text("a field name")
        code = reader.u8(f"the type tag of field {field_name!r}")
        try:
            tag = Tag(code)
        except ValueError:
            raise reader.fail(f"field {field_name!r} has unknown type tag {code}") from None
        raw = reader.take(reader.u32(f"the length of field {field_name!r}"),
                          f"the value of field {field_name!r}")  # a view: nothing read yet
        if tag in (Tag.INTS, Tag.FLOATS, Tag.STR):
            limit, why = (limits or {}).get(field_name) or _global_limit()
            size = len(raw) // 8 if tag is not Tag.STR else len(raw)
            if size > limit:
                unit = "bytes" if tag is Tag.STR else "elements"
                raise reader.fail(f"field {field_name!r} ({tag.name}) holds {size} {unit}, over "
                                  f"the limit of {limit} ({why}); refused before reading it")
        if field_name in out:
            raise reader.fail(f"field {field_name!r} appears twice")
        out[field_name] = (tag, raw)
    if reader.pos != len(reader.data):
        raise reader.fail(f"{len(reader.data) - reader.pos} unexpected trailing bytes")
    return reader, out


def loads(data: bytes, *, plugin_name: str, plugin_version: str) -> Dict[str, Tuple[Tag, Any]]:
    """Decode a blob written by :func:`dumps` for plugin ``plugin_name`` ``plugin_version``.

    Returns:
        ``{field name: (tag, value)}`` in the order the blob lists them.

    Raises:
        SerializationError: malformed or truncated bytes, another format version, another
            plugin or plugin version, an unknown tag, a duplicate field, trailing bytes, or a
            list or string over ``knobs.max_field_elements``.
    """
    reader, entries = _entries(data, plugin_name, plugin_version)
    return {name: (tag, _decode_payload(reader, name, tag, raw))
            for name, (tag, raw) in entries.items()}


# -- plugin-level helpers -------------------------------------------------------------------------

def dumps_fields(plugin_name: str, plugin_version: str, fields: Mapping[str, Any],
                 values: Mapping[str, Any]) -> bytes:
    """Encode field values using their :class:`~pyplugins.runtime.fields.Field` specs (which carry the
    tag), in the specs' declaration order."""
    return dumps(plugin_name, plugin_version,
                 [(name, spec.tag, spec.to_serial(values[name])) for name, spec in fields.items()])


def loads_fields(plugin_name: str, plugin_version: str, fields: Mapping[str, Any],
                 data: bytes) -> Dict[str, Any]:
    """Decode a blob into validated field values, checking it against the field specs.

    Raises:
        SerializationError: as :func:`loads`, or a field is unknown, missing, of the wrong type,
            longer than its ``max_len`` (refused before it is read), or holds a value its spec
            rejects (NaN where the field does not allow it, out of bounds, ...).
    """
    limits = {name: (spec.max_len, f"the field's max_len of plugin {plugin_name!r}")
              for name, spec in fields.items()
              if spec.max_len is not None and spec.max_len < _global_limit()[0]}
    reader, decoded = _entries(data, plugin_name, plugin_version, limits)
    unknown = [n for n in decoded if n not in fields]
    missing = [n for n in fields if n not in decoded]
    if unknown or missing:
        parts = []
        if unknown:
            parts.append(f"unknown field(s) {', '.join(map(repr, unknown))}")
        if missing:
            parts.append(f"missing field(s) {', '.join(map(repr, missing))}")
        msg = (f"cannot deserialize plugin {plugin_name!r}: {' and '.join(parts)}; the blob was "
               f"written by a different definition of the plugin (declared fields: "
               f"{', '.join(fields) or 'none'})")
        raise SerializationError(msg)
    values: Dict[str, Any] = {}
    for name, spec in fields.items():
        tag, raw = decoded[name]
        if tag != spec.tag:
            msg = (f"cannot deserialize plugin {plugin_name!r}: field {name!r} is stored as "
                   f"{tag.name} but the plugin declares {Tag(spec.tag).name}")
            raise SerializationError(msg)
        value = _decode_payload(reader, name, tag, raw)
        try:
            values[name] = spec.convert(value, plugin_name)
        except (TypeError, ValueError) as err:
            msg = (f"cannot deserialize plugin {plugin_name!r}: field {name!r} holds a value the "
                   f"plugin rejects: {err}")
            raise SerializationError(msg) from err
    return values


__all__: List[str] = ["FORMAT_VERSION", "MAGIC", "MAX_FIELDS", "Tag", "dumps", "dumps_fields",
                      "loads", "loads_fields", "read_header"]
