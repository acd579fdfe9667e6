"""``AutoTuneCombination``: the type/format grammar a QDP ``autotune`` function returns, and the
combinations it expands to (§8).

``AutoTuneCombination("FP32|FP16, FP32|FP16", "LINEAR", [1, 2])``: one comma-separated entry per
input then output (a single entry is repeated for every position). Inside an entry, ``A|B`` is a
*dependent* choice (all ``|`` entries pick their k-th option together, and must offer the same
number of options), ``A*B`` an *independent* one (every option with every other choice). Types
are ``FP32``, ``FP16`` or a ``trt.DataType`` member name; formats ``trt.TensorFormat`` member
names; the default format is LINEAR. Names are checked only when TensorRT expands the
combination (``get_supported_format_combinations``), as in TensorRT. ``pos(indices, types,
formats)`` sets positions one group at a time; it takes a list of indices (an int raises
TypeError in TensorRT, whatever its docstring shows).

Example:
    >>> c = AutoTuneCombination("FP32*FP16, FP32|FP16, FP32|FP16", "LINEAR", [1, 2])
    >>> [[t.name for t in k.types] for k in c._get_combinations()]
    [['FLOAT', 'FLOAT', 'FLOAT'], ['FLOAT', 'HALF', 'HALF'], ['HALF', 'FLOAT', 'FLOAT'], ['HALF', 'HALF', 'HALF']]
    >>> c._get_combinations()[0].tactics
    [1, 2]
"""

from __future__ import annotations

import copy
from typing import Any, Iterable, List, Optional

from pyplugins.emulator.enums import TensorFormat
from pyplugins.emulator.plugin.attributes import data_type_from_str
from pyplugins.errors import QDPAssertionError, QDPAttributeError, QDPDefinitionError, QDPTypeError

__all__ = ["AutoTuneCombination", "TypeFormatCombination", "expand_one_side"]


def expand_one_side(io_variants: List[str]) -> List[List[str]]:
    """Every choice of one side (types, or formats) of a combination: one list per choice.

    Raises:
        QDPDefinitionError: an entry mixes ``|`` and ``*``, or dependent entries offer different
            numbers of options (TensorRT raises ValueError).

    Example:
        >>> expand_one_side(["A|B", "A|B", "X*Y"])
        [['A', 'A', 'X'], ['B', 'B', 'X'], ['A', 'A', 'Y'], ['B', 'B', 'Y']]
    """
    width = 0  # options of the dependent ('|') entries
    for variant in io_variants:
        options = variant.split("|")
        if len(options) > 1:
            if "*" in variant:
                msg = f"AutoTuneCombination entry {variant!r} mixes '|' and '*'; use one of them"
                raise QDPDefinitionError(msg)
            if width > 1 and width != len(options):
                msg = (f"AutoTuneCombination entries {io_variants} have dependent ('|') entries "
                       "with different numbers of options; each must offer as many")
                raise QDPDefinitionError(msg)
        width = max(width, len(options))
    combos = [[None] * len(io_variants) for _ in range(width)]
    for j, variant in enumerate(io_variants):
        options = variant.split("|")
        if len(options) == 1:
            first = variant.split("*")[0]
            for combo in combos:
                combo[j] = first
        else:
            for k, option in enumerate(options):
                combos[k][j] = option
    for j, variant in enumerate(io_variants):
        if "*" in variant:
            extra = []
            for option in variant.split("*")[1:]:
                for combo in combos:
                    new = copy.copy(combo)
                    new[j] = option
                    extra.append(new)
            combos.extend(extra)
    return combos


