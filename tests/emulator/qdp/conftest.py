"""QDP tests run with the emulator installed as ``tensorrt``; plugins they register are forgotten after."""

from __future__ import annotations

import sys

import pytest

from pyplugins import emulator


@pytest.fixture
def trtp():
    """``tensorrt.plugin`` (the emulator's); every plugin id a test registers is unregistered."""
    installed_here = sys.modules.get("tensorrt") is not sys.modules["pyplugins.emulator"]
    emulator.install()
    import tensorrt.plugin as module
    from pyplugins.emulator.plugin import creator, definitions

    before = set(creator.QDP_REGISTRY)
    yield module
    for plugin_id in set(creator.QDP_REGISTRY) - before:
        definitions.unregister(plugin_id)
    if installed_here:
        emulator.uninstall()
