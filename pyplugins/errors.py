"""The exceptions pyplugins raises; each subclasses the builtin a caller would naturally catch.

Example:
    >>> from pyplugins.errors import FieldError
    >>> try:
    ...     raise FieldError("Field 'pads' of plugin 'CircPad' must be ints (got 1.5, a float).")
    ... except ValueError as err:
    ...     print(type(err).__name__)
    FieldError
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Dict, Tuple


class PyPluginsError(Exception):
    """Base class of every error raised by pyplugins."""


class PluginDefinitionError(PyPluginsError, TypeError):
    """A plugin class is declared wrongly (missing identity, bad field spec, bad kernel spec)."""


class FieldError(PyPluginsError, ValueError):
    """A plugin field (attribute) has a missing, mistyped or out-of-range value."""


class SerializationError(PyPluginsError, ValueError):
    """Serialized plugin state is malformed, truncated, of another version or of another plugin."""


class ShapeError(PyPluginsError, ValueError):
    """Input shapes or shape expressions a plugin cannot accept."""


class FormatError(PyPluginsError, ValueError):
    """A tensor's data type or format is not one a plugin supports."""


class RegistrationError(PyPluginsError, ValueError):
    """A plugin creator could not be registered (duplicate name/version/namespace, ...)."""


class KernelCompileError(PyPluginsError, RuntimeError):
    """A ``kernels_cu`` source failed to compile.

    Attributes:
        source: the ``.cu`` file name.
        kernel: the kernel name expression being instantiated.
        options: the compiler options used.
        log: the compiler's log, with line numbers.
    """

    def __init__(self, message: str, *, source: str = "", kernel: str = "",
                 options: tuple = (), log: str = "") -> None:
        super().__init__(message)
        self.source = source
        self.kernel = kernel
        self.options = tuple(options)
        self.log = log


class LaunchError(PyPluginsError, RuntimeError):
    """A kernel launch was refused or given arguments it cannot take."""


class AotUnsupportedError(PyPluginsError, NotImplementedError):
    """A plugin cannot give TensorRT an ahead-of-time kernel (QDP ``aot_impl``); the message
    names the plugin and the reason."""


class QDPDefinitionError(PyPluginsError, ValueError):
    """``tensorrt.plugin`` (QDP) refuses a definition or a value where TensorRT raises ValueError
    (a decorator's signature, an attribute's type, an op call's schema, a type/format string)."""


class QDPTypeError(PyPluginsError, TypeError):
    """``tensorrt.plugin`` (QDP) gets an object of the wrong kind where TensorRT raises TypeError
    (an annotation that is not a class, an ``aot_impl`` result, a field it cannot convert)."""


class QDPRuntimeError(PyPluginsError, RuntimeError):
    """A ``tensorrt.plugin`` symbolic expression is used where it has no value (a fake or
    non-constant expression asked for its constant or its truth value)."""


class QDPAttributeError(PyPluginsError, AttributeError):
    """``tensorrt.plugin`` looked up a name that does not exist where TensorRT raises
    AttributeError (a data type or format name in an autotune string, a launch parameter)."""


class QDPAssertionError(PyPluginsError, AssertionError):
    """An internal consistency rule of ``tensorrt.plugin`` failed where TensorRT's own code
    asserts (an unexpected field in ``create_plugin``, a combination never offered)."""
class ExecutionError(PyPluginsError, RuntimeError):
    """A plugin node could not run on the execution path (:mod:`pyplugins.runtime.execute`).

    A callback raised or returned what TensorRT cannot use (the message carries the ``[ERROR]``
    line TensorRT prints), the plugin refuses the tensors it is given, or there is no way to
    produce outputs here (no GPU and no NumPy reference).

    Attributes:
        plugin: ``"Name:Version:Namespace"`` of the creator ("" when not known).
        node: the node's name (what ``create_plugin`` received).
        method: the callback that failed, or None when none did.

    Example:
        >>> err = ExecutionError("boom", plugin="X:1:", node="n", method="enqueue")
        >>> isinstance(err, RuntimeError), err.method
        (True, 'enqueue')
    """

    def __init__(self, message: str, *, plugin: str = "", node: str = "",
                 method: str | None = None) -> None:
        super().__init__(message)
        self.plugin, self.node, self.method = plugin, node, method


class AOTArtifactError(PyPluginsError, ValueError):
    """An AOT artifact (the kernel, launch parameters and arguments an engine keeps of a QDP
    plugin built ahead of time) cannot be read or evaluated."""


class MissingDependencyError(PyPluginsError, ImportError):
    """An optional dependency (cupy, onnx, tensorrt) is needed but not installed."""


#: Optional dependency (its import name) -> (the pip requirement, the extra of ``setup.cfg`` that
#: brings it). The distribution is ``pyplugins-trt``: the PyPI name ``pyplugins`` is another project.
OPTIONAL: Dict[str, Tuple[str, str]] = {
    "cupy": ("cupy-cuda13x>=13", "cuda"),
    "numba.cuda": ("numba-cuda[cu13]>=0.30", "numba"),
    "onnx": ("onnx>=1.15", "onnx"),
    "onnxruntime": ("onnxruntime>=1.17", "models"),
    "onnx_graphsurgeon": ("onnx-graphsurgeon>=0.5", "models"),
    "polygraphy": ("polygraphy>=0.49", "models"),
    "tensorrt": ("tensorrt>=10,<12", "trt"),
}


def install_hint(module: str) -> str:
    """The command that installs an optional dependency (see :data:`OPTIONAL`).

    Example:
        >>> install_hint("onnx")
        "pip install 'onnx>=1.15' (or, in a pyplugins checkout: pip install '.[onnx]')"
    """
    requirement, extra = OPTIONAL[module]
    return f"pip install '{requirement}' (or, in a pyplugins checkout: pip install '.[{extra}]')"


def missing(module: str, needed_for: str) -> MissingDependencyError:
    """The error for an absent optional dependency, naming who needs it and how to install it.

    Example:
        >>> print(missing("cupy", "running kernels"))
        cupy is needed for running kernels but is not installed; install it with: pip install
        'cupy-cuda13x>=13' (or, in a pyplugins checkout: pip install '.[cuda]')
    """
    msg = f"{module} is needed for {needed_for} but is not installed; install it with: "
    return MissingDependencyError(msg + install_hint(module))


def require(module: str, needed_for: str) -> ModuleType:
    """Import an optional dependency (a key of :data:`OPTIONAL`), or raise :func:`missing`'s error.

    The one way pyplugins imports what it does not need eagerly.

    Example:
        >>> require("onnx", "the example").__name__
        'onnx'
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise missing(module, needed_for) from err
