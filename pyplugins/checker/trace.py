"""A readable timeline of every call TensorRT (here: the emulator) makes into plugin code.

:class:`Trace` subscribes to :data:`pyplugins.emulator.trampoline.listeners` while it is active
and records one :class:`TraceEntry` per callback: when it started, which object (labelled ``P0``,
``P1``, ... for plugins and ``C0``, ... for creators, in order of appearance), the method, short
summaries of the arguments and the result, the error the trampoline printed, and how long the
Python call took. It is meant for people learning the plugin lifecycle; the timeline opens with
a legend saying what each label is (:meth:`Trace.roles`; docs/lifecycle.md walks through it)::

    Objects (labelled in order of first appearance):
      C0 CircPadCreator  plugin creator: TensorRT asks it for plugins (create_plugin, deserialize_plugin)
      P0 CircPad         made by C0 create_plugin from the ONNX node's attributes (parse)
      ...
       0   +0.0ms  parse    C0 CircPadCreator  create_plugin(name='pad', fc={pads=[1, 1]}) -> P0 CircPad  0.03ms
       3   +0.4ms  build    P1 CircPad  configure_plugin(in=[(-1,3,8,8) FLOAT LINEAR ...], out=[...]) -> None  0.02ms

Example:
    >>> from pyplugins.checker.trace import Trace
    >>> with Trace() as trace:
    ...     with trace.phase("build"):
    ...         pass
    >>> trace.entries, trace.to_json()
    ([], [])
"""

from __future__ import annotations

import contextlib
import time
import weakref
from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins.emulator import trampoline
from pyplugins.emulator.bases import IPluginCreatorInterface, IPluginV2DynamicExt
from pyplugins.emulator.bases_quick import (IPluginCreatorV3Quick, IPluginV3QuickBuild,
                                            IPluginV3QuickCore, IPluginV3QuickRuntime, ISymExprs,
                                            KernelLaunchParams, extra_arg_exprs, launch_exprs)
from pyplugins.emulator.bases_v3 import IPluginCapability, IPluginCreatorV3One, IPluginV3
from pyplugins.emulator.descs import DynamicPluginTensorDesc, PluginTensorDesc
from pyplugins.emulator.dims import Dims, DimsExprs, IDimensionExpr, IExprBuilder
from pyplugins.emulator.enums import PluginFieldType, PybindEnum
from pyplugins.emulator.plugin_field import PluginField, PluginFieldCollection, PluginFieldCollection_

__all__ = ["Trace", "TraceEntry", "summarize"]

#: Parameter names shown in the timeline, per callback (TensorRT's Python argument order).
PARAMS: Dict[str, Tuple[str, ...]] = {
    "get_output_datatype": ("index", "input_types"),
    "get_output_dimensions": ("output_index", "inputs", "expr_builder"),
    "supports_format_combination": ("pos", "in_out", "num_inputs"),
    "configure_plugin": ("in", "out"),
    "get_workspace_size": ("in", "out"),
    "enqueue": ("input_desc", "output_desc", "inputs", "outputs", "workspace", "stream"),
    "create_plugin": ("name", "fc", "phase"),
    # IPluginV3 (protocol §7)
    "get_capability_interface": ("type",),
    "get_output_data_types": ("input_types",),
    "get_output_shapes": ("inputs", "shape_inputs", "expr_builder"),
    "set_tactic": ("tactic",),
    "on_shape_change": ("in", "out"),
    "attach_to_context": ("context",),
    "get_aliased_input": ("output_index",),
    "deserialize_plugin": ("name", "data"),
}
#: The Quick (``tensorrt.plugin``, QDP) bindings' parameter names where V3's differ (§8.4).
QUICK_PARAMS: Dict[str, Tuple[str, ...]] = {
    "create_plugin": ("name", "namespace", "fc", "phase", "request"),
    "get_output_data_types": ("input_types", "ranks"),
    "get_supported_format_combinations": ("in_out", "num_inputs"),
    "get_launch_params": ("input_exprs", "in_out", "num_inputs", "launch_params", "extra_args",
                          "expr_builder"),
    "get_kernel": ("input_desc", "output_desc"),
    "enqueue": ("input_desc", "output_desc", "inputs", "outputs", "in_strides", "out_strides",
                "stream"),
}
_QUICK_CLASSES = (IPluginCreatorV3Quick, IPluginV3QuickCore, IPluginV3QuickBuild,
                  IPluginV3QuickRuntime)
