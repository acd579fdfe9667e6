"""Tactics: named launch variants of one op, timed by TensorRT's builder (``IPluginV3`` only).

A plugin offers several ways to run (kernels compiled with other options, other block sizes)
by naming them in its ``tactics`` class attribute and reading ``self.tactic`` where it builds
its launch. Registered as ``IPluginV3``, the plugin reports the tactics from
``get_valid_tactics``; TensorRT's builder times ``enqueue`` under each for every format
combination and keeps the fastest (protocol §2.4), and the engine remembers the choice, which
comes back through ``set_tactic`` at runtime. ``self.tactic`` is then the tactic's name. As an
``IPluginV2DynamicExt`` (no tactics in that interface), and in V3 when TensorRT passes the
default tactic 0, ``self.tactic`` is ``None``: the plugin's own default choice.

``tactics`` is a tuple of names (TensorRT ids 1, 2, ... in order) or a ``{id: name}`` dict for
ids that must not move. The ids are stored in built engines: renaming is free, but reordering a
tuple changes what an old engine's id means, so bump the plugin's ``version`` when you do.

Example (a plugin with two kernels; ``self.tactic`` picks one)::

    class CircPad(pp.Plugin):
        tactics = ("staged", "strips")         # ids 1 and 2; None = the op's default
        def plan(self, inputs, outputs, device):
            kernel = STRIPS if self.tactic == "strips" else STAGED
            ...

    >>> from pyplugins.runtime.tactics import declared, tactic_name
    >>> class Op:
    ...     name, tactics = "OpDoc", ("staged", "strips")
    >>> declared(Op)
    {1: 'staged', 2: 'strips'}
    >>> tactic_name(Op, 2), tactic_name(Op, 0)
    ('strips', None)
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from pyplugins.errors import PluginDefinitionError

__all__ = ["declared", "tactic_name"]

_INT32_MAX = 2**31 - 1  # TensorRT's tactic ids are int32


def declared(cls: Any) -> Dict[int, str]:
    """The class's tactics as ``{id: name}`` (empty when it declares none), checked.

    Raises:
        PluginDefinitionError: ``tactics`` is not a tuple of distinct non-empty names or a dict
            of distinct ids in 1..2**31-1 to distinct names.
    """
    value = getattr(cls, "tactics", ())
    plugin = getattr(cls, "name", "") or getattr(cls, "__name__", "?")
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, (tuple, list)):
        items = list(enumerate(value, start=1))
    else:
        msg = (f"plugin {plugin!r}: tactics must be a tuple of names or an {{id: name}} dict "
               f"(got {value!r}), e.g. tactics = ('staged', 'strips').")
        raise PluginDefinitionError(msg)
    out: Dict[int, str] = {}
    for tid, name in items:
        if isinstance(tid, bool) or not isinstance(tid, int) or not 0 < tid <= _INT32_MAX:
            msg = (f"plugin {plugin!r}: tactic id {tid!r} must be an int in 1..2**31-1 "
                   "(TensorRT reserves 0 for the default tactic).")
            raise PluginDefinitionError(msg)
        if not isinstance(name, str) or not name:
            msg = f"plugin {plugin!r}: tactic {tid} needs a non-empty str name (got {name!r})."
            raise PluginDefinitionError(msg)
        if name in out.values():
            msg = f"plugin {plugin!r}: tactic name {name!r} is given twice; names must differ."
            raise PluginDefinitionError(msg)
        out[tid] = name
    return out


def tactic_name(cls: Any, tactic: Any) -> Optional[str]:
    """The name of TensorRT tactic id ``tactic`` for ``cls``; None for the default tactic 0.

    Raises:
        ValueError: an id the class never offered (an engine built by another version of the
            plugin, or a corrupt one).
    """
    tid = int(tactic)
    if tid == 0:
        return None
    table = declared(cls)
    if tid not in table:
        plugin = getattr(cls, "name", "") or cls.__name__
        offered = ", ".join(f"{k} ({v!r})" for k, v in table.items()) or "none"
        msg = (f"plugin {plugin!r}: set_tactic({tid}) names a tactic it never offered (offered: "
               f"{offered}; 0 is the default). Was the engine built with another version of "
               "the plugin? Rebuild it, or bump the plugin's version when tactics change.")
        raise ValueError(msg)
    return table[tid]
