"""Typed plugin fields: one declaration gives the creator's ``field_names``, the ONNX attribute,
conversion and validation of the value, the attribute on the plugin and its serialized state.

Declare fields as class attributes of a :class:`pyplugins.Plugin`::

    class Pool(pp.Plugin):
        name = "Pool"
        kernel_size = pp.Field.ints(len=2, min=1)          # required: no default
        mode = pp.Field.enum("max", "avg", default="max")
        eps = pp.Field.float(default=1e-5, min=0.0)
        count_pad = pp.Field.bool(default=False)

and read them as attributes (``self.kernel_size`` is a ``list`` of ``int``). Each instance has
its own values; clones get deep copies. Assigning (``self.eps = 0.1``) converts and validates.

Values come from three places, and all are accepted (:mod:`pyplugins.field_values` reads them):

- TensorRT's ONNX parser (docs/trt-protocol.md §4.4): INT/INTS as **int32** arrays, FLOAT(S) as float32,
  STRING as CHAR (int8) bytes with a **trailing NUL** (stripped here);
- QDP-style or hand-made ``PluginField`` lists: INT64, FLOAT64, INT8/INT32 bools;
- Python callers (``CircPad(pads=[1, 1])``, ``pp.run(CircPad, x, pads=(1, 1))``), including
  NumPy scalars and arrays.

A wrong value raises :class:`~pyplugins.errors.FieldError`, e.g.
``Field 'pads' of plugin 'CircPad' must be a list of ints (got 1.5, a float).``

Constructors -> Python value (declared PluginFieldType): ``Field.int()`` -> int (INT32),
``Field.float()`` -> float (FLOAT32), ``Field.ints()`` -> list of int (INT32),
``Field.floats()`` -> list of float (FLOAT32), ``Field.str()`` -> str (CHAR), ``Field.bool()`` ->
bool (INT32), ``Field.enum(*choices)`` -> one of the choices (CHAR for strings, INT32 for ints).

Example:
    >>> from pyplugins.fields import Field
    >>> pads = Field.ints(len=4, min=0)
    >>> pads.name = "pads"
    >>> pads.convert((1, 1, 2, 2), "CircPad")
    [1, 1, 2, 2]
    >>> pads.convert([1, -1, 0, 0], "CircPad")
    Traceback (most recent call last):
    ...
    pyplugins.errors.FieldError: Field 'pads' of plugin 'CircPad' must have every element >= 0 (got [1, -1, 0, 0]).
"""

from __future__ import annotations

import builtins
import copy
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import numpy as np

import pyplugins.trt as trt
from pyplugins.errors import FieldError, PluginDefinitionError
from pyplugins.field_values import (UnreadablePluginField, list_from_python,
                                    python_from_plugin_field, scalar_from_python,
                                    values_from_fc, values_from_python)
from pyplugins.serialize import Tag

MISSING: Any = type("MISSING", (), {"__repr__": lambda self: "MISSING"})()
Check = Optional[Callable[[Any], Any]]  # a custom validator: raise ValueError or return False
OptInt = Optional[int]

# kind -> (what a value must be, PluginFieldType name, numpy dtype, serialize tag)
_KINDS = {
    "int": ("an int", "INT32", np.int32, Tag.INT),
    "float": ("a float", "FLOAT32", np.float32, Tag.FLOAT),
    "ints": ("a list of ints", "INT32", np.int32, Tag.INTS),
    "floats": ("a list of floats", "FLOAT32", np.float32, Tag.FLOATS),
    "str": ("a string", "CHAR", np.int8, Tag.STR),
    "bool": ("a bool", "INT32", np.int32, Tag.BOOL),
}


def _describe(value: Any) -> str:
    """``"1.5, a float"``: the value and its type, for error messages."""
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text}, {article} {kind}"


def _short(value: Any) -> builtins.str:
    text = repr(list(value) if isinstance(value, (tuple, np.ndarray)) else value)
    return text if builtins.len(text) <= 80 else text[:77] + "..."


