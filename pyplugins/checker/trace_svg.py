"""The drawing of a :class:`~pyplugins.checker.trace.Trace` as inline SVG: one lane per object, one
column per call, phases as bands, violations marked where they happened.

:func:`layout` turns the trace into columns (a run of rejected format queries folds into one,
as ``--trace`` folds it), lanes and violation sites; :func:`lanes_svg` and :func:`timeline_svg`
draw them. :mod:`pyplugins.checker.trace_html` puts the drawing on a page. The SVG carries no
namespace URL (inline SVG in HTML needs none), so the page fetches nothing.

Example:
    >>> from pyplugins.checker.trace import Trace
    >>> drawing = layout(Trace(), [])
    >>> drawing.columns, drawing.lanes, drawing.sites
    ([], [], [])
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["CATEGORIES", "Column", "Drawing", "category", "lanes_svg", "layout", "short_role",
           "timeline_svg", "violation_sites"]

COL, LANE_H, PHASE_H, HEAD_H, LABEL_W, PAD_R = 20, 38, 40, 158, 300, 110
#: Callback category -> (colour, what the legend says). A method's category is :func:`category`.
CATEGORIES: Dict[str, Tuple[str, str]] = {
    "create": ("#7b3fb3", "makes a plugin object (create_plugin, clone, deserialize_plugin, "
                          "attach_to_context)"),
    "shape": ("#2b6cb0", "output types and shapes, capability queries"),
    "format": ("#0f8b8d", "format search (supports_format_combination)"),
    "configure": ("#c27c0e", "configure, workspace, tactics, initialize/terminate"),
    "serialize": ("#6b7f1a", "serialization (serialize, get_fields_to_serialize)"),
    "enqueue": ("#2f855a", "enqueue: the kernel launch"),
    "destroy": ("#718096", "destroy: TensorRT releases the object"),
    "other": ("#4a5568", "other callbacks"),
}
_METHODS = {
    "create": ("create_plugin", "deserialize_plugin", "clone", "attach_to_context"),
    "shape": ("get_output_datatype", "get_output_dimensions", "get_output_data_types",
              "get_output_shapes", "get_capability_interface", "get_aliased_input"),
    "format": ("supports_format_combination",),
    "configure": ("configure_plugin", "on_shape_change", "get_workspace_size", "set_tactic",
                  "get_valid_tactics", "initialize", "terminate"),
    "serialize": ("serialize", "get_serialization_size", "get_fields_to_serialize"),
    "enqueue": ("enqueue",),
    "destroy": ("destroy",),
}
_CATEGORY_OF = {m: cat for cat, methods in _METHODS.items() for m in methods}
#: Phase (before any ":") -> band colour.
PHASE_COLOURS = {"parse": "#e3edfb", "build": "#fdf1dc", "runtime": "#e2f4e8"}
_LABEL = re.compile(r"\b[PC]\d+\b")
_RED = "#d32f2f"


def category(method: str) -> str:
    """The legend category of a callback (a key of :data:`CATEGORIES`).

    Example:
        >>> category("configure_plugin"), category("clone"), category("my_own_method")
        ('configure', 'create', 'other')
    """
    return _CATEGORY_OF.get(method, "other")


@dataclass
class Column:
    """One column of the drawing: a call, or a folded run of rejected format queries."""

    entries: List[Any]

    @property
    def folded(self) -> bool:
        """More than one call (a run of rejected ``supports_format_combination`` queries)."""
        return len(self.entries) > 1

    @property
    def first(self) -> Any:
        """The column's first (or only) entry."""
        return self.entries[0]


@dataclass
class Drawing:
    """What :func:`layout` computed: columns, lanes (object label -> role) and, per violation,
    the index of the entry it is marked at (None: found after the run, at no single call)."""

    columns: List[Column]
    lanes: List[Tuple[str, str]]
    sites: List[Optional[int]]
    column_of: Dict[int, int] = field(default_factory=dict)


