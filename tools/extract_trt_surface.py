"""Regenerate ``pyplugins/emulator/surface_table.py``: the public names of TensorRT's module.

Reads TensorRT's binding sources (``python/src/**/*.cpp``) and the wheel's ``__init__.py`` from a
git mirror of github.com/NVIDIA/TensorRT at one branch per emulated major version, and writes the
names as data: every ``py::class_``/``py::enum_``/``py::bind_vector``/``register_exception``
bound on the module ``m``, every ``m.def`` and ``m.attr``, the enum members in declaration order,
and the pure-Python functions of ``__init__.py``. Nothing of NVIDIA's code is copied; only names.
It also reads every release branch from 10.0 for two version tables: the plugin-facing names bound
in ``pyPlugin.cpp`` after 10.0 (the Quick interfaces of ``tensorrt.plugin`` among them) with the
first minor version that binds each, and the public names of the ``tensorrt.plugin`` subpackage
(QDP, the ``@public_api`` objects of ``bindings_wheel/tensorrt/plugin/*.py``) with the first
version that exports each.

Usage:
    python3 tools/extract_trt_surface.py [MIRROR] > pyplugins/emulator/surface_table.py

MIRROR defaults to ``/work/.mirror/NVIDIA+TensorRT/repo`` (a bare clone is enough).
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Dict, List, Tuple

BRANCHES = {10: "release/10.16", 11: "release/11.1"}
_BIND = re.compile(r'(py::class_<|py::enum_<|py::bind_vector<|py::register_exception<)'
                   r'|[({]\s*m\s*,\s*"(\w+)"|\bm\.def\(\s*"(\w+)"|\bm\.attr\(\s*"(\w+)"\)')
_KIND = {"py::class_<": "class", "py::enum_<": "enum", "py::bind_vector<": "class",
         "py::register_exception<": "exception"}
_VALUE = re.compile(r'\.value\(\s*"(\w+)"')
_PYDEF = re.compile(r"^def ([A-Za-z]\w*)\(", re.M)
#: Every release branch read for the version tables, oldest first.
MINOR_BRANCHES = [f"release/10.{m}" for m in range(17)] + ["release/11.0", "release/11.1"]
_PLUGIN_DIR = "python/packaging/bindings_wheel/tensorrt/plugin"
_PUBLIC = re.compile(r'@public_api\(\)\s*\n\s*(?:class|def)\s+(\w+)|public_api\(symbol="(\w+)"\)')


def _git(mirror: str, *args: str) -> str:
    return subprocess.run(["git", "-C", mirror, *args], check=True, capture_output=True,
                          text=True).stdout


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


def extract(mirror: str, branch: str) -> Tuple[Dict[str, str], Dict[str, List[str]]]:
    """(name -> kind, enum name -> member names) of one branch."""
    files = [f for f in _git(mirror, "ls-tree", "-r", "--name-only", branch, "python/src")
             .splitlines() if f.endswith(".cpp")]
    names: Dict[str, str] = {}
    members: Dict[str, List[str]] = {}
    for path in files:
        text = _strip_comments(_git(mirror, "show", f"{branch}:{path}"))
        kind = None
        for match in _BIND.finditer(text):
            if match.group(1):
                kind = _KIND[match.group(1)]
            elif match.group(2) and kind is not None:
                names.setdefault(match.group(2), kind)
                if kind == "enum":
                    end = text.find(";", match.end())
                    members[match.group(2)] = list(dict.fromkeys(
                        _VALUE.findall(text[match.end():end])))
                kind = None
            elif match.group(3):
                names.setdefault(match.group(3), "function")
            elif match.group(4):
                names.setdefault(match.group(4), "attr")
    init = _git(mirror, "show", f"{branch}:python/packaging/bindings_wheel/tensorrt/__init__.py")
    for name in _PYDEF.findall(init):
        names.setdefault(name, "python")
    return names, members


def _version(branch: str) -> Tuple[int, int]:
    major, minor = branch.split("/")[1].split(".")[:2]
    return int(major), int(minor)


def plugin_since(mirror: str) -> Dict[str, Tuple[int, int]]:
    """Names bound in ``pyPlugin.cpp`` after 10.0 -> the first (major, minor) that binds them."""
    first: Dict[str, Tuple[int, int]] = {}
    for branch in MINOR_BRANCHES:
        text = _strip_comments(_git(mirror, "show", f"{branch}:python/src/infer/pyPlugin.cpp"))
        kind = None
        for match in _BIND.finditer(text):
            if match.group(1):
                kind = match.group(1)
            elif match.group(2) and kind is not None:
                first.setdefault(match.group(2), _version(branch))
                kind = None
    return {name: v for name, v in first.items() if v > (10, 0)}


def plugin_module(mirror: str) -> Dict[str, Tuple[int, int]]:
    """``tensorrt.plugin``'s public names -> the first (major, minor) that exports them."""
    first: Dict[str, Tuple[int, int]] = {}
    for branch in MINOR_BRANCHES:
        if subprocess.run(["git", "-C", mirror, "cat-file", "-e", f"{branch}:{_PLUGIN_DIR}"],
                          capture_output=True).returncode != 0:
            continue  # no tensorrt.plugin on this branch (before 10.6)
        for name in _git(mirror, "ls-tree", "--name-only", f"{branch}:{_PLUGIN_DIR}").split():
            if name.endswith(".py"):
                text = _git(mirror, "show", f"{branch}:{_PLUGIN_DIR}/{name}")
                for match in _PUBLIC.finditer(text):
                    first.setdefault(match.group(1) or match.group(2), _version(branch))
    return first


def main(argv: List[str]) -> int:
    mirror = argv[1] if len(argv) > 1 else "/work/.mirror/NVIDIA+TensorRT/repo"
    out = ['"""The public names of TensorRT\'s ``tensorrt`` module per major version (generated by '
           'tools/extract_trt_surface.py from the binding sources; names only)."""', "",
           "# fmt: off", ""]
    out.append("#: TensorRT major version -> the branch the names were read from.")
    out.append(f"BRANCHES = {BRANCHES!r}")
    out.append("")
    out.append("#: Major version -> {public name: kind} (class, enum, exception, function, attr, "
               "python).")
    out.append("NAMES = {")
    all_members: Dict[str, List[str]] = {}
    for major, branch in BRANCHES.items():
        names, members = extract(mirror, branch)
        for k, v in members.items():
            all_members.setdefault(k, v)
            if len(v) > len(all_members[k]):
                all_members[k] = v
        out.append(f"    {major}: {{")
        for name in sorted(names):
            out.append(f"        {name!r}: {names[name]!r},")
        out.append("    },")
    out.append("}")
    out.append("")
    out.append("#: Enum -> member names in declaration order (the longer list of the branches).")
    out.append("ENUM_MEMBERS = {")
    for name in sorted(all_members):
        out.append(f"    {name!r}: {all_members[name]!r},")
    out.append("}")
    out.append("")
    out.append("#: ``tensorrt`` names bound in pyPlugin.cpp after 10.0 -> the first (major, minor) "
               "that binds them.")
    out.append("PLUGIN_SINCE = {")
    for name, version in sorted(plugin_since(mirror).items()):
        out.append(f"    {name!r}: {version!r},")
    out.append("}")
    out.append("")
    out.append("#: The public names of the ``tensorrt.plugin`` subpackage (QDP) -> the first "
               "(major, minor) that exports them.")
    out.append("PLUGIN_MODULE = {")
    for name, version in sorted(plugin_module(mirror).items()):
        out.append(f"    {name!r}: {version!r},")
    out.append("}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
