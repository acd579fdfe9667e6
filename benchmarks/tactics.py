"""What IPluginV3 tactics buy: CircPad's ``staged`` and ``strips`` tactics timed per shape.

As ``IPluginV3``, TensorRT's builder times every tactic a plugin offers and keeps the fastest;
as ``IPluginV2DynamicExt`` the plugin runs its default (``staged``: the kernel stages rows that
fit its shared-memory budget). This measures, for representative shapes, the device time of
each tactic's ``enqueue`` through the V3 adapter exactly as TensorRT drives it (``set_tactic``,
``on_shape_change`` with concrete dims, ``enqueue`` on a foreign stream), replayed from a CUDA
graph so host cost stays out, after checking each tactic's output equals ``np.pad(mode="wrap")``
bit for bit. Per shape it reports the median time per tactic, the one a timing builder keeps,
and ``gain`` = default time / best time (1.0: the default was already the best; the V2 path
loses ``gain - 1`` there).

``python -m benchmarks.tactics [--shapes tiny] [--replays N]``: JSON on stdout. Without a GPU it
prints ``{"skipped": why}`` and exits 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from benchmarks.timing import capture, replay_seconds, stats

#: (label, input shape, pads, dtype): rows that stage, short rows, and rows too long to stage.
SHAPES: Dict[str, List[Tuple[str, Tuple[int, ...], List[int], str]]] = {
    "default": [
        ("nchw-56x56", (64, 64, 56, 56), [1, 1, 1, 1], "float32"),
        ("nchw-56x56", (64, 64, 56, 56), [1, 1, 1, 1], "float16"),
        ("rows-3", (4096, 4096, 3), [1, 1], "float32"),
        ("rows-1000", (256, 1024, 1000), [2, 2], "float16"),
        ("rows-16384", (8, 64, 16384), [3, 3], "float32"),
    ],
    "tiny": [("tiny", (2, 3, 8, 8), [1, 1, 2, 2], "float32")],
}


def _adapter(pads: Sequence[int]) -> Any:
    from pyplugins.runtime.creator import make_creator
    from pyplugins.ops.circ_pad import CircPad
    import pyplugins.trt as trt

    creator = make_creator(CircPad, "v3")
    fc = trt.PluginFieldCollection([trt.PluginField("pads", np.array(pads, np.int32),
                                                    trt.PluginFieldType.INT32)])
    return creator.create_plugin("tactics", fc, trt.TensorRTPhase.BUILD)


def _desc(shape: Sequence[int], dtype: str) -> Any:
    import pyplugins.trt as trt
    from pyplugins import dtypes

    desc = trt.PluginTensorDesc()
    desc.dims = trt.Dims(list(shape))
    desc.type = getattr(trt.DataType, dtypes.trt_name_from_numpy(dtype))
    desc.format = trt.TensorFormat.LINEAR
    return desc


def measure(cp: Any, shape: Tuple[int, ...], pads: List[int], dtype: str,
            replays: int) -> Dict[str, Any]:
    """Median ms per tactic (outputs checked against ``np.pad``) and the gain of choosing."""
    from pyplugins.ops.circ_pad import CircPad, pad_widths
    from pyplugins.runtime.tactics import declared

    plugin = _adapter(pads)
    tactics = {0: "default", **declared(CircPad)}
    x = cp.asarray(np.random.default_rng(0).standard_normal(shape).astype(dtype))
    expected = np.pad(cp.asnumpy(x), pad_widths(len(shape), pads), mode="wrap")
    y = cp.empty(expected.shape, dtype)
    in_desc, out_desc = [_desc(shape, dtype)], [_desc(expected.shape, dtype)]
    stream = cp.cuda.Stream(non_blocking=True)
    row: Dict[str, Any] = {"shape": list(shape), "pads": pads, "dtype": dtype,
                           "bytes_moved": int(x.nbytes + y.nbytes), "ms": {}}
    for tid, name in tactics.items():
        runtime = plugin.attach_to_context(None)  # a fresh context's plugin, as TensorRT has
        runtime.set_tactic(tid)
        runtime.on_shape_change(in_desc, out_desc)
        y.fill(0)

        def call(rt: Any = runtime) -> None:
            rt.enqueue(in_desc, out_desc, [x.data.ptr], [y.data.ptr], 0, stream.ptr)

        call()
        stream.synchronize()
        if not np.array_equal(cp.asnumpy(y), expected):
            msg = f"CircPad tactic {name!r} gave a wrong result for {shape} {dtype}"
            raise AssertionError(msg)
        row["ms"][name] = stats(replay_seconds(capture(stream, call), stream, reps=replays), 1e3)
    medians = {n: s["median"] for n, s in row["ms"].items() if n != "default"}
    best = min(medians, key=medians.get)
    row["chosen"] = best
    row["gain"] = row["ms"]["default"]["median"] / medians[best]
    return row


def _cupy() -> Tuple[Optional[Any], Optional[str]]:
    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()
        return cp, None
    except Exception as err:  # noqa: BLE001 - no CuPy, no driver, no device
        return None, f"no usable CUDA GPU ({type(err).__name__}: {err})"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Print the JSON report (or ``{"skipped": why}`` without a GPU); 0 unless a tactic is wrong."""
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--shapes", choices=tuple(SHAPES), default="default")
    args.add_argument("--replays", type=int, default=20)
    opts = args.parse_args(argv)
    cp, why = _cupy()
    if cp is None:
        print(json.dumps({"skipped": why}))
        return 0
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice())
    rows = [dict(measure(cp, shape, pads, dtype, opts.replays), label=label)
            for label, shape, pads, dtype in SHAPES[opts.shapes]]
    print(json.dumps({"benchmark": "tactics", "op": "CircPad",
                      "device": props["name"].decode(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
