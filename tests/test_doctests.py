"""Every example in pyplugins' docstrings runs (the docs are part of the product)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import pyplugins

# pyplugins.trt replaces itself in sys.modules with the chosen backend; its example is covered
# by tests/test_trt_selection.py.
SKIP = {"pyplugins.trt"}
MODULES = sorted(
    name for _, name, _ in pkgutil.walk_packages(pyplugins.__path__, "pyplugins.")
    if name not in SKIP and not name.startswith("pyplugins.kernels_cu"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
