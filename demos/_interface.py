"""The ``--interface v2|v3`` option every demo takes: register pyplugins' plugins as
``IPluginV2DynamicExt`` or ``IPluginV3``.

Importing this module has no side effect (unlike ``demos/_common.py``, which selects the emulator),
so ``demos/onnx_demo.py``, which builds a real engine where TensorRT is installed, uses it too.

Example:
    >>> args = InterfaceParser().parse_args([])  # no --interface: pyplugins' own rule
    >>> args.interface is None
    True
"""

from __future__ import annotations

import argparse
import os
from typing import Any

__all__ = ["InterfaceParser", "add_option", "registered_as", "use_interface"]

#: What each interface is called in TensorRT.
TRT_NAMES = {"v2": "IPluginV2DynamicExt", "v3": "IPluginV3"}


class InterfaceParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` with :func:`add_option`'s ``--interface``, applied on parsing: the
    plugins are registered with the interface asked for (:func:`use_interface`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        add_option(self)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed = super().parse_args(args, namespace)
        if parsed.interface is not None:
            use_interface(parsed.interface)
        return parsed


def add_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--interface {v2,v3}`` (default None: pyplugins' rule, V2 while TensorRT has it).

    Example:
        >>> p = argparse.ArgumentParser(); add_option(p)
        >>> p.parse_args(["--interface", "v3"]).interface
        'v3'
    """
    parser.add_argument("--interface", choices=tuple(TRT_NAMES), default=None,
                        help="register the plugins as IPluginV2DynamicExt (v2) or IPluginV3 (v3) "
                             "(default: pyplugins' rule, V2 while TensorRT has it); --trace shows "
                             "the V3 phases (tactics timed, fields, attach_to_context)")


def use_interface(interface: str) -> None:
    """Register every plugin ``pp.register`` registered again, as ``interface`` (``"v2"`` or
    ``"v3"``), and make that the default for plugins registered later.

    Example:
        >>> import pyplugins.ops.circ_pad as circ_pad
        >>> use_interface("v3"); type(circ_pad.CircPad.creator).__name__
        'CircPadCreatorV3'
        >>> use_interface("v2"); type(circ_pad.CircPad.creator).__name__
        'CircPadCreator'
    """
    from pyplugins.runtime import creator

    os.environ["PYPLUGINS_INTERFACE"] = interface
    for registered in creator.registered().values():
        creator.register(registered.plugin_class, replace=True, interface=interface)


def registered_as() -> str:
    """The TensorRT interface(s) of the plugins ``pp.register`` registered, e.g. ``"IPluginV3"``.

    Example:
        >>> import pyplugins.ops.circ_pad
        >>> use_interface("v2"); registered_as()
        'IPluginV2DynamicExt'
    """
    from pyplugins.runtime import creator

    kinds = sorted({getattr(c, "interface", "v2") for c in creator.registered().values()})
    return " and ".join(TRT_NAMES.get(k, k) for k in kinds) or "none registered"
