"""The AOT checks of a QDP plugin, without a GPU: its kernel name, its PTX, its signature and its launch parameters.

An ``aot_impl`` hands TensorRT a kernel name, PTX (or CUBIN), launch parameters and extra
``int32`` arguments; the engine launches that kernel with the input pointers, the extra
arguments and the output pointers, in that order (``plugin/_lib.py:547``). What can be wrong is
visible on the host:

- ``aot_kernel_name``: no ``.entry`` of that name in the PTX (a C++ kernel without ``extern "C"``
  has a mangled name), or the name is absent from the CUBIN;
- ``aot_ptx_compile``: the PTX does not compile for the device (its driver on a GPU; else
  ``ptxas``, or nvJitLink where its library loads), e.g. a ``.target`` newer than the GPU or a
  syntax error;
- ``aot_signature``: the ``.entry``'s parameters do not take the pointers and extra arguments
  TensorRT passes (count, or the size of one parameter);
- ``aot_launch_params``: grid, block or shared memory that no launch accepts at the profile's
  min, opt or max shapes (a block over 1024 threads, a zero or negative extent, an extra argument
  outside int32).

Example:
    >>> ptx = '''.visible .entry scale(
    ...     .param .u64 scale_param_0, .param .u32 scale_param_1, .param .u64 scale_param_2)
    ... { ret; }'''
    >>> ptx_entries(ptx)
    {'scale': [8, 4, 8]}
    >>> signature_problems([8, 4, 8], [("input", "FLOAT"), ("extra", "INT32"), ("output", "FLOAT")])
    ([], [])
"""

from __future__ import annotations

import functools
import hashlib
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from pyplugins.checker.aot_artifact import AOTArtifact
from pyplugins.checker.checks import Violation
from pyplugins.errors import AOTArtifactError

__all__ = ["artifact_violations", "assemble", "launch_problems", "ptx_entries",
           "signature_problems"]

#: Bytes of a PTX parameter type.
_PTX_SIZES = {"8": 1, "16": 2, "32": 4, "64": 8}
#: Bytes an extra argument takes, by its PluginArgDataType name.
_ARG_BYTES = {"INT32": 4, "INT16": 2, "INT8": 1}
_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$.%][\w$.%]*)\s*\(([^)]*)\)", re.S)
_PARAM = re.compile(r"\.param\b(?P<rest>[^,]*)")
#: The most threads of one block, and the grid limits (CUDA's, every architecture since sm_30).
MAX_BLOCK_THREADS = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
#: Dynamic shared memory a launch gets without an opt-in attribute, and the most any
#: supported GPU gives with one (H100: 227 KiB).
SHARED_DEFAULT = 48 * 1024
SHARED_MAX = 227 * 1024
_TIMEOUT_S = 120.0


def ptx_entries(ptx: str) -> Dict[str, List[int]]:
    """Each ``.entry`` of ``ptx`` -> the byte size of each of its parameters, in order
    (``.param .u64 p`` -> 8; ``.param .align 8 .b8 p[16]`` -> 16)."""
    out: Dict[str, List[int]] = {}
    text = re.sub(r"//[^\n]*", "", ptx)
    for match in _ENTRY.finditer(text):
        sizes = []
        for param in _PARAM.finditer(match.group(2)):
            rest = param.group("rest")
            kind = re.search(r"\.[usbf](8|16|32|64)\b", rest)
            count = re.search(r"\[(\d+)\]", rest)
            size = _PTX_SIZES[kind.group(1)] if kind else 0
            sizes.append(size * (int(count.group(1)) if count else 1))
        out[match.group(1)] = sizes
    return out


def signature_problems(params: Sequence[int], layout: Sequence[Tuple[str, Optional[str]]]
                       ) -> Tuple[List[str], List[str]]:
    """``(problems, warnings)`` of a kernel whose parameters are ``params`` (bytes each) launched
    with ``layout`` (:meth:`AOTArtifact.argument_layout`): pointers take 8 bytes, extra
    arguments their width. Trailing 8-byte parameters beyond the layout are a warning: Triton
    3.3+ appends scratch pointers, which TensorRT fills with null pointers [infer; see
    :mod:`pyplugins.checker.aot_launch`, which does the same]; any other difference is a
    problem."""
    want = [8 if role in ("input", "output") else _ARG_BYTES.get(str(dtype), 4)
            for role, dtype in layout]
    problems, warnings = [], []
    for k, ((role, dtype), size) in enumerate(zip(layout, want)):
        if k < len(params) and params[k] != size:
            what = f"a {dtype} pointer" if role != "extra" else f"an {dtype} argument"
            problems.append(f"parameter {k} is {params[k]} bytes, but TensorRT passes {what} "
                            f"({role}) there ({size} bytes)")
    if len(params) < len(want):
        problems.append(f"the kernel takes {len(params)} parameter(s), but TensorRT passes "
                        f"{len(want)}: {_layout_text(layout)}")
    elif len(params) > len(want):
        extra = params[len(want):]
        text = (f"the kernel takes {len(params)} parameters, {len(extra)} more than the "
                f"{len(want)} TensorRT passes ({_layout_text(layout)})")
        if all(size == 8 for size in extra):
            warnings.append(text + ": trailing 8-byte parameters, as Triton 3.3+ adds for its "
                                   "scratch buffers (global_scratch, profile_scratch); they "
                                   "get null pointers, as TensorRT fills them [infer], so the "
                                   "kernel must need no scratch memory (Triton's "
                                   "metadata.global_scratch_size 0)")
        else:
            problems.append(text)
    return problems, warnings


