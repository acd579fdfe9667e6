"""Compile a kernel program to PTX without a GPU (NVRTC, else ``nvcc --ptx``), results cached.

:func:`compile_program` takes the :class:`~pyplugins.runtime.kernels.KernelProgram` the GPU path hands
CuPy (same code, options and name expressions), adds what CuPy adds itself
(:data:`~pyplugins.runtime.kernels.CUPY_NVRTC_OPTIONS`, ``-arch=compute_80``) and tells, for each name
expression, whether it compiles and what the compiler said. No device is touched: NVRTC and nvcc
both run on a CPU-only machine.

- **Compiler**: ``knobs.kernel_compiler`` (``PYPLUGINS_KERNEL_COMPILER``): ``auto`` uses NVRTC
  through ``cuda.bindings.nvrtc`` when its library loads, else ``nvcc`` on PATH (or in
  ``CUDA_PATH``/``CUDA_HOME``/``/usr/local/cuda``). nvcc has no NVRTC name expressions: the
  program gets a trailer taking each expression's address, which instantiates it. NVRTC gets the
  toolkit's include directory when one is found, so that ``<cuda_fp16.h>`` resolves [infer: the
  GPU path's NVRTC finds it on its own; the offline one may come without the toolkit headers].
- **Speed**: the PTX is made without device optimization (``-G``): the check wants the
  compiler's verdict (missing names, instantiation and syntax errors), and the optimizer is about
  three quarters of the time. One compile covers every expression of a program; only when it
  fails is each expression compiled alone, to say which ones fail (after one compile with no
  expression tells whether the source itself is broken).
- **AOT**: :func:`compile_ptx` compiles one expression *with* optimization and returns the PTX
  text and the kernel's lowered (mangled) entry name: what a QDP ``aot_impl`` hands TensorRT
  (:mod:`pyplugins.runtime.qdp_aot`). With nvcc, which has no lowered names, the entry is the one
  ``.entry`` of the PTX whose mangled name holds the kernel's name (the trailer instantiates only
  that expression).
- **Cache**: verdicts are kept in memory and on disk under ``knobs.cache_dir / "ptx"``
  (``PYPLUGINS_CACHE_DIR``), keyed by the SHA-256 of compiler and version, arch, code (which
  carries the digest of every included header), options and expressions. A compiler that could
  not run (missing, timed out) is never cached.

Example::

    from pyplugins.runtime.kernels import Kernel
    from pyplugins.runtime.kernel_ptx import compile_program
    verdicts = compile_program(Kernel("leaky_relu.cu", "leaky_relu<{T}>").program("float"))
    verdicts["leaky_relu<float>"].ok          # True
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Tuple

from pyplugins._config import knobs
from pyplugins.errors import KernelCompileError, MissingDependencyError
from pyplugins.runtime.kernels import CUPY_NVRTC_OPTIONS, KernelProgram
from pyplugins.runtime.ptx_text import entries

__all__ = ["ARCH", "Ptx", "Verdict", "clear_cache", "compile_program", "compile_ptx",
           "compiler_name", "toolkit_program"]

#: The virtual architecture the check compiles for: the oldest the project supports (sm_80).
ARCH = "80"
#: The seconds one nvcc call may take before the check gives up on it.
NVCC_TIMEOUT_S = 300.0
#: NVRTC options nvcc does not know (it has the opposite defaults or no such feature).
_NVRTC_ONLY = ("--device-as-default-execution-space", "-default-device", "--pch", "-pch")
_TRAILER_FILE = "pyplugins-name-expressions"

_lock = threading.Lock()
_memo: Dict[str, Dict[str, "Verdict"]] = {}
_ptx_memo: Dict[str, "Ptx"] = {}

#: (ok, log) of one compile of code with the given options and name expressions.
Runner = Callable[[str, str, Tuple[str, ...], Tuple[str, ...]], Tuple[bool, str]]
#: (ok, log, lowered entry name, PTX text) of one compile of one name expression.
PtxRunner = Callable[[str, str, Tuple[str, ...], str], Tuple[bool, str, str, str]]


@dataclass(frozen=True)
class Verdict:
    """What the compiler said about one name expression.

    Attributes:
        expression: the name expression (``"circ_pad<float>"``).
        ok: it compiled.
        log: the compiler's messages (errors name the ``.cu`` file and line), or "".
        compiler: which compiler said so (``"nvrtc 13.0"``, ``"nvcc 13.0.88"``).
    """

    expression: str
    ok: bool
    log: str
    compiler: str


@dataclass(frozen=True)
class Ptx:
    """The optimized PTX of one kernel expression (:func:`compile_ptx`).

    Attributes:
        expression: the name expression (``"leaky_relu_aot<float>"``).
        name: the kernel's entry name in the PTX (lowered: ``"_Z14leaky_relu_aot..."``).
        text: the PTX module.
        compiler: which compiler made it.
        arch: the virtual architecture it targets (``"80"``: ``compute_80``).
    """

    expression: str
    name: str
    text: str
    compiler: str
    arch: str


@dataclass(frozen=True)
class _Compiler:
    name: str
    run: Runner
    include: Tuple[str, ...] = ()
    ptx: Optional[PtxRunner] = None


def compiler_name() -> Optional[str]:
    """The compiler :func:`compile_program` uses (``"nvrtc 13.0"``, ``"nvcc 13.0.88"``), or
    None when ``knobs.kernel_compiler`` is ``off``.

    Raises:
        MissingDependencyError: the compiler asked for (or, for ``auto``, either) is missing.
    """
    chosen = _compiler(knobs.kernel_compiler)
    return None if chosen is None else chosen.name


def compile_program(program: KernelProgram, *, arch: str = ARCH) -> Dict[str, Verdict]:
    """Compile ``program`` to PTX for ``compute_<arch>`` and say, per name expression, whether
    it compiles; cached in memory and on disk.

    Returns:
        ``{expression: Verdict}``, one per ``program.expressions``; ``{}`` when
        ``knobs.kernel_compiler`` is ``off``.

    Raises:
        MissingDependencyError: no compiler can run (neither NVRTC's library nor nvcc).
        KernelCompileError: nvcc ran past :data:`NVCC_TIMEOUT_S` (nothing is cached).
    """
    chosen = _compiler(knobs.kernel_compiler)
    if chosen is None:
        return {}
    with _lock:
        return _verdicts(chosen, program, arch)


def compile_ptx(program: KernelProgram, *, arch: str = ARCH) -> Ptx:
    """The optimized PTX of ``program``'s single name expression for ``compute_<arch>``, with
    the options the GPU path uses (what an ahead-of-time plugin gives TensorRT); cached in
    memory and on disk.

    Raises:
        ValueError: the program has not exactly one expression.
        MissingDependencyError: no compiler can run, or ``knobs.kernel_compiler`` is ``off``.
        KernelCompileError: the code does not compile (the log names the file and line), or
            nvcc's PTX has no single entry of that kernel.
    """
    if len(program.expressions) != 1:
        msg = f"compile_ptx() compiles one name expression (got {program.expressions!r})"
        raise ValueError(msg)
    chosen = _compiler(knobs.kernel_compiler)
    if chosen is None:
        msg = ("PYPLUGINS_KERNEL_COMPILER=off, but an ahead-of-time kernel needs its PTX; set "
               "it to auto, nvrtc or nvcc.")
        raise MissingDependencyError(msg)
    expr = program.expressions[0]
    options = (*program.options, *chosen.include, *CUPY_NVRTC_OPTIONS, f"-arch=compute_{arch}")
    key = hashlib.sha256(json.dumps(["aot-ptx", chosen.name, arch, program.code, options,
                                     expr]).encode()).hexdigest()
    with _lock:
        hit = _ptx_memo.get(key) or _load_ptx(key, expr, chosen.name, arch)
        if hit is None:
            ok, log, name, text = chosen.ptx(program.source.name, program.code, options, expr)
            if not ok:
                msg = (f"{program.source.name}: kernel {expr} does not compile to PTX with "
                       f"{chosen.name} (options {' '.join(options)}):\n{log}")
                raise KernelCompileError(msg, source=program.source.name, kernel=expr,
                                         options=options, log=log)
            hit = Ptx(expr, name, text, chosen.name, arch)
            _store(key, {"name": name, "text": text})
        _ptx_memo[key] = hit
        return hit


def clear_cache() -> None:
    """Forget the verdicts and PTX kept in memory (the disk cache stays; :func:`compile_program`
    and :func:`compile_ptx` read it again)."""
    with _lock:
        _memo.clear()
        _ptx_memo.clear()


def _verdicts(chosen: _Compiler, program: KernelProgram, arch: str) -> Dict[str, Verdict]:
    options = (*program.options, *chosen.include, *CUPY_NVRTC_OPTIONS, f"-arch=compute_{arch}",
               "-G")
    key = hashlib.sha256(json.dumps([chosen.name, arch, program.code, options,
                                     program.expressions]).encode()).hexdigest()
    hit = _memo.get(key) or _load(key, chosen.name)
    if hit is not None:
        _memo[key] = hit
        return hit
    ok, log = chosen.run(program.source.name, program.code, options, program.expressions)
    if ok or not program.expressions:
        out = {e: Verdict(e, ok, log, chosen.name) for e in program.expressions}
    elif len(program.expressions) == 1:
        out = {program.expressions[0]: Verdict(program.expressions[0], False, log, chosen.name)}
    else:
        base_ok, base_log = chosen.run(program.source.name, program.code, options, ())
        if not base_ok:  # the source itself does not compile: every expression fails so
            out = {e: Verdict(e, False, base_log, chosen.name) for e in program.expressions}
        else:
            out = {}
            for expr in program.expressions:
                out.update(_verdicts(chosen, replace(program, expressions=(expr,)), arch))
    _memo[key] = out
    _store(key, {e: [v.ok, v.log] for e, v in out.items()})
    return out


# -- the compilers ---------------------------------------------------------------------------------

def _compiler(choice: str) -> Optional[_Compiler]:
    if choice == "off":
        return None
    if choice in ("auto", "nvrtc"):
        found = _nvrtc()
        if found is not None or choice == "nvrtc":
            if found is None:
                msg = ("PYPLUGINS_KERNEL_COMPILER=nvrtc, but NVRTC's library does not load "
                       "(cuda.bindings.nvrtc); install it (pip install nvidia-cuda-nvrtc) or "
                       "use nvcc (PYPLUGINS_KERNEL_COMPILER=nvcc or auto).")
                raise MissingDependencyError(msg)
            return found
    found = _nvcc()
    if found is None:
        msg = ("the kernel check needs a CUDA compiler and finds none: NVRTC's library does not "
               "load (pip install nvidia-cuda-nvrtc) and nvcc is neither on PATH nor in "
               "CUDA_PATH/CUDA_HOME or /usr/local/cuda; install one, or set "
               "PYPLUGINS_KERNEL_COMPILER=off to skip the check.")
        raise MissingDependencyError(msg)
    return found


@functools.lru_cache(maxsize=None)
def toolkit_program(name: str) -> Optional[str]:
    """The path of a CUDA toolkit program (``"nvcc"``, ``"ptxas"``): on PATH, else in
    ``CUDA_PATH``/``CUDA_HOME``/``/usr/local/cuda``'s ``bin``; None when there is none.

    Example::

        toolkit_program("ptxas")    # '/usr/local/cuda/bin/ptxas'
    """
    on_path = shutil.which(name)
    if on_path:
        return on_path
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / name).is_file():
            return str(Path(root) / "bin" / name)
    return None


def _nvcc_path() -> Optional[str]:
    return toolkit_program("nvcc")


@functools.lru_cache(maxsize=None)
def _toolkit_include() -> Tuple[str, ...]:
    """``-I`` of the CUDA toolkit's headers (``cuda_fp16.h``...), when a toolkit is found."""
    roots = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME")]
    nvcc = _nvcc_path()
    if nvcc:
        roots.append(str(Path(os.path.realpath(nvcc)).parent.parent))
    roots.append("/usr/local/cuda")
    for root in roots:
        if root and (Path(root) / "include" / "cuda_fp16.h").is_file():
            return (f"-I{Path(root) / 'include'}",)
    return ()


@functools.lru_cache(maxsize=None)
def _nvrtc() -> Optional[_Compiler]:
    try:
        from cuda.bindings import nvrtc  # noqa: PLC0415 - optional; loads a shared library
        result, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # noqa: BLE001 - any failure to load the library means "not here"
        return None
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return None
    return _Compiler(f"nvrtc {major}.{minor}", _run_nvrtc, _toolkit_include(), _ptx_nvrtc)


@contextlib.contextmanager
def _nvrtc_program(name: str, code: str, options: Tuple[str, ...],
                   expressions: Tuple[str, ...]) -> Iterator[Tuple[Any, Any, bool, str]]:
    """``(nvrtc, program, compiled, log)`` of ``code`` compiled with ``options`` and the name
    expressions added (the log, when empty after a failure, is NVRTC's error string); the
    program is destroyed after the block."""
    from cuda.bindings import nvrtc  # noqa: PLC0415 - optional

    _, prog = nvrtc.nvrtcCreateProgram(code.encode(), name.encode(), 0, [], [])
    try:
        for expr in expressions:
            nvrtc.nvrtcAddNameExpression(prog, expr.encode())
        encoded = [o.encode() for o in options]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(encoded), encoded)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        buffer = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, buffer)
        log = buffer.rstrip(b"\0").decode("utf-8", "replace").strip()
        ok = result == nvrtc.nvrtcResult.NVRTC_SUCCESS
        if not ok and not log:
            log = nvrtc.nvrtcGetErrorString(result)[1].decode()
        yield nvrtc, prog, ok, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _run_nvrtc(name: str, code: str, options: Tuple[str, ...],
               expressions: Tuple[str, ...]) -> Tuple[bool, str]:
    with _nvrtc_program(name, code, options, expressions) as (nvrtc, prog, ok, log):
        if ok:  # the lowered names exist for every expression once the program compiled
            for expr in expressions:
                nvrtc.nvrtcGetLoweredName(prog, expr.encode())
        return ok, log


