"""What one lifecycle run found: :class:`LifecycleReport`, returned by ``lifecycle.run``.

Example:
    >>> report = LifecycleReport("MyPlugin:1:", violations=[Violation("shape", "dim 0 is -1")])
    >>> report.ok, report.checks()
    (False, ['shape'])
    >>> print(report.format())
    MyPlugin:1:: 1 violation(s) (host checks only: enqueue not run)
      enqueue did not run: it failed (see errors)
      [shape] dim 0 is -1
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
            **({"qdp": self.qdp} if self.qdp is not None else {}),
        }

    def format(self) -> str:
        """A human-readable summary; the first line says what was and was not checked."""
        verdict = "OK" if self.ok else f"{len(self.violations)} violation(s)"
        if not self.enqueue_ran:
            why = self.skipped or ""
            if why.startswith("no GPU"):
                verdict += " (CPU only: enqueue not run, no GPU)"
            elif "device='cpu'" in why or "PYPLUGINS_DEVICE=cpu" in why:
                verdict += " (CPU only: enqueue not run, the CPU was asked for)"
            else:
                verdict += " (host checks only: enqueue not run)"
        lines = [f"{self.plugin}: {verdict}"]
        for i, (shape, dt) in enumerate(zip(self.output_shapes, self.output_dtypes)):
            lines.append(f"  output {i}: {tuple(shape)} {dt.name}")
        lines.append("  enqueue ran" if self.enqueue_ran else
                     f"  enqueue did not run: {self.skipped or 'it failed (see errors)'}")
        if self.qdp is not None:
            lines += [f"  {line}" for line in _qdp_lines(self.qdp)]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  warning: {w}" for w in self.warnings]
        lines += [f"  {v}" for v in self.violations]
        lines += [f"  printed: {e}" for e in self.errors]
        return "\n".join(lines)


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
    return lines