#: Plugin objects (labelled P0, P1, ...): V2 plugins, V3 plugins and their capability objects.
_PLUGIN_CLASSES = (IPluginV2DynamicExt, IPluginV3, IPluginCapability)
#: Argument positions that carry device pointers or streams (shown in hex).
_POINTER_ARGS = {"enqueue": (2, 3, 4, 5)}
_QUICK_POINTER_ARGS = {"enqueue": (2, 3, 6)}
#: What a clone is for, by the phase it was made in (the lifecycle driver's phase names;
#: ``{v}`` is the interface, 2 or 3: ``add_plugin_v2``/``add_plugin_v3``, protocol §2.3, §2.5).
_CLONE_ROLES = {
    "parse": "the network's copy, made when add_plugin_v{v} adds the layer",
    "build": "the builder's copy: format search, configure_plugin, serialize",
    "runtime": "the execution context's copy: configure_plugin, then enqueue",
}
#: What a plugin made by a creator or a plugin is, by the method and the phase that made it
#: (``None``: any phase). V3 creators make the runtime plugin with ``create_plugin`` from the
#: fields ``get_fields_to_serialize`` gave, and each execution context gets the plugin
#: ``attach_to_context`` returns (protocol §2.5).
_MADE_BY = {
    ("create_plugin", "runtime"): "from the engine's serialized fields",
    ("create_plugin", None): "from the ONNX node's attributes",
    ("deserialize_plugin", None): "from the engine's serialized bytes",
    ("attach_to_context", None): "for one execution context: configure, then enqueue",
}
#: Callbacks whose C++ result is a status (0, or -1 when the Python call raised).
_STATUS_METHODS = ("enqueue", "initialize", "set_tactic", "on_shape_change", "get_launch_params")
_MAX_SUMMARY = 240
_MAX_ITEMS = 8


@dataclass
class TraceEntry:
    """One recorded callback.

    Attributes:
        index: position in the trace (0-based).
        t_offset_s: start of the call, in seconds since the trace started.
        obj_id: ``id()`` of the plugin or creator called.
        obj_label: ``"P1 CircPad"`` (plugins) or ``"C0 CircPadCreator"`` (creators).
        method: the Python method name (``"enqueue"``).
        args_summary: the arguments, short (``"in=[(2,3) FLOAT LINEAR], out=[...]"``).
        result_summary: what the C++ side got back, after fallbacks.
        error: the ``[ERROR] ...`` line the trampoline printed, or None.
        seconds: duration of the Python call.
        phase: the label set with :meth:`Trace.phase` (``"build"``), or None.
        default: True when the plugin does not define the method and TensorRT's default ran.
    """

    index: int
    t_offset_s: float
    obj_id: int
    obj_label: str
    method: str
    args_summary: str
    result_summary: str
    error: Optional[str]
    seconds: float
    phase: Optional[str]
    default: bool


