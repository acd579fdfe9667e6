"""``IPluginRegistry`` and ``get_plugin_registry()`` (§5.3-§5.4), for the emulated version.

Creators are keyed by (name, version, namespace); ``register_creator`` returns False for a
duplicate. Every method holds the registry's lock, so threads may register, deregister and
look up at once (TensorRT's registry is guarded by a mutex too). ``get_plugin_creator`` and
``plugin_creator_list`` exist only when emulating 10.x
(TensorRT 11.0 removed them); ``all_creators_recursive`` from 10.10.

Example:
    >>> from pyplugins import emulator as trt
    >>> reg = trt.get_plugin_registry()
    >>> reg is trt.get_plugin_registry()
    True
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Tuple

from pyplugins.emulator.bases import IPluginCreatorInterface
from pyplugins.emulator.version import emulated_version


class IPluginRegistry:
    """``trt.IPluginRegistry``: the process-wide table of plugin creators."""

    def __init__(self) -> None:
        self._creators: Dict[Tuple[str, str, str], Any] = {}
        self._lock = threading.RLock()

    def register_creator(self, creator: IPluginCreatorInterface, plugin_namespace: str = "") -> bool:
        """Register ``creator`` under ``plugin_namespace``; False if the key is taken.

        The registry sets the creator's ``plugin_namespace`` and keeps it alive (keep_alive<1,2>).
        """
        if not isinstance(creator, IPluginCreatorInterface):
            msg = ("register_creator(): incompatible function arguments; creator must be an "
                   f"IPluginCreator (got {creator!r})")
            raise TypeError(msg)
        with self._lock:
            creator.plugin_namespace = plugin_namespace
            key = (creator.name, creator.plugin_version, plugin_namespace)
            if None in key or key in self._creators:
                return False
            self._creators[key] = creator
            return True

    def deregister_creator(self, creator: IPluginCreatorInterface) -> bool:
        """Remove ``creator``; False if it was not registered."""
        with self._lock:
            for key, value in list(self._creators.items()):
                if value is creator:
                    del self._creators[key]
                    return True
            return False

    def get_creator(self, type: str, version: str,  # noqa: A002 - TensorRT's name
                    plugin_namespace: str = "") -> Optional[Any]:
        """The creator registered for (type, version, namespace), or None (10.0+)."""
        with self._lock:
            return self._creators.get((type, version, plugin_namespace))

    @property
    def all_creators(self) -> List[Any]:
        """Every registered creator (10.0+)."""
        with self._lock:
            return list(self._creators.values())

    def __getattr__(self, name: str) -> Any:
        major, minor = emulated_version()
        if name == "all_creators_recursive" and (major, minor) >= (10, 10):
            return self.all_creators
        if major == 10 and name == "get_plugin_creator":
            return self.get_creator
        if major == 10 and name == "plugin_creator_list":
            return self.all_creators
        msg = f"'IPluginRegistry' object has no attribute {name!r}"
        if name in ("get_plugin_creator", "plugin_creator_list"):
            msg += (f" (TensorRT 11.0 removed it; emulating {major}.{minor}: use get_creator / "
                    "all_creators, or set PYPLUGINS_TRT_VERSION=10.16)")
        raise AttributeError(msg)

    def _clear(self) -> None:
        """Emulator-only: forget every creator (for tests)."""
        with self._lock:
            self._creators.clear()


_plugin_registry: Optional[IPluginRegistry] = None
_registry_lock = threading.Lock()


def get_plugin_registry() -> IPluginRegistry:
    """The process's plugin registry; the same object on every call (10.6+ behaviour)."""
    global _plugin_registry
    with _registry_lock:
        if _plugin_registry is None:
            _plugin_registry = IPluginRegistry()
        return _plugin_registry
