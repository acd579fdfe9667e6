"""One line explaining TensorRT's "Attribute X not found in plugin node!" warning where it is
harmless: the plugin's field has a default (or another name the node gives).

TensorRT's ONNX parser prints that warning for every name in the creator's ``field_names`` that a
node does not carry, defaults or not (docs/trt-protocol.md §4.4); the emulated parser
(:mod:`pyplugins.emulator.onnx_import`) prints it word for word. A ``pp.Plugin`` class knows which
of its fields may be left out (:meth:`pyplugins.runtime.plugin.Plugin.missing_field_note`), so
pyplugins' reports add :func:`missing_attribute_note` after the warnings instead of changing them.

Example:
    >>> missing_attributes(["Attribute eps not found in plugin node! Ensure that ...", "other"])
    ['eps']
"""

from __future__ import annotations

import re
from typing import Any, Iterable, List, Optional, Sequence

__all__ = ["missing_attributes", "missing_attribute_note"]

_WARNING = re.compile(r"^Attribute (.+?) not found in plugin node!")


def missing_attributes(warnings: Iterable[str]) -> List[str]:
    """The attribute names of the parser's "not found in plugin node" warnings, in order."""
    found = (_WARNING.match(w) for w in warnings)
    return [m.group(1) for m in found if m is not None]


def missing_attribute_note(creator: Any, warnings: Sequence[str],
                           given: Iterable[str]) -> Optional[str]:
    """The line that says why the parser's missing-attribute warnings are harmless, or None.

    Args:
        creator: the creator the node was imported with; only a ``pp.register`` creator (its
            ``plugin_class`` has ``missing_field_note``) can say which fields have defaults.
        warnings: the parser's warnings for the node.
        given: the field names the node did carry (the ``fc`` passed to ``create_plugin``).

    Returns:
        None when no warning is about a missing attribute, the creator is not pyplugins', or no
        missing attribute may be left out (a required field: then the warning is not harmless).

    Example:
        >>> import pyplugins.ops.rmsnorm as rmsnorm
        >>> w = ["Attribute eps not found in plugin node! Ensure that the plugin creator has a "
        ...      "default value defined or the engine may fail to build."]
        >>> note = missing_attribute_note(rmsnorm.RMSNorm.creator, w, [])
        >>> note.startswith("TensorRT's ONNX parser warns"), note.split("; ")[-1]
        (True, "harmless here: eps's default 1e-06 applies")
    """
    names = missing_attributes(warnings)
    explain = getattr(getattr(creator, "plugin_class", None), "missing_field_note", None)
    if not names or explain is None:
        return None
    given = list(given)
    reasons = [why for why in (explain(name, given) for name in names) if why]
    if not reasons:
        return None
    return ("TensorRT's ONNX parser warns \"Attribute ... not found in plugin node!\" for every "
            f"field a node leaves out; harmless here: {'; '.join(reasons)}")
