"""Compiles the CUDA C++ sources of ``kernels_cu/`` with CuPy, once per device, and caches them.

A :class:`Kernel` names a source file and a kernel expression with a ``{T}`` placeholder;
:meth:`Kernel.function` instantiates it for one CUDA C++ element type and returns the compiled
CuPy kernel. Plugins call it from ``configure_plugin`` (never from ``enqueue``) and hand the
result to :class:`pyplugins.runtime.launch.Launch`.

Conventions every ``kernels_cu/*.cu`` file keeps:

- It is one templated kernel per op (or a few), NVRTC-compatible: it includes ``"common.cuh"``
  and CUDA's ``<cuda_fp16.h>`` / ``<cuda_bf16.h>`` at most, never a C or C++ standard header.
- Its header comment states what it computes and its **launch contract**: argument order and
  types (pointers, by-value scalars, by-value structs and their layout), the grid and block it
  assumes, shared memory, and the data layout.
- It lists every instantiation it supports, one per line, in comment lines of the form::

      // @instantiate circ_pad<float>
      // @instantiate circ_pad<__half>

  :func:`instantiations` reads them; CI compiles every listed expression for sm_80 and sm_90
  (``tests/test_kernels_compile.py``), and a file with none fails there.

Caching: compiled kernels are kept in memory per device, keyed by the SHA-256 of the source and
every header it includes (transitively), the instantiated expression and the options. CuPy's
on-disk cache stays on; the digest is appended to the code as a comment so that editing a header
also misses CuPy's disk cache, which otherwise keys on the ``.cu`` text alone.

Example:
    >>> from pyplugins.runtime.kernels import Kernel, instantiations
    >>> kernel = Kernel("circ_pad.cu", "circ_pad<{T}>")
    >>> kernel.expression_for("float")
    'circ_pad<float>'
    >>> "circ_pad<__half>" in instantiations("circ_pad.cu")
    True
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Tuple

from pyplugins.errors import KernelCompileError, require

_STD = "-std=c++17"
#: Options CuPy's RawModule adds itself when it compiles with NVRTC (``cupy/cuda/compiler.py``,
#: CuPy 14), besides ``-arch``: what :mod:`pyplugins.runtime.kernel_ptx` adds so that the offline check
#: compiles the program the GPU path compiles.
CUPY_NVRTC_OPTIONS = ("-ftz=true", "--device-as-default-execution-space")
_INSTANTIATE = re.compile(r"^\s*//\s*@instantiate\s+(?P<expr>\S.*?)\s*$")
_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"(?P<name>[^"]+)"', re.MULTILINE)
_ERROR_LINE = re.compile(
    r"(?P<file>[^\s()]+)\((?P<line>\d+)\): (?:error|catastrophic error)")

_lock = threading.Lock()
_compiled: dict[int, dict[tuple[str, str, tuple[str, ...]], Any]] = {}


@functools.lru_cache(maxsize=None)
def kernels_dir() -> Path:
    """The directory holding the ``.cu`` sources.

    In a source checkout that is ``<repo>/kernels_cu``; after ``pip install .`` it is the
    package data directory of ``pyplugins.kernels_cu``.

    Raises:
        FileNotFoundError: when neither exists, or the package is not on the file system.
    """
    checkout = Path(__file__).resolve().parents[2] / "kernels_cu"
    if checkout.is_dir():
        return checkout
    try:
        installed = importlib.resources.files("pyplugins.kernels_cu")
    except ModuleNotFoundError:
        installed = None
    if installed is not None and isinstance(installed, Path) and installed.is_dir():
        return installed
    msg = (f"pyplugins cannot find its CUDA sources: neither {str(checkout)!r} nor the package "
           "'pyplugins.kernels_cu' is a directory; reinstall pyplugins (pip install .) from a "
           "checkout that has kernels_cu/.")
    raise FileNotFoundError(msg)


def kernel_sources() -> list[Path]:
    """Every ``.cu`` file of :func:`kernels_dir`, sorted by name."""
    return sorted(kernels_dir().glob("*.cu"))


def instantiations(source: str | Path) -> list[str]:
    """The kernel expressions a source lists in its ``// @instantiate EXPR`` lines, in order.

    Args:
        source: a file name inside :func:`kernels_dir` (``"circ_pad.cu"``) or a path.

    Raises:
        KernelCompileError: when the file does not exist.
    """
    path = _resolve(source, kernel="", options=())
    found: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _INSTANTIATE.match(line)
        if match and match.group("expr") not in found:
            found.append(match.group("expr"))
    return found


def source_digest(source: str | Path) -> str:
    """SHA-256 over a source and every header it includes with ``#include "..."``, recursively.

    Raises:
        KernelCompileError: when the file or one of its quoted includes does not exist.
    """
    return _read_with_digest(_resolve(source, kernel="", options=()))[1]


@dataclass(frozen=True)
class KernelProgram:
    """The one program a :class:`Kernel` compiles, for some element types: the GPU path
    (:meth:`Kernel.function`, through CuPy) and the offline check
    (:func:`pyplugins.runtime.kernel_ptx.compile_program`) both compile exactly this.

    Attributes:
        source: the resolved ``.cu`` path.
        text: its text.
        digest: SHA-256 of the text and every header it includes (:func:`source_digest`).
        expressions: the name expressions to instantiate, one per element type asked for.
        options: the NVRTC options (:meth:`Kernel.compile_options`; CuPy adds
            :data:`CUPY_NVRTC_OPTIONS` and ``-arch`` itself).

    Example:
        >>> prog = Kernel("leaky_relu.cu", "leaky_relu<{T}>").program("float", "__half")
        >>> prog.source.name, prog.expressions
        ('leaky_relu.cu', ('leaky_relu<float>', 'leaky_relu<__half>'))
        >>> prog.code.splitlines()[0]
        '#line 1 "leaky_relu.cu"'
    """

    source: Path
    text: str
    digest: str
    expressions: Tuple[str, ...]
    options: Tuple[str, ...]

    @property
    def code(self) -> str:
        """The code handed to NVRTC (:func:`nvrtc_code`)."""
        return nvrtc_code(self.source.name, self.text, self.digest)


class Kernel:
    """A templated kernel in ``kernels_cu/``, compiled on demand for one element type.

    Used as a plugin class attribute (``kernel = Kernel("circ_pad.cu", "circ_pad<{T}>")``): the
    object holds no device state, so clones of a plugin share it safely; compiled kernels live
    in a module-level cache, one per device.

    Args:
        source: the file name inside ``kernels_cu/`` (or a path to a ``.cu`` file elsewhere).
        expression: the kernel name expression; ``{T}`` is replaced by the CUDA C++ element
            type given to :meth:`function` (see :func:`pyplugins.dtypes.ctype_from_trt`).
        options: extra NVRTC options, appended after ``-std=c++17 -I<kernels_cu>``.
        dtypes: the data types the plugin instantiates this kernel for, when fewer than the
            plugin's ``dtypes`` (an INT8-only variant: ``dtypes=("int8",)``); anything
            :func:`pyplugins.runtime.formats.data_type` reads. None: every type of the plugin's
            ``dtypes``. The kernel check (:mod:`pyplugins.checker.checks.kernels`) compiles
            the kernel for each.

    Example:
        >>> k = Kernel("leaky_relu.cu", "leaky_relu<{T}>")
        >>> k.expression_for("__half"), k.supports("__half"), k.supports("double")
        ('leaky_relu<__half>', True, False)
    """

    def __init__(self, source: str, expression: str, *, options: tuple[str, ...] = (),
                 dtypes: Optional[Tuple[Any, ...]] = None) -> None:
        if not isinstance(source, (str, Path)) or not str(source):
            msg = f"Kernel source must be a .cu file name such as 'circ_pad.cu' (got {source!r})."
            raise TypeError(msg)
        if not isinstance(expression, str) or not expression.strip():
            msg = ("Kernel expression must be a kernel name expression such as "
                   f"'circ_pad<{{T}}>' (got {expression!r}).")
            raise TypeError(msg)
        if isinstance(options, str) or not all(isinstance(o, str) for o in options):
            msg = f"Kernel options must be a tuple of strings (got {options!r})."
            raise TypeError(msg)
        if dtypes is not None and (isinstance(dtypes, (str, bytes)) or not isinstance(
                dtypes, (tuple, list)) or not dtypes):
            msg = ("Kernel dtypes must be None or a non-empty tuple of data types such as "
                   f"('int8',) (got {dtypes!r}).")
            raise TypeError(msg)
        self.source = str(source)
        self.expression = expression.strip()
        self.options = tuple(options)
        self.dtypes = None if dtypes is None else tuple(dtypes)

    def __repr__(self) -> str:
        extra = f", options={self.options!r}" if self.options else ""
        extra += f", dtypes={self.dtypes!r}" if self.dtypes is not None else ""
        return f"Kernel({self.source!r}, {self.expression!r}{extra})"

    def expression_for(self, ctype: str) -> str:
        """The name expression instantiated for ``ctype`` (``{T}`` replaced)."""
        return self.expression.replace("{T}", ctype)

    def supports(self, ctype: str) -> bool:
        """Whether the source lists ``expression_for(ctype)`` in an ``@instantiate`` line.

        Listed instantiations are the ones CI compiles; use this in format negotiation.
        """
        return self.expression_for(ctype) in instantiations(self.source)

    def compile_options(self) -> tuple[str, ...]:
        """The full option tuple handed to NVRTC (before the ones CuPy adds itself)."""
        return (_STD, f"-I{kernels_dir()}", *self.options)

    def program(self, *ctypes: str) -> KernelProgram:
        """The program compiled for element types ``ctypes`` (its expressions in that order,
        repeats dropped).

        Raises:
            KernelCompileError: the file, or a header it includes, does not exist.
        """
        exprs = tuple(dict.fromkeys(self.expression_for(c) for c in ctypes))
        options = self.compile_options()
        path = _resolve(self.source, kernel=", ".join(exprs), options=options)
        text, digest = _read_with_digest(path)
        return KernelProgram(path, text, digest, exprs, options)

    def function(self, ctype: str, device: Optional[int] = None) -> Any:
        """Compile (or fetch from the cache) the kernel for ``ctype`` on ``device``.

        Call from ``configure_plugin``, never from ``enqueue``: a cache miss compiles (NVRTC, or
        CuPy's disk cache) and loads a module, both of which break CUDA-graph capture.

        Args:
            ctype: CUDA C++ element type, e.g. ``"float"`` or ``"__half"``.
            device: CUDA device id; None means the current device.

        Returns:
            The ``cupy.RawKernel``, already compiled and loaded on ``device``.

        Raises:
            KernelCompileError: the file is missing, or NVRTC rejected it (the message names the
                file, the expression, the options and carries the compiler log).
            MissingDependencyError: CuPy is not installed.
        """
        prog = self.program(ctype)
        expr, options = prog.expressions[0], prog.options
        cupy = _import_cupy()
        dev = cupy.cuda.runtime.getDevice() if device is None else int(device)
        key = (prog.digest, expr, options)
        with _lock:
            per_device = _compiled.setdefault(dev, {})
            hit = per_device.get(key)
            if hit is not None:
                return hit
            fn = _compile(cupy, prog.source, prog.text, prog.digest, expr, options, dev)
            per_device[key] = fn
            return fn


def clear_cache(device: Optional[int] = None) -> None:
    """Forget compiled kernels (of one device, or all); CuPy's disk cache is left alone."""
    with _lock:
        if device is None:
            _compiled.clear()
        else:
            _compiled.pop(int(device), None)


def cached_count(device: Optional[int] = None) -> int:
    """How many compiled kernels the in-memory cache holds (for one device, or in all)."""
    with _lock:
        if device is not None:
            return len(_compiled.get(int(device), {}))
        return sum(len(v) for v in _compiled.values())


def _import_cupy() -> Any:
    return require("cupy", "compiling and running kernels")


def _resolve(source: str | Path, *, kernel: str, options: tuple[str, ...]) -> Path:
    candidate = Path(source)
    path = candidate if candidate.is_absolute() or candidate.parent != Path() else (
        kernels_dir() / candidate)
    if path.is_file():
        return path
    known = ", ".join(p.name for p in kernel_sources()) or "none"
    msg = (f"kernel source {str(source)!r} does not exist (looked for {str(path)!r}); kernel "
           f"{kernel or '-'!s}, options {' '.join(options) or '-'}. Sources in "
           f"{str(kernels_dir())!r}: {known}.")
    raise KernelCompileError(msg, source=str(source), kernel=kernel, options=options)


def _read_with_digest(path: Path) -> tuple[str, str]:
    """The text of ``path`` and the SHA-256 of it plus its quoted includes, recursively."""
    sha = hashlib.sha256()
    seen: set[Path] = set()

    def feed(file: Path) -> str:
        resolved = file.resolve()
        if resolved in seen:
            return ""
        seen.add(resolved)
        data = file.read_text(encoding="utf-8")
        sha.update(file.name.encode() + b"\0" + data.encode() + b"\0")
        for name in _QUOTED_INCLUDE.findall(data):
            header = next((d / name for d in (file.parent, kernels_dir())
                           if (d / name).is_file()), None)
            if header is None:
                msg = (f"{file.name} includes {name!r}, which is neither next to it nor in "
                       f"{str(kernels_dir())!r}.")
                raise KernelCompileError(msg, source=file.name)
            feed(header)
        return data

    text = feed(path)
    return text, sha.hexdigest()


def nvrtc_code(name: str, text: str, digest: str) -> str:
    """The code handed to NVRTC for source ``name``: its text framed for logs and caching.

    A leading ``#line`` makes NVRTC's log name the real file with its real line numbers; the
    trailing digest (of the file and its headers) changes CuPy's disk cache key when only an
    included header changed.
    """
    return f'#line 1 "{name}"\n{text}\n// pyplugins source+headers sha256 {digest}\n'


def _compile(cupy: Any, path: Path, text: str, digest: str, expr: str,
             options: tuple[str, ...], device: int) -> Any:
    from cupy.cuda.compiler import CompileException  # noqa: PLC0415 - cupy is optional
    from cupy_backends.cuda.api.driver import CUDADriverError  # noqa: PLC0415 - cupy is optional

    code = nvrtc_code(path.name, text, digest)
    with cupy.cuda.Device(device):
        module = cupy.RawModule(code=code, options=options, name_expressions=[expr])
        try:
            fn = module.get_function(expr)
            fn.kernel  # noqa: B018 - compile and load on this device now, not at first launch
        except CompileException as err:
            log = err.get_message()
            msg = (f"NVRTC failed to compile {path.name} for kernel {expr} with options "
                   f"{' '.join(options)}:\n{log}{log_excerpt(path.name, text, log)}")
            raise KernelCompileError(msg, source=path.name, kernel=expr, options=options,
                                     log=log) from err
        except CUDADriverError as err:
            msg = (f"{path.name}: the compiled kernel {expr} (options {' '.join(options)}) "
                   f"could not be loaded on device {device}: {err}")
            raise KernelCompileError(msg, source=path.name, kernel=expr, options=options,
                                     log=str(err)) from err
    return fn


def error_lines(name: str, log: str) -> list[int]:
    """The line numbers of source ``name`` a compiler log reports errors at
    (``name(LINE): error``, as NVRTC and nvcc write them), in order, without repeats.

    Example:
        >>> error_lines("k.cu", 'k.cu(7): error: "x" is undefined\\nk.cu(7): error')
        [7]
    """
    wanted: list[int] = []
    for match in _ERROR_LINE.finditer(log):
        number = int(match.group("line"))
        if Path(match.group("file")).name == name and number not in wanted:
            wanted.append(number)
    return wanted


def log_excerpt(name: str, text: str, log: str, *, limit: int = 5) -> str:
    """The lines of source ``name`` (text ``text``) the log points at, numbered, after a
    heading; "" when it points at none.

    Example:
        >>> print(log_excerpt("k.cu", "int a;\\nint b = c;", 'k.cu(2): error: "c" is undefined'))
        <BLANKLINE>
        source lines named in the log:
            2 | int b = c;
    """
    lines = text.splitlines()
    wanted = [n for n in error_lines(name, log) if 1 <= n <= len(lines)]
    if not wanted:
        return ""
    shown = "\n".join(f"{n:5d} | {lines[n - 1]}" for n in wanted[:limit])
    return f"\nsource lines named in the log:\n{shown}"
