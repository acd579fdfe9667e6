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


class MissingDependencyError(PyPluginsError, ImportError):
    """An optional dependency (cupy, onnx, tensorrt) is needed but not installed."""


def missing(package: str, needed_for: str, extra: str) -> MissingDependencyError:
    """Build the error for an absent optional dependency, with the command that installs it.

    Example:
        >>> str(missing("cupy", "running kernels", "cuda")).startswith("cupy is needed")
        True
    """
    return MissingDependencyError(
        f"{package} is needed for {needed_for} but is not installed; "
        f"install it with: pip install 'pyplugins[{extra}]'"
    )
