"""Checks only QDP (``tensorrt.plugin``) plugins need: autotune combinations against the registered
types, and an ``impl`` that ignores TensorRT's stream.

- ``autotune_types``: ``autotune`` offers a (type, format) combination whose output types are not
  the ones the register function gives for its input types. In a strongly typed network such a
  combination can never be chosen; when every combination for the network's types is of this
  kind, the build fails (protocol §8.4, §8.5).
- ``impl_stream``: ``impl`` never reads its ``stream`` argument (or ``del``s it): whatever it
  launches goes to the current stream of CuPy or torch (the legacy default stream), not to the
  one TensorRT enqueues on. It then races with the engine's other layers and escapes CUDA-graph
  capture (§9, §10.4). Found without running it, from its bytecode; on a GPU the capture check
  (``capture_unsafe``) sees the work itself.

Example:
    >>> def impl(inp0, outputs, stream):
    ...     del stream
    >>> [v.check for v in impl_stream_violations(impl, "ns::p")]
    ['impl_stream']
"""

from __future__ import annotations

import dis
from types import CodeType
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

from pyplugins.checker.checks import Violation
from pyplugins.emulator.enums import DataType, TensorFormat

__all__ = ["autotune_violations", "impl_stream_violations", "label"]

#: One (type, format) per tensor, inputs then outputs.
Combo = Sequence[Tuple[DataType, TensorFormat]]


def label(combo: Combo, n_in: int) -> str:
    """``"[FLOAT LINEAR] -> [HALF LINEAR]"``: a combination, inputs then outputs.

    Example:
        >>> label([(DataType.HALF, TensorFormat.LINEAR)] * 2, 1)
        '[HALF LINEAR] -> [HALF LINEAR]'
    """
    def side(part: Combo) -> str:
        return "[" + ", ".join(f"{t.name} {f.name}" for t, f in part) + "]"
    return f"{side(combo[:n_in])} -> {side(combo[n_in:])}"


def autotune_violations(combos: Sequence[Combo], n_in: int,
                        registered: Callable[[List[DataType]], Optional[List[DataType]]],
                        plugin_id: str) -> List[Violation]:
    """``autotune_types`` for the combinations whose output types are not those the register
    function gives for their input types (``registered(input_types)``; None: it failed there).

    Example:
        >>> F, H, L = DataType.FLOAT, DataType.HALF, TensorFormat.LINEAR
        >>> like = lambda types: list(types)       # a register function returning inp.like()
        >>> [v.check for v in autotune_violations([[(F, L), (F, L)], [(H, L), (F, L)]], 1, like, "ns::p")]
        ['autotune_types']
    """
    bad = []
    for combo in combos:
        ins = [t for t, _ in combo[:n_in]]
        outs = [t for t, _ in combo[n_in:]]
        want = registered(ins)
        if want is not None and list(want) != outs:
            bad.append(f"{label(combo, n_in)} (for inputs {[t.name for t in ins]} the register "
                       f"function gives outputs {[t.name for t in want]})")
    if not bad:
        return []
    shown = "; ".join(bad[:4]) + (f"; and {len(bad) - 4} more" if len(bad) > 4 else "")
    msg = (f"autotune of QDP plugin '{plugin_id}' offers combination(s) whose output types are "
           f"not the registered ones: {shown}. A strongly typed network keeps the register "
           f"function's types, so TensorRT never picks these (and fails the build when no "
           f"combination fits). Offer the output types the register function gives, e.g. "
           f"'FP32|FP16, FP32|FP16' for an output like its input.")
    return [Violation("autotune_types", msg, "get_supported_format_combinations")]


def _codes(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _codes(const)


def _reads(code: CodeType, name: str) -> bool:
    for sub in _codes(code):
        for ins in dis.get_instructions(sub):
            if not ins.opname.startswith("LOAD"):
                continue
            names = ins.argval if isinstance(ins.argval, tuple) else (ins.argval,)
            if name in names:
                return True
    return False


def impl_stream_violations(impl: Any, plugin_id: str) -> List[Violation]:
    """``impl_stream`` when ``impl`` (a QDP ``impl`` function) never reads ``stream``."""
    func = getattr(impl, "__func__", impl)
    code = getattr(func, "__code__", None)
    if not isinstance(code, CodeType):
        return []
    params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    if "stream" not in params or _reads(code, "stream") or _reads(code, "locals"):
        return []
    where = f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}"
    msg = (f"impl of QDP plugin '{plugin_id}' ({func.__name__}, {where}) never reads its "
           f"`stream` argument: the kernels it launches go to the current stream of CuPy or "
           f"torch (the legacy default stream), not the one TensorRT enqueues the plugin on, so "
           f"they race with the engine's other layers and escape CUDA-graph capture. Launch "
           f"inside `with cupy.cuda.ExternalStream(stream):` or "
           f"`torch.cuda.stream(torch.cuda.ExternalStream(stream))`.")
    return [Violation("impl_stream", msg, "enqueue")]