class Trace:
    """Records every plugin callback while active (a context manager, or :meth:`start`/:meth:`stop`).

    Attributes:
        entries: the recorded :class:`TraceEntry` objects, in call order.
    """

    def __init__(self) -> None:
        self.entries: List[TraceEntry] = []
        self._t0: Optional[float] = None
        self._phase: Optional[str] = None
        self._labels: Dict[int, Tuple[Any, str]] = {}
        self._counters = {"P": 0, "C": 0, "O": 0}
        self._v3: set = set()  # labels of IPluginV3 objects and their creators
        self._active = False

    # -- recording -------------------------------------------------------------------------------
    def start(self) -> "Trace":
        """Begin recording (idempotent)."""
        if not self._active:
            if self._t0 is None:
                self._t0 = time.perf_counter()
            trampoline.listeners.append(self._on_call)
            self._active = True
        return self

    def stop(self) -> None:
        """Stop recording; entries are kept."""
        if self._active:
            with contextlib.suppress(ValueError):
                trampoline.listeners.remove(self._on_call)
            self._active = False

    def __enter__(self) -> "Trace":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Label the entries recorded inside the block (``"parse"``, ``"build"``, ``"runtime"``)."""
        saved = self._phase
        self._phase = name
        try:
            yield
        finally:
            self._phase = saved

    def _on_call(self, event: trampoline.CallEvent) -> None:
        now = time.perf_counter()
        t0 = self._t0 if self._t0 is not None else now
        label = self.label(event.obj)
        self.entries.append(TraceEntry(
            index=len(self.entries),
            t_offset_s=max(0.0, now - event.seconds - t0),
            obj_id=id(event.obj),
            obj_label=label,
            method=event.method,
            args_summary=self._summarize_args(event.method, event.args,
                                              quick=isinstance(event.obj, _QUICK_CLASSES)),
            result_summary=self._summarize_result(event),
            error=event.error,
            seconds=event.seconds,
            phase=self._phase,
            default=bool(event.extra.get("default", False)),
        ))

    # -- labels ----------------------------------------------------------------------------------
    def label(self, obj: Any) -> str:
        """``"P0 CircPad"``: the object's label, assigned on first sight."""
        entry = self._labels.get(id(obj))
        if entry is not None:
            ref, text = entry
            if (ref() if isinstance(ref, weakref.ref) else ref) is obj:
                return text
        if isinstance(obj, _PLUGIN_CLASSES):
            prefix = "P"
        elif isinstance(obj, IPluginCreatorInterface):
            prefix = "C"
        else:
            prefix = "O"
        text = f"{prefix}{self._counters[prefix]} {type(obj).__name__}"
        self._counters[prefix] += 1
        if isinstance(obj, (IPluginV3, IPluginCapability, IPluginCreatorV3One)):
            self._v3.add(text)
        try:
            ref: Any = weakref.ref(obj)
        except TypeError:
            ref = obj  # not weak-referenceable: keep it so its id is not reused
        self._labels[id(obj)] = (ref, text)
        return text

    def _summarize_result(self, event: trampoline.CallEvent) -> str:
        if event.method in _STATUS_METHODS:
            # TensorRT ignores what these return; C++ gets 0, or -1 when the call raised.
            return "-1" if event.error else "0"
        return summarize(event.result, self)

    def _summarize_args(self, method: str, args: Sequence[Any], quick: bool = False) -> str:
        names = (quick and QUICK_PARAMS.get(method)) or PARAMS.get(method, ())
        pointers = (_QUICK_POINTER_ARGS if quick else _POINTER_ARGS).get(method, ())
        parts = []
        for i, arg in enumerate(args):
            text = _pointers(arg) if i in pointers else summarize(arg, self)
            parts.append(f"{names[i]}={text}" if i < len(names) else text)
        return ", ".join(parts)

    # -- output ----------------------------------------------------------------------------------
    def roles(self) -> Dict[str, str]:
        """Each object label -> what the object is, read off the calls that made it.

        A plugin returned by ``create_plugin``/``deserialize_plugin`` is "made by" that creator;
        one returned by ``clone`` is a clone of its source, named by the phase it was made in
        (``parse``: the network's copy, ``build``: the builder's, ``runtime``: the execution
        context's); creators are creators; anything else is "first seen in" its first call.

        Example:
            >>> Trace().roles()
            {}
        """
        roles: Dict[str, str] = {}
        for e in self.entries:
            made = e.result_summary
            how = self.made_how(e)
            if how is not None and made in self._label_texts() and made not in roles:
                roles[made] = (f"made by {e.obj_label.split()[0]} {e.method} {how}"
                               f" ({e.phase or '-'})")
            elif e.method == "clone" and made in self._label_texts() and made not in roles:
                phase = (e.phase or "").split(":")[0]  # "build: aot" is a step of "build"
                version = 3 if e.obj_label in self._v3 else 2
                why = _CLONE_ROLES.get(phase, "a copy TensorRT made").format(v=version)
                roles[made] = f"clone of {e.obj_label.split()[0]}: {why} ({e.phase or '-'})"
            if e.obj_label not in roles:
                asked = ("create_plugin at build and at runtime" if e.obj_label in self._v3
                         else "create_plugin, deserialize_plugin")
                roles[e.obj_label] = (
                    f"plugin creator: TensorRT asks it for plugins ({asked})"
                    if e.obj_label.startswith("C")
                    else f"first seen in {e.method} ({e.phase or '-'})")
        order = [text for _, text in self._labels.values()]
        return {label: roles[label] for label in order if label in roles}

    def _label_texts(self) -> set:
        return {text for _, text in self._labels.values()}

    @staticmethod
    def made_how(entry: TraceEntry) -> Optional[str]:
        """How the object ``entry``'s call returned was made (``"from the ONNX node's
        attributes"``), when the call is one that makes a plugin other than a clone; else None.

        Example:
            >>> e = TraceEntry(0, 0.0, 1, "C0 PadCreator", "deserialize_plugin", "", "P3 Pad",
            ...                None, 0.0, "runtime", False)
            >>> Trace.made_how(e)
            "from the engine's serialized bytes"
        """
        phase = (entry.phase or "").split(":")[0]
        return _MADE_BY.get((entry.method, phase), _MADE_BY.get((entry.method, None)))

    def format_legend(self) -> str:
        """The legend that opens :meth:`format_timeline`: one line per object label and its role.

        Example:
            >>> Trace().format_legend()
            ''
        """
        roles = self.roles()
        if not roles:
            return ""
        width = max(len(label) for label in roles)
        lines = ["Objects (labelled in order of first appearance; P = plugin, C = creator):"]
        lines += [f"  {label:<{width}}  {role}" for label, role in roles.items()]
        return "\n".join(lines)

    def format_timeline(self, collapse: bool = True, legend: bool = True) -> str:
        """One line per callback: index, start offset, phase, object, call, result, duration.

        Args:
            collapse: in a run of ``supports_format_combination`` calls on one object, show only
                the accepted combinations and failed calls, with one line counting the rejected
                ones (the format search can make hundreds of calls). ``False`` shows every call.
            legend: open with :meth:`format_legend`, which says what ``C0``, ``P0``... are.
        """
        if not self.entries:
            return "(no plugin callbacks recorded)"
        if legend:
            return (self.format_legend() + "\nCalls (index, start, phase, object, call -> result, "
                    "duration):\n" + self.format_timeline(collapse, legend=False))
        label_width = max(len(e.obj_label) for e in self.entries)
        phase_width = max([len(e.phase or "-") for e in self.entries] + [5])
        offset_width = max(len(f"+{e.t_offset_s * 1e3:.1f}ms") for e in self.entries)
        lines: List[str] = []
        hidden = 0

        def flush() -> None:
            nonlocal hidden
            if hidden:
                lines.append(f"{'':6}... {hidden} rejected format combination(s) not shown "
                             "(format_timeline(collapse=False) lists them)")
                hidden = 0

        for i, e in enumerate(self.entries):
            if collapse and self.collapsible(i):
                hidden += 1
                continue
            flush()
            call = f"{e.method}({e.args_summary})"
            result = f"-> {e.result_summary}"
            if e.default:
                result += " (TensorRT's default: not defined by the plugin)"
            offset = f"+{e.t_offset_s * 1e3:.1f}ms"
            line = (f"{e.index:4d}  {offset:>{offset_width}}  "
                    f"{(e.phase or '-'):<{phase_width}}  {e.obj_label:<{label_width}}  "
                    f"{call} {result}   {e.seconds * 1e3:.2f}ms")
            if e.error:
                line += "".join(f"\n{'':6}!! {part}" for part in e.error.splitlines() if part)
            lines.append(line)
        flush()
        return "\n".join(lines)

    def collapsible(self, i: int) -> bool:
        """Whether entry ``i`` is a rejected, error-free format query inside a run of at least 8
        on the same object: what :meth:`format_timeline` folds (and the HTML page too).

        Example:
            >>> Trace().entries == [] and Trace.collapsible.__name__ == "collapsible"
            True
        """
        e = self.entries[i]
        if e.method != "supports_format_combination" or e.error or e.result_summary != "False":
            return False
        lo = hi = i
        while lo > 0 and self._same_run(self.entries[lo - 1], e):
            lo -= 1
        while hi + 1 < len(self.entries) and self._same_run(self.entries[hi + 1], e):
            hi += 1
        return hi - lo + 1 >= 8

    @staticmethod
    def _same_run(other: TraceEntry, e: TraceEntry) -> bool:
        return other.method == e.method and other.obj_id == e.obj_id

    def to_json(self) -> List[Dict[str, Any]]:
        """The entries as JSON-serializable dicts."""
        return [asdict(e) for e in self.entries]

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[TraceEntry]:
        return iter(self.entries)

    def __repr__(self) -> str:
        return f"<Trace: {len(self.entries)} calls{' (recording)' if self._active else ''}>"


