"""setup.cfg ships the Polygraphy plugin directory and registers the run extension; the model
tools' dependencies are in the ``models`` and ``test`` extras."""

from __future__ import annotations

import configparser
from pathlib import Path

from pyplugins.models.polygraphy_plugins import directory

ROOT = Path(__file__).resolve().parents[2]


def _cfg():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg


def test_pattern_files_are_package_data_and_packages_are_listed():
    cfg = _cfg()
    packages = cfg["options"]["packages"].split()
    assert {"pyplugins.models", "pyplugins.models.polygraphy_plugins"} <= set(packages)
    assert cfg["options.package_data"]["pyplugins.models.polygraphy_plugins"].strip() == "*/pattern.py"
    found = sorted(p.parent.name for p in Path(directory()).glob("*/pattern.py"))
    assert found == ["CircPad", "LReLU_TRT", "RMSNorm", "RoPE"]


def test_run_extension_entry_point_names_an_existing_function():
    group = _cfg()["options.entry_points"]["polygraphy.run.plugins"].strip()
    name, _, target = (part.strip() for part in group.partition("="))
    module, _, func = target.partition(":")
    assert name == "pyplugins"
    import importlib

    assert callable(getattr(importlib.import_module(module), func))


def test_model_dependencies_are_in_the_models_and_test_extras():
    extras = _cfg()["options.extras_require"]
    for extra in ("models", "test"):
        names = {line.split(">")[0].strip() for line in extras[extra].split() if line}
        assert {"onnx", "onnxruntime", "onnx-graphsurgeon", "polygraphy", "pyyaml"} <= names, extra
