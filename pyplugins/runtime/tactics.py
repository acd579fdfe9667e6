"""Tactics and variant tables: an op's named launch variants, chosen by its plan or by TensorRT.

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

Example (CircPad: its variant table, below, tags one row "strips"; ``self.tactic`` picks it)::

    class CircPad(pp.Plugin):
        tactics = tactics(VARIANTS, "staged")  # ("staged", "strips"): ids 1 and 2
        def plan(self, inputs, outputs, device, *, variant=None):
            row = choose(VARIANTS, facts, variant=variant, tactic=self.tactic)
            ...

    >>> from pyplugins.runtime.tactics import declared, tactic_name
    >>> class Op:
    ...     name, tactics = "OpDoc", ("staged", "strips")
    >>> declared(Op)
    {1: 'staged', 2: 'strips'}
    >>> tactic_name(Op, 2), tactic_name(Op, 0)
    ('strips', None)

Variant tables
--------------

A :class:`Variant` is one way to launch an op: a kernel (with its compile options), the inputs
that kernel can compute (``fits``: its launch contract), the inputs the op prefers it for
(``wins``: the measured choice, recorded in ``docs/ops/<op>.md``), its block and its grid rule.
An op keeps one module-level tuple of them, ``VARIANTS``, most specific first; its ``plan`` takes
the first that fits and wins (:func:`choose`), so the last must take everything the op accepts.

Tests and benchmarks ask for a variant by name instead of flipping module switches:
``choose(VARIANTS, facts, variant="circ_pad_flat")`` (an op's ``plan`` passes its ``variant``
argument here) runs that row wherever its kernel fits, winning or not. A row tagged with a
``tactic`` is never a default choice: it is the launch of that IPluginV3 tactic, and
:func:`tactics` lists the tags after the default's name, as the plugin's ``tactics`` attribute.

Constants a ``.cu`` file shares with its op (buffer sizes the host also sizes work by, launch
bounds) live in the op module's ``DEFINES`` dict and reach NVRTC as ``-D`` options
(:func:`define_options`); the ``.cu`` has no default for them.

Example:
    >>> from pyplugins.runtime.kernels import Kernel
    >>> rows = (
    ...     Variant("even", Kernel("k.cu", "k_even<{T}>"), needs="an even count",
    ...             fits=lambda n: n % 2 == 0, blocks=lambda n, block: n // 2,
    ...             args=lambda n: ()),
    ...     Variant("any", Kernel("k.cu", "k<{T}>"), needs="nothing", fits=lambda n: True,
    ...             blocks=lambda n, block: n, args=lambda n: (), waves=1),
    ... )
    >>> choose(rows, 6).name, choose(rows, 7).name, choose(rows, 6, variant="any").name
    ('even', 'any', 'any')
    >>> choose(rows, 7, variant="even", plugin="Op")
    Traceback (most recent call last):
    ...
    pyplugins.runtime.tactics.VariantError: plugin 'Op': variant 'even' cannot run this input: its
    kernel needs an even count.
    >>> rows[1].grid(7, lambda: 4), rows[0].grid(6, lambda: 4)
    (4, 3)
    >>> define_options({"K_TABLE": 512}), with_options(("-DA=1", "-DB=2"), ("-DB=3",))
    (('-DK_TABLE=512',), ('-DA=1', '-DB=3'))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from pyplugins.errors import PluginDefinitionError, PyPluginsError
from pyplugins.runtime.device import resident_blocks
from pyplugins.runtime.kernels import Kernel
from pyplugins.runtime.launch import MAX_GRID, Launch

__all__ = ["Variant", "VariantError", "choose", "declared", "define_options", "find", "launch",
           "tactic_name", "tactics", "with_options"]

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


# -- variant tables -------------------------------------------------------------------------------

class VariantError(PyPluginsError, ValueError):
    """A variant asked for by name that the table lacks, or whose kernel cannot run the input."""


def _always(facts: Any) -> bool:
    return True


@dataclass(frozen=True)
class Variant:
    """One launch variant of an op: a row of its ``VARIANTS`` table.

    Attributes:
        name: the row's name, unique in its table (tests, benchmarks and errors use it).
        kernel: the kernel it launches, with its compile options.
        needs: the kernel's launch contract in words, for the error when a named row does not fit.
        fits: ``facts -> bool``: the kernel computes this input correctly (its contract).
        blocks: ``(facts, block) -> int``: blocks of ``block`` threads the work needs (the
            full grid; the benchmark asks it for other blocks than the row's).
        args: ``facts -> tuple``: the kernel's launch arguments (:class:`pyplugins.Launch`'s).
        block: threads per block.
        waves: the grid is at most this many waves of the kernel's resident blocks; None: the
            full grid (at most the driver's limit).
        wins: ``facts -> bool``: the op chooses this row when it fits (default: always).
        tactic: an IPluginV3 tactic name: the row is then that tactic's launch and never a
            default choice.

    Example:
        >>> row = Variant("copy", Kernel("k.cu", "k<{T}>"), needs="-", fits=lambda f: True,
        ...               blocks=lambda f, block: -(-f // block), args=lambda f: (), waves=2)
        >>> row.grid(10000, lambda: 8), row.grid(0, lambda: 8), row.grid(300, lambda: 8, 128)
        (16, 0, 3)
    """

    name: str
    kernel: Kernel
    needs: str
    fits: Callable[[Any], bool]
    blocks: Callable[[Any, int], int]
    args: Callable[[Any], Tuple[Any, ...]]
    block: int = 256
    waves: Optional[int] = None
    wins: Callable[[Any], bool] = _always
    tactic: Optional[str] = None

    def grid(self, facts: Any, resident: Callable[[], int], block: Optional[int] = None) -> int:
        """The grid for ``facts`` in blocks of ``block`` threads (None: the row's): the blocks
        the work needs, at most ``waves`` times ``resident()`` (the kernel's resident blocks at
        that block size, asked only then) or, without waves, the driver's limit; 0 for no
        work."""
        needed = int(self.blocks(facts, self.block if block is None else block))
        if self.waves is None:
            return min(needed, MAX_GRID[0])
        return min(needed, self.waves * int(resident()))


def find(table: Sequence[Variant], name: str, plugin: str = "?") -> Variant:
    """The row of ``table`` named ``name``.

    Raises:
        VariantError: no row has that name (the message lists the names).
    """
    for row in table:
        if row.name == name:
            return row
    names = ", ".join(repr(r.name) for r in table)
    msg = f"plugin {plugin!r} has no launch variant {name!r}; its variants are {names}."
    raise VariantError(msg)


def choose(table: Sequence[Variant], facts: Any, *, variant: Optional[str] = None,
           tactic: Optional[str] = None, plugin: str = "?") -> Variant:
    """The row that launches ``facts``: ``variant``'s row when named, else the row tagged with
    ``tactic`` when one is, else the first untagged row that fits and wins.

    Raises:
        VariantError: ``variant`` names no row or a row whose kernel does not fit ``facts``; or
            no row takes ``facts`` (a table without a catch-all last row).
    """
    if variant is None and tactic is not None:
        variant = next((r.name for r in table if r.tactic == tactic), None)
    if variant is not None:
        row = find(table, variant, plugin)
        if not row.fits(facts):
            msg = (f"plugin {plugin!r}: variant {variant!r} cannot run this input: its kernel "
                   f"needs {row.needs}.")
            raise VariantError(msg)
        return row
    for row in table:
        if row.tactic is None and row.fits(facts) and row.wins(facts):
            return row
    msg = (f"plugin {plugin!r}: no launch variant takes this input; the table's last row must "
           f"take every input the plugin accepts ({', '.join(r.name for r in table)}).")
    raise VariantError(msg)


def launch(row: Variant, facts: Any, ctype: str, device: int) -> Launch:
    """``row``'s :class:`pyplugins.Launch` for ``facts``: its kernel compiled for ``ctype`` on
    ``device``, its grid (the resident blocks asked only when its rule caps by them), its block
    and arguments, named ``kernel<ctype>``. Call from ``plan`` (it compiles).

    Raises:
        KernelCompileError: NVRTC rejected the kernel.
    """
    fn = row.kernel.function(ctype, device)
    grid = row.grid(facts, lambda: resident_blocks(fn, row.block, device=device))
    return Launch(fn, grid=grid, block=row.block, device=device, args=row.args(facts),
                  name=row.kernel.expression_for(ctype))


def tactics(table: Sequence[Variant], default: str) -> Tuple[str, ...]:
    """The plugin's ``tactics``: ``default`` (the table's own choice), then each row's tactic tag
    in table order (TensorRT ids 1, 2, ...: keep the order, engines store the ids)."""
    return (default,) + tuple(r.tactic for r in table if r.tactic is not None)


def define_options(defines: Mapping[str, int]) -> Tuple[str, ...]:
    """``-DNAME=VALUE`` options for NVRTC, in the mapping's order."""
    return tuple(f"-D{name}={int(value)}" for name, value in defines.items())


def with_options(options: Sequence[str], extra: Sequence[str]) -> Tuple[str, ...]:
    """``options`` with ``extra`` applied: a ``-DNAME=...`` of ``extra`` replaces the one of the
    same name in place, anything else is appended (a benchmark's knob over a row's defines)."""
    def macro(option: str) -> Optional[str]:
        return option[2:].split("=", 1)[0] if option.startswith("-D") else None

    out = list(options)
    for option in extra:
        name = macro(option)
        at = next((i for i, o in enumerate(out) if name is not None and macro(o) == name), None)
        if at is None:
            out.append(option)
        else:
            out[at] = option
    return tuple(out)