class Field:
    """One typed plugin attribute; build it with a constructor below, not directly.

    Attributes:
        name: the attribute (and ONNX attribute) name, set when the class is created.
        kind: ``"int"``, ``"float"``, ``"ints"``, ``"floats"``, ``"str"``, ``"bool"`` or
            ``"enum"``.
        default: the default value, or :data:`MISSING` for a required field.
        doc: a one-line description (shown by tools).
    """

    def __init__(self, kind: builtins.str, default: Any = MISSING, *, min: Any = None,  # noqa: A002
                 max: Any = None, len: OptInt = None, min_len: OptInt = None,  # noqa: A002
                 max_len: OptInt = None, choices: Sequence[Any] = (), validate: Check = None,
                 doc: builtins.str = "") -> None:
        if kind == "enum":
            if not choices:
                raise PluginDefinitionError("Field.enum() needs at least one allowed value, "
                                            "e.g. Field.enum('max', 'avg').")
            if builtins.all(isinstance(c, builtins.str) for c in choices):
                self._base = "str"
            elif builtins.all(isinstance(c, builtins.int) and not isinstance(c, builtins.bool)
                              for c in choices):
                self._base = "int"
            else:
                msg = f"Field.enum() choices must be all strings or all ints (got {choices!r})."
                raise PluginDefinitionError(msg)
        elif kind in _KINDS:
            self._base = kind
        else:
            msg = f"unknown field kind {kind!r}; use Field.int(), Field.ints(), ..."
            raise PluginDefinitionError(msg)
        if validate is not None and not callable(validate):
            msg = f"Field validate= must be a callable (got {_describe(validate)})."
            raise PluginDefinitionError(msg)
        self.kind = kind
        self.name = ""
        self.min, self.max, self.choices, self.validate, self.doc = min, max, tuple(choices), \
            validate, doc
        self.min_len = len if len is not None else min_len
        self.max_len = len if len is not None else max_len
        self.default = default  # converted and checked by finalize(), once the class exists

    # -- constructors -----------------------------------------------------------------------------

    @classmethod
    def int(cls, default: Any = MISSING, *, min: Any = None, max: Any = None,  # noqa: A002,A003
            validate: Check = None, doc: builtins.str = "") -> "Field":
        """An ``int`` (ONNX INT). ``min``/``max`` bound it; ``validate`` is a custom check."""
        return cls("int", default, min=min, max=max, validate=validate, doc=doc)

    @classmethod
    def float(cls, default: Any = MISSING, *, min: Any = None, max: Any = None,  # noqa: A002,A003
              validate: Check = None, doc: builtins.str = "") -> "Field":
        """A ``float`` (ONNX FLOAT; ints are accepted and converted)."""
        return cls("float", default, min=min, max=max, validate=validate, doc=doc)

    @classmethod
    def ints(cls, default: Any = MISSING, *, len: OptInt = None, min_len: OptInt = None,  # noqa: A002
             max_len: OptInt = None, min: Any = None, max: Any = None,  # noqa: A002
             validate: Check = None, doc: builtins.str = "") -> "Field":
        """A ``list[int]`` (ONNX INTS). ``len``/``min_len``/``max_len`` bound its length,
        ``min``/``max`` every element."""
        return cls("ints", default, len=len, min_len=min_len, max_len=max_len, min=min, max=max,
                   validate=validate, doc=doc)

    @classmethod
    def floats(cls, default: Any = MISSING, *, len: OptInt = None, min_len: OptInt = None,  # noqa: A002
               max_len: OptInt = None, min: Any = None, max: Any = None,  # noqa: A002
               validate: Check = None, doc: builtins.str = "") -> "Field":
        """A ``list[float]`` (ONNX FLOATS; ints are accepted and converted)."""
        return cls("floats", default, len=len, min_len=min_len, max_len=max_len, min=min,
                   max=max, validate=validate, doc=doc)

    @classmethod
    def str(cls, default: Any = MISSING, *, validate: Check = None,  # noqa: A003
            doc: builtins.str = "") -> "Field":
        """A ``str`` (ONNX STRING; the parser's trailing NUL is stripped)."""
        return cls("str", default, validate=validate, doc=doc)

    @classmethod
    def bool(cls, default: Any = MISSING, *,  # noqa: A003
             validate: Check = None, doc: builtins.str = "") -> "Field":
        """A ``bool`` (ONNX INT 0/1; also INT8 from QDP, and "true"/"false" strings)."""
        return cls("bool", default, validate=validate, doc=doc)

    @classmethod
    def enum(cls, *choices: Any, default: Any = MISSING,
             validate: Check = None, doc: builtins.str = "") -> "Field":
        """One of ``choices`` (all strings: ONNX STRING; all ints: ONNX INT)."""
        return cls("enum", default, choices=choices, validate=validate, doc=doc)

    # -- descriptor -------------------------------------------------------------------------------

    def __set_name__(self, owner: type, name: builtins.str) -> None:
        # Checks happen in finalize(): Python 3.11 hides errors raised here behind a RuntimeError.
        if not self.name:
            self.name = name
        elif self.name != name:
            self._conflict = (self.name, name, owner.__name__)

    def finalize(self, plugin: builtins.str) -> None:
        """Check the declaration once the class exists (called by :func:`collect`).

        Raises:
            PluginDefinitionError: the same Field object serves two names, or a bad default.
        """
        conflict = getattr(self, "_conflict", None)
        if conflict is not None:
            msg = (f"the same Field object is used as both {conflict[0]!r} and {conflict[1]!r} in "
                   f"{conflict[2]}; create one Field per attribute.")
            raise PluginDefinitionError(msg)
        if self.default is not MISSING and not getattr(self, "_default_ok", False):
            try:
                self.default = self.convert(self.default, plugin)
            except FieldError as err:
                msg = f"bad default: {err}"
                raise PluginDefinitionError(msg) from None
            self._default_ok = True

    def __get__(self, obj: Any, owner: Optional[type] = None) -> Any:
        if obj is None:
            return self
        try:
            return obj.__dict__[self.name]
        except KeyError:
            msg = (f"Field {self.name!r} of plugin {type(obj).__name__!r} has no value yet "
                   "(was Plugin.__init__ called?)")
            raise AttributeError(msg) from None

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self.name] = self.convert(value, getattr(type(obj), "name", ""))

    def __repr__(self) -> builtins.str:
        extra = f", default={self.default!r}" if self.default is not MISSING else ""
        return f"<Field {self.name or '?'}: {self.kind}{extra}>"

    # -- properties used by the creator and serializer --------------------------------------------

    @property
    def required(self) -> builtins.bool:
        """Whether the field has no default."""
        return self.default is MISSING

    @property
    def tag(self) -> Tag:
        """How :mod:`pyplugins.serialize` stores the value."""
        return _KINDS[self._base][3]

    @property
    def plugin_field_type(self) -> Any:
        """The ``trt.PluginFieldType`` advertised in ``field_names``."""
        return getattr(trt.PluginFieldType, _KINDS[self._base][1])

    def plugin_field(self) -> Any:
        """The ``trt.PluginField`` advertised in the creator's ``field_names`` (empty data of the
        declared dtype: the ONNX parser uses only the name)."""
        return trt.PluginField(self.name, np.array([], dtype=_KINDS[self._base][2]),
                               self.plugin_field_type)

    def default_value(self) -> Any:
        """A fresh copy of the default (lists are never shared between instances)."""
        return copy.deepcopy(self.default)

    def to_serial(self, value: Any) -> Any:
        """The value as :func:`pyplugins.serialize.dumps` takes it for :attr:`tag`."""
        return value

    # -- conversion -------------------------------------------------------------------------------

    def _error(self, plugin: builtins.str, what: builtins.str, hint: builtins.str = "") -> FieldError:
        text = f"Field {self.name!r} of plugin {plugin!r} {what}."
        return FieldError(text + (" " + hint if hint else ""))

    def convert(self, value: Any, plugin: builtins.str) -> Any:
        """A Python (or NumPy) value converted to the field's type and validated.

        Raises:
            FieldError: naming the field, the plugin, the value and what was expected.
        """
        base = self._base
        expected = "one of " + ", ".join(map(repr, self.choices)) if self.kind == "enum" \
            else _KINDS[base][0]
        if base in ("int", "float", "bool", "str"):
            out = scalar_from_python(base, value)
            if out is None:
                raise self._error(plugin, f"must be {expected} (got {_describe(value)})")
        else:
            elem = "int" if base == "ints" else "float"
            items = list_from_python(value)
            out = None if items is None else [scalar_from_python(elem, v) for v in items]
            if out is None or None in out:
                bad = next((v for v in (items or ()) if scalar_from_python(elem, v) is None),
                           value)
                got = _describe(value) if bad is value else \
                    f"{_short(value)}, whose element {_describe(bad)}"
                raise self._error(plugin, f"must be {expected} (got {got})")
        self._check(out, plugin, expected)
        return out

    def _check(self, value: Any, plugin: builtins.str, expected: builtins.str) -> None:
        if self.kind == "enum" and value not in self.choices:
            raise self._error(plugin, f"must be {expected} (got {value!r})")
        items = value if isinstance(value, list) else [value]
        if isinstance(value, list):
            n = builtins.len(value)
            if self.min_len is not None and self.min_len == self.max_len and n != self.min_len:
                raise self._error(plugin, f"must have exactly {self.min_len} elements "
                                          f"(got {n}: {value!r})")
            if self.min_len is not None and n < self.min_len:
                raise self._error(plugin, f"must have at least {self.min_len} elements "
                                          f"(got {n}: {value!r})")
            if self.max_len is not None and n > self.max_len:
                raise self._error(plugin, f"must have at most {self.max_len} elements "
                                          f"(got {n}: {value!r})")
        where = "have every element" if isinstance(value, list) else "be"
        if self.min is not None and builtins.any(v < self.min for v in items):
            raise self._error(plugin, f"must {where} >= {self.min!r} (got {value!r})")
        if self.max is not None and builtins.any(v > self.max for v in items):
            raise self._error(plugin, f"must {where} <= {self.max!r} (got {value!r})")
        if self.validate is not None:
            try:
                ok = self.validate(value)
            except (ValueError, TypeError) as err:
                raise self._error(plugin, f"is invalid: {err} (got {value!r})") from None
            if ok is False:
                name = getattr(self.validate, "__name__", "validate")
                raise self._error(plugin, f"fails check {name} (got {value!r})")

    def from_plugin_field(self, pf: Any, plugin: builtins.str) -> Any:
        """The value carried by a ``trt.PluginField`` (ONNX parser, QDP or hand-made).

        Raises:
            FieldError: an unreadable type, a string where a number is expected, a list where a
                single value is expected, or a value that fails validation.
        """
        try:
            raw = python_from_plugin_field(pf, as_text=self._base == "str")
        except UnreadablePluginField as err:
            raise self._error(plugin, err.what, err.hint) from None
        if isinstance(raw, builtins.str):
            if self._base == "str" or self._base == "bool":
                return self.convert(raw, plugin)
            raise self._error(plugin, f"must be {_KINDS[self._base][0]} (got the string "
                                      f"{raw!r})")
        if self._base in ("ints", "floats"):
            return self.convert(raw, plugin)
        if builtins.len(raw) != 1:
            raise self._error(plugin, f"must be a single value (got {builtins.len(raw)} "
                                      f"values {raw!r})")
        return self.convert(raw[0], plugin)


# -- schema helpers -------------------------------------------------------------------------------

def collect(cls: type) -> Dict[builtins.str, Field]:
    """The fields of a plugin class, base classes' first, in declaration order."""
    out: Dict[builtins.str, Field] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, Field):
                out[name] = value
            elif name in out:
                del out[name]  # a subclass replaced the field with something else
    plugin = getattr(cls, "name", "") or cls.__name__
    for spec in out.values():
        spec.finalize(plugin)
    return out


def field_names(fields: Mapping[builtins.str, Field]) -> Any:
    """The creator's ``field_names``: a ``trt.PluginFieldCollection`` of typed, empty fields."""
    return trt.PluginFieldCollection([spec.plugin_field() for spec in fields.values()])


__all__ = ["MISSING", "Field", "collect", "field_names", "values_from_fc", "values_from_python"]