def _layout_text(layout: Sequence[Tuple[str, Optional[str]]]) -> str:
    n_in = sum(1 for role, _ in layout if role == "input")
    n_extra = sum(1 for role, _ in layout if role == "extra")
    n_out = sum(1 for role, _ in layout if role == "output")
    return (f"{n_in} input pointer(s), then {n_extra} extra argument(s) from aot_impl's "
            f"SymIntExprs, then {n_out} output pointer(s)")


def launch_problems(plan: Mapping[str, Any]) -> List[str]:
    """What no launch accepts in one :meth:`AOTArtifact.launch_plan` (one sentence each)."""
    problems = []
    grid, block, shared = plan["grid"], plan["block"], plan["shared_mem"]
    for axis, g, b, gmax, bmax in zip("xyz", grid, block, MAX_GRID, MAX_BLOCK):
        if not 1 <= g <= gmax:
            problems.append(f"grid_{axis} is {g} (must be 1..{gmax})")
        if not 1 <= b <= bmax:
            problems.append(f"block_{axis} is {b} (must be 1..{bmax})")
    threads = block[0] * block[1] * block[2]
    if threads > MAX_BLOCK_THREADS:
        problems.append(f"the block has {threads} threads (at most {MAX_BLOCK_THREADS})")
    if shared < 0 or shared > SHARED_MAX:
        problems.append(f"shared_mem is {shared} bytes (0..{SHARED_MAX})")
    for k, value in enumerate(plan["extra"]):
        if not -2**31 <= value < 2**31:
            problems.append(f"extra argument {k} is {value}, outside int32")
    return problems


@functools.lru_cache(maxsize=64)
def _assemble_cached(digest: str, image: bytes, arch: str) -> Tuple[Optional[bool], str, str]:
    linked = _nvjitlink(image, arch)
    if linked is not None:
        return (*linked, "nvJitLink")
    from pyplugins.runtime.kernel_ptx import toolkit_program  # noqa: PLC0415 - lazy: a subprocess

    ptxas = toolkit_program("ptxas")
    if ptxas is None:
        return None, "neither nvJitLink's library nor ptxas is here", "none"
    with tempfile.TemporaryDirectory(prefix="pyplugins-aot-") as work:
        source = Path(work) / "kernel.ptx"
        source.write_bytes(image)
        try:
            done = subprocess.run([ptxas, f"-arch=sm_{arch}", str(source), "-o",
                                   str(Path(work) / "kernel.cubin")], check=False,
                                  capture_output=True, text=True, timeout=_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as err:
            return None, f"ptxas could not run: {err}", "ptxas"
    log = (done.stderr + done.stdout).replace(f"{work}/", "").strip()
    return done.returncode == 0, log, "ptxas"


def _nvjitlink(image: bytes, arch: str) -> Optional[Tuple[bool, str]]:
    try:
        from cuda.bindings import nvjitlink  # noqa: PLC0415 - optional; loads a library

        handle = nvjitlink.create(1, [f"-arch=sm_{arch}"])
    except Exception:  # noqa: BLE001 - no library: ptxas instead
        return None
    try:
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, image, len(image), "kernel.ptx")
            nvjitlink.complete(handle)
            return True, ""
        except Exception as err:  # noqa: BLE001 - the log says why
            try:
                log = bytearray(nvjitlink.get_error_log_size(handle))
                nvjitlink.get_error_log(handle, log)
                text = bytes(log).rstrip(b"\0").decode("utf-8", "replace").strip()
            except Exception:  # noqa: BLE001 - no log: the error itself
                text = ""
            return False, text or f"{type(err).__name__}: {err}"
    finally:
        nvjitlink.destroy(handle)


def _driver_load(image: bytes) -> Tuple[bool, str]:
    """Load the PTX into the current CUDA context as TensorRT's runtime would (the driver JIT
    compiles it for the device); a refusal is not sticky, the context stays usable."""
    import cupy  # noqa: PLC0415 - GPU only
    from cupy_backends.cuda.api import driver  # noqa: PLC0415 - GPU only

    cupy.cuda.runtime.free(0)  # makes the device's primary context current, as a launch would
    try:
        module = driver.moduleLoadData(bytes(image).rstrip(b"\0") + b"\0")
    except Exception as err:  # noqa: BLE001 - the driver's refusal is the verdict
        return False, f"{type(err).__name__}: {err}"
    driver.moduleUnload(module)
    return True, ""


