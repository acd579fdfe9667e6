"""The rule checks the lifecycle driver runs on a plugin, each reported as a :class:`Violation`.

Every check looks for one way a plugin breaks what TensorRT relies on
(docs/trt-protocol.md); :data:`CHECKS` names them. This module holds the
host-side parts: the poisoned ``in_out`` entries of the format search, the clone and
serialization comparisons, the output guard/poison analysis and the :class:`Recorder` that
watches :data:`pyplugins.emulator.trampoline.listeners`. The GPU side lives in
:mod:`pyplugins.emulator.buffers`, the fresh-process side in :mod:`pyplugins.emulator._fresh`.

Example:
    >>> import numpy as np
    >>> raw = np.frombuffer(poison_pattern(np.float32, 3), dtype=np.uint8).copy()
    >>> raw[:4] = np.frombuffer(np.float32(1).tobytes(), dtype=np.uint8)
    >>> [v.check for v in output_violations(0, raw, (2,), np.float32)]
    ['output_mismatch']
"""

from __future__ import annotations

import enum
import types
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pyplugins.emulator.descs import PluginTensorDesc

__all__ = ["CHECKS", "GUARD_BYTES", "PoisonedDesc", "PoisonProbe", "Recorder", "Violation",
           "clone_violations", "output_violations", "poison_pattern", "poisoned_elements", "serialization_violations"]

#: Check name -> what it means. Violations carry one of these names in ``check``.
CHECKS: Dict[str, str] = {
    "in_out_beyond_pos": "supports_format_combination read in_out entries after pos, which "
                         "TensorRT has not chosen yet (their contents are junk; §2.1)",
    "clone_shares_state": "clone() returned an object that shares mutable state with its source, "
                          "is its source, or lacks the identity properties (§1.2, §10.2)",
    "serialize_nondeterministic": "serialize() returned different bytes across the 2-3 calls "
                                  "TensorRT makes for one serialization (§4.1)",
    "enqueue_unconfigured": "enqueue reached an object whose configure_plugin never ran or raised "
                            "(TensorRT ignores a raising V2 configure_plugin; §1.3, §2.3)",
    "output_mismatch": "enqueue wrote past or short of the declared output size, or the output "
                       "type accepted by supports_format_combination differs from "
                       "get_output_datatype's",
    "capture_unsafe": "enqueue cannot be captured into a CUDA graph, or its graph replays "
                      "differently (allocation, sync, host copy, other stream; §9)",
    "fresh_process": "the engine bytes do not work in a new process that only imports the "
                     "plugin's module (state kept in module globals or __main__; §10.11)",
    "callback_error": "a plugin callback raised or returned a value the binding could not "
                      "interpret; TensorRT printed [ERROR] and used its fallback (§1.4)",
    "shape": "get_output_dimensions gave an empty, negative or unevaluable output dimension",
    "format": "no format combination with the network's types was accepted: the build fails",
    "serialize": "serialization produced no bytes, or get_serialization_size() disagrees with "
                 "len(serialize())",
    "device_error": "the work enqueue launched failed on the device (a CUDA error at the next "
                    "synchronization; the context may be unusable afterwards)",
    "reference_mismatch": "enqueue's outputs differ from the plugin's NumPy reference() beyond "
                          "the per-dtype tolerances of pyplugins.testing",
    # IPluginV3 (pyplugins.emulator.checks_v3, size_tensors, lifecycle_v3)
    "attach_shares_state": "attach_to_context() returned its source object, or a plugin sharing "
                           "mutable state with it (§2.4)",
    "tactics_invalid": "get_valid_tactics() returned a repeated tactic or 0 (§2.4)",
    "fields_nondeterministic": "get_fields_to_serialize() gave different fields on two calls (§4.2)",
    "fields_incomplete": "the plugin create_plugin(RUNTIME) rebuilt from the serialized fields "
                         "differs from the built one: fields or outputs (§4.2)",
    "tactic_not_set": "enqueue ran on a runtime object that never received set_tactic (§2.5)",
    "shape_change_not_kept": "enqueue ran on a runtime object whose on_shape_change never ran "
                             "or raised: get_capability_interface(RUNTIME) must return the same "
                             "object (§2.5)",
    "capability_unstable": "get_capability_interface returned a different object on a second "
                           "call for the same capability (§2.5)",
    "tactic_outputs_differ": "two tactics of the plugin give different outputs for the same "
                             "inputs (GPU)",
    "size_tensor": "a declared size tensor is not a 0-D INT32/INT64 output, or enqueue wrote a "
                   "value outside [0, upper] (§6)",
    "aliasing": "get_aliased_input named an invalid input or one of another type/size, or the "
                "aliased output was not written in place (§7, 10.3+)",
    "lifecycle": "a step TensorRT needs returned nothing (no plugin, no clone, no creator for "
                 "the engine's plugin key, num_outputs unset, initialize failed)",
}

