"""Every kernels_cu/*.cu file compiles, for sm_80 and sm_90, every instantiation it lists.

Runs in CPU CI (nvcc, no GPU). For each file a wrapper ``#include``s it and takes the address of
each ``// @instantiate`` expression, which makes nvcc instantiate and compile those kernels; one
nvcc call per file builds both architectures, with the ``-D`` options every shipped kernel of
that file is compiled with (the constants it shares with its op), and the files compile in
parallel. A file listing
no instantiation fails: it would compile nothing. Without ``nvcc`` on PATH the compile tests fail
under CI (``CI`` set to true, as CI services do), where the README promises this check, and skip
elsewhere, saying why.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import pytest

from pyplugins.runtime.kernels import Kernel, instantiations, kernel_sources, kernels_dir

SOURCES = kernel_sources()
ARCHS = ("80", "90")
NVCC = shutil.which("nvcc")

# Headers NVRTC does not have (it ships no C or C++ standard library): a kernels_cu file that
# includes one compiles under nvcc here and then fails at run time under NVRTC.
_STD_HEADER = re.compile(
    r"^\s*#\s*include\s*<(?P<name>(?:c(?:stdint|stddef|stdio|stdlib|string|math|assert|limits|"
    r"float|climits)|std\w*\.h|math\.h|string\.h|assert\.h|limits\.h|float\.h|type_traits|"
    r"limits|utility|algorithm|array|tuple|vector|memory|cmath|iostream|numeric|"
    r"initializer_list|functional))>", re.MULTILINE)


def shipped_kernels() -> list[Kernel]:
    """Every Kernel the shipped ops hold: their plugins' attributes and their variant tables."""
    import pyplugins.ops as ops

    found: list[Kernel] = []
    for info in pkgutil.iter_modules(ops.__path__):
        module = importlib.import_module(f"{ops.__name__}.{info.name}")
        for value in vars(module).values():
            rows = value if isinstance(value, tuple) else ()
            found += [r.kernel for r in rows if isinstance(getattr(r, "kernel", None), Kernel)]
            if isinstance(value, type):
                found += [k for k in vars(value).values() if isinstance(k, Kernel)]
    return found


def shared_options(source: str) -> tuple[str, ...]:
    """The ``-D`` options every shipped kernel of ``source`` is compiled with (in order)."""
    kernels = [k for k in shipped_kernels() if Path(k.source).name == source]
    if not kernels:
        return ()
    return tuple(o for o in kernels[0].options
                 if o.startswith("-D") and all(o in k.options for k in kernels))


def _wrapper(source: Path, exprs: list[str]) -> str:
    taken = ",\n    ".join(f"reinterpret_cast<const void*>(&{e})" for e in exprs)
    return (f'#include "{source.as_posix()}"\n'
            f"const void* pyplugins_instantiations[] = {{\n    {taken}\n}};\n")


def _compile(source: Path, exprs: tuple[str, ...], workdir: Path) -> subprocess.CompletedProcess:
    wrapper = workdir / f"{source.stem}_instantiations.cu"
    wrapper.write_text(_wrapper(source, list(exprs)))
    gencode = [arg for arch in ARCHS
               for arg in ("-gencode", f"arch=compute_{arch},code=sm_{arch}")]
    cmd = [NVCC, "-std=c++17", "-c", *gencode, f"-I{kernels_dir()}",
           *shared_options(source.name), str(wrapper), "-o", str(workdir / f"{source.stem}.o")]
    return subprocess.run(cmd, capture_output=True, text=True)


@lru_cache(maxsize=1)
def _compile_all(workdir: str) -> dict[str, subprocess.CompletedProcess]:
    todo = {src.name: (src, tuple(instantiations(src))) for src in SOURCES}
    todo = {name: job for name, job in todo.items() if job[1]}
    workers = max(1, min(len(todo), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {name: pool.submit(_compile, src, exprs, Path(workdir))
                   for name, (src, exprs) in todo.items()}
        return {name: future.result() for name, future in futures.items()}


def in_ci(environ=os.environ) -> bool:
    """True where ``CI`` is set to a true value (``true``, ``1``, ``yes``), as CI services do."""
    return environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def missing_nvcc(environ=os.environ) -> None:
    """Fail (in CI) or skip (elsewhere): ``nvcc`` is not on PATH, so nothing can be compiled."""
    if in_ci(environ):
        pytest.fail("nvcc is not on PATH, and CI must compile every kernels_cu file (README: "
                    "'What is verified where'); install the CUDA toolkit in the CI image.")
    pytest.skip("nvcc is not on PATH (outside CI the .cu compile check is skipped; CI=true "
                "makes this a failure)")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    if NVCC is None:
        missing_nvcc()
    return _compile_all(str(tmp_path_factory.mktemp("nvcc")))


@pytest.mark.parametrize("value, ci", [("true", True), ("1", True), ("TRUE", True), ("", False),
                                       ("false", False), (None, False)])
def test_missing_nvcc_fails_in_ci_and_skips_elsewhere(value, ci):
    environ = {} if value is None else {"CI": value}
    assert in_ci(environ) is ci
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome, match="nvcc is not on PATH"):
        missing_nvcc(environ)


def test_sources_are_discovered():
    names = [p.name for p in SOURCES]
    assert "circ_pad.cu" in names and "leaky_relu.cu" in names


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_source_lists_instantiations(source):
    assert instantiations(source), (
        f"{source.name} lists no '// @instantiate EXPR' line, so nothing of it would be "
        "compiled or tested; list each supported instantiation in its header comment.")


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_source_avoids_headers_nvrtc_lacks(source):
    found = [m.group("name") for m in _STD_HEADER.finditer(source.read_text())]
    assert not found, (
        f"{source.name} includes {found}, which NVRTC does not provide; use the helpers in "
        "common.cuh and builtin types instead.")


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_source_compiles_for_sm80_and_sm90(compiled, source):
    exprs = instantiations(source)
    if not exprs:
        pytest.fail(f"{source.name} lists no '// @instantiate' line: nothing to compile.")
    result = compiled[source.name]
    assert result.returncode == 0, (
        f"nvcc failed on {source.name} (instantiations {exprs}, sm_{'/sm_'.join(ARCHS)}):\n"
        f"{result.stderr}{result.stdout}")


def test_circ_pad_kernels_share_the_defines_of_their_table():
    from pyplugins.ops.circ_pad import DEFINES
    from pyplugins.runtime.tactics import define_options

    assert shared_options("circ_pad.cu") == define_options(DEFINES)
    assert shared_options("leaky_relu.cu") == ()


def test_a_missing_shared_define_stops_the_compile_with_its_name():
    """circ_pad.cu has no default for a constant its host shares: without the -D it says so."""
    if NVCC is None:
        missing_nvcc()
    options = shared_options("circ_pad.cu")
    for dropped in options:
        name = dropped[2:].split("=")[0]
        kept = [o for o in options if o != dropped]
        done = subprocess.run([NVCC, "-std=c++17", "-E", f"-I{kernels_dir()}", *kept, "-o",
                               os.devnull, str(kernels_dir() / "circ_pad.cu")],
                              capture_output=True, text=True)
        assert done.returncode != 0 and f"needs -D{name}" in done.stderr, name