def violation_sites(entries: Sequence[Any], violations: Sequence[Any]) -> List[Optional[int]]:
    """Per violation, the index of the call it is marked at, or None.

    The call is the first one of the violation's ``method``, narrowed to the objects its message
    names (``P2``, ``C0``) when that leaves any, and to calls that raised when any did (a
    ``callback_error`` is the call that printed the ``[ERROR]`` line). A violation without a
    method (a kernel that does not compile, a fresh-process failure) has no site.

    Example:
        >>> from types import SimpleNamespace as E
        >>> calls = [E(index=0, method="serialize", obj_label="P1 X", error=None),
        ...          E(index=1, method="serialize", obj_label="P2 X", error=None)]
        >>> violation_sites(calls, [E(check="serialize_nondeterministic", method="serialize",
        ...                           message="P2 gave other bytes"),
        ...                         E(check="kernel_compile", method=None, message="no kernel")])
        [1, None]
    """
    sites: List[Optional[int]] = []
    taken: Dict[str, set] = {}
    for v in violations:
        found = [e for e in entries if v.method and e.method == v.method]
        named = set(_LABEL.findall(v.message or ""))
        narrowed = [e for e in found if e.obj_label.split()[0] in named]
        found = narrowed or found
        raised = [e for e in found if e.error]
        found = raised or found
        fresh = [e for e in found if e.index not in taken.get(v.check, ())]
        found = fresh or found  # two reports of one check go to two calls where there are two
        sites.append(found[0].index if found else None)
        if found:
            taken.setdefault(v.check, set()).add(found[0].index)
    return sites


def layout(trace: Any, violations: Sequence[Any]) -> Drawing:
    """Columns (folding what ``trace.collapsible`` folds), lanes in order of first appearance,
    and the violation sites (:func:`violation_sites`)."""
    columns: List[Column] = []
    for i, entry in enumerate(trace.entries):
        prev = columns[-1] if columns else None
        if (trace.collapsible(i) and prev is not None and trace.collapsible(prev.entries[-1].index)
                and prev.entries[-1].obj_id == entry.obj_id):
            prev.entries.append(entry)
        else:
            columns.append(Column([entry]))
    roles = trace.roles()
    lanes = list(roles.items())
    lanes += [(e.obj_label, "") for e in trace.entries if e.obj_label not in roles]
    lanes = list(dict(lanes).items())
    column_of = {e.index: c for c, col in enumerate(columns) for e in col.entries}
    return Drawing(columns, lanes, violation_sites(trace.entries, violations), column_of)


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def short_role(role: str) -> str:
    """The few words of a :meth:`~pyplugins.checker.trace.Trace.roles` text a lane shows.

    Example:
        >>> short_role("clone of P1: the builder's copy: format search, configure (build)")
        "the builder's copy (clone of P1)"
        >>> short_role("made by C0 create_plugin from the ONNX node's attributes (parse)")
        'made by C0 create_plugin (parse)'
    """
    parts = role.split(": ")
    if role.startswith("clone of") and len(parts) > 1:
        return f"{parts[1].split(',')[0]} ({parts[0]})"
    head = re.split(r": | from | for ", role)[0]
    phase = re.search(r"\(([^()]*)\)$", role)
    if phase and phase.group(1).split(":")[0] in (*PHASE_COLOURS, "-"):
        head += f" ({phase.group(1).split(': ')[-1]})"
    return head if len(head) <= 46 else head[:45] + "\u2026"


def lanes_svg(drawing: Drawing) -> str:
    """The fixed left column: each lane's label and role (the full role on hover)."""
    top = PHASE_H + HEAD_H
    height = top + LANE_H * len(drawing.lanes) + 8
    parts = [f'<svg class="lane-labels" width="{LABEL_W}" height="{height}" role="img" '
             f'aria-label="objects, one lane each">',
             f'<text class="axis-note" x="{LABEL_W - 8}" y="{top - 26}" text-anchor="end">'
             'calls in order \u2192 (not to time scale)</text>',
             f'<text class="axis-note" x="8" y="{top - 8}">object (lane)</text>']
    for k, (label, role) in enumerate(drawing.lanes):
        y = top + k * LANE_H
        parts.append(f'<g class="lane-label" data-lane="{_esc(label)}"><title>{_esc(label)}: '
                     f'{_esc(role)}</title><rect x="0" y="{y}" width="{LABEL_W}" '
                     f'height="{LANE_H}" class="{"odd" if k % 2 else "even"}"/>'
                     f'<text class="lane-name" x="8" y="{y + 15}">{_esc(label)}</text>'
                     f'<text class="lane-role" x="8" y="{y + 30}">{_esc(short_role(role))}</text>'
                     f'</g>')
    parts.append("</svg>")
    return "".join(parts)