def _ptx_nvrtc(name: str, code: str, options: Tuple[str, ...],
               expression: str) -> Tuple[bool, str, str, str]:
    with _nvrtc_program(name, code, options, (expression,)) as (nvrtc, prog, ok, log):
        if not ok:
            return False, log, "", ""
        _, lowered = nvrtc.nvrtcGetLoweredName(prog, expression.encode())
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        ptx = b" " * size
        nvrtc.nvrtcGetPTX(prog, ptx)
        lowered = lowered.decode() if isinstance(lowered, bytes) else str(lowered)
        return True, log, lowered, ptx.rstrip(b"\0").decode()


@functools.lru_cache(maxsize=None)
def _nvcc() -> Optional[_Compiler]:
    path = _nvcc_path()
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    release = next((w.strip(",V") for line in out.stdout.splitlines() if "release" in line
                    for w in line.split() if w.startswith("V")), "?")
    return _Compiler(f"nvcc {release}", functools.partial(_run_nvcc, path),
                     ptx=functools.partial(_ptx_nvcc, path))


def nvcc_trailer(expressions: Sequence[str]) -> str:
    """What nvcc gets after the code in place of NVRTC's name expressions: each expression's
    address taken, which instantiates it (its own ``#line`` so errors name it).

    Example:
        >>> print(nvcc_trailer(["k<float>"]))
        <BLANKLINE>
        #line 1 "pyplugins-name-expressions"
        static const void* pyplugins_name_expressions[] = {
            reinterpret_cast<const void*>(&k<float>),
        };
    """
    if not expressions:
        return ""
    taken = "".join(f"    reinterpret_cast<const void*>(&{e}),\n" for e in expressions)
    return (f'\n#line 1 "{_TRAILER_FILE}"\n'
            f"static const void* pyplugins_name_expressions[] = {{\n{taken}}};")


