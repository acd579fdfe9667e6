"""What a result was measured on: device, driver, CUDA runtime and library versions."""

from __future__ import annotations

import datetime
import hashlib
import importlib
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, Optional

REPO = Path(__file__).resolve().parent.parent
#: What the source digest covers: the code a measurement depends on.
DIGEST_PARTS = ("pyplugins", "kernels_cu", "benchmarks")
_DIGEST_SUFFIXES = (".py", ".cu", ".cuh", ".h", ".cpp", ".sh")


def _version(module: str) -> Optional[str]:
    try:
        return str(importlib.import_module(module).__version__)
    except Exception:  # noqa: BLE001 - absent or broken: the record says so instead of failing the run
        return None


def _cuda_version(code: int) -> str:
    """CUDA's integer version (13000) as text ("13.0")."""
    return f"{code // 1000}.{(code % 1000) // 10}"


def _run(cmd: list) -> Optional[str]:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def nvcc_version() -> Optional[str]:
    """``nvcc --version``'s release number, or None without nvcc."""
    text = _run(["nvcc", "--version"])
    match = re.search(r"release ([\d.]+)", text or "")
    return match.group(1) if match else None


def source_digest(root: Path = REPO) -> str:
    """sha256 (first 16 hex digits) over the paths and bytes of the measured code: the Python,
    CUDA and shell files under ``DIGEST_PARTS``. The same tree gives the same digest with or
    without git, so a run on a machine without ``.git`` can be matched to a commit."""
    h = hashlib.sha256()
    for part in DIGEST_PARTS:
        for path in sorted((root / part).rglob("*")):
            if path.is_file() and path.suffix in _DIGEST_SUFFIXES and "__pycache__" not in \
                    path.parts:
                h.update(path.relative_to(root).as_posix().encode() + b"\0")
                h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def git_state(given: Optional[str] = None) -> Dict[str, Any]:
    """``{"git_commit", "git_dirty", "commit_source"}``: from ``given`` ("HASH" or "HASH+dirty",
    e.g. ``--commit``, or ``PYPLUGINS_BENCH_COMMIT``), else from ``git`` in the repository,
    else unknown (None)."""
    given = given or os.environ.get("PYPLUGINS_BENCH_COMMIT") or None
    if given:
        commit, _, flag = given.partition("+")
        return {"git_commit": commit, "git_dirty": flag == "dirty", "commit_source": "given"}
    head = _run(["git", "-C", str(REPO), "rev-parse", "HEAD"])
    if not head:
        return {"git_commit": None, "git_dirty": None, "commit_source": "no git here"}
    status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain",
                             "--untracked-files=no"], capture_output=True, text=True,
                            check=False).stdout
    return {"git_commit": head, "git_dirty": bool(status.strip()), "commit_source": "git"}


def slug(name: str) -> str:
    """A file-name-safe device slug: "NVIDIA H200" -> "nvidia-h200"."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


def today() -> str:
    return datetime.date.today().isoformat()


def collect(gpu: bool, commit: Optional[str] = None) -> Dict[str, Any]:
    """Versions, commit and source digest always; device, driver and CUDA details when ``gpu``
    (needs CuPy and a GPU)."""
    env: Dict[str, Any] = {
        **git_state(commit),
        "source_digest": source_digest(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": _version("numpy"),
        "cupy": _version("cupy"),
        "torch": _version("torch"),
        "cuda_bindings": _version("cuda.bindings"),
        "matplotlib": _version("matplotlib"),
        "pyplugins": _version("pyplugins"),
        "nvcc": nvcc_version(),
        "device": None,
    }
    if not gpu:
        return env
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    env.update({
        "device": name.decode() if isinstance(name, bytes) else str(name),
        "device_count": cp.cuda.runtime.getDeviceCount(),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "sm_count": int(props["multiProcessorCount"]),
        "l2_bytes": int(props["l2CacheSize"]),
        "memory_bytes": int(props["totalGlobalMem"]),
        "cuda_driver_api": _cuda_version(cp.cuda.runtime.driverGetVersion()),
        "cuda_runtime": _cuda_version(cp.cuda.runtime.runtimeGetVersion()),
        "driver": _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
        "clocks": _run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,clocks.max.sm,"
                        "power.limit", "--format=csv,noheader"]),
    })
    if env["driver"]:
        env["driver"] = env["driver"].splitlines()[0]
    return env