def timeline_svg(drawing: Drawing) -> str:
    """The scrolling drawing: phase bands, call names, lifelines, creation arrows, calls and the
    violation marks (a red column and a numbered badge)."""
    lane_y = {label: PHASE_H + HEAD_H + k * LANE_H + LANE_H // 2
              for k, (label, _) in enumerate(drawing.lanes)}
    top, bottom = PHASE_H, PHASE_H + HEAD_H + LANE_H * len(drawing.lanes)
    width = COL * len(drawing.columns) + PAD_R
    parts = [f'<svg class="timeline" width="{width}" height="{bottom + 8}" role="img" '
             'aria-label="plugin callbacks in call order, one lane per object">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
             'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
             'fill="#7b3fb3"/></marker></defs>']
    parts += _phase_bands(drawing, top, bottom)
    for k in range(len(drawing.lanes)):
        y = PHASE_H + HEAD_H + k * LANE_H
        parts.append(f'<g class="lane" data-lane="{_esc(drawing.lanes[k][0])}"><rect x="0" '
                     f'y="{y}" width="{width - PAD_R}" height="{LANE_H}" class="lane-bg '
                     f'{"odd" if k % 2 else "even"}"/></g>')
    marked: Dict[int, List[int]] = {}
    for n, site in enumerate(drawing.sites):
        if site is not None:
            marked.setdefault(drawing.column_of[site], []).append(n)
    for c in marked:
        parts.append(f'<rect class="violation-column" x="{c * COL + 1}" y="{top}" '
                     f'width="{COL - 2}" height="{bottom - top}"/>')
    parts += _lifelines(drawing, lane_y)
    for c, col in enumerate(drawing.columns):
        parts.append(_column(c, col, lane_y, marked.get(c, [])))
    parts.append("</svg>")
    return "".join(parts)


def _phase_bands(drawing: Drawing, top: int, bottom: int) -> List[str]:
    runs: List[Tuple[str, int, int]] = []
    for c, col in enumerate(drawing.columns):
        phase = col.first.phase or "-"
        if runs and runs[-1][0] == phase:
            runs[-1] = (phase, runs[-1][1], c)
        else:
            runs.append((phase, c, c))
    parts = []
    for k, (phase, lo, hi) in enumerate(runs):
        colour = PHASE_COLOURS.get(phase.split(":")[0], "#eeeeee")
        x, w = lo * COL, (hi - lo + 1) * COL
        sub = ":" in phase
        parts.append(f'<g class="phase" data-phase="{_esc(phase)}"><title>phase {_esc(phase)}: '
                     f'calls {drawing.columns[lo].first.index}-'
                     f'{drawing.columns[hi].entries[-1].index}</title>'
                     f'<rect x="{x}" y="{top - PHASE_H}" width="{w}" height="{bottom}" '
                     f'fill="{colour}"{" class=sub" if sub else ""}/>'
                     f'<line x1="{x}" y1="0" x2="{x}" y2="{bottom}" class="phase-edge"/>'
                     f'<text class="phase-name" x="{x + 4}" y="{15 + 18 * (k % 2)}">'
                     f'{_esc(phase)}</text></g>')
    return parts


