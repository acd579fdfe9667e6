"""Read a PTX module's kernels: the names of its ``.entry`` functions and how many parameters each takes.

An ahead-of-time plugin hands TensorRT a PTX module and the name of the kernel to launch, which
TensorRT calls with the input pointers, the extra int32 arguments and the output pointers, in
that order (protocol §8.4). These readers let pyplugins check, before TensorRT does, that the
entry exists and takes that many parameters.

Example:
    >>> ptx = ('.visible .entry _Z1kPKfiPf(\\n\\t.param .u64 _Z1kPKfiPf_param_0,\\n'
    ...        '\\t.param .u32 _Z1kPKfiPf_param_1,\\n\\t.param .u64 _Z1kPKfiPf_param_2\\n)\\n{\\n}')
    >>> entries(ptx), entry_params(ptx, "_Z1kPKfiPf")
    (['_Z1kPKfiPf'], ['u64', 'u32', 'u64'])
"""

from __future__ import annotations

import re
from typing import List, Optional

__all__ = ["entries", "entry_params"]

_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(")
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+[\w$]+(?:\[\d+\])?")


def entries(ptx: str) -> List[str]:
    """The names of the ``.entry`` functions of a PTX module, in order."""
    return _ENTRY.findall(ptx)


def entry_params(ptx: str, name: str) -> Optional[List[str]]:
    """The PTX types of entry ``name``'s parameters (``"u64"`` for a pointer, ``"u32"`` for
    an int, ``"b8"`` for a by-value struct's bytes), in order; None when there is no such
    entry."""
    match = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\(([^)]*)\)", ptx)
    if match is None:
        return None
    return _PARAM.findall(match.group(1))