def _run_nvcc(nvcc: str, name: str, code: str, options: Tuple[str, ...],
              expressions: Tuple[str, ...]) -> Tuple[bool, str]:
    ok, log, _ = _nvcc_ptx(nvcc, name, code, options, expressions)
    return ok, log


def _ptx_nvcc(nvcc: str, name: str, code: str, options: Tuple[str, ...],
              expression: str) -> Tuple[bool, str, str, str]:
    ok, log, ptx = _nvcc_ptx(nvcc, name, code, options, (expression,))
    if not ok:
        return False, log, "", ""
    base = expression.split("<", 1)[0].split("::")[-1].strip()
    found = [e for e in entries(ptx) if f"{len(base)}{base}" in e or e == base]
    if len(found) != 1:
        return False, (f"the PTX nvcc made has {len(found)} entries of kernel {base!r} "
                       f"({', '.join(found) or 'none'}); expected one"), "", ""
    return True, log, found[0], ptx


def _nvcc_ptx(nvcc: str, name: str, code: str, options: Tuple[str, ...],
              expressions: Tuple[str, ...]) -> Tuple[bool, str, str]:
    kept = [o for o in options if o not in _NVRTC_ONLY]
    with tempfile.TemporaryDirectory(prefix="pyplugins-ptx-") as work:
        source = Path(work) / name
        source.write_text(code + nvcc_trailer(expressions) + "\n", encoding="utf-8")
        cmd = [nvcc, "--ptx", *kept, str(source), "-o", str(Path(work) / "out.ptx")]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=NVCC_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            msg = (f"nvcc took more than {NVCC_TIMEOUT_S:.0f} s on {name}; the kernel check "
                   "cannot tell whether it compiles")
            raise KernelCompileError(msg, source=name, kernel=", ".join(expressions),
                                     options=tuple(kept)) from None
        log = (done.stderr + done.stdout).replace(f"{work}/", "").strip()
        out = Path(work) / "out.ptx"
        ptx = out.read_text(encoding="utf-8") if done.returncode == 0 and out.is_file() else ""
    return done.returncode == 0, log, ptx


# -- the disk cache --------------------------------------------------------------------------------

def _cache_file(key: str) -> Path:
    return knobs.cache_dir / "ptx" / f"{key}.json"


def _load(key: str, compiler: str) -> Optional[Dict[str, Verdict]]:
    try:
        doc = json.loads(_cache_file(key).read_text(encoding="utf-8"))
        return {e: Verdict(e, bool(ok), str(log), compiler) for e, (ok, log) in doc.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return None  # absent or unreadable: compile again


def _load_ptx(key: str, expression: str, compiler: str, arch: str) -> Optional[Ptx]:
    try:
        doc = json.loads(_cache_file(key).read_text(encoding="utf-8"))
        return Ptx(expression, str(doc["name"]), str(doc["text"]), compiler, arch)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None  # absent or unreadable: compile again


def _store(key: str, doc: dict) -> None:
    path = _cache_file(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False,
                                         encoding="utf-8") as tmp:
            json.dump(doc, tmp)
        os.replace(tmp.name, path)
    except OSError:
        pass  # a read-only cache directory only costs compiling again next time
