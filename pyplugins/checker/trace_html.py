"""``pyplugins check ... --trace-html FILE``: the lifecycle trace as one self-contained web page.

The page draws what ``--trace`` prints (:class:`~pyplugins.checker.trace.Trace`): one lane per
object (the creator, each plugin object, each execution context's plugin), the calls in order
with the parse, build and runtime phases as bands, an arrow where a call made an object, and the
report's violations marked at the call where they happened. Hovering a call shows it in full;
clicking one (or Enter on it) shows its arguments, result, timing and what TensorRT uses it for.
Everything is inline (CSS, script, SVG from :mod:`pyplugins.checker.trace_svg`): the page loads
nothing and works offline. docs/lifecycle.md describes how to read it.

Example:
    >>> from pyplugins.checker.trace import Trace
    >>> page = render_page(Trace(), title="empty")
    >>> page.startswith("<!DOCTYPE html>") and "no plugin callbacks" in page
    True
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from pyplugins.checker import trace_svg

__all__ = ["METHOD_HELP", "render_page", "write_page"]

#: What TensorRT uses each callback for, one line each (docs/trt-protocol.md §1.3, §2, §7).
METHOD_HELP: Dict[str, str] = {
    "create_plugin": "The creator builds a plugin from a field collection: at ONNX import from "
                     "the node's attributes (§4.4); for V3 also at runtime from the serialized "
                     "fields (§4.2).",
    "deserialize_plugin": "V2: loading the engine rebuilds the plugin from the bytes serialize() "
                          "returned (§4.1).",
    "clone": "TensorRT makes its own copy: the network's, the builder's, or an execution "
             "context's (V2). Must share nothing that either side mutates (§10.2).",
    "attach_to_context": "V3: each execution context gets its own plugin object (§2.5).",
    "destroy": "TensorRT releases this object; it is not called again.",
    "get_output_datatype": "The output's data type, given the input types (§1.3).",
    "get_output_data_types": "V3: every output's data type, given the input types (§7).",
    "get_output_dimensions": "The output's shape as expressions of the input dims, evaluated "
                             "later at the profile's min, opt and max (§6).",
    "get_output_shapes": "V3: every output's shape as expressions of the input dims (§6, §7).",
    "get_capability_interface": "V3: the object serving the core, build or runtime capability "
                                "(§7).",
    "supports_format_combination": "The format search: may tensor `pos` have this type and "
                                   "format, given in_out[0..pos-1]? Entries after pos are not "
                                   "filled in yet (§2.1).",
    "configure_plugin": "The tensors' types, formats and shapes: with -1 and min/opt/max at "
                        "build time, concrete before running. Compile and plan here (§2.1).",
    "on_shape_change": "V3: the concrete shapes before enqueue; plan the launch here (§2.5).",
    "get_workspace_size": "Scratch memory enqueue needs, for the largest shapes asked (§1.3).",
    "get_valid_tactics": "V3: the tactics TensorRT may time (§2.4).",
    "set_tactic": "V3: the tactic the next enqueue uses (§2.5).",
    "initialize": "V2: set up resources before use; returns a status (§1.3).",
    "terminate": "V2: release what initialize made (§1.3).",
    "serialize": "V2: the plugin's bytes, asked 2-3 times per serialization: they must be "
                 "identical (§4.1).",
    "get_serialization_size": "V2: the length of serialize()'s bytes (§4.1).",
    "get_fields_to_serialize": "V3: the fields the engine stores; create_plugin(RUNTIME) gets "
                               "them back (§4.2).",
    "enqueue": "Launch the kernel on TensorRT's stream with the device pointers; nothing else "
               "(no allocation, copy or sync: §3, §9).",
    "get_aliased_input": "V3: the input an output is written in place into, or -1 (§7).",
}

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:18px 22px;color:#1a202c;
background:#fafbfc}
h1{font-size:20px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}
.verdict{font-weight:600;margin:2px 0 10px}.verdict.ok{color:#2f855a}.verdict.bad{color:#d32f2f}
.sub{color:#4a5568}
.frame{display:flex;border:1px solid #cbd5e0;background:#fff;border-radius:6px;overflow:hidden}
.scroll{overflow-x:auto;flex:1}
svg text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.lane-name{font-size:12.5px;font-weight:700;fill:#1a202c}.lane-role{font-size:10.5px;fill:#4a5568}
.lane-labels .even,.lane-bg.even{fill:#ffffff;fill-opacity:.55}
.lane-labels .odd,.lane-bg.odd{fill:#edf2f7;fill-opacity:.55}
.phase-name{font-size:12px;font-weight:700;fill:#2d3748}.phase-edge{stroke:#a0aec0;stroke-width:1}
.axis-note{font-size:11px;fill:#4a5568}
.call-name{font-size:11px;fill:#2d3748}
.lifeline{stroke:#a0aec0;stroke-width:3;stroke-linecap:round}
.lifeline.open{stroke-dasharray:6 4}
.made{stroke:#7b3fb3;stroke-width:1.6}
.hit{fill:transparent}
.call{cursor:pointer;outline:none}
.call:hover .hit,.call:focus .hit{fill:#1a202c;fill-opacity:.06}
.call.sel .hit{fill:#2b6cb0;fill-opacity:.14}
.call.sel .call-name{font-weight:700;fill:#000}
.dot.fold{fill:#cbd5e0;stroke:#718096;stroke-width:1}
.raised{fill:none;stroke:#d32f2f;stroke-width:2.5}
.violation-column{fill:#d32f2f;fill-opacity:.13}
.violation .call-name{fill:#d32f2f;font-weight:700}
.badge circle{fill:#d32f2f}.badge text{fill:#fff;font-size:10px;font-weight:700;text-anchor:middle}
.panels{display:flex;gap:18px;flex-wrap:wrap;margin-top:14px}
.panel{background:#fff;border:1px solid #cbd5e0;border-radius:6px;padding:10px 14px;flex:1;
min-width:360px}
#details pre{white-space:pre-wrap;word-break:break-word;margin:6px 0;font-size:12.5px;
background:#f7fafc;padding:6px 8px;border-radius:4px}
#details .help{color:#2d3748;font-style:italic}
.violations li{margin:3px 0}.violations a{color:#d32f2f;cursor:pointer;font-weight:600}
.num{display:inline-block;background:#d32f2f;color:#fff;border-radius:9px;
padding:0 6px;font-size:11px;font-weight:700;margin-right:4px}
table.legend{border-collapse:collapse;font-size:13px}table.legend td{padding:2px 8px 2px 0;
vertical-align:middle}
.sw{display:inline-block;width:12px;height:12px;border-radius:50%;vertical-align:middle}
.swatch-band{display:inline-block;width:22px;height:12px;border:1px solid #cbd5e0;
vertical-align:middle}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
"""

