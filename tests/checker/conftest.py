"""Checker tests of QDP plugins: the emulator stands in for ``tensorrt``, and every QDP plugin a
test registers is forgotten after it."""

from __future__ import annotations

import sys

import pytest

from pyplugins import emulator


@pytest.fixture
def qdp():
    """``tensorrt.plugin`` (the emulator's); QDP plugins registered in the test are unregistered."""
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
