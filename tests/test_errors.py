"""Every exception pyplugins defines is a PyPluginsError (and a builtin), so one except clause
catches what pyplugins raises."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pyplugins
from pyplugins.errors import PyPluginsError

#: Modules that replace themselves on import or run a program.
SKIP = {"pyplugins.trt", "pyplugins.__main__"}


def _modules():
    for info in pkgutil.walk_packages(pyplugins.__path__, "pyplugins."):
        if info.name not in SKIP and ".polygraphy_plugins." not in info.name:
            yield importlib.import_module(info.name)


def test_every_exception_defined_in_pyplugins_is_a_pyplugins_error():
    outside = sorted(f"{module.__name__}.{name}" for module in _modules()
                     for name, obj in vars(module).items()
                     if inspect.isclass(obj) and issubclass(obj, BaseException)
                     and obj.__module__ == module.__name__ and not issubclass(obj, PyPluginsError))
    assert outside == []


def test_the_walk_sees_the_package():
    names = {m.__name__ for m in _modules()}
    assert {"pyplugins.errors", "pyplugins.emulator.surface", "pyplugins.models.graph"} <= names
