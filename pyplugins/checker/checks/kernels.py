"""The kernel check: every ``pp.Kernel`` of a ``pp.Plugin`` compiles for every type it serves.

Without a GPU ``enqueue`` never runs, so nothing else would notice a kernel that can never
launch. :func:`kernel_violations` compiles, through :func:`pyplugins.runtime.kernel_ptx.compile_program`
(NVRTC or nvcc, no device; cached on disk), each ``pp.Kernel`` attribute of the plugin's class
for each data type it serves: the kernel's own ``dtypes`` when it names some, else the class's
``dtypes`` (a per-tensor mapping: tensor 0's types, which ``{T}`` follows when ``same_as`` is 0
[infer: the shipped ops instantiate ``{T}`` with input 0's type]). Kernels of one source and
options are compiled as one program, like the GPU path's. Each of these is a ``kernel_compile``
violation naming the plugin, the attribute, the ``.cu`` file (and line) and carrying the
compiler's words:

- the source file (or a header it includes) does not exist;
- no source defines the kernel's name;
- the code does not compile for a type;
- the source lists no ``// @instantiate`` line for a type the plugin serves (CI compiles only
  listed instantiations; ``Kernel.supports`` reads them).

Plugins that are not ``pp.Plugin`` classes, and ``PYPLUGINS_KERNEL_COMPILER=off``, are not
checked; a machine with no CUDA compiler gets a warning instead of a verdict.

Example::

    from pyplugins.ops import CircPad
    from pyplugins.checker.checks.kernels import kernel_violations
    violations, warnings = kernel_violations(CircPad.creator)   # ([], [])
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from pyplugins import dtypes as _dtypes
from pyplugins.checker.checks import Violation
from pyplugins.errors import KernelCompileError, MissingDependencyError, PluginDefinitionError
from pyplugins.runtime.kernels import (Kernel, KernelProgram, error_lines, instantiations,
                                       log_excerpt)

__all__ = ["kernel_attributes", "kernel_types", "kernel_violations"]

CHECK = "kernel_compile"
#: The most log lines one violation quotes.
LOG_LINES = 30
_UNDEFINED = re.compile(r'identifier "(?P<name>[^"]+)" is undefined')


def kernel_attributes(cls: type) -> Dict[str, Kernel]:
    """The ``pp.Kernel`` class attributes of ``cls`` and its bases, by name, bases' first.

    Example:
        >>> from pyplugins.ops import RMSNorm
        >>> list(kernel_attributes(RMSNorm))     # the JIT kernel and the AOT entry
        ['kernel', 'aot_kernel']
    """
    out: Dict[str, Kernel] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, Kernel):
                out[name] = value
            elif name in out:
                del out[name]  # a subclass replaced the kernel with something else
    return out


def kernel_types(cls: type, kernel: Kernel) -> Tuple[Any, ...]:
    """The data types ``kernel`` serves in plugin class ``cls`` (see the module docstring), as
    ``trt.DataType`` members; ``()`` when the class accepts any type (``dtypes = None``).

    Raises:
        PluginDefinitionError: a type that names no TensorRT data type.

    Example:
        >>> from pyplugins.ops import Pool
        >>> [t.name for t in kernel_types(Pool, Pool.pool2d_i8)]
        ['INT8']
        >>> [t.name for t in kernel_types(Pool, Pool.pool2d)]
        ['FLOAT', 'HALF', 'INT8']
    """
    from pyplugins.runtime.formats import data_type  # noqa: PLC0415 - imports the active tensorrt

    given = kernel.dtypes if kernel.dtypes is not None else getattr(cls, "dtypes", None)
    if given is None:
        return ()
    if isinstance(given, dict):
        given = given[0] if 0 in given else [t for v in given.values() for t in _seq(v)]
    return tuple(dict.fromkeys(data_type(t) for t in _seq(given)))


def _seq(value: Any) -> Sequence[Any]:
    return value if isinstance(value, (tuple, list)) else (value,)


def kernel_violations(creator: Any) -> Tuple[List[Violation], List[str]]:
    """``(violations, warnings)`` of the kernel check for the plugin class behind ``creator``
    (``creator.plugin_class``, set by ``pp.register``); ``([], [])`` for other plugins.

    Warnings say why kernels were not checked (no CUDA compiler on the machine).
    """
    from pyplugins.runtime.plugin import Plugin  # noqa: PLC0415 - the checker sits above authoring

    cls = getattr(creator, "plugin_class", None)
    if not (isinstance(cls, type) and issubclass(cls, Plugin)):
        return [], []
    from pyplugins.runtime import kernel_ptx  # noqa: PLC0415 - only pp.Plugin classes need it

    found: List[Violation] = []
    programs: Dict[Tuple[str, Tuple[str, ...]], Tuple[KernelProgram, List[Tuple[str, Kernel]]]]
    programs = {}
    for attr, kernel in kernel_attributes(cls).items():
        ctypes, problems = _ctypes(cls, attr, kernel)
        found += problems
        try:
            prog = kernel.program(*ctypes) if ctypes else None
        except KernelCompileError as err:  # a missing source or header
            found.append(Violation(CHECK, f"{_who(cls, attr, kernel)}: {err}"))
            continue
        if prog is None:
            continue
        found += _unlisted(cls, attr, kernel, prog)
        key = (str(prog.source), prog.options)
        merged, users = programs.get(key, (prog, []))
        exprs = tuple(dict.fromkeys(merged.expressions + prog.expressions))
        programs[key] = (replace(merged, expressions=exprs), users + [(attr, kernel)])
    for prog, users in programs.values():
        try:
            verdicts = kernel_ptx.compile_program(prog)
        except (MissingDependencyError, KernelCompileError) as err:
            return found, [f"the kernels of plugin {cls.name!r} were not compiled: {err}"]
        found += _failures(cls, prog, users, verdicts)
    return found, []


def _who(cls: type, attr: str, kernel: Kernel) -> str:
    return f"plugin {cls.name!r} kernel {attr!r} ({kernel.expression} in {kernel.source})"


def _ctypes(cls: type, attr: str, kernel: Kernel) -> Tuple[List[str], List[Violation]]:
    """The CUDA C++ types ``{T}`` takes for ``kernel``, and violations for types it cannot."""
    try:
        types = kernel_types(cls, kernel)
    except PluginDefinitionError as err:
        return [], [Violation(CHECK, f"{_who(cls, attr, kernel)}: {err}")]
    if not types:  # any type: the instantiations the source lists for this expression
        listed = _listed_for(kernel)
        return listed, []
    out: List[str] = []
    bad: List[str] = []
    for t in types:
        try:
            out.append(_dtypes.ctype_from_trt(t))
        except (TypeError, KeyError):
            bad.append(t.name)
    problems = [] if not bad else [Violation(CHECK, (
        f"{_who(cls, attr, kernel)}: the plugin serves {', '.join(bad)}, which has no CUDA C++ "
        f"element type for {{T}}; give the kernel dtypes=(...) without it and launch another "
        f"kernel for it"))]
    return out, problems


def _listed_for(kernel: Kernel) -> List[str]:
    """The ``{T}`` values of the source's ``@instantiate`` lines matching the expression."""
    head, _, tail = kernel.expression.partition("{T}")
    try:
        listed = instantiations(kernel.source)
    except KernelCompileError:
        return ["float"]  # compiled anyway, so that the missing file is reported
    if "{T}" not in kernel.expression:
        return ["-"] if kernel.expression in listed else ["float"]
    return [e[len(head):len(e) - len(tail)] for e in listed
            if e.startswith(head) and e.endswith(tail) and len(e) > len(head) + len(tail)]