#: Bytes of poison after each output buffer; a multiple of every element size.
GUARD_BYTES = 256

# One element of poison, by item size: a NaN with a recognisable payload for float types
# (little-endian), a fixed byte pattern for the others.
_FLOAT_POISON = {2: 0x7DA5, 4: 0x7FA5A5A5, 8: 0x7FF4A5A5A5A5A5A5}
_BYTE_POISON = 0xA5
# A second pattern: an integer output may legitimately hold the first one (0xA5 is int8 -91), so
# an element counts as unwritten only if it holds the poison after two runs with different ones.
_FLOAT_POISON_ALT = {2: 0x7E5A, 4: 0x7F5A5A5A, 8: 0x7FF5A5A5A5A5A5A5}
_BYTE_POISON_ALT = 0x5A


@dataclass
class Violation:
    """One broken rule.

    Attributes:
        check: the check's name, a key of :data:`CHECKS`.
        message: what happened, on which object, and how to fix it.
        method: the plugin method involved, when there is one.
    """

    check: str
    message: str
    method: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """JSON-able form."""
        return asdict(self)

    def __str__(self) -> str:
        where = f" in {self.method}()" if self.method else ""
        return f"[{self.check}]{where} {self.message}"


# -- in_out_beyond_pos ---------------------------------------------------------------------------

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


# -- clone_shares_state ---------------------------------------------------------------------------

_IMMUTABLE_TYPES = (int, float, complex, str, bytes, bool, type(None), range, type(Ellipsis),
                    enum.Enum, np.generic, np.dtype, type, types.FunctionType,
                    types.BuiltinFunctionType, types.ModuleType)


# Compiled CuPy kernels are immutable handles; sharing them between clones is safe.
_CUPY_IMMUTABLE = frozenset(("RawKernel", "RawModule", "Function", "Module", "ElementwiseKernel"))


def _immutable(value: Any) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(v) for v in value)
    kind = type(value)
    if getattr(kind, "__pp_immutable__", False):  # pyplugins types that declare it
        return True
    if kind.__module__.startswith("cupy") and kind.__name__ in _CUPY_IMMUTABLE:
        return True
    return isinstance(value, _IMMUTABLE_TYPES)


def clone_violations(source: Any, clone: Any, label: str = "clone()") -> List[Violation]:
    """What is wrong with ``clone`` as a clone of ``source`` (identity, shared mutable state)."""
    if clone is source:
        msg = (f"{label} returned the source object itself: TensorRT destroys and configures "
               f"each object separately, so both would be one plugin. Build a new instance.")
        return [Violation("clone_shares_state", msg, "clone")]
    found = []
    missing = []
    v3 = hasattr(type(clone), "plugin_name")  # IPluginV3: plugin_name, and no num_outputs at runtime
    for slot, text in (("_pp_num_outputs", "num_outputs is unset (-1)"),
                       ("_pp_name", "plugin_name is None") if v3 else
                       ("_pp_type", "plugin_type is None")):
        if getattr(clone, slot, None) is None and (not v3 or getattr(source, slot, None)):
            missing.append(text)
    if missing:
        base = "the base __init__s" if v3 else "IPluginV2DynamicExt.__init__"
        msg = (f"{label} returned a {type(clone).__name__} whose {' and '.join(missing)}: it did "
               f"not run {base} and set the identity properties. They live "
               f"in C++, not in __dict__, so __dict__.update() does not copy them; construct the "
               f"clone with the class constructor, then copy the state (§1.2, §10.2).")
        found.append(Violation("clone_shares_state", msg, "clone"))
    try:
        src_dict, clone_dict = vars(source), vars(clone)
    except TypeError:
        return found
    for name, value in clone_dict.items():
        if name in src_dict and src_dict[name] is value and not _immutable(value):
            msg = (f"{label}: attribute {name!r} of the clone is the same "
                   f"{type(value).__module__}.{type(value).__qualname__} object as the source's; "
                   f"TensorRT configures, runs and destroys clones independently, so a change "
                   f"through one shows in the other (and device buffers get freed twice). Copy "
                   f"it in clone() (copy.deepcopy, list(...), arr.copy()).")
            found.append(Violation("clone_shares_state", msg, "clone"))
    return found


# -- serialization ----------------------------------------------------------------------------------

