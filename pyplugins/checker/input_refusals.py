"""A plugin refusing the inputs a check gave it: the command's usage errors, not plugin defects.

``pyplugins check`` passes the user's ``--attr`` values and ``--input`` shapes to the plugin.
When the plugin refuses them on purpose, the fault is in the command line (exit 2), said once:

- a ``FieldError`` (:class:`pyplugins.errors.FieldError`) from ``create_plugin`` or the first
  ``configure_plugin``: an ``--attr`` value (or a missing one) the plugin does not accept;
- a ``ShapeError`` from the first shape query (``get_output_dimensions``/``get_output_shapes``)
  or the first ``configure_plugin``: ``--input`` shapes, or a number of inputs, it refuses;
- more or fewer ``--input`` than the parameters of the plugin's ``reference()`` (pyplugins'
  ``Plugin`` classes), which is how many inputs the checks feed it.

Only these deliberate refusals count: any other exception stays a plugin defect. The exception
is recognised by its class name in the trampoline's ``[ERROR]`` line, the only place TensorRT's
error channel leaves it (§1.4).

Example:
    >>> refusals = Refusals(has_attrs=True)
    >>> class Event:
    ...     method = "create_plugin"
    ...     error = ("[ERROR] Exception caught in create_plugin(): FieldError: Field 'pads' "
    ...              "needs 4 values (got 3).\\n\\nAt:\\n  /x/op.py(3): create_plugin\\n")
    >>> refusals(Event())
    >>> refusals.message
    "--attr: Field 'pads' needs 4 values (got 3)."
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Optional

__all__ = ["Refusals", "input_count_error"]

_LINE = re.compile(r"\[ERROR\] Exception (?:caught in|thrown from) (\w+)\(\):? (\w+): (.*?)"
                   r"(?:\n\nAt:\n|\Z)", re.DOTALL)

#: Method -> the exception class names that refuse the command's inputs there.
_REFUSING = {"create_plugin": ("FieldError",),
             "get_output_dimensions": ("ShapeError",), "get_output_shapes": ("ShapeError",),
             "configure_plugin": ("FieldError", "ShapeError")}


class Refusals:
    """A trampoline listener that notes the first call of each method in ``_REFUSING`` and
    whether it refused the command's inputs.

    Attributes:
        message: the usage error to report (``"--attr: ..."`` or ``"--input: ..."``), or None.
    """

    def __init__(self, has_attrs: bool) -> None:
        self.has_attrs = has_attrs
        self.message: Optional[str] = None
        self._seen: set = set()

    def __call__(self, event: Any) -> None:
        method = event.method
        if method not in _REFUSING or method in self._seen:
            return
        self._seen.add(method)
        match = _LINE.match(event.error or "")
        if match is None or self.message is not None:
            return
        kind, text = match.group(2), match.group(3).strip()
        if kind not in _REFUSING[method]:
            return
        if kind == "ShapeError":
            self.message = f"--input: {text}"
        elif self.has_attrs:
            self.message = f"--attr: {text}"
        else:
            self.message = f"the plugin needs attributes: {text}; give them with --attr NAME=VALUE"


def input_count_error(creator: Any, given: int) -> Optional[str]:
    """Why ``given`` inputs are wrong for ``creator``'s plugin class, from the parameters of its
    ``reference(self, x, ...)`` (the inputs the checks compare it on), or None when they fit or
    the class does not say (no ``reference``, ``*args``, shape inputs, not a pyplugins class).

    Example:
        >>> class Op:
        ...     name = "Op"
        ...     def reference(self, x, weight=None):
        ...         return (x,)
        >>> class Creator:
        ...     plugin_class = Op
        >>> input_count_error(Creator(), 2) is None
        True
        >>> print(input_count_error(Creator(), 3).replace("), ", "),\\n"))
        --input: plugin 'Op' takes 1 to 2 inputs (x, weight: the arrays its reference() takes),
        got 3; give one --input per input, in order
    """
    cls = getattr(creator, "plugin_class", None)
    reference = getattr(cls, "reference", None)
    if not callable(reference) or getattr(cls, "shape_inputs", 0) or getattr(
            cls, "size_tensors", ()):
        return None
    try:
        params = list(inspect.signature(reference).parameters.values())[1:]  # after self
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    least = sum(1 for p in positional if p.default is p.empty)
    if least <= given <= len(positional):
        return None
    count = (f"{least}" if least == len(positional) else f"{least} to {len(positional)}")
    noun = "input" if count == "1" else "inputs"
    names = ", ".join(p.name for p in positional)
    plugin = getattr(cls, "name", "") or cls.__name__
    return (f"--input: plugin {plugin!r} takes {count} {noun} "
            f"({names}: the arrays its reference() takes), got {given}; give one --input per "
            "input, in order")