_JS = """
(function(){
  var data = JSON.parse(document.getElementById('pp-data').textContent);
  var byIndex = {}; data.entries.forEach(function(e){ byIndex[e.i] = e; });
  var panel = document.getElementById('details');
  function esc(s){ return String(s).replace(/[&<>"]/g, function(c){
    return {'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]; }); }
  function describe(e){
    var h = '<b>#' + e.i + '</b> &nbsp;phase <b>' + esc(e.phase || '-') + '</b> &nbsp;object <b>'
      + esc(e.obj) + '</b>';
    if (data.roles[e.obj]) h += ' <span class="sub">(' + esc(data.roles[e.obj]) + ')</span>';
    h += '<pre>' + esc(e.method) + '(' + esc(e.args) + ')\\n-> ' + esc(e.result) + '</pre>';
    h += '<div class="sub">started +' + e.t.toFixed(2) + ' ms after the trace began; the Python '
      + 'call took ' + e.ms.toFixed(3) + ' ms</div>';
    if (e.default) h += '<div>TensorRT\\'s default ran: the plugin does not define '
      + esc(e.method) + '.</div>';
    if (e.error) h += '<div style="color:#d32f2f">The call raised; TensorRT printed:<pre>'
      + esc(e.error) + '</pre></div>';
    (e.violations || []).forEach(function(n){ var v = data.violations[n];
      h += '<div style="color:#d32f2f"><span class="num">' + (n + 1) + '</span>[' + esc(v.check)
        + '] ' + esc(v.message) + '</div>'; });
    if (data.help[e.method]) h += '<p class="help">' + esc(data.help[e.method])
      + ' <span class="sub">(\u00a7: docs/trt-protocol.md)</span></p>';
    return h;
  }
  function select(i){
    document.querySelectorAll('.call.sel').forEach(function(g){ g.classList.remove('sel'); });
    var g = document.querySelector('.call[data-i="' + i + '"]');
    if (!g) { document.querySelectorAll('.call[data-last]').forEach(function(f){
      if (+f.dataset.i <= i && i <= +f.dataset.last) g = f; }); }
    if (!g) return;
    g.classList.add('sel');
    var first = +g.dataset.i, last = g.dataset.last ? +g.dataset.last : first;
    var h = '';
    if (last > first) h = '<div><b>' + (last - first + 1) + ' rejected format combinations</b>'
      + ' (folded as in <code>--trace</code>)</div>';
    for (var k = first; k <= last; k++) if (byIndex[k]) h += (last > first ? '<hr>' : '')
      + describe(byIndex[k]);
    panel.innerHTML = h;
    if (g.scrollIntoView) g.scrollIntoView({block: 'nearest', inline: 'center'});
  }
  document.querySelectorAll('.call').forEach(function(g){
    g.addEventListener('click', function(){ select(+g.dataset.i); });
    g.addEventListener('keydown', function(ev){ if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault(); select(+g.dataset.i); } });
  });
  document.querySelectorAll('[data-goto]').forEach(function(a){
    a.addEventListener('click', function(){ select(+a.dataset.goto); });
  });
  var start = data.violations.filter(function(v){ return v.at !== null; })[0];
  if (start) select(start.at); else if (data.entries.length) select(data.entries[0].i);
  document.documentElement.setAttribute('data-ready', String(data.entries.length));
})();
"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def render_page(trace: Any, report: Any = None, title: Optional[str] = None) -> str:
    """The page for ``trace`` (and, when given, the ``LifecycleReport`` it belongs to, whose
    violations are marked and listed) as one HTML string.

    Args:
        trace: a :class:`~pyplugins.checker.trace.Trace`, or None (a check that recorded no
            calls: the page says so and still lists the report's violations).
        report: the lifecycle report (``plugin``, ``ok``, ``violations``, ``enqueue_ran``,
            ``skipped``), or None.
        title: the heading; default: the report's plugin.
    """
    entries = list(trace.entries) if trace is not None else []
    violations = list(getattr(report, "violations", None) or [])
    drawing = trace_svg.layout(trace, violations) if trace is not None else None
    sites = drawing.sites if drawing is not None else [None] * len(violations)
    heading = title or _plugin_name(getattr(report, "plugin", None) or "plugin")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{_esc(heading)}: plugin lifecycle</title><style>{_CSS}</style></head><body>",
             f"<h1>{_esc(heading)}: the plugin's life as TensorRT drives it</h1>",
             _verdict(report, len(entries), drawing)]
    parts.append(_violation_list(violations, sites))
    if drawing is None or not entries:
        parts.append("<p>(no plugin callbacks recorded)</p>")
    else:
        parts.append('<h2>Timeline</h2><p class="sub">One lane per object; each column is one '
                     "call TensorRT made, in order. Hover a call for a summary; click it (or "
                     "press Enter on it) for its arguments, result and what it is for.</p>")
        parts.append(f'<div class="frame">{trace_svg.lanes_svg(drawing)}'
                     f'<div class="scroll">{trace_svg.timeline_svg(drawing)}</div></div>')
    parts.append('<div class="panels"><div class="panel"><h2>Selected call</h2>'
                 '<div id="details">Click a call in the timeline.</div></div>'
                 f'<div class="panel"><h2>Legend</h2>{_legend(drawing)}</div></div>')
    parts.append('<script type="application/json" id="pp-data">'
                 + _data(trace, entries, violations, sites) + "</script>")
    parts.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(parts) + "\n"


def _plugin_name(key: str) -> str:
    """``"CircPad:1:"`` -> ``"CircPad (version 1)"``; a namespace is named when there is one."""
    name, _, rest = key.partition(":")
    version, _, namespace = rest.partition(":")
    text = f"{name} (version {version}" if version else name
    return text + (f", namespace {namespace!r})" if namespace else ")" if version else "")


def _verdict(report: Any, calls: int, drawing: Any) -> str:
    objects = len(drawing.lanes) if drawing is not None else 0
    counts = f"{calls} callbacks on {objects} objects"
    if report is None:
        return f'<p class="sub">{counts}</p>'
    n = len(report.violations)
    ok = bool(getattr(report, "ok", not n))
    text = "OK: no violation" if ok else (f"{n} violation(s)" if n else "errors were printed")
    ran = ("enqueue ran" if getattr(report, "enqueue_ran", False) else
           f"enqueue did not run: {getattr(report, 'skipped', None) or 'it failed (see errors)'}")
    return (f'<p class="verdict {"ok" if ok else "bad"}">{_esc(text)}</p>'
            f'<p class="sub">{_esc(counts)}; {_esc(ran)}</p>')


def _violation_list(violations: Sequence[Any], sites: Sequence[Optional[int]]) -> str:
    if not violations:
        return ""
    items = []
    for n, (v, at) in enumerate(zip(violations, sites)):
        if at is not None:
            where = f' <a data-goto="{at}">at call #{at}</a>'
        elif v.method:
            where = (f' <span class="sub">(not marked: the trace has no {_esc(v.method)}() call '
                     "to mark it at)</span>")
        else:
            where = ' <span class="sub">(found by a check after the calls, at no single one)</span>'
        method = f" in {_esc(v.method)}()" if v.method else ""
        items.append(f'<li><span class="num">{n + 1}</span><b>[{_esc(v.check)}]</b>{method} '
                     f"{_esc(v.message)}{where}</li>")
    return ('<h2>Violations (red in the timeline)</h2><ul class="violations">'
            + "".join(items) + "</ul>")


def _legend(drawing: Any) -> str:
    rows = [f'<tr><td><span class="sw" style="background:{colour}"></span></td>'
            f"<td>{_esc(text)}</td></tr>" for colour, text in trace_svg.CATEGORIES.values()]
    rows += [
        '<tr><td><span class="sw" style="border:2.5px solid #c27c0e;width:8px;height:8px;'
        'background:#fff"></span></td><td>hollow: TensorRT\'s default ran (the plugin does not '
        "define the method)</td></tr>",
        '<tr><td><span class="sw" style="border:2.5px solid #d32f2f;width:10px;height:10px">'
        "</span></td><td>red ring: the call raised; TensorRT printed [ERROR] and used a "
        "fallback</td></tr>",
        '<tr><td><span class="num" style="background:#d32f2f;color:#fff;border-radius:9px;'
        'padding:0 5px;font-size:11px">1</span></td><td>violation 1 happened at this call (red '
        "column)</td></tr>",
        '<tr><td><span class="swatch-band" style="background:#cbd5e0;border-radius:3px"></span>'
        "</td><td>grey box: a run of rejected format combinations, folded</td></tr>",
        "<tr><td>\u2014 \u2192</td><td>line: the object is alive (dashed: never destroyed in "
        "the trace); purple arrow: this call made that object</td></tr>"]
    rows += [f'<tr><td><span class="swatch-band" style="background:{colour}"></span></td>'
             f"<td>phase <b>{name}</b>{_PHASE_TEXT[name]}</td></tr>"
             for name, colour in trace_svg.PHASE_COLOURS.items()]
    objects = ""
    if drawing is not None and drawing.lanes:
        objects = ("<h2>Objects</h2><table class=\"legend\">" + "".join(
            f"<tr><td><code>{_esc(label)}</code></td><td>{_esc(role)}</td></tr>"
            for label, role in drawing.lanes) + "</table>")
    return f'<table class="legend">{"".join(rows)}</table>{objects}'


_PHASE_TEXT = {
    "parse": ": the ONNX parser imports the node and adds the layer",
    "build": ": the builder searches formats, configures, serializes the engine",
    "runtime": ": the engine is loaded, an execution context made, enqueue run",
}


def _data(trace: Any, entries: Sequence[Any], violations: Sequence[Any],
          sites: Sequence[Optional[int]]) -> str:
    marks: Dict[int, List[int]] = {}
    for n, at in enumerate(sites):
        if at is not None:
            marks.setdefault(at, []).append(n)
    data = {
        "entries": [{"i": e.index, "t": e.t_offset_s * 1e3, "ms": e.seconds * 1e3,
                     "obj": e.obj_label, "method": e.method, "args": e.args_summary,
                     "result": e.result_summary, "error": e.error, "phase": e.phase,
                     "default": e.default, "violations": marks.get(e.index, [])}
                    for e in entries],
        "violations": [{"check": v.check, "method": v.method, "message": v.message, "at": at}
                       for v, at in zip(violations, sites)],
        "roles": trace.roles() if trace is not None else {},
        "help": METHOD_HELP,
    }
    # "</" would end the script element early; "<\/" is the same string to JSON.
    return json.dumps(data).replace("</", "<\\/")


def write_page(path: Union[str, Path], trace: Any, report: Any = None) -> Path:
    """Write :func:`render_page` to ``path`` (UTF-8); returns the path.

    Example::

        report = lifecycle.run(creator, ["2x3:float32"], trace=True, device="cpu")
        write_page("lifecycle.html", report.trace, report)
    """
    target = Path(path)
    target.write_text(render_page(trace, report), encoding="utf-8")
    return target
