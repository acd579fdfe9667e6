"""Hostile ONNX models for ``pyplugins check MODEL.onnx`` and the model runner, and the judge.

:func:`hostile_cases` writes the named cases (files that are not models, external data pointing
out of the folder, malformed graphs) with the exit status and words each must give;
:func:`mutate` makes a random malformed variant of a valid model, at the byte level or in its
structure. :func:`judge_check` runs one ``pyplugins check MODEL.onnx --json`` in-process, in a
thread with a time limit, and says ``clean`` (exit 0, 1 or 2 with one JSON object on stdout; for
2 a one-line error), ``crash`` (an exception, a traceback, another exit status, bad JSON),
``hang`` or ``leak`` (a file outside the model's folder was opened, seen by an audit hook, or
the outside secret was echoed). Used by ``test_fuzz_models.py`` and ``tests/models``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np
import onnx
from onnx import TensorProto, helper

SECRET = b"PYPLUGINS-OUTSIDE-SECRET-0123456789"
CASE_LIMIT_S = 30.0  # a case past this is a hang (its --timeout is far lower)
_F = TensorProto.FLOAT


def vi(name: str, elem: int = _F, shape: Any = (2, 3, 8)) -> Any:
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def model(nodes: Sequence[Any], inputs: Sequence[Any], outputs: Sequence[Any], opset: int = 17,
          **graph: Any) -> Any:
    m = helper.make_model(helper.make_graph(list(nodes), "g", list(inputs), list(outputs),
                                            **graph),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def lrelu(inp: str, out: str, name: str, **attrs: Any) -> Any:
    return helper.make_node("LReLU_TRT", [inp], [out], name=name, **(attrs or {"negSlope": 0.1}))


def good_model() -> Any:
    """Relu -> CircPad -> Reshape (initializer shape) -> LReLU_TRT, then an If and a Loop of
    ordinary ops: a valid model to mutate."""
    then = helper.make_graph([helper.make_node("Neg", ["a"], ["t_in"]),
                              helper.make_node("Abs", ["t_in"], ["t"])], "then", [],
                             [vi("t", shape=(2, 3, 11))])
    other = helper.make_graph([helper.make_node("Relu", ["a"], ["e"])], "else", [],
                              [vi("e", shape=(2, 3, 11))])
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                              helper.make_node("Add", ["v_in", "a"], ["v_out"])], "body",
                             [vi("i", TensorProto.INT64, ()), vi("c_in", TensorProto.BOOL, ()),
                              vi("v_in", shape=(2, 3, 11))],
                             [vi("c_out", TensorProto.BOOL, ()), vi("v_out", shape=(2, 3, 11))])
    shape = helper.make_tensor("shape", TensorProto.INT64, [3], [2, 3, 11])
    trip = helper.make_tensor("trip", TensorProto.INT64, [], [2])
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("CircPad", ["r"], ["p"], name="pad", pads=[1, 2]),
             helper.make_node("Reshape", ["p", "shape"], ["q"], name="reshape"),
             lrelu("q", "a", "act"),
             helper.make_node("If", ["c"], ["b"], name="if", then_branch=then,
                              else_branch=other),
             helper.make_node("Loop", ["trip", "", "b"], ["y"], name="loop", body=body)]
    return model(nodes, [vi("x"), vi("c", TensorProto.BOOL, ())], [vi("y", shape=(2, 3, 11))],
                 initializer=[shape, trip])


def external(name: str, location: str, dims: Sequence[int] = (1,), elem: int = _F, **extra: Any
             ) -> Any:
    """A TENSOR attribute whose data is external, at ``location``."""
    t = TensorProto(data_type=elem, dims=list(dims), data_location=TensorProto.EXTERNAL)
    for key, value in {"location": location, **extra}.items():
        entry = t.external_data.add()
        entry.key, entry.value = key, str(value)
    return helper.make_attribute(name, t)


def folders(root: Path) -> Tuple[Path, Path]:
    """``root/model`` (holding w.bin, a FIFO and symlinks that lead out) and ``root/outside``
    (holding the secret, which must never be read)."""
    inside, outside = root / "model", root / "outside"
    inside.mkdir(exist_ok=True)
    (outside / "deeper").mkdir(parents=True, exist_ok=True)
    (outside / "secret.bin").write_bytes(SECRET)
    (outside / "deeper" / "secret.bin").write_bytes(SECRET)
    (inside / "w.bin").write_bytes(np.float32([0.5, 0.25, 2.0, 4.0]).tobytes())
    for link, target in [("link.bin", outside / "secret.bin"), ("dirlink", outside / "deeper"),
                         ("zero.bin", Path("/dev/zero")), ("inner.bin", inside / "w.bin")]:
        if not (inside / link).is_symlink():
            (inside / link).symlink_to(target)
    if not (inside / "fifo.bin").exists():
        os.mkfifo(inside / "fifo.bin")
    return inside, outside


@dataclass
class Case:
    """One named hostile model: its path, the exit status and words the check must give."""

    path: Path
    code: int
    needle: str


def _save(folder: Path, name: str, proto: Any) -> Path:
    path = folder / f"{name}.onnx"
    path.write_bytes(proto.SerializeToString())
    return path


def _lrelu_model(attr: Any = None, **kw: Any) -> Any:
    node = helper.make_node("LReLU_TRT", ["x"], ["y"], name="act")
    if attr is not None:
        node.attribute.append(attr)
    return model([node], [vi("x")], [vi("y")], **kw)


def hostile_cases(root: Path) -> Dict[str, Case]:
    """Write every named hostile case under ``root``; ``name -> Case``."""
    inside, outside = folders(root)
    good = good_model()
    raw = good.SerializeToString()
    cases: Dict[str, Case] = {}

    def add(name: str, proto: Any, code: int, needle: str) -> None:
        cases[name] = Case(_save(inside, name, proto), code, needle)

    # files that are not ONNX models
    (inside / "text.onnx").write_bytes(b"this is not a protobuf\n")
    cases["not_onnx"] = Case(inside / "text.onnx", 2, "not an ONNX model")
    (inside / "truncated.onnx").write_bytes(raw[: len(raw) // 2])
    cases["truncated"] = Case(inside / "truncated.onnx", 2, "not an ONNX model")
    (inside / "empty.onnx").write_bytes(b"")
    cases["empty"] = Case(inside / "empty.onnx", 2, "is empty")
    (inside / "folder.onnx").mkdir(exist_ok=True)
    cases["directory"] = Case(inside / "folder.onnx", 2, "is a directory")
    if not (inside / "pipe.onnx").exists():
        os.mkfifo(inside / "pipe.onnx")
    cases["fifo_model"] = Case(inside / "pipe.onnx", 2, "not a regular file")
    cases["missing"] = Case(inside / "missing.onnx", 2, "no such file")
    add("no_graph", onnx.ModelProto(ir_version=8), 2, "holds no graph")
    # external data of a plugin field (LReLU_TRT's negSlope as a FLOAT TENSOR)
    add("external_ok", _lrelu_model(external("negSlope", "w.bin")), 0, "")
    for name, location, needle in [
            ("external_dotdot", "../outside/secret.bin", "not a relative path"),
            ("external_absolute", str(outside / "secret.bin"), "not a relative path"),
            ("external_symlink_file", "link.bin", "leads out of the model's directory"),
            ("external_symlink_dir", "dirlink/secret.bin", "leads out of the model's directory"),
            ("external_symlink_inside", "inner.bin", "symlinks are refused"),
            ("external_dev_zero", "zero.bin", "symlink"),
            ("external_fifo", "fifo.bin", "not a regular file"),
            ("external_missing", "nope.bin", "cannot be read")]:
        add(name, _lrelu_model(external("negSlope", location)), 2, needle)
    add("external_past_end", _lrelu_model(external("negSlope", "w.bin", offset=14)), 2,
        "run past the end")
    add("external_huge", _lrelu_model(external("negSlope", "w.bin", dims=(2**40, 2**20))), 2,
        "PYPLUGINS_MAX_TENSOR_BYTES")
    # graphs TensorRT's parser could not import
    add("cycle", model([lrelu("b", "a", "p1"), helper.make_node("Relu", ["a"], ["b"], name="r")],
                       [vi("x")], [vi("b")]), 2, "cycle")
    add("opset_999", model([lrelu("x", "y", "p")], [vi("x")], [vi("y")], opset=999), 2,
        "opset 999")
    add("duplicate_outputs", model([lrelu("x", "y", "p")], [vi("x")], [vi("y"), vi("y")]), 2,
        "listed twice")
    add("two_writers", model([lrelu("x", "y", "p1"), lrelu("x", "y", "p2")], [vi("x")],
                             [vi("y")]), 2, "written by node 'p1' and by node 'p2'")
    add("undefined_input", model([lrelu("ghost", "y", "p")], [vi("x")], [vi("y")]), 2,
        "reads tensor 'ghost'")
    add("many_outputs", model([helper.make_node("LReLU_TRT", ["x"], [f"y{i}" for i in range(2000)],
                                                name="p", negSlope=0.1)],
                              [vi("x")], [vi("y0")]), 1, "the node has 2000 output(s)")
    add("huge_floats", _lrelu_model(helper.make_attribute("negSlope", [0.5] * 3_000_000)), 1,
        "3000000 values")
    add("huge_string", _lrelu_model(helper.make_attribute("plugin_version", "9" * 5_000_000)),
        1, "Plugin not found")
    add("string_input", model([lrelu("x", "y", "p")], [vi("x", TensorProto.STRING)], [vi("y")]),
        2, "STRING tensor")
    add("complex_input", model([lrelu("x", "y", "p")], [vi("x", TensorProto.COMPLEX64)],
                               [vi("y")]), 2, "COMPLEX64")
    unknown = helper.make_node("LReLU_TRT", ["x"], ["y"], name="p", domain="my.plugins")
    add("unknown_domain", model([unknown], [vi("x")], [vi("y")]), 2, "opset_import does not list")
    in_if = helper.make_graph([lrelu("x", "t", "inner")], "then", [], [vi("t")])
    other = helper.make_graph([helper.make_node("Relu", ["x"], ["e"])], "else", [], [vi("e")])
    add("plugin_in_if", model([helper.make_node("If", ["c"], ["y"], name="if", then_branch=in_if,
                                                else_branch=other)],
                              [vi("x"), vi("c", TensorProto.BOOL, ())], [vi("y")]), 2,
        "plugin node 'inner'")
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                              lrelu("v_in", "v_out", "looped")], "body",
                             [vi("i", TensorProto.INT64, ()), vi("c_in", TensorProto.BOOL, ()),
                              vi("v_in")], [vi("c_out", TensorProto.BOOL, ()), vi("v_out")])
    add("plugin_in_loop", model([helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)],
                                [vi("x"), vi("n", TensorProto.INT64, ())], [vi("y")]), 2,
        "plugin node 'looped'")
    add("deep_nesting", _nested(20), 2, "nested more than")
    add("sequence_input", model([lrelu("x", "y", "p")], [helper.make_tensor_sequence_value_info(
        "x", _F, [2])], [vi("y")]), 2, "not a tensor")
    return cases


def _nested(depth: int) -> Any:
    """``depth`` Ifs, each the then-branch of the one outside it."""
    inner = helper.make_graph([helper.make_node("Relu", ["x"], ["o0"])], "b0", [], [vi("o0")])
    for level in range(1, depth + 1):
        other = helper.make_graph([helper.make_node("Relu", ["x"], [f"e{level}"])], f"e{level}",
                                  [], [vi(f"e{level}")])
        node = helper.make_node("If", ["c"], [f"o{level}"], then_branch=inner, else_branch=other)
        inner = helper.make_graph([node], f"b{level}", [], [vi(f"o{level}")])
    return model(list(inner.node), [vi("x"), vi("c", TensorProto.BOOL, ())], [vi(f"o{depth}")])


# -- random mutations of a valid model -------------------------------------------------------------

_NAMES = ["x", "r", "p", "q", "a", "b", "y", "shape", "ghost", "", "c"]
_OPS = ["Relu", "LReLU_TRT", "CircPad", "Reshape", "If", "Loop", "Nope", "Constant", "Identity",
        "RMSNorm", ""]
_DOMAINS = ["", "ai.onnx", "my.plugins", "ai.onnx.ml"]
_LOCATIONS = ["w.bin", "../outside/secret.bin", "link.bin", "dirlink/secret.bin", "zero.bin",
              "fifo.bin", "/dev/zero", "", "inner.bin"]


def _attribute(rng: random.Random, outside: Path) -> Any:
    name = rng.choice(["negSlope", "pads", "plugin_version", "plugin_namespace", "junk"])
    kind = rng.randrange(7)
    if kind == 0:
        return helper.make_attribute(name, [rng.randint(-2**63, 2**63 - 1)
                                            for _ in range(rng.choice([0, 1, 4, 100_000]))]
                                     or [0])
    if kind == 1:
        return helper.make_attribute(name, rng.choice([float("nan"), float("inf"), -0.0, 1e-45]))
    if kind == 2:
        return helper.make_attribute(name, bytes(rng.randrange(256)
                                                 for _ in range(rng.randint(0, 40))))
    if kind == 3:
        location = rng.choice(_LOCATIONS + [str(outside / "secret.bin")])
        return external(name, location, dims=rng.choice([(1,), (4,), (2, 2), (2**31,), (0,)]),
                        elem=rng.choice([_F, TensorProto.INT32, TensorProto.INT8, 0, 99]),
                        **({"offset": rng.choice([0, 4, -1, 10**12])} if rng.random() < 0.5
                           else {}))
    if kind == 4:
        t = TensorProto(data_type=rng.choice([_F, TensorProto.INT32, 0, 99]),
                        dims=[rng.choice([-1, 0, 1, 3, 2**40]) for _ in range(rng.randint(0, 9))])
        t.raw_data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 16)))
        return helper.make_attribute(name, t)
    if kind == 5:
        return helper.make_attribute(name, helper.make_graph([], "empty", [], []))
    return helper.make_attribute(name, [rng.uniform(-1e39, 1e39) for _ in range(3)])


def _structure(rng: random.Random, proto: Any, outside: Path) -> None:
    graph = proto.graph
    nodes = graph.node
    kind = rng.randrange(14)
    node = nodes[rng.randrange(len(nodes))] if len(nodes) else None
    if node is None or kind == 0:
        graph.output.add().CopyFrom(vi(rng.choice(_NAMES) or "ghost"))
    elif kind == 1 and len(node.input):
        node.input[rng.randrange(len(node.input))] = rng.choice(_NAMES)
    elif kind == 2 and len(node.output):
        node.output[rng.randrange(len(node.output))] = rng.choice(_NAMES)
    elif kind == 3:
        del nodes[rng.randrange(len(nodes))]
    elif kind == 4:
        nodes.add().CopyFrom(node)
    elif kind == 5:
        node.op_type = rng.choice(_OPS)
    elif kind == 6:
        node.domain = rng.choice(_DOMAINS)
    elif kind == 7:
        proto.opset_import[0].version = rng.choice([0, 1, 7, 17, 23, 999, -5, 2**62])
    elif kind == 8:
        value = graph.input[rng.randrange(len(graph.input))]
        dims = value.type.tensor_type.shape.dim
        if len(dims) and rng.random() < 0.7:
            dim = dims[rng.randrange(len(dims))]
            if rng.random() < 0.8:
                dim.dim_value = rng.choice([-7, 0, 1, 2**40])
            else:
                dim.dim_param = rng.choice(["N", "", "x" * 1000])
        else:
            value.type.tensor_type.elem_type = rng.choice([0, 2, 5, 8, 10, 11, 14, 16, 25, 99])
    elif kind == 9:
        node.attribute.append(_attribute(rng, outside))
    elif kind == 10:
        ordered = list(nodes)
        rng.shuffle(ordered)
        del nodes[:]
        nodes.extend(ordered)
    elif kind == 11:
        graph.output.add().CopyFrom(graph.output[0]) if len(graph.output) else None
    elif kind == 12:
        inner = helper.make_graph([copy.deepcopy(node)], "wrapped", [], [vi(o) for o in node.output
                                                                       if o])
        wrapper = helper.make_node("If", ["c"], list(node.output), then_branch=inner,
                                   else_branch=inner)
        node.CopyFrom(wrapper)
    else:
        proto.ir_version = rng.choice([0, 1, 3, 8, 10, 99])


def mutate(rng: random.Random, folder: Path, outside: Path, index: int) -> Path:
    """A mutated :func:`good_model` written to ``folder``: half the time its bytes are flipped,
    cut, spliced or grown; otherwise one to three structural changes."""
    proto = good_model()
    if rng.random() < 0.35:
        data = bytearray(proto.SerializeToString())
        for _ in range(rng.randint(1, 4)):
            op = rng.randrange(4)
            at = rng.randrange(len(data)) if data else 0
            if op == 0 and data:
                data[at] ^= 1 << rng.randrange(8)
            elif op == 1:
                del data[at:]
            elif op == 2:
                data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            elif data:
                data[at:at + 4] = rng.choice([b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\0" * 4])
        path = folder / f"bytes_{index}.onnx"
        path.write_bytes(bytes(data))
        return path
    for _ in range(rng.randint(1, 3)):
        _structure(rng, proto, outside)
    path = folder / f"mutant_{index}.onnx"
    path.write_bytes(proto.SerializeToString())
    return path


# -- running and judging --------------------------------------------------------------------------

class OutsideReads:
    """An audit hook recording every ``open`` of a path inside ``outside`` while armed (hooks
    cannot be removed, so one per process, re-armed per test)."""

    _instance: "OutsideReads | None" = None

    def __init__(self) -> None:
        self.outside: "str | None" = None
        self.seen: List[str] = []
        sys.addaudithook(self._hook)

    @classmethod
    def get(cls) -> "OutsideReads":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def _hook(self, event: str, args: Tuple[Any, ...]) -> None:
        if self.outside is None or event != "open" or not args:
            return
        target = args[0]
        if isinstance(target, bytes):
            target = os.fsdecode(target)
        if isinstance(target, str) and os.path.realpath(target).startswith(self.outside):
            self.seen.append(target)

    @contextlib.contextmanager
    def armed(self, outside: Path) -> Any:
        self.outside, self.seen = os.path.realpath(outside) + os.sep, []
        try:
            yield self
        finally:
            self.outside = None


def in_thread(work: Callable[[], Any], limit: float) -> Tuple[str, Any]:
    """``("done", value)``, ``("raised", exception)`` or ``("hang", None)`` after ``limit`` s."""
    box: Dict[str, Any] = {}

    def body() -> None:
        try:
            box["value"] = work()
        except BaseException as err:  # noqa: BLE001 - judged
            box["error"] = err

    worker = threading.Thread(target=body, daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        return "hang", None
    return ("raised", box["error"]) if "error" in box else ("done", box["value"])


def run_check(path: Path, *extra: str) -> Tuple[int, str, str]:
    """``pyplugins check PATH --json --device cpu --timeout 10 EXTRA...`` in-process."""
    from pyplugins import cli

    out, err = io.StringIO(), io.StringIO()
    argv = ["check", str(path), "--json", "--device", "cpu", "--timeout", "10", *extra]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


def judge_check(path: Path, outside: Path, *extra: str) -> Tuple[str, str]:
    """``(verdict, detail)``: see the module docstring."""
    with OutsideReads.get().armed(outside) as reads:
        how, value = in_thread(lambda: run_check(path, *extra), CASE_LIMIT_S)
    if how == "hang":
        return "hang", f"{path.name}: no answer in {CASE_LIMIT_S} s"
    if reads.seen:
        return "leak", f"{path.name}: opened {reads.seen}"
    if how == "raised":
        return "crash", f"{path.name}: {type(value).__name__}: {value}"
    code, out, err = value
    if SECRET.decode() in out + err:
        return "leak", f"{path.name}: the outside secret was echoed"
    if code not in (0, 1, 2):
        return "crash", f"{path.name}: exit {code}"
    try:
        data = json.loads(out)
    except ValueError:
        return "crash", f"{path.name}: exit {code}, stdout is not one JSON object: {out[:300]!r}"
    if data.get("exit_status") != code:
        return "crash", f"{path.name}: exit {code} but JSON exit_status {data.get('exit_status')}"
    if "Traceback (most recent call last)" in out + err or "inside pyplugins" in out + err:
        return "crash", f"{path.name}: a traceback: {(err or out)[-600:]}"
    if code == 2 and (not data.get("error") or "\n" in data["error"]):
        return "crash", f"{path.name}: exit 2 without a one-line error: {data.get('error')!r}"
    return "clean", f"{path.name}: exit {code}: {(data.get('error') or '')[:200]}"


def feeds_for(proto: Any) -> Dict[str, np.ndarray]:
    """Random arrays for a model's declared inputs (unknown dims as 1, unknown types float32)."""
    rng = np.random.default_rng(0)
    feeds = {}
    for value in proto.graph.input:
        ttype = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") and 0 <= d.dim_value <= 64 else 1
                 for d in ttype.shape.dim]
        try:
            dtype = helper.tensor_dtype_to_np_dtype(ttype.elem_type)
        except (KeyError, ValueError, TypeError):
            dtype = np.dtype(np.float32)
        feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def judge_runner(path: Path, outside: Path) -> Tuple[str, str]:
    """The model runner on ``path``: clean when it runs or raises ModelFileError/ModelRunError
    (one line for a ModelFileError), else crash, hang or leak."""
    from pyplugins.models.model_file import ModelFileError, load_model
    from pyplugins.models.runner import ModelRunError, ModelRunner

    def work() -> Any:
        try:
            proto = load_model(path)
        except ModelFileError:
            proto = onnx.ModelProto()
        return ModelRunner(path, device="cpu").infer(feeds_for(proto))

    with OutsideReads.get().armed(outside) as reads:
        how, value = in_thread(work, CASE_LIMIT_S)
    if how == "hang":
        return "hang", f"{path.name}: no answer in {CASE_LIMIT_S} s"
    if reads.seen:
        return "leak", f"{path.name}: opened {reads.seen}"
    if how == "raised":
        if isinstance(value, ModelFileError) and "\n" not in str(value):
            return "clean", f"{path.name}: {value}"
        if isinstance(value, ModelRunError):
            return "clean", f"{path.name}: {str(value)[:300]}"
        return "crash", f"{path.name}: {type(value).__name__}: {str(value)[:500]}"
    return "clean", f"{path.name}: ran"
