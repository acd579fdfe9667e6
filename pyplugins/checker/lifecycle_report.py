"""What one lifecycle run found: :class:`LifecycleReport`, returned by ``lifecycle.run``.

Example:
    >>> report = LifecycleReport("MyPlugin:1:", violations=[Violation("shape", "dim 0 is -1")])
    >>> report.ok, report.checks()
    (False, ['shape'])
    >>> print(report.format())
    MyPlugin:1:: 1 violation(s) (host checks only: enqueue not run)
      enqueue did not run: it failed (see errors)
      [shape] dim 0 is -1

    An ``[ERROR]`` line several calls printed is one entry naming them:

    >>> line = "[ERROR] Exception caught in clone(): E: x"
    >>> found = [Violation("callback_error", f"{who} (build): {line}", "clone")
    ...          for who in ("P1", "P1", "P2")]
    >>> print(LifecycleReport("Op:1:", violations=found, errors=[line] * 3).format())
    Op:1:: 3 violation(s) (host checks only: enqueue not run)
      enqueue did not run: it failed (see errors)
      [callback_error] in clone() P1 (build) x2, P2 (build): [ERROR] Exception caught in clone(): E: x
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from pyplugins.checker.checks import Violation

__all__ = ["LifecycleReport"]


@dataclass
class LifecycleReport:
    """What :func:`pyplugins.checker.lifecycle.run` saw.

    Attributes:
        plugin: ``"Name:Version:Namespace"``.
        violations: every broken rule found.
        errors: the ``[ERROR]`` lines the trampoline printed.
        output_shapes: concrete output shapes at opt.
        output_dtypes: output DataType members (from get_output_datatype).
        outputs: the outputs (NumPy; CuPy with ``keep_on_device``) when enqueue ran.
        enqueue_ran: whether the runtime enqueue ran and succeeded.
        skipped: why enqueue did not run, as a sentence, or None.
        trace: the call trace when asked for.
        warnings: the ONNX parser's warnings while building ``fc`` (missing attributes).
        notes: how ``enqueue`` ran when not plainly on the GPU (numba's CUDA simulator), and
            what its outputs were compared with.
        interface: the plugin interface driven, ``"IPluginV2DynamicExt"`` or ``"IPluginV3"``
            (None: not known, as in a report made without a run).
        fresh_process: ``"ran"`` when the engine bytes were also run in a fresh process, else
            why not (``"not asked for"``, ...); None when not known.
        qdp: for a ``tensorrt.plugin`` plugin, what ran: per lifecycle (JIT, AOT) the request,
            the implementation made, the combinations and tactics, the kept candidate, the AOT
            artifact and its run (:meth:`pyplugins.checker.lifecycle_qdp.DriverQDP.summary`).
    """

    plugin: str
    violations: List[Violation] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    output_shapes: List[tuple] = field(default_factory=list)
    output_dtypes: List[Any] = field(default_factory=list)
    outputs: Optional[list] = None
    enqueue_ran: bool = False
    skipped: Optional[str] = None
    trace: Any = None
    warnings: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    interface: Optional[str] = None
    fresh_process: Optional[str] = None
    qdp: Optional[Dict[str, Any]] = None

    @property
    def ok(self) -> bool:
        """No violations and no errors."""
        return not self.violations and not self.errors

    def checks(self) -> List[str]:
        """The names of the checks that failed, in order, without repeats."""
        return list(dict.fromkeys(v.check for v in self.violations))

    def to_dict(self) -> Dict[str, Any]:
        """JSON-able form (outputs as shape and dtype only)."""
        return {
            "plugin": self.plugin, "ok": self.ok,
            "violations": [v.to_dict() for v in self.violations], "errors": list(self.errors),
            "output_shapes": [list(s) for s in self.output_shapes],
            "output_dtypes": [t.name for t in self.output_dtypes],
            "outputs": None if self.outputs is None else [
                {"shape": list(o.shape), "dtype": str(o.dtype)} for o in self.outputs],
            "enqueue_ran": self.enqueue_ran, "skipped": self.skipped,
            "warnings": list(self.warnings), "notes": list(self.notes),
            "trace": self.trace.to_json() if self.trace is not None else None,
            "interface": self.interface, "fresh_process": self.fresh_process,
            **({"qdp": self.qdp} if self.qdp is not None else {}),
        }

    def format(self) -> str:
        """A human-readable summary; the first line says what was and was not checked.

        Each fact is said once: the reason enqueue did not run is not repeated under the
        verdict, and an ``[ERROR]`` line that several calls printed is one entry naming them.
        """
        verdict = "OK" if self.ok else f"{len(self.violations)} violation(s)"
        why = self.skipped or ""
        detail: Optional[str] = f"enqueue did not run: {why or 'it failed (see errors)'}"
        if not self.enqueue_ran:
            if why.startswith("no GPU"):
                verdict += " (CPU only: enqueue not run, no GPU)"
                detail = why[len("no GPU"):].strip().removeprefix("(").removesuffix(")") or None
            elif "device='cpu'" in why or "PYPLUGINS_DEVICE=cpu" in why:
                verdict += " (CPU only: enqueue not run, the CPU was asked for)"
                detail = None
            else:
                verdict += " (host checks only: enqueue not run)"
        lines = [f"{self.plugin}: {verdict}"]
        if self.interface is not None or self.fresh_process is not None:
            lines.append(f"  interface: {self.interface or 'unknown'}; fresh process: "
                         f"{self.fresh_process or 'unknown'}")
        for i, (shape, dt) in enumerate(zip(self.output_shapes, self.output_dtypes)):
            lines.append(f"  output {i}: {tuple(shape)} {dt.name}")
        if self.enqueue_ran:
            lines.append("  enqueue ran")
        elif detail is not None:  # under "no GPU", only what CUDA said
            lines.append(f"  {detail}")
        if self.qdp is not None:
            lines += [f"  {line}" for line in _qdp_lines(self.qdp)]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  warning: {w}" for w in self.warnings]
        lines += [f"  {text}" for text in _grouped(self.violations)]
        shown = {v.message.partition(": ")[2] for v in self.violations
                 if v.check == "callback_error"}
        lines += [f"  printed: {e}" for e in dict.fromkeys(self.errors) if e not in shown]
        return "\n".join(lines)


def _grouped(violations: List[Violation]) -> List[str]:
    """Each violation once: a ``callback_error`` per distinct ``[ERROR]`` text, naming every
    object that printed it; any other repeated violation with a count.

    A ``callback_error`` message is ``"<object> (<step>): <[ERROR] line>"`` (the recorder's).
    """
    who: Dict[tuple, List[str]] = {}
    first: Dict[tuple, Violation] = {}
    for v in violations:
        place, sep, line = v.message.partition(": ")
        key = ((v.check, v.method, line) if v.check == "callback_error" and sep
               else (v.check, v.method, v.message))
        first.setdefault(key, v)
        who.setdefault(key, []).append(place if v.check == "callback_error" and sep else "")
    out = []
    for key, v in first.items():
        places = who[key]
        if v.check == "callback_error" and any(places):
            counted = dict.fromkeys(places)
            names = ", ".join(p if places.count(p) == 1 else f"{p} x{places.count(p)}"
                              for p in counted)
            where = f" in {v.method}()" if v.method else ""
            out.append(f"[{v.check}]{where} {names}: {key[2]}")
        else:
            out.append(str(v) + (f" ({len(places)} times)" if len(places) > 1 else ""))
    return out


def _qdp_lines(qdp: Dict[str, Any]) -> List[str]:
    """One line per QDP lifecycle: what was asked, what was made, what was kept and run."""
    lines = []
    for run in qdp.get("runs", []):
        made = str(run.get("implementation") or run.get("asked")).upper()
        text = f"qdp {made}" + (f" (request {run['request']})" if run.get("request") else "")
        kept = run.get("kept")
        if kept:
            text += f": kept {kept['combination']}, tactic {kept['tactic']}"
        artifact = run.get("artifact")
        if artifact:
            text += (f"; AOT kernel {artifact['kernel']!r} ({artifact['image']}, "
                     f"{artifact['image_bytes']} B)")
        ran = run.get("run")
        if isinstance(ran, dict):
            text += "; launched without the plugin's Python" if ran.get("launched") else \
                "; artifact evaluated without the plugin's Python, not launched"
        if run.get("stopped"):
            text += f"; stopped: {run['stopped']}"
        lines.append(text)
    if qdp.get("aot_unsupported"):
        lines.append(f"qdp AOT not possible: {qdp['aot_unsupported']}")
    if qdp.get("aot_equals_jit"):
        agreement = qdp["aot_equals_jit"]
        lines.append("qdp AOT outputs differ from JIT's" if agreement == "differ" else
                     f"qdp AOT outputs equal JIT's ({agreement})")
    return lines
