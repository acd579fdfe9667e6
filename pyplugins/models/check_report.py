"""What ``pyplugins check MODEL.onnx`` found: a :class:`NodeCheck` per plugin node, in a
:class:`ModelCheckReport`.

Example:
    >>> report = ModelCheckReport([NodeCheck("pad", "CircPad", problem="no creator")])
    >>> report.ok, report.to_dict()["exit_status"]
    (False, 1)
    >>> print(report.format())
    node 'pad' (CircPad): FAILED
      not checked: no creator
    1 plugin node(s), 1 with problems
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = ["ModelCheckReport", "NodeCheck", "RenderedNode"]


@dataclass
class NodeCheck:
    """One plugin node's result.

    Attributes:
        node: the node's name as the parser names it.
        op: its op type.
        report: the lifecycle's
            :class:`~pyplugins.checker.lifecycle_report.LifecycleReport` (None when the node
            could not be imported or its input shapes are unknown).
        mismatches: outputs whose count, shape or type differs from the graph's declaration.
        problem: why the node was not checked, or None.
        same_as: the earlier node with the same creator, fields and input shapes and types, whose
            lifecycle run this node's report repeats (TensorRT would build both the same way).
    """

    node: str
    op: str
    report: Any = None
    mismatches: List[str] = field(default_factory=list)
    problem: Optional[str] = None
    same_as: Optional[str] = None

    @property
    def ok(self) -> bool:
        """Checked, with no lifecycle violation and no mismatch."""
        return (self.problem is None and not self.mismatches and self.report is not None
                and self.report.ok)

    def format(self) -> str:
        """Human-readable lines."""
        head = f"node {self.node!r} ({self.op}): {'OK' if self.ok else 'FAILED'}"
        lines = [head]
        if self.problem:
            lines.append(f"  not checked: {self.problem}")
        if self.same_as is not None:
            lines.append(f"  same creator, fields and inputs as node {self.same_as!r}: its "
                         "lifecycle run is not repeated")
        lines += [f"  mismatch: {m}" for m in self.mismatches]
        if self.report is not None:
            lines += ["  " + line for line in self.report.format().splitlines()]
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """JSON-able form."""
        return {"node": self.node, "op": self.op, "ok": self.ok, "problem": self.problem,
                "same_as": self.same_as, "mismatches": list(self.mismatches),
                "report": self.report.to_dict() if self.report is not None else None}


@dataclass
class RenderedNode:
    """A :class:`NodeCheck` as a child process handed it over: its JSON form and its text
    (``pyplugins check MODEL.onnx`` keeps the nodes a child finished before it died).

    Example:
        >>> done = RenderedNode({"node": "p0", "ok": True}, "node 'p0' (Op): OK")
        >>> done.ok, done.node, ModelCheckReport([done]).ok
        (True, 'p0', True)
    """

    data: Dict[str, Any]
    text: str

    @property
    def ok(self) -> bool:
        """The node's verdict, as the child gave it."""
        return bool(self.data.get("ok"))

    @property
    def node(self) -> str:
        """The node's name."""
        return str(self.data.get("node"))

    def format(self) -> str:
        """The child's text of the node."""
        return self.text

    def to_dict(self) -> Dict[str, Any]:
        """The child's JSON form of the node."""
        return dict(self.data)


@dataclass
class ModelCheckReport:
    """Every plugin node's :class:`NodeCheck`, in graph order.

    Attributes:
        nodes: the plugin nodes checked so far (a check that ran out of time stops part-way);
            :class:`RenderedNode` for those a supervised child finished before it died.
        timed_out: what ran past ``--timeout`` (the check then stopped), or None.
        died: how the check's child process died outside any plugin node (while the model
            itself was read), or None.
    """

    nodes: List[Any] = field(default_factory=list)
    timed_out: Optional[str] = None
    died: Optional[str] = None

    @property
    def ok(self) -> bool:
        """Every plugin node checked and fine, in time (a model with no plugin node is not ok)."""
        return (self.timed_out is None and self.died is None and bool(self.nodes)
                and all(n.ok for n in self.nodes))

    def format(self) -> str:
        """Human-readable report."""
        lines = [n.format() for n in self.nodes]
        if self.timed_out is not None:
            lines.append(f"stopped: {self.timed_out}")
        if self.died is not None:
            lines.append(f"stopped: {self.died}")
        if not self.nodes:
            if self.timed_out is None and self.died is None:
                return "no plugin node in the model (every op is an ONNX op)"
            return "\n".join(lines)
        bad = sum(not n.ok for n in self.nodes)
        lines.append(f"{len(self.nodes)} plugin node(s), {bad} with problems")
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        """JSON-able form, with ``exit_status`` (0 ok, 1 otherwise)."""
        return {"ok": self.ok, "exit_status": 0 if self.ok else 1, "timed_out": self.timed_out,
                "died": self.died, "nodes": [n.to_dict() for n in self.nodes]}

    def stopped(self, step: str, seconds: float, limit: float) -> "ModelCheckReport":
        """A copy of this report (the abandoned check may still change the original) saying that
        ``step`` ran past ``limit`` seconds; a node still being checked is marked failed."""
        nodes = [copy.copy(n) for n in self.nodes]
        if nodes and nodes[-1].report is None and nodes[-1].problem is None:
            nodes[-1].problem = "its check was stopped by the time limit (see below)"
        what = f"{step}()" if step.isidentifier() else step
        message = (f"{what} did not return within the {limit:g} s limit (--timeout) and was "
                   f"abandoned after {seconds:.1f} s: an endless loop or a very slow step")
        if nodes and step.isidentifier():
            message = f"node {nodes[-1].node!r}: {message}; TensorRT would hang here"
        return ModelCheckReport(nodes, message)