class TypeFormatCombination:
    """One type/format choice for every input and output, with its tactics; equal and hashed
    by types and formats only (tactics of equal combinations are merged)."""

    def __init__(self, num: int = 0) -> None:
        self.types: list = [None] * num
        self.layouts: list = [None] * num
        self.tactics: Optional[Iterable[int]] = []

    def set_types(self, types: list) -> None:
        """Set every position's type."""
        self.types = types

    def set_layouts(self, layouts: Any = None) -> None:
        """Set every position's format (a list, or one format for all)."""
        self.layouts = layouts if isinstance(layouts, list) else [layouts] * len(self.types)

    def __hash__(self) -> int:
        return hash((tuple(self.types), tuple(self.layouts)))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TypeFormatCombination) and self.types == other.types
                and self.layouts == other.layouts)

    def __str__(self) -> str:
        return "{" + str(self.types) + ", " + str(self.layouts) + "}"


def _format_from_str(name: str) -> TensorFormat:
    member = TensorFormat.__members__.get(name)
    if member is None:
        msg = (f"Unknown tensor format {name!r} in an AutoTuneCombination: use a trt.TensorFormat "
               f"member name ({', '.join(TensorFormat.__members__)}); TensorRT raises "
               "AttributeError here")
        raise QDPAttributeError(msg)
    return member


class AutoTuneCombination:
    """The I/O types and formats a QDP plugin supports, and the tactics it offers for them."""

    def __init__(self, io_types: Optional[str] = None, layouts: Optional[str] = None,
                 tactics: Optional[Iterable[int]] = None) -> None:
        if io_types is not None:
            self.io_types = [s.strip() for s in io_types.split(",")]
            self.layouts = [s.strip() for s in (layouts if layouts is not None else
                                                "LINEAR").split(",")]
            if len(self.layouts) > 1 and len(self.io_types) != len(self.layouts):
                msg = (f"AutoTuneCombination({io_types!r}, {layouts!r}): {len(self.io_types)} "
                       f"type entries but {len(self.layouts)} format entries; give one format "
                       "entry per position, or a single one for all")
                raise QDPAssertionError(msg)
            if len(self.io_types) > len(self.layouts):
                self.layouts = [self.layouts[0]] * len(self.io_types)
        else:
            self.io_types = []
            self.layouts = []
        self.combinations: List[TypeFormatCombination] = []
        self._tactics = tactics

    def pos(self, pos: Iterable[int], io_types: str, layouts: str = "LINEAR") -> None:
        """Set the types and formats of the positions ``pos`` (inputs, then outputs).

        Raises:
            QDPTypeError: ``pos`` is an int, not a list (TensorRT raises TypeError).
            QDPDefinitionError: a position already set.
        """
        if not hasattr(pos, "__iter__"):
            msg = (f"AutoTuneCombination.pos() takes a list of positions (got {pos!r}): write "
                   f"pos([{pos!r}], ...); TensorRT's max(pos) raises TypeError on an int")
            raise QDPTypeError(msg)
        pos = list(pos)
        if max(pos) >= len(self.io_types):
            grow = max(pos) + 1 - len(self.io_types)
            self.io_types.extend([None] * grow)
            self.layouts.extend([None] * grow)
        for p in pos:
            if self.io_types[p] is not None:
                msg = f"AutoTuneCombination: types of position {p} are already set"
                raise QDPDefinitionError(msg)
            if self.layouts[p] is not None:
                msg = f"AutoTuneCombination: formats of position {p} are already set"
                raise QDPDefinitionError(msg)
            self.io_types[p] = io_types
            self.layouts[p] = layouts

    def tactics(self, tactics: Iterable[int]) -> None:
        """Offer custom ``tactics`` (positive ints) for these combinations."""
        self._tactics = tactics

    def _generate_combinations(self) -> None:
        self.combinations = []
        for types in expand_one_side(self.io_types):
            for formats in expand_one_side(self.layouts):
                combo = TypeFormatCombination(len(self.io_types))
                combo.types = [data_type_from_str(t) for t in types]
                combo.layouts = [_format_from_str(f) for f in formats]
                combo.tactics = self._tactics
                self.combinations.append(combo)

    def _get_combinations(self) -> List[TypeFormatCombination]:
        self._generate_combinations()
        return self.combinations
