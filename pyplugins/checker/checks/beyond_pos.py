"""The ``in_out_beyond_pos`` check: ``supports_format_combination`` reading entries not chosen yet.

TensorRT's format search asks position by position; ``in_out[:pos]`` hold what it chose,
``in_out[pos]`` the candidate, and the entries after ``pos`` are junk (§2.1). The search puts a
:class:`PoisonedDesc` there, which reports every read to a :class:`PoisonProbe`.

Example:
    >>> probe = PoisonProbe()
    >>> desc = PoisonedDesc(2, probe)
    >>> probe.arm(1)
    >>> _ = desc.type
    >>> probe.disarm()
    >>> probe.reads, [v.check for v in probe.violations()]
    ([(1, 2, 'type')], ['in_out_beyond_pos'])
"""

from __future__ import annotations

from typing import Any, List, Tuple

from pyplugins.checker.checks import Violation
from pyplugins.emulator.descs import PluginTensorDesc

__all__ = ["PoisonProbe", "PoisonedDesc"]


class PoisonProbe:
    """Collects reads of ``in_out`` entries after ``pos`` during one format search."""

    def __init__(self) -> None:
        self.pos = 0
        self.active = False
        self.reads: List[Tuple[int, int, str]] = []  # (pos of the call, index read, attribute)

    def arm(self, pos: int) -> None:
        """Watch reads made by the plugin during the call for ``pos`` that is about to start."""
        self.pos, self.active = pos, True

    def disarm(self, event: Any = None) -> None:
        """Stop watching (a trampoline listener: the plugin's call has returned, and what other
        listeners read is not the plugin's doing)."""
        self.active = False

    def record(self, index: int, attribute: str) -> None:
        """Note that ``in_out[index].attribute`` was read during the current call."""
        if self.active and index > self.pos:
            self.reads.append((self.pos, index, attribute))

    def violations(self) -> List[Violation]:
        """At most one violation, describing the first bad read and counting the rest."""
        if not self.reads:
            return []
        pos, index, attribute = self.reads[0]
        more = len(self.reads) - 1
        tail = f" ({more} more such reads in this format search)" if more else ""
        msg = (f"supports_format_combination(pos={pos}, ...) read in_out[{index}].{attribute}, "
               f"beyond pos: TensorRT only guarantees in_out[0..pos]; entries after pos hold "
               f"junk while it is still choosing them{tail}. Decide position pos from "
               f"in_out[pos] and earlier positions only (e.g. an output follows an input, never "
               f"an input an output).")
        return [Violation("in_out_beyond_pos", msg, "supports_format_combination")]


class PoisonedDesc(PluginTensorDesc):
    """Looks like a ``PluginTensorDesc`` but reports every read of its fields to a probe.

    The values read are junk (rank 0, FLOAT, LINEAR), as TensorRT's would be.
    """

    __slots__ = ("_pp_index", "_pp_probe")
    _WATCHED = frozenset(("dims", "type", "format", "scale"))

    def __init__(self, index: int, probe: PoisonProbe) -> None:
        super().__init__()
        object.__setattr__(self, "_pp_index", index)
        object.__setattr__(self, "_pp_probe", probe)

    def __getattribute__(self, name: str) -> Any:
        if name in PoisonedDesc._WATCHED:
            probe = object.__getattribute__(self, "_pp_probe")
            probe.record(object.__getattribute__(self, "_pp_index"), name)
        return object.__getattribute__(self, name)

    def __repr__(self) -> str:
        index = object.__getattribute__(self, "_pp_index")
        return f"PluginTensorDesc(<not chosen yet: in_out[{index}]>)"