# -- argument summaries ----------------------------------------------------------------------------

def _shape(dims: Any) -> str:
    return "(" + ",".join(str(v) for v in dims) + ")"


def _desc(d: PluginTensorDesc) -> str:
    text = f"{_shape(d.dims)} {d.type.name} {d.format.name}"
    if d.scale not in (-1.0, 0.0):  # TensorRT fills -1; the bare constructor leaves 0
        text += f" scale={d.scale:g}"
    return text


def _dyn_desc(d: DynamicPluginTensorDesc) -> str:
    text = _desc(d.desc)
    if any(v < 0 for v in d.desc.dims) or tuple(d.min) != tuple(d.max):
        text += f" min={_shape(d.min)} opt={_shape(d.opt)} max={_shape(d.max)}"
    return text


def _launch_summary(value: Any) -> str:
    """What ``get_launch_params`` wrote: ``launch(grid_x=..., block_x=256)``, ``args[...]``."""
    try:
        if isinstance(value, KernelLaunchParams):
            set_ = {k: e for k, e in launch_exprs(value).items() if e is not None}
            return "launch(" + ", ".join(f"{k}={e!r}" for k, e in set_.items()) + ")"
        return "args[" + ", ".join(repr(e) for _, _, e in extra_arg_exprs(value)) + "]"
    except TypeError:  # an entry without an expression: the checks report it
        return type(value).__name__ + "(?)"


