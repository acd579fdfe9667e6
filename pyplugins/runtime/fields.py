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

Values come from three places, and all are accepted (:mod:`pyplugins.runtime.field_readers` reads them;
:meth:`Field.convert` converts and validates each value once):

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
Ints must fit int64 (the serialized form); ``int32=True`` declares that the kernel's launch
arithmetic holds the value in int32. Floats must be finite in float32 when finite as given; NaN
is refused unless the field is declared with ``allow_nan=True``, and fails ``min``/``max`` bounds
even then (every comparison with NaN is false, so it would slip past them). ±inf is ordered, so
bounds decide whether it is accepted.

Example:
    >>> from pyplugins.runtime.fields import Field
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
import difflib
import warnings
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence

import numpy as np

import pyplugins.trt as trt
from pyplugins.runtime import field_checks
from pyplugins.echo import echo
from pyplugins.errors import FieldError, PluginDefinitionError
from pyplugins.runtime.field_readers import (UnreadablePluginField, list_from_python,
                                             read_plugin_field, scalar_from_python)
from pyplugins.runtime.serialize import Tag

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
    """``"1.5, a float"``: the value (capped, :func:`~pyplugins.echo.echo`) and its type."""
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return f"{echo(value)}, {article} {kind}"


class Field:
    """One typed plugin attribute; build it with a constructor below, not directly.

    Attributes:
        name: the attribute (and ONNX attribute) name, set when the class is created.
        kind: ``"int"``, ``"float"``, ``"ints"``, ``"floats"``, ``"str"``, ``"bool"`` or
            ``"enum"``.
        base: the value's kind (an enum's is ``"str"`` or ``"int"``; otherwise ``kind``).
        default: the default value, or :data:`MISSING` for a required field.
        doc: a one-line description (shown by tools).
    """

    # min=, max=, len= shadow builtins on purpose (the A002 noqa lines): they are the schema's
    # words, as in Field.ints(len=4, min=0).
    def __init__(self, kind: builtins.str, default: Any = MISSING, *, min: Any = None,  # noqa: A002
                 max: Any = None, len: OptInt = None, min_len: OptInt = None,  # noqa: A002
                 max_len: OptInt = None, choices: Sequence[Any] = (), validate: Check = None,
                 doc: builtins.str = "", int32: builtins.bool = False,
                 allow_nan: builtins.bool = False) -> None:
        if kind == "enum":
            if not choices:
                raise PluginDefinitionError("Field.enum() needs at least one allowed value, "
                                            "e.g. Field.enum('max', 'avg').")
            if builtins.all(isinstance(c, builtins.str) for c in choices):
                self.base = "str"
            elif builtins.all(isinstance(c, builtins.int) and not isinstance(c, builtins.bool)
                              for c in choices):
                self.base = "int"
            else:
                msg = f"Field.enum() choices must be all strings or all ints (got {choices!r})."
                raise PluginDefinitionError(msg)
        elif kind in _KINDS:
            self.base = kind
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
        self.int32 = int32
        self.allow_nan = allow_nan
        self.min_len = len if len is not None else min_len
        self.max_len = len if len is not None else max_len
        self.default = default  # converted and checked by finalize(), once the class exists

    # -- constructors -----------------------------------------------------------------------------
    # Named for the value's type (Field.int, Field.float) and taking min=/max=/len= as __init__.

    @classmethod
    def int(cls, default: Any = MISSING, *, min: Any = None, max: Any = None,  # noqa: A002
            int32: builtins.bool = False, validate: Check = None,
            doc: builtins.str = "") -> "Field":
        """An ``int`` (ONNX INT). ``min``/``max`` bound it; ``int32=True``: the kernel's launch
        arithmetic holds it in int32, so larger values are refused; ``validate``: a custom check."""
        return cls("int", default, min=min, max=max, validate=validate, doc=doc, int32=int32)

    @classmethod
    def float(cls, default: Any = MISSING, *, min: Any = None, max: Any = None,  # noqa: A002
              validate: Check = None, doc: builtins.str = "",
              allow_nan: builtins.bool = False) -> "Field":
        """A ``float`` (ONNX FLOAT; ints are accepted and converted). NaN is refused unless
        ``allow_nan=True``, and always fails ``min``/``max``."""
        return cls("float", default, min=min, max=max, validate=validate, doc=doc,
                   allow_nan=allow_nan)

    @classmethod
    def ints(cls, default: Any = MISSING, *, len: OptInt = None, min_len: OptInt = None,  # noqa: A002
             max_len: OptInt = None, min: Any = None, max: Any = None,  # noqa: A002
             int32: builtins.bool = False, validate: Check = None,
             doc: builtins.str = "") -> "Field":
        """A ``list[int]`` (ONNX INTS). ``len``/``min_len``/``max_len`` bound its length,
        ``min``/``max``/``int32`` every element (as :meth:`int`)."""
        return cls("ints", default, len=len, min_len=min_len, max_len=max_len, min=min, max=max,
                   validate=validate, doc=doc, int32=int32)

    @classmethod
    def floats(cls, default: Any = MISSING, *, len: OptInt = None, min_len: OptInt = None,  # noqa: A002
               max_len: OptInt = None, min: Any = None, max: Any = None,  # noqa: A002
               validate: Check = None, doc: builtins.str = "",
               allow_nan: builtins.bool = False) -> "Field":
        """A ``list[float]`` (ONNX FLOATS; ints are accepted and converted); NaN elements as
        in :meth:`float`."""
        return cls("floats", default, len=len, min_len=min_len, max_len=max_len, min=min,
                   max=max, validate=validate, doc=doc, allow_nan=allow_nan)

    @classmethod
    def str(cls, default: Any = MISSING, *, validate: Check = None,
            doc: builtins.str = "") -> "Field":
        """A ``str`` (ONNX STRING; the parser's trailing NUL is stripped)."""
        return cls("str", default, validate=validate, doc=doc)

    @classmethod
    def bool(cls, default: Any = MISSING, *,
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
        """How :mod:`pyplugins.runtime.serialize` stores the value."""
        return _KINDS[self.base][3]

    @property
    def plugin_field_type(self) -> Any:
        """The ``trt.PluginFieldType`` advertised in ``field_names``."""
        return getattr(trt.PluginFieldType, _KINDS[self.base][1])

    def plugin_field(self) -> Any:
        """The ``trt.PluginField`` advertised in the creator's ``field_names`` (empty data of the
        declared dtype: the ONNX parser uses only the name)."""
        return trt.PluginField(self.name, np.array([], dtype=_KINDS[self.base][2]),
                               self.plugin_field_type)

    def default_value(self) -> Any:
        """A fresh copy of the default (lists are never shared between instances)."""
        return copy.deepcopy(self.default)

    def to_serial(self, value: Any) -> Any:
        """The value as :func:`pyplugins.runtime.serialize.dumps` takes it for :attr:`tag`."""
        return value

    # -- conversion -------------------------------------------------------------------------------

    def _error(self, plugin: builtins.str, what: builtins.str, hint: builtins.str = "") -> FieldError:
        text = f"Field {self.name!r} of plugin {plugin!r} {what}."
        return FieldError(text + (" " + hint if hint else ""))

    def convert(self, value: Any, plugin: builtins.str) -> Any:
        """A raw value (Python, NumPy, or what :mod:`pyplugins.runtime.field_readers` read) converted to
        the field's type and validated: the one conversion every value goes through.

        Raises:
            FieldError: naming the field, the plugin, the value and what was expected.
        """
        base = self.base
        expected = "one of " + ", ".join(map(repr, self.choices)) if self.kind == "enum" \
            else _KINDS[base][0]
        if base in ("int", "float", "bool", "str"):
            out = scalar_from_python(base, value)
            if out is None:
                raise self._error(plugin, f"must be {expected} (got {_describe(value)})",
                                  field_checks.type_hint(base, value))
        else:
            elem = "int" if base == "ints" else "float"
            items = list_from_python(value)
            out = None if items is None else [scalar_from_python(elem, v) for v in items]
            if out is None or None in out:
                bad = next((v for v in (items or ()) if scalar_from_python(elem, v) is None),
                           value)
                got = _describe(value) if bad is value else \
                    f"{echo(value)}, whose element {_describe(bad)}"
                raise self._error(plugin, f"must be {expected} (got {got})",
                                  field_checks.type_hint(elem, bad))
        self._check(out, plugin, expected)
        return out

    def _check(self, value: Any, plugin: builtins.str, expected: builtins.str) -> None:
        problem, narrowed = field_checks.problem(self, value, expected)
        if problem:
            raise self._error(plugin, problem)
        if narrowed:
            warnings.warn(f"Field {self.name!r} of plugin {plugin!r}: {narrowed}.", stacklevel=4)
        if self.validate is not None:
            try:
                ok = self.validate(value)
            except (ValueError, TypeError) as err:
                raise self._error(plugin, f"is invalid: {err} (got {echo(value)})") from None
            if ok is False:
                name = getattr(self.validate, "__name__", "validate")
                raise self._error(plugin, f"fails check {name} (got {echo(value)})")
        nan = field_checks.nan_problem(self, value)  # after validate: its message is the op's
        if nan:
            raise self._error(plugin, nan)

    def read_plugin_field(self, pf: Any, plugin: builtins.str) -> Any:
        """The raw value a ``trt.PluginField`` carries (ONNX parser, QDP or hand-made), read but
        not converted (:meth:`convert` does that once, in ``Plugin.__init__``).

        Raises:
            FieldError: an unreadable type, a string where a number is expected, or several
                values where a single value is expected.
        """
        try:
            return read_plugin_field(pf, self.base, _KINDS[self.base][0])
        except UnreadablePluginField as err:
            raise self._error(plugin, err.what, err.hint) from None


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


# -- every field of a plugin ----------------------------------------------------------------------

def _unknown(fields: Mapping[builtins.str, Field], names: Iterable[builtins.str],
             plugin: builtins.str, source: builtins.str) -> FieldError:
    parts = []
    for name in names:
        close = difflib.get_close_matches(name, list(fields), n=1)
        parts.append(echo(name) + (f" (did you mean {close[0]!r}?)" if close else ""))
    known = ", ".join(fields) or "none"
    return FieldError(f"Plugin {plugin!r} has no field {', '.join(parts)} ({source}); its fields "
                      f"are: {known}.")


def _missing(fields: Mapping[builtins.str, Field], given: Iterable[builtins.str],
             plugin: builtins.str, source: builtins.str) -> None:
    missing = [name for name, spec in fields.items() if name not in given and spec.required]
    if missing:
        names = ", ".join(map(repr, missing))
        msg = (f"Plugin {plugin!r} needs field(s) {names}, which {source} did not give (they "
               f"have no default).")
        raise FieldError(msg)


def values_from_python(fields: Mapping[builtins.str, Field], given: Mapping[builtins.str, Any],
                       plugin: builtins.str) -> Dict[builtins.str, Any]:
    """Every field's value from raw keyword values, each converted and validated once by
    :meth:`Field.convert`, defaults filled in (what ``Plugin.__init__`` stores).

    Raises:
        FieldError: an unknown name (with a suggestion), a missing required field, a bad value.
    """
    unknown = [name for name in given if name not in fields]
    if unknown:
        raise _unknown(fields, unknown, plugin, "given as a keyword")
    _missing(fields, given, plugin, "the call")
    return {name: spec.convert(given[name], plugin) if name in given else spec.default_value()
            for name, spec in fields.items()}


def values_from_fc(fields: Mapping[builtins.str, Field], fc: Any,
                   plugin: builtins.str) -> Dict[builtins.str, Any]:
    """The raw values a ``PluginFieldCollection_`` gives (as ``create_plugin`` receives it), by
    name: read and checked for unknown, repeated and missing fields, not yet converted
    (``Plugin.__init__`` converts them with :func:`values_from_python`).

    Raises:
        FieldError: an unknown, repeated or unreadable field, or a missing required one.
    """
    values: Dict[builtins.str, Any] = {}
    for index in range(builtins.len(fc)):  # no negative indexing on fc (§10.7)
        pf = fc[index]
        name = pf.name
        if name not in fields:
            raise _unknown(fields, [name], plugin, "in the PluginFieldCollection")
        if name in values:
            msg = (f"Field {echo(name)} of plugin {plugin!r} appears twice in the "
                   f"PluginFieldCollection.")
            raise FieldError(msg)
        values[name] = fields[name].read_plugin_field(pf, plugin)
    _missing(fields, values, plugin, "the PluginFieldCollection (the ONNX node's attributes)")
    return values


__all__ = ["MISSING", "Field", "collect", "field_names", "values_from_fc", "values_from_python"]
