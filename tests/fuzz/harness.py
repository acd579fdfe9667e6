"""Fuzz cases for ``pyplugins check``'s inputs and how each outcome is judged.

Six targets: mutated serialized blobs (``from_bytes``), hostile blobs (well formed, with a list
past the size limits or a non-finite float), IPluginV3 ``_pyplugins`` headers (deep nesting,
``1e400``, ``NaN``), field collections (``from_fields``), ONNX attributes
(``fields_from_attributes``) and ``pyplugins check`` command lines. A case is
``clean`` when it is accepted or refused with a documented error whose message names the plugin
and the field (or attribute, or argument); ``unclear`` when refused with a documented error that
names neither; ``crash`` when anything else escapes (or a command line ends with another exit
status); ``hang`` when one case takes longer than :data:`HANG_S`. Used by ``test_fuzz.py``
(hypothesis, small) and ``reports/fuzz_large.py`` (>= 100,000 seeded cases).
"""

from __future__ import annotations

import contextlib
import io
import random
import struct
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from pyplugins import emulator as trt
from pyplugins.errors import PyPluginsError

HANG_S = 5.0
OUTCOMES = ("clean", "unclear", "crash", "hang")

# (class name, keyword arguments of a valid instance)
VALID = {
    "CircPad": {"pads": [1, 2, 0, 1]},
    "Pool": {"mode": "avg", "kernel": [3, 3], "padding": [1, 1]},
    "LeakyReLU": {"neg_slope": 0.1},
    "RMSNorm": {"eps": 1e-5},
    "RoPE": {"rotary_dim": 8, "theta": 10000.0, "layout": "neox", "position_offset": 0},
    "SeqRepeat": {"factor": 2},
}


def plugin_classes() -> Dict[str, Any]:
    from pyplugins import ops

    return {name: getattr(ops, name) for name in VALID}


def _judge(err: BaseException, needles: Tuple[str, ...], documented: Tuple[type, ...]) -> str:
    if not isinstance(err, documented):
        return "crash"
    text = str(err)
    return "clean" if all(n in text for n in needles if n) else "unclear"


