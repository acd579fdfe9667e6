"""Building the benchmark's C++ programs (``benchmarks/cpp/``) with ``nvcc``: one command line and
one way of saying why a build did not happen, for every program the sections run.

Example::

    exe, why = build(workdir / "threads_floor", [CPP / "threads_floor.cu"], "sm_90",
                     includes=[kernels_dir()], missing="nvcc not found: no C++ threads row")
    if exe is None:
        notes.append(why)
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional, Sequence, Tuple

__all__ = ["build"]


def build(output: Path, sources: Sequence[Path], arch: str, *, includes: Sequence[Path] = (),
          options: Sequence[str] = (), missing: str) -> Tuple[Optional[Path], Optional[str]]:
    """``nvcc -O2 -std=c++17 -arch=ARCH -I... OPTIONS SOURCES -o OUTPUT``: ``(output, None)``, or
    ``(None, why not)``: ``missing`` when there is no nvcc, else nvcc's command and the end of
    its error output (``options`` may hold ``-c`` for an object file, ``-D``s)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None, missing
    cmd = [nvcc, "-O2", "-std=c++17", f"-arch={arch}", *[f"-I{i}" for i in includes],
           *options, *[str(s) for s in sources], "-o", str(output)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        return None, f"nvcc failed ({' '.join(cmd)}): {done.stderr.strip()[-2000:]}"
    return output, None