def assemble(image: bytes, arch: str, on_device: bool = False
             ) -> Tuple[Optional[bool], str, str]:
    """Whether PTX compiles for ``sm_<arch>``: ``(ok, log, tool)``. With ``on_device`` the GPU's
    driver decides (``cuModuleLoadData``; a refusal is detailed by an assembler's log when one
    is here); without, nvJitLink's library, else ``ptxas``; ``ok`` is None when neither is here.
    Cached by content."""
    if on_device:
        ok, why = _driver_load(image)
        if ok:
            return True, "", "the CUDA driver"
        detail = assemble(image, arch)[1]
        return False, why + (f" | {detail}" if detail else ""), "the CUDA driver"
    digest = hashlib.sha256(image + arch.encode()).hexdigest()
    return _assemble_cached(digest, bytes(image), arch)


def artifact_violations(art: AOTArtifact, profiles: Mapping[str, Mapping[Any, Sequence[int]]],
                        arch: str, where: str, on_device: bool = False
                        ) -> Tuple[List[Violation], List[str]]:
    """Every check of one artifact that needs no launch.

    Args:
        art: the artifact.
        profiles: ``{"min": shapes, "opt": shapes, "max": shapes}``, input index -> shape.
        arch: the SM version to assemble for (``"80"``; the GPU's own when there is one).
        where: which candidate, for messages (``"combination [FLOAT, FLOAT], tactic 1"``).
        on_device: a GPU is here: its driver compiles the PTX (:func:`assemble`).

    Returns:
        ``(violations, warnings)``.
    """
    found: List[Violation] = []
    warnings: List[str] = []
    who = f"aot_impl of QDP plugin '{art.plugin}' ({where})"
    if art.image_kind == "cubin":
        if art.kernel_name.encode() not in art.image:
            found.append(Violation("aot_kernel_name", f"{who} names kernel {art.kernel_name!r}, "
                                   f"which its CUBIN does not contain", "get_kernel"))
        warnings.append(f"{who} gave a CUBIN: its parameters and its architecture are not "
                        "checked without a GPU (TensorRT documents PTX only)")
    else:
        text = art.image.decode("utf-8", "replace")
        entries = ptx_entries(text)
        if art.kernel_name not in entries:
            names = ", ".join(sorted(entries)) or "none"
            found.append(Violation(
                "aot_kernel_name", f"{who} names kernel {art.kernel_name!r}, but its PTX has no "
                f".entry of that name (entries: {names}); a C++ kernel needs extern \"C\" or its "
                "mangled name", "get_kernel"))
        else:
            problems, notes = signature_problems(entries[art.kernel_name], art.argument_layout())
            warnings += [f"{who}: {n}" for n in notes]
            if problems:
                found.append(Violation(
                    "aot_signature", f"{who}: kernel {art.kernel_name!r} does not match what "
                    f"TensorRT launches it with: {'; '.join(problems)}", "get_launch_params"))
        target = _ptx_target(text)
        if not on_device and target is not None and target > int(arch):
            # PTX is assembled for its own .target or later; sm_<arch> below it is no test. The
            # build GPU chose it (aot_impl runs on TensorRT's build GPU), and on a GPU the
            # driver decides (on_device). Here: assemble for the target, and say where it runs.
            asm_arch = f"{target}"
            warnings.append(f"{who}: its PTX targets sm_{target}, so the engine runs only on "
                            f"GPUs of compute capability {target // 10}.{target % 10} or later")
        else:
            asm_arch = arch
        ok, log, tool = assemble(art.image, asm_arch, on_device)
        if ok is None:
            warnings.append(f"{who}: the PTX was not assembled ({log})")
        elif not ok:
            found.append(Violation(
                "aot_ptx_compile", f"{who}: the PTX does not assemble for sm_{asm_arch} ({tool}): "
                f"{_first_lines(log)}", "get_kernel"))
    bad = []
    for name, shapes in profiles.items():
        try:
            problems = launch_problems(art.launch_plan(shapes))
        except (AOTArtifactError, KeyError, IndexError) as err:
            problems = [f"the expressions cannot be evaluated ({err})"]
        bad += [f"at {name}: {p}" for p in problems]
    if bad:
        found.append(Violation("aot_launch_params", f"{who}: launch parameters no launch accepts:"
                               f" {'; '.join(bad)}", "get_launch_params"))
    return found, warnings


def _ptx_target(text: str) -> Optional[int]:
    """The SM number of the PTX's ``.target sm_XX`` directive (None without one)."""
    match = re.search(r"^\s*\.target\s+sm_(\d+)", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def _first_lines(log: str, n: int = 6) -> str:
    lines = [line for line in log.splitlines() if line.strip()]
    more = f" (+{len(lines) - n} more lines)" if len(lines) > n else ""
    return " | ".join(lines[:n]) + more