def blob_case(rng: random.Random, cls: Any, blob: bytes) -> Callable[[], str]:
    """Mutate ``blob`` (flip, cut, insert, splice) and deserialize it."""
    data = bytearray(blob)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(4)
        if op == 0 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif op == 1 and data:
            del data[rng.randrange(len(data)):]
        elif op == 2:
            at = rng.randrange(len(data) + 1)
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif data:
            at = rng.randrange(len(data))
            data[at:at + 4] = rng.choice([b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\0\0\0\0"])
    raw = bytes(data)

    def run() -> str:
        try:
            cls.from_bytes(raw, "fuzz_layer")
        except PyPluginsError as err:
            return _judge(err, (cls.name,), (PyPluginsError,))
        except Exception:  # noqa: BLE001 - judged
            return "crash"
        return "clean"
    return run


def _encode(cls: Any, payloads: List[Tuple[str, int, bytes]]) -> bytes:
    """A blob in :mod:`pyplugins.runtime.serialize`'s layout from raw payloads (which ``dumps`` would
    refuse or build slowly: tens of MB of list, NaN bits)."""
    def text(t: str) -> bytes:
        return struct.pack("<H", len(t.encode())) + t.encode()

    out = [b"PYPL", struct.pack("<H", 1), text(cls.name), text(cls.version),
           struct.pack("<H", len(payloads))]
    for name, tag, payload in payloads:
        out += [text(name), struct.pack("<BI", tag, len(payload)), payload]
    return b"".join(out)


def hostile_blob_case(rng: random.Random, cls: Any) -> Callable[[], str]:
    """A valid instance's fields with one made hostile (a list far past the element limit or its
    ``max_len``, NaN, inf or a float beyond float32, int64's extremes) -> ``from_bytes``."""
    from pyplugins._config import knobs
    from pyplugins.runtime.serialize import Tag

    plugin = cls(**VALID[cls.__name__])
    payloads = []
    for name, spec in cls.__pp_fields__.items():
        value = spec.to_serial(getattr(plugin, name))
        payloads.append((name, int(spec.tag), serialize_payload(spec.tag, value)))
    k = rng.randrange(len(payloads))
    name, tag, _ = payloads[k]
    if tag in (Tag.INTS, Tag.FLOATS):
        n = rng.choice([knobs.max_field_elements + 1, 3 * knobs.max_field_elements, 1000, 9])
        fill = rng.choice([0.0, float("nan"), float("inf"), 1e308])
        payload = np.full(n, fill if tag == Tag.FLOATS else rng.choice([0, -1, 2**62]),
                          "<f8" if tag == Tag.FLOATS else "<i8").tobytes()
    elif tag == Tag.FLOAT:
        payload = struct.pack("<d", rng.choice([float("nan"), float("-inf"), 1e308, -0.0]))
    elif tag == Tag.INT:
        payload = struct.pack("<q", rng.choice([2**63 - 1, -2**63, 2**31]))
    else:
        payload = bytes(rng.randrange(256) for _ in range(rng.randint(0, 9)))
    payloads[k] = (name, tag, payload)
    raw = _encode(cls, payloads)

    def run() -> str:
        try:
            cls.from_bytes(raw, "fuzz_layer")
        except PyPluginsError as err:
            return _judge(err, (cls.name,), (PyPluginsError,))
        except Exception:  # noqa: BLE001 - judged
            return "crash"
        return "clean"
    return run


def serialize_payload(tag: Any, value: Any) -> bytes:
    """One field's payload as :func:`pyplugins.runtime.serialize.dumps` writes it."""
    from pyplugins.runtime import serialize

    blob = serialize.dumps("P", "1", [("f", tag, value)])
    return blob[len(serialize.dumps("P", "1", [])) + 3 + 1 + 4:]


_HEADER_PIECES = [b'{"format": 1, "plugin": "%s", "version": "1"}', b"1e400", b"NaN",
                  b"-Infinity", b"1" * 5000, b"\xff\xfe", b'"text"', b"[]", b"{}", b"null"]


def v3_header_case(rng: random.Random, cls: Any) -> Callable[[], str]:
    """A ``_pyplugins`` header of an IPluginV3 engine, nested, overflowing or non-finite ->
    ``v3_fields.values``."""
    depth = rng.choice([1, 7, 9, 600, 5000, 200_000])
    opener = rng.choice([b"[", b'{"a":'])
    closer = b"]" if opener == b"[" else b"}"
    middle = rng.choice(_HEADER_PIECES).replace(b"%s", cls.name.encode())
    if rng.random() < 0.5:
        middle = (b'{"format": %s, "plugin": "' % rng.choice([b"1", b"1e400", b"NaN", b"1.5"]) +
                  cls.name.encode() + b'", "version": "1"}')
    raw = opener * depth + middle + closer * rng.choice([depth, max(depth - 1, 0)])

    def run() -> str:
        from pyplugins.runtime import v3_fields

        pf = trt.PluginField(v3_fields.HEADER, np.frombuffer(raw, np.int8).copy(),
                             trt.PluginFieldType.CHAR)
        try:
            v3_fields.values(cls, trt.PluginFieldCollection([pf]))
        except PyPluginsError as err:
            return _judge(err, (cls.name,), (PyPluginsError,))
        except Exception:  # noqa: BLE001 - judged (RecursionError was the defect)
            return "crash"
        return "clean"
    return run


_FIELD_VALUES = [
    lambda r: np.array([r.randint(-2**31, 2**31 - 1) for _ in range(r.randint(0, 5))], np.int32),
    lambda r: np.array([r.uniform(-1e6, 1e6) for _ in range(r.randint(0, 4))], np.float32),
    lambda r: np.frombuffer(r.choice([b"max\0", b"avg\0", b"neox\0", b"\xff\0", b""]), np.int8),
    lambda r: np.array([r.choice([0.0, float("nan"), float("inf"), -1.0])], np.float32),
    lambda r: np.array([r.randint(-3, 3)], np.int64),
    lambda r: np.array([r.randint(0, 1)], np.float16),
]
_TYPES = [trt.PluginFieldType.INT32, trt.PluginFieldType.FLOAT32, trt.PluginFieldType.CHAR,
          trt.PluginFieldType.FLOAT16, trt.PluginFieldType.INT64, trt.PluginFieldType.INT8]


def fields_case(rng: random.Random, cls: Any) -> Callable[[], str]:
    """A random collection over the plugin's field names (and strangers) -> ``from_fields``."""
    names = [f.name for f in cls.creator.field_names] + ["stranger"]
    fields = []
    for _ in range(rng.randint(0, len(names) + 1)):
        name = rng.choice(names)
        data = rng.choice(_FIELD_VALUES)(rng)
        ftype = rng.choice(_TYPES) if rng.random() < 0.3 else {
            "i": trt.PluginFieldType.INT32, "f": trt.PluginFieldType.FLOAT32}.get(
                data.dtype.kind, trt.PluginFieldType.CHAR)
        fields.append(trt.PluginField(name, data, ftype))
    fc = trt.PluginFieldCollection(fields)
    used = {f.name for f in fields}

    def run() -> str:
        try:
            cls.from_fields(fc, "fuzz_layer")
        except PyPluginsError as err:
            text = str(err)
            named = any(n in text for n in used | {"Field", "field"})
            return "clean" if cls.name in text and named else "unclear"
        except Exception:  # noqa: BLE001 - judged
            return "crash"
        return "clean"
    return run


def onnx_case(rng: random.Random) -> Callable[[], str]:
    """A random ONNX attribute (all kinds, odd TENSORs, external data) -> ``fields_from_attributes``."""
    from onnx import TensorProto, helper

    name = rng.choice(["pads", "mode", "w", "x"])
    kind = rng.randrange(8)
    if kind == 0:
        attr = helper.make_attribute(name, rng.randint(-2**63, 2**63 - 1))
    elif kind == 1:
        attr = helper.make_attribute(name, [rng.randint(-2**40, 2**40) for _ in range(rng.randint(1, 6))])
    elif kind == 2:
        attr = helper.make_attribute(name, rng.choice([0.5, 1e39, float("nan"), -0.0]))
    elif kind == 3:
        attr = helper.make_attribute(name, bytes(rng.randrange(256) for _ in range(rng.randint(0, 6))))
    elif kind == 4:
        attr = helper.make_attribute(name, [b"a", b"\xff", b""][: rng.randint(1, 3)])
    else:
        t = TensorProto()
        t.data_type = rng.choice([1, 2, 3, 5, 6, 7, 9, 10, 11, 16, 8, 0, 99])
        t.dims.extend(rng.randint(-1, 4) for _ in range(rng.randint(0, 3)))
        if kind == 5:
            t.raw_data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 24)))
        elif kind == 6:
            t.float_data.extend(rng.random() for _ in range(rng.randint(0, 5)))
        else:
            t.data_location = TensorProto.EXTERNAL
            e = t.external_data.add()
            e.key, e.value = "location", rng.choice(["../x.bin", "/etc/passwd", "w.bin", ""])
        attr = helper.make_attribute(name, t)
    attrs = [attr] + ([attr] if rng.random() < 0.1 else [])

    def run() -> str:
        from pyplugins.emulator.onnx_import import fields_from_attributes
        from pyplugins.errors import FieldError

        try:
            fields_from_attributes(attrs, [name], node="fuzz_node", model_dir=None)
        except FieldError as err:
            return _judge(err, (name,), (FieldError,))
        except Exception:  # noqa: BLE001 - judged
            return "crash"
        return "clean"
    return run