def _unlisted(cls: type, attr: str, kernel: Kernel, prog: KernelProgram) -> List[Violation]:
    listed = instantiations(prog.source)
    missing = [e for e in prog.expressions if e not in listed]
    if not missing:
        return []
    lines = "\n".join(f"    // @instantiate {e}" for e in missing)
    return [Violation(CHECK, (
        f"{_who(cls, attr, kernel)}: the plugin instantiates {', '.join(missing)}, but "
        f"{prog.source} lists no '// @instantiate' line for it (CI compiles and format "
        f"negotiation trusts only listed instantiations). Add to its header comment:\n{lines}\n"
        f"or narrow the types the kernel serves (pp.Kernel(..., dtypes=...) or the class's "
        f"dtypes)"))]


def _failures(cls: type, prog: KernelProgram, users: List[Tuple[str, Kernel]],
              verdicts: Dict[str, Any]) -> List[Violation]:
    by_log: Dict[str, List[str]] = {}
    for expr in prog.expressions:
        verdict = verdicts.get(expr)
        if verdict is not None and not verdict.ok:
            by_log.setdefault(verdict.log, []).append(expr)
    out = []
    for log, exprs in by_log.items():
        compiler = verdicts[exprs[0]].compiler
        attrs = [a for a, k in users if any(_instance_of(k.expression, e) for e in exprs)]
        where = _where(prog, log)
        undefined = _undefined_names(log, exprs)
        if undefined:
            why = (f"no kernel named {', '.join(map(repr, undefined))} is defined in "
                   f"{prog.source} (or a header it includes); check the name in pp.Kernel(...) "
                   f"against the __global__ functions of the source")
        else:
            why = f"it does not compile{where}"
        out.append(Violation(CHECK, (
            f"plugin {cls.name!r} kernel(s) {', '.join(map(repr, attrs)) or '?'}: "
            f"{', '.join(exprs)} cannot be built, so enqueue could never launch it: {why}. "
            f"{compiler} (options {' '.join(prog.options)}) says:\n{_clip(log)}"
            f"{log_excerpt(prog.source.name, prog.text, log)}")))
    return out


def _instance_of(pattern: str, expr: str) -> bool:
    head, _, tail = pattern.partition("{T}")
    if "{T}" not in pattern:
        return pattern == expr
    return expr.startswith(head) and expr.endswith(tail)


def _undefined_names(log: str, exprs: Sequence[str]) -> List[str]:
    """The kernel names of ``exprs`` the log calls undefined (an unknown kernel name)."""
    heads = {re.split(r"[<(\s]", e, maxsplit=1)[0] for e in exprs}
    return [m.group("name") for m in _UNDEFINED.finditer(log) if m.group("name") in heads]


def _where(prog: KernelProgram, log: str) -> str:
    lines = error_lines(prog.source.name, log)
    if not lines:
        return ""
    return f" at {prog.source}:{lines[0]}" + (f" (and {len(lines) - 1} more lines)"
                                             if len(lines) > 1 else "")


def _clip(log: str, limit: Optional[int] = LOG_LINES) -> str:
    lines = log.splitlines()
    if limit is None or len(lines) <= limit:
        return log
    return "\n".join(lines[:limit] + [f"... ({len(lines) - limit} more log lines)"])