def _first_difference(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def serialization_violations(results: Sequence[Optional[bytes]], size: int,
                             written: Optional[bytes]) -> List[Violation]:
    """Check one serialization: every ``serialize()`` result, the size TensorRT used, the bytes.

    Args:
        results: what each ``serialize()`` call returned (None where it failed), in call order.
        size: what ``getSerializationSize`` gave TensorRT.
        written: the bytes ``serialize`` put in TensorRT's buffer (None: buffer unwritten).
    """
    found = []
    good = [r for r in results if r is not None]
    distinct = list(dict.fromkeys(good))
    if len(distinct) > 1:
        a, b = distinct[0], distinct[1]
        msg = (f"serialize() returned {len(distinct)} different results in {len(results)} calls "
               f"(lengths {[len(r) for r in good]}; first difference at byte "
               f"{_first_difference(a, b)}): TensorRT calls it 2-3 times for one serialization and "
               f"mixes the results, so the engine would hold corrupt bytes. Make serialize() "
               f"depend only on the plugin's state (no counters, clocks, ids or unordered sets).")
        found.append(Violation("serialize_nondeterministic", msg, "serialize"))
    if written is None:
        msg = ("serialize() failed, so TensorRT's buffer was left unwritten and the engine holds "
               f"{size} uninitialised bytes for this plugin.")
        found.append(Violation("serialize", msg, "serialize"))
    elif size != len(written):
        msg = (f"get_serialization_size() returned {size} but serialize() returns {len(written)} "
               f"bytes: TensorRT copies get_serialization_size() bytes, so the engine gets "
               f"{'bytes read past the end' if size > len(written) else 'truncated state'}. "
               f"Remove get_serialization_size() (the default is len(serialize())) or fix it.")
        found.append(Violation("serialize", msg, "get_serialization_size"))
    return found


# -- output_mismatch --------------------------------------------------------------------------------

def poison_pattern(dtype: Any, count: int, alt: bool = False) -> bytes:
    """``count`` elements of poison for ``dtype``: a NaN payload for floats, 0xA5 bytes else
    (``alt``: the second pattern, another NaN payload or 0x5A bytes)."""
    dt = np.dtype(dtype)
    floats, byte = (_FLOAT_POISON_ALT, _BYTE_POISON_ALT) if alt else (_FLOAT_POISON, _BYTE_POISON)
    if dt.kind == "f" and dt.itemsize in floats:
        one = floats[dt.itemsize].to_bytes(dt.itemsize, "little")
    else:
        one = bytes([byte]) * dt.itemsize
    return one * count


def poisoned_elements(raw: np.ndarray, shape: Sequence[int], dtype: Any,
                      alt: bool = False) -> np.ndarray:
    """Flat indices of the declared elements of ``raw`` that still hold the poison."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    if not n or not dt.itemsize:
        return np.zeros(0, dtype=np.int64)
    raw = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    body = raw[:n * dt.itemsize].view(f"<u{dt.itemsize}" if dt.itemsize in (1, 2, 4, 8)
                                      else np.uint8)
    pattern = np.frombuffer(poison_pattern(dt, 1, alt), dtype=body.dtype)[0]
    return np.flatnonzero(body == pattern)


def output_violations(index: int, raw: np.ndarray, shape: Sequence[int], dtype: Any,
                      guard: int = GUARD_BYTES,
                      raw_alt: Optional[np.ndarray] = None) -> List[Violation]:
    """Check an output buffer read back after ``enqueue``.

    Args:
        index: the output's index.
        raw: the whole buffer as uint8: the declared elements, then ``guard`` poisoned bytes.
        shape: the declared (concrete) shape; ``dtype`` its element type.
        raw_alt: the same buffer after a second ``enqueue`` on outputs poisoned with the second
            pattern; an element is unwritten only if it holds the poison in both.
    """
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    nbytes = n * dt.itemsize
    raw = np.ascontiguousarray(raw).view(np.uint8).reshape(-1)
    found = []
    tail = raw[nbytes:nbytes + guard]
    expected_tail = np.frombuffer(poison_pattern(dt, guard // dt.itemsize), dtype=np.uint8)
    changed = np.flatnonzero(tail != expected_tail[:len(tail)])
    if changed.size:
        past = int(changed[-1]) // dt.itemsize + 1
        msg = (f"enqueue wrote past the end of output {index} (declared {tuple(shape)} "
               f"{dt.name}, {nbytes} bytes): bytes changed up to {int(changed[-1]) + 1} bytes "
               f"after it (about {past} element(s) too many). The plugin's idea of this output's "
               f"shape or dtype disagrees with get_output_dimensions/get_output_datatype.")
        found.append(Violation("output_mismatch", msg, "enqueue"))
    if n and dt.itemsize:
        unwritten = poisoned_elements(raw, shape, dt)
        if unwritten.size and raw_alt is not None:
            unwritten = np.intersect1d(unwritten, poisoned_elements(raw_alt, shape, dt, alt=True))
        if unwritten.size:
            first = np.unravel_index(int(unwritten[0]), tuple(shape)) if len(shape) else ()
            msg = (f"enqueue left {unwritten.size} of {n} elements of output {index} (declared "
                   f"{tuple(shape)} {dt.name}) unwritten, the first at index "
                   f"{tuple(int(i) for i in first)}: the plugin writes fewer elements than it "
                   f"declared (its shape or dtype disagrees with get_output_dimensions/"
                   f"get_output_datatype), or it skips part of the output.")
            found.append(Violation("output_mismatch", msg, "enqueue"))
    return found


# -- the listener ------------------------------------------------------------------------------------

class Recorder:
    """Watches every trampoline call during a lifecycle run.

    It labels plugin objects (P0, P1, ... in order of appearance), remembers which objects had a
    successful ``configure_plugin``, checks each clone as it is made, keeps every
    ``serialize()`` result, and collects the ``[ERROR]`` lines the trampoline printed.

    Attributes:
        errors: ``(method, line, step, object label)`` for each printed ``[ERROR]`` line.
        violations: clone violations found so far.
        step: a label for the current step; errors are tagged with it.
    """

    def __init__(self) -> None:
        self.errors: List[Tuple[str, str, str, str]] = []
        self.violations: List[Violation] = []
        self.step = ""
        self._labels: Dict[int, Tuple[Any, str]] = {}
        self._counts = {"P": 0, "C": 0}
        self._clone_seen: Dict[str, Tuple[Violation, str, List[str]]] = {}
        self._configured: Dict[int, Tuple[Any, bool]] = {}
        self._serialized: Dict[int, List[Optional[bytes]]] = {}

    def label(self, obj: Any) -> str:
        """``"P2 CircPadPlugin"``: the object's label, assigned on first sight."""
        entry = self._labels.get(id(obj))
        if entry is None or entry[0] is not obj:
            prefix = "C" if hasattr(obj, "create_plugin") else "P"
            entry = (obj, f"{prefix}{self._counts[prefix]} {type(obj).__name__}")
            self._counts[prefix] += 1
            self._labels[id(obj)] = entry
        return entry[1]

    def __call__(self, event: Any) -> None:
        if event.method in ("create_plugin", "deserialize_plugin", "clone"):
            self.label(event.obj)
            if event.result is not None:
                self.label(event.result)
        if event.error is not None:
            self.errors.append((event.method, event.error, self.step, self.label(event.obj)))
        if event.method == "configure_plugin":
            self._configured[id(event.obj)] = (event.obj, event.error is None)
        elif event.method == "clone" and event.result is not None:
            self._clone_check(event.obj, event.result)
        elif event.method == "serialize":
            self._serialized.setdefault(id(event.obj), []).append(
                event.result if isinstance(event.result, bytes) else None)

    def _clone_check(self, source: Any, clone: Any) -> None:
        """Check a clone; the same problem at a later clone is noted on the first violation."""
        site = f"{self.label(source).split()[0]}->{self.label(clone).split()[0]}"
        text = f"clone() of {self.label(source)} (giving {self.label(clone)})"
        for found in clone_violations(source, clone, text):
            key = found.message.replace(text, "")
            if key not in self._clone_seen:
                self._clone_seen[key] = (found, found.message, [site])
                self.violations.append(found)
                continue
            first, message, sites = self._clone_seen[key]
            if site not in sites:
                sites.append(site)
                first.message = f"{message} [also at clone {', '.join(sites[1:])}]"

    def configured(self, obj: Any) -> Optional[bool]:
        """True if the last ``configure_plugin`` on ``obj`` succeeded, False if it raised, None
        if it never ran."""
        entry = self._configured.get(id(obj))
        if entry is None or entry[0] is not obj:
            return None
        return entry[1]

    def unconfigured_violation(self, obj: Any, what: str) -> Optional[Violation]:
        """The ``enqueue_unconfigured`` violation for enqueueing ``obj``, or None."""
        state = self.configured(obj)
        if state:
            return None
        how = "never had configure_plugin called" if state is None else \
            "raised in configure_plugin (TensorRT printed the error and carried on)"
        msg = (f"{what} on {self.label(obj)}, which {how}: enqueue then runs on state "
               f"configure_plugin should have set, and the binding sizes the input lists from the "
               f"count configure_plugin caches (§2.3). Make configure_plugin succeed on every "
               f"object, build or runtime, or keep enqueue independent of it.")
        return Violation("enqueue_unconfigured", msg, "enqueue")

    def take_serialized(self, obj: Any) -> List[Optional[bytes]]:
        """The ``serialize()`` results recorded for ``obj`` since the last call, then forget them."""
        return self._serialized.pop(id(obj), [])