_ARG_PIECES = ["--input", "2x3:float32", "1-2-4x3:float16", "0x3:int8", "2x3x:float32", "-1x2:float32",
               "99999999x99999999:float32", "2:float99", "--attr", "pads=1,1", "pads=\udcff",
               "mode=", "=3", "--plugin", "CircPad", "Nope:1:x", "--timeout", "0", "-3", "nan",
               "--json", "--trace", "--require-gpu", "--device", "gpu", "cpu", "--bogus", ""]


def cli_case(rng: random.Random, target: str) -> Callable[[], str]:
    """A random ``pyplugins check`` command line on a plugin file -> exit 0, 1 or 2."""
    argv = ["check", target] + [rng.choice(_ARG_PIECES) for _ in range(rng.randint(0, 7))]
    if rng.random() < 0.5:
        argv += ["--input", "2x3:float32", "--device", "cpu"]

    def run() -> str:
        from pyplugins import cli

        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(argv)
        except BaseException:  # noqa: BLE001 - judged
            return "crash"
        if code not in (0, 1, 2):
            return "crash"
        if "--json" in argv and code != 0 and "--help" not in argv:
            import json

            try:
                json.loads(out.getvalue().split("\n", 0)[0] or "null")
            except ValueError:
                return "unclear"
        if code == 2 and "error" not in err.getvalue():
            return "unclear"
        return "clean"
    return run


def timed(case: Callable[[], str]) -> str:
    start = time.monotonic()
    result = case()
    return "hang" if time.monotonic() - start > HANG_S else result


def blobs() -> Dict[str, bytes]:
    """A valid serialized blob per plugin class."""
    return {name: cls(**VALID[name]).serialize() for name, cls in plugin_classes().items()}


def tally(results: List[str]) -> Dict[str, int]:
    return {k: results.count(k) for k in OUTCOMES}
