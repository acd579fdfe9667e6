"""Every op module in pyplugins/ops is picked up by ``import pyplugins.ops`` and comes with what
docs/adding-an-op.md asks for: a registered creator, a NumPy reference, a kernel, tests, a demo."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pyplugins.ops
import pyplugins.trt as trt
from pyplugins.runtime.plugin import Plugin

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(p.stem for p in (ROOT / "pyplugins" / "ops").glob("*.py")
                 if not p.stem.startswith("_"))


def _plugin_classes_in_source(module: str):
    """Class names the module's source defines on a base named Plugin (read without importing)."""
    tree = ast.parse((ROOT / "pyplugins" / "ops" / f"{module}.py").read_text())
    found: list = []  # on Plugin, or on a plugin class defined above it (a kernel variant)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
                getattr(b, "id", None) in ("Plugin", *found) for b in node.bases):
            found.append(node.name)
    return found


def test_there_are_op_modules():
    assert len(MODULES) >= 7 and "circ_pad" in MODULES


@pytest.mark.parametrize("module", MODULES)
def test_every_op_module_is_exported_and_registered(module):
    names = _plugin_classes_in_source(module)
    assert names, f"pyplugins/ops/{module}.py defines no Plugin subclass"
    for name in names:
        assert name in pyplugins.ops.__all__, f"{name} of {module}.py is not exported"
        cls = getattr(pyplugins.ops, name)
        assert issubclass(cls, Plugin) and cls.__module__ == f"pyplugins.ops.{module}"
        creator = trt.get_plugin_registry().get_creator(cls.name, cls.version, cls.namespace)
        assert creator is cls.creator is not None, f"{name} is not registered"
        assert callable(getattr(cls, "reference", None)), f"{name} has no NumPy reference"


@pytest.mark.parametrize("module", MODULES)
def test_every_op_has_its_kernel_tests_and_demo(module):
    for path in (f"kernels_cu/{module}.cu", f"tests/ops/test_{module}.py",
                 f"demos/{module}_demo.py"):
        assert (ROOT / path).is_file(), f"{module}: {path} is missing (docs/adding-an-op.md)"


def test_exports_are_exactly_the_plugin_classes_of_the_modules():
    expected = sorted(n for m in MODULES for n in _plugin_classes_in_source(m))
    assert pyplugins.ops.__all__ == expected
