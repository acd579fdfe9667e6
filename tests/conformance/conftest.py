"""Build ``pp_conformance.cpp`` (pybind11, TensorRT's binding patterns) once per test session.

The build goes to a temporary directory named after a hash of the source, the compiler, pybind11
and Python, so later sessions on the same machine reuse it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parent / "pp_conformance.cpp"


def _build(out_dir: Path):
    """The compiled module, or a reason why it cannot be built here."""
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        return None, "no C++ compiler (c++, g++ or clang++) on PATH"
    try:
        import pybind11
    except ImportError:
        return None, "pybind11 is not installed (pip install pybind11)"
    key = hashlib.sha256(SOURCE.read_bytes() + f"{compiler}|{pybind11.__version__}|"
                         f"{sys.version}".encode()).hexdigest()[:16]
    target = out_dir / key / ("pp_conformance" + sysconfig.get_config_var("EXT_SUFFIX"))
    if target.is_file():
        return _load(target), None
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"partial-{os.getpid()}-{target.name}")
    cmd = [compiler, "-O0", "-g0", "-shared", "-fPIC", "-std=c++17", "-fvisibility=hidden",
           f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}",
           str(SOURCE), "-o", str(partial)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if proc.returncode != 0:
        return None, f"building the pybind11 module failed: {proc.stderr[-1500:]}"
    os.replace(partial, target)
    return _load(target), None


def _load(target: Path):
    spec = importlib.util.spec_from_file_location("pp_conformance", target)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["pp_conformance"] = module
    return module


@pytest.fixture(scope="session")
def compiled():
    """TensorRT's binding patterns compiled with pybind11 (skips with the reason when it cannot)."""
    module, reason = _build(Path(tempfile.gettempdir()) / "pyplugins-conformance")
    if module is None:
        pytest.skip(reason)
    return module
