"""A tensorrt.plugin (QDP) plugin checked as TensorRT would drive it: ``demos/qdp_scale.py``
(``y = scale * x``), built JIT and AOT, run, and compared with NumPy.

The module is written for real TensorRT (``import tensorrt.plugin as trtp``) and imported with
pyplugins' emulator standing in. The check builds it both ways: JIT (``impl`` runs in Python at
every inference) and AOT (``aot_impl`` gives a PTX kernel; the engine's artifact then runs in a
new process that never imports the plugin, which proves it needs no Python). Without a GPU
everything up to the launches runs and the AOT artifact is still evaluated in that process; with
one, both run and their outputs are compared with each other and with NumPy.

Run: ``python demos/qdp_demo.py`` (``--device cpu`` never touches the GPU, ``--trace`` prints
every callback, ``--dtype float16``, ``--qdp jit|aot`` for one implementation). The same check
from the command line: ``pyplugins check demos/qdp_scale.py --input 1-4-8x1000:float32 --attr
scale=2.5 --qdp both``. Exits non-zero when the plugin misbehaves or a result is wrong.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script from a checkout
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from demos import _common  # selects the emulator before pyplugins is imported

MODULE = Path(__file__).resolve().parent / "qdp_scale.py"
SCALE = 2.5
PROFILE = ((1, 1000), (4, 1000), (8, 1000))  # min, opt, max of a dynamic first dimension


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cpu"), default="auto",
                        help="cpu: never touch the GPU (the run stops before the launches)")
    parser.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    parser.add_argument("--trace", action="store_true", help="print the callback timeline")
    parser.add_argument("--qdp", choices=("jit", "aot", "both"), default="both",
                        help="the network flag: PREFER_JIT/PREFER_AOT_PYTHON_PLUGINS, or both")
    args = parser.parse_args(argv)

    from pyplugins.checker import lifecycle
    from pyplugins.checker._fresh import import_module
    from pyplugins.emulator.specs import TensorSpec

    import_module(str(MODULE))  # registers demo::scale, as `import qdp_scale` would
    x = np.random.default_rng(0).standard_normal(PROFILE[1]).astype(args.dtype)
    spec = TensorSpec((-1, 1000), x.dtype, min=PROFILE[0], opt=PROFILE[1], max=PROFILE[2],
                      data=x)
    print(f"QDP plugin demo::scale from {MODULE.name}: input {spec.shape} {x.dtype} "
          f"(min {PROFILE[0]}, opt {PROFILE[1]}, max {PROFILE[2]}), scale={SCALE}, "
          f"--qdp {args.qdp}")
    report = lifecycle.run(("scale", "1", "demo"), [spec], {"scale": SCALE}, device=args.device,
                           trace=args.trace, qdp=args.qdp)
    if report.trace is not None:
        print(report.trace.format_timeline())
    print(report.format())
    if not report.ok:
        print("FAILED: the lifecycle reported problems (above).")
        return 1
    if not report.enqueue_ran:
        print(f"The kernels were not run ({report.skipped}). The whole QDP lifecycle ran: "
              "register on fake and symbolic shapes, autotune's combinations, the JIT fields and "
              "the AOT kernel with its launch parameters, and the engine's AOT artifact was "
              "evaluated in a process without the plugin; there is no numeric result to check.")
        return 0
    want = (x.astype(np.float32) * SCALE).astype(x.dtype)
    if not _common.matches("y", report.outputs[0], want, x.dtype):
        return 1
    ran = [r["implementation"].upper() for r in report.qdp["runs"]]
    print(f"OK: {' and '.join(ran)} ran"
          + (" and agree" if report.qdp["compared"] else "") + "; y matches NumPy.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
