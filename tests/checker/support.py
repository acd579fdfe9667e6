"""Helpers for the QDP checker tests: load a QDP module fresh, run the lifecycle on one plugin."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from typing import Any

from pyplugins.checker import lifecycle

MODULES = Path(__file__).resolve().parent / "qdp_modules"
_count = itertools.count()


def load(name: str) -> Any:
    """Import ``qdp_modules/<name>.py`` under a fresh module name (its decorators run again)."""
    spec = importlib.util.spec_from_file_location(f"qdp_check_{name}_{next(_count)}",
                                                  MODULES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(plugin: str, *inputs: str, **kwargs: Any) -> Any:
    """``lifecycle.run`` of ``qdp_check::<plugin>`` (without a GPU unless ``device`` says)."""
    kwargs.setdefault("device", "cpu")
    return lifecycle.run(("" + plugin, "1", "qdp_check"), list(inputs) or ["1-4-8x32:float32"],
                         **kwargs)