def _field_value(f: PluginField) -> str:
    try:
        data = f.data
    except (AttributeError, ValueError):
        return f"<{f.type.name} x{f.size}>"
    if f.type == PluginFieldType.CHAR:
        return repr(data.tobytes().decode("utf-8", "replace"))
    return _list(data.tolist())


def _list(values: List[Any]) -> str:
    if len(values) > _MAX_ITEMS:
        head = ", ".join(repr(v) for v in values[:_MAX_ITEMS - 2])
        return f"[{head}, ..., {values[-1]!r}] ({len(values)} items)"
    return "[" + ", ".join(repr(v) for v in values) + "]"


def _pointers(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_pointers(v) for v in value) + "]"
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return hex(int(value))
    return summarize(value)


def _truncate(text: str) -> str:
    return text if len(text) <= _MAX_SUMMARY else text[:_MAX_SUMMARY - 3] + "..."


def summarize(value: Any, trace: Optional[Trace] = None) -> str:
    """A short, readable rendering of a callback argument or result.

    Descriptors as ``(2,3,8,8) HALF LINEAR``, ``DimsExprs`` as ``(in0[0], 3, SUM(in0[2], 2))``,
    field collections as ``{name=value}``, bytes by length, plugins and creators by label.
    """
    return _truncate(_summarize(value, trace))


def _summarize(value: Any, trace: Optional[Trace]) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, PybindEnum):
        return value.name
    if isinstance(value, PluginTensorDesc):
        return _desc(value)
    if isinstance(value, DynamicPluginTensorDesc):
        return _dyn_desc(value)
    if isinstance(value, DimsExprs):
        return "(" + ", ".join("?" if e is None else repr(e) for e in value) + ")"
    if isinstance(value, IDimensionExpr):
        return repr(value)
    if isinstance(value, IExprBuilder):
        return "expr_builder"
    if isinstance(value, (KernelLaunchParams, ISymExprs)):
        return _launch_summary(value)
    if isinstance(value, Dims):
        return _shape(value)
    if isinstance(value, (PluginFieldCollection_, PluginFieldCollection)):
        return "{" + ", ".join(f"{f.name}={_field_value(f)}" for f in value) + "}"
    if isinstance(value, PluginField):
        return f"{value.name}={_field_value(value)}"
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, _PLUGIN_CLASSES + (IPluginCreatorInterface,)):
        return trace.label(value) if trace is not None else type(value).__name__
    if isinstance(value, np.ndarray):
        return f"array{_shape(value.shape)} {value.dtype}"
    if isinstance(value, (list, tuple)):
        items = [_summarize(v, trace) for v in value]
        if len(items) > _MAX_ITEMS:
            items = items[:_MAX_ITEMS - 2] + ["...", items[-1]]
        return "[" + ", ".join(items) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return _truncate(repr(value))