def _lifelines(drawing: Drawing, lane_y: Dict[str, int]) -> List[str]:
    """Each object's line, from the call that made it (or its first call) to its destroy()."""
    start: Dict[str, int] = {}
    end: Dict[str, int] = {}
    arrows = []
    for c, col in enumerate(drawing.columns):
        for e in col.entries:
            start.setdefault(e.obj_label, c)
            made = e.result_summary
            if e.method in _METHODS["create"] and made in lane_y and made not in start:
                start[made] = c
                arrows.append((c, e.obj_label, made))
            if e.method == "destroy":
                end[e.obj_label] = c
    last = len(drawing.columns) - 1
    parts = []
    for label, c0 in start.items():
        if label not in lane_y:
            continue
        y, c1 = lane_y[label], end.get(label, last)
        open_end = "" if label in end else " open"
        parts.append(f'<line class="lifeline{open_end}" x1="{c0 * COL + COL / 2}" y1="{y}" '
                     f'x2="{c1 * COL + COL / 2 + (0 if label in end else COL)}" y2="{y}"/>')
    for c, source, made in arrows:
        x, y0, y1 = c * COL + COL / 2, lane_y[source], lane_y[made]
        y1 += -9 if y1 > y0 else 9
        parts.append(f'<line class="made" x1="{x}" y1="{y0}" x2="{x}" y2="{y1}" '
                     f'marker-end="url(#arrow)"><title>{_esc(source)} made {_esc(made)}</title>'
                     '</line>')
    return parts


def _column(c: int, col: Column, lane_y: Dict[str, int], violations: List[int]) -> str:
    e = col.first
    x = c * COL + COL / 2
    y = lane_y.get(e.obj_label, PHASE_H + HEAD_H)
    head_y = PHASE_H + HEAD_H - 22
    if col.folded:
        name = f"{len(col.entries)} rejected formats"
        tip = (f"calls {e.index}-{col.entries[-1].index}: {len(col.entries)} format combinations "
               f"{e.obj_label} rejected (supports_format_combination -> False); click to list them")
        mark = (f'<rect class="dot fold" x="{x - 7}" y="{y - 5}" width="14" height="10" rx="3"/>')
        attrs = f'data-i="{e.index}" data-last="{col.entries[-1].index}"'
    else:
        name = e.method
        cat = category(e.method)
        colour = CATEGORIES[cat][0]
        result = f" -> {e.result_summary}"
        tip = f"#{e.index} {e.phase or '-'}  {e.obj_label}  {e.method}({e.args_summary}){result}"
        if e.default:
            tip += "  [TensorRT's default: the plugin does not define it]"
        if e.error:
            tip += "\n" + e.error
        if e.method == "destroy":
            mark = (f'<path class="dot" d="M{x - 5},{y - 5} L{x + 5},{y + 5} M{x - 5},{y + 5} '
                    f'L{x + 5},{y - 5}" stroke="{colour}" stroke-width="3"/>')
        elif e.default:
            mark = (f'<circle class="dot default" cx="{x}" cy="{y}" r="5.5" fill="#fff" '
                    f'stroke="{colour}" stroke-width="2.5"/>')
        else:
            mark = f'<circle class="dot" cx="{x}" cy="{y}" r="6" fill="{colour}"/>'
        if e.error:
            mark += f'<circle class="raised" cx="{x}" cy="{y}" r="9.5"/>'
        attrs = f'data-i="{e.index}"'
    for k, n in enumerate(violations):
        tip += f"\nviolation {n + 1} is marked here"
        mark += (f'<g class="badge"><circle cx="{x + 7}" cy="{y - 10 - 14 * k}" r="7"/>'
                 f'<text x="{x + 7}" y="{y - 6.5 - 14 * k}">{n + 1}</text></g>')
    classes = "call" + (" fold" if col.folded else f" cat-{category(e.method)}")
    classes += " violation" if violations else ""
    classes += " raised-call" if any(x.error for x in col.entries) else ""
    return (f'<g class="{classes}" {attrs} tabindex="0"><title>{_esc(tip)}</title>'
            f'<rect class="hit" x="{c * COL}" y="{PHASE_H}" width="{COL}" '
            f'height="{y - PHASE_H + 12}"/>'
            f'<text class="call-name" transform="translate({x + 3},{head_y + 14}) rotate(-60)">'
            f'{_esc(name)}</text>{mark}</g>')
