"""Decoration-time checks of ``tensorrt.plugin``: the register signature and return, and the
signatures of impl, aot_impl and autotune against it (§8).

The rules are TensorRT's (``_validate.py``): the id is ``"namespace::name"`` without dots and not
in a reserved namespace; register parameters are annotated, have no defaults, list tensors
(``TensorDesc``) before attributes, and attributes are int, float, bool, str, bytes or
``npt.NDArray[dtype]`` of a serializable dtype; the other functions may omit annotations but must
take exactly ``(tensors..., attributes used..., outputs, stream[, tactic])`` (impl),
``(tensors..., attributes..., outputs, tactic)`` (aot_impl, which must annotate its return) or
``(tensors..., attributes..., outputs)`` (autotune), attributes in register order. Annotations
are read as objects, so a module with ``from __future__ import annotations`` fails in TensorRT
(its annotations are strings); the errors here say so. (For that reason this module, whose
examples define annotated functions, does not use it either.)

Example:
    >>> from pyplugins.emulator.plugin.descriptors import TensorDesc
    >>> def reg(inp0: TensorDesc, block: int, name: str) -> TensorDesc: ...
    >>> tensors, attrs, schema, types = parse_register_inputs(reg, False, "demo::p")
    >>> tensors, list(attrs), types["name"]
    (['inp0'], ['block', 'name'], (True, <class 'str'>))
"""

import inspect
import types
import typing
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from pyplugins.emulator.plugin.attributes import is_npt_ndarray, is_numpy_array, numpy_dtype_of
from pyplugins.emulator.plugin.combinations import AutoTuneCombination
from pyplugins.emulator.plugin.descriptors import TensorDesc
from pyplugins.emulator.plugin.sym_lists import SymExprs
from pyplugins.emulator.plugin.tensor import KernelLaunchParams, Tensor
from pyplugins.errors import QDPDefinitionError, QDPTypeError

__all__ = ["DISALLOWED_ATTR_NAMES", "RESERVED_NAMESPACES", "SERIALIZABLE_BUILTIN_TYPES",
           "SERIALIZABLE_NP_DTYPES", "parse_register_inputs", "parse_register_return",
           "split_plugin_id", "validate_aot_impl", "validate_autotune", "validate_impl"]

SERIALIZABLE_BUILTIN_TYPES = (int, float, bytes, bool, str)
SERIALIZABLE_NP_DTYPES = (np.int8, np.int16, np.int32, np.int64, np.float16, np.float32,
                          np.float64, bool, np.bool_)
#: Namespaces TensorRT keeps for itself (the empty one included).
RESERVED_NAMESPACES = frozenset({"", "trt", "tensorrt", "std"})
#: Names the impl/aot_impl/autotune signatures use for themselves.
DISALLOWED_ATTR_NAMES = frozenset({"outputs", "stream", "tactic"})


def split_plugin_id(plugin_id: str) -> Tuple[str, str]:
    """``"ns::name"`` -> ``(ns, name)``, with TensorRT's rules on both parts.

    Raises:
        QDPDefinitionError: not two parts, a dot in either, or a reserved namespace.

    Example:
        >>> split_plugin_id("my_project::add_one")
        ('my_project', 'add_one')
    """
    parts = plugin_id.split("::") if isinstance(plugin_id, str) else []
    if len(parts) != 2:
        msg = f"QDP plugin id {plugin_id!r} must read 'namespace::name' (one '::')"
        raise QDPDefinitionError(msg)
    ns, name = parts
    for what, text in (("namespace", ns), ("name", name)):
        if "." in text:
            msg = f"QDP plugin id {plugin_id!r}: the {what} {text!r} must not contain '.'"
            raise QDPDefinitionError(msg)
    if ns in RESERVED_NAMESPACES:
        msg = (f"QDP plugin id {plugin_id!r}: namespace {ns!r} is reserved by TensorRT "
               f"({sorted(RESERVED_NAMESPACES)}); use your project's name")
        raise QDPDefinitionError(msg)
    return ns, name


def _is_subclass(annotation: Any, base: type, where: str) -> bool:
    """``issubclass(annotation, base)`` as TensorRT calls it, with a clear TypeError."""
    try:
        return issubclass(annotation, base)
    except TypeError:
        if isinstance(annotation, str):
            hint = (" (a string: remove `from __future__ import annotations`, TensorRT reads "
                    "annotations as objects)")
        elif type(getattr(annotation, "__origin__", None)).__name__ == "TypeAliasType":
            # NumPy 2.5 made numpy.typing.NDArray a PEP 695 alias; TensorRT's own issubclass
            # test raises on it the same way (inferred from _validate.py, which calls issubclass
            # on every annotation; not run against real TensorRT here).
            hint = (" (NumPy >= 2.5 defines numpy.typing.NDArray as a type alias, which "
                    "TensorRT's annotation check cannot read: write "
                    "np.ndarray[typing.Any, np.dtype[np.float32]] instead of "
                    "npt.NDArray[np.float32])")
        else:
            hint = " (lists and tuples of attributes are not supported)"
        msg = f"{where}: annotation {annotation!r} is not a class{hint}"
        raise QDPTypeError(msg) from None


def parse_register_inputs(func: Callable, lazy_register: bool, plugin_id: str
                          ) -> Tuple[List[str], Dict[str, Any], str, Dict[str, tuple]]:
    """``(tensor names, {attribute: annotation}, schema text, {attribute: (builtin?, type)})``
    of a register function."""
    where = f"tensorrt.plugin.register('{plugin_id}')"
    tensor_names: List[str] = []
    input_attrs: Dict[str, Any] = {}
    attrs_types: Dict[str, tuple] = {}
    chunks: List[str] = []
    saw_attr = False
    sig = inspect.signature(func)
    for idx, (name, param) in enumerate(sig.parameters.items()):
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            msg = f"{where}: argument {name!r} must be positional-or-keyword or keyword-only"
            raise QDPDefinitionError(msg)
        if param.annotation is param.empty:
            msg = (f"{where}: argument {name!r} has no type annotation; annotate tensors "
                   "TensorDesc and attributes int, float, bool, str, bytes or npt.NDArray[dtype]")
            raise QDPDefinitionError(msg)
        if param.default is not param.empty:
            msg = f"{where}: argument {name!r} has a default value; QDP attributes take none"
            raise QDPDefinitionError(msg)
        if _is_subclass(param.annotation, TensorDesc, where):
            if saw_attr:
                msg = f"{where}: tensor {name!r} follows an attribute; put TensorDescs first {sig}"
                raise QDPDefinitionError(msg)
            tensor_names.append(name)
            chunks.append(f"TensorDesc {name}")
            continue
        if idx == 0:
            msg = f"{where}: the first argument must be a TensorDesc, then attributes {sig}"
            raise QDPDefinitionError(msg)
        if name in DISALLOWED_ATTR_NAMES:
            msg = f"{where}: {name!r} cannot be an attribute name ({sorted(DISALLOWED_ATTR_NAMES)})"
            raise QDPDefinitionError(msg)
        if param.annotation in SERIALIZABLE_BUILTIN_TYPES:
            attrs_types[name] = (True, param.annotation)
        elif is_numpy_array(param.annotation):
            if not lazy_register:
                if param.annotation == np.ndarray:
                    msg = (f"{where}: attribute {name!r} is annotated np.ndarray; without "
                           "lazy_register annotate it numpy.typing.NDArray[dtype]")
                    raise QDPDefinitionError(msg)
                if is_npt_ndarray(param.annotation):
                    dtype = numpy_dtype_of(param.annotation)
                    if dtype not in SERIALIZABLE_NP_DTYPES:
                        msg = (f"{where}: attribute {name!r} has element type {dtype!r}; "
                               f"arrays of {SERIALIZABLE_NP_DTYPES} are supported")
                        raise QDPDefinitionError(msg)
                    attrs_types[name] = (False, dtype)
        else:
            msg = (f"{where}: attribute {name!r} of type {param.annotation!r} cannot be "
                   f"serialized; use one of {SERIALIZABLE_BUILTIN_TYPES} or an npt.NDArray of "
                   f"{SERIALIZABLE_NP_DTYPES}")
            raise QDPDefinitionError(msg)
        saw_attr = True
        chunks.append(f"{param.annotation} {name}")
        input_attrs[name] = param.annotation
    return tensor_names, input_attrs, f"({', '.join(chunks)})", attrs_types


def parse_register_return(func: Callable, plugin_id: str) -> int:
    """The number of outputs a register function's return annotation declares."""
    where = f"tensorrt.plugin.register('{plugin_id}')"
    sig = inspect.signature(func)
    ret = sig.return_annotation
    if ret is sig.empty:
        msg = f"{where}: the function has no return annotation; annotate TensorDesc or Tuple[...]"
        raise QDPDefinitionError(msg)
    bad = (f"{where}: returns {ret!r}; the return annotation must be TensorDesc or "
           "Tuple[TensorDesc, ...]")
    if typing.get_origin(ret) is not tuple:
        if not inspect.isclass(ret) or not issubclass(ret, TensorDesc):
            raise QDPDefinitionError(bad)
        return 1
    args = typing.get_args(ret)
    for arg in args:
        if not _is_subclass(arg, TensorDesc, where):
            raise QDPDefinitionError(bad)
    return len(args)


def _check_signature(func: Callable, plugin_def: Any, role: str, tensor_class: type,
                     specials: Dict[str, type]) -> Tuple[List[str], bool]:
    """Attributes named by ``func`` (register order), and whether it takes ``tactic``."""
    where = f"tensorrt.plugin.{role}('{plugin_def.plugin_id}')"
    attr_names: List[str] = []
    sig = inspect.signature(func)
    for name, param in sig.parameters.items():
        annotation = param.annotation
        if annotation is param.empty:
            if name in plugin_def.input_attrs:
                attr_names.append(name)
            continue
        if name == "outputs":
            if typing.get_origin(annotation) is not tuple:
                msg = f"{where}: 'outputs' must be Tuple[{tensor_class.__name__}] ({annotation!r})"
                raise QDPDefinitionError(msg)
            for arg in typing.get_args(annotation):
                if not _is_subclass(arg, tensor_class, where):
                    msg = (f"{where}: 'outputs' is annotated {annotation!r}; it must be "
                           f"Tuple[{tensor_class.__name__}]")
                    raise QDPDefinitionError(msg)
        elif name in specials:
            if not _is_subclass(annotation, specials[name], where):
                msg = f"{where}: {name!r} must be an int (annotated {annotation!r})"
                raise QDPDefinitionError(msg)
        elif _is_subclass(annotation, tensor_class, where):
            if name not in plugin_def.input_tensor_names:
                msg = (f"{where}: tensor {name!r} is not an input of the plugin "
                       f"({plugin_def.input_tensor_names})")
                raise QDPDefinitionError(msg)
        else:
            if name not in plugin_def.input_attrs:
                msg = (f"{where}: {name!r} is not an attribute of the plugin "
                       f"({list(plugin_def.input_attrs)})")
                raise QDPDefinitionError(msg)
            if annotation != plugin_def.input_attrs[name]:
                msg = (f"{where}: attribute {name!r} is annotated {annotation!r} but registered "
                       f"as {plugin_def.input_attrs[name]!r}")
                raise QDPDefinitionError(msg)
            attr_names.append(name)
    return attr_names, "tactic" in sig.parameters


def _expect(func: Callable, plugin_def: Any, role: str, attr_names: List[str], tail: str) -> None:
    if not plugin_def.input_tensor_names:  # TensorRT's expected schema then starts "(, " and
        msg = (f"tensorrt.plugin.{role}('{plugin_def.plugin_id}'): a plugin without input "
               f"tensors cannot have a {role} function (TensorRT's signature check never "
               "passes for one)")
        raise QDPDefinitionError(msg)  # no function signature can match it
    names = list(plugin_def.input_tensor_names)
    names += [n for n in plugin_def.input_attrs if n in attr_names]
    expected = f"({', '.join(names)}{tail})"
    got = f"({', '.join(inspect.signature(func).parameters)})"
    if got != expected:
        msg = (f"tensorrt.plugin.{role}('{plugin_def.plugin_id}'): the function takes {got}, "
               f"expected {expected} (tensors, then the attributes it uses in register order)")
        raise QDPDefinitionError(msg)


def validate_impl(func: Callable, plugin_def: Any) -> Tuple[List[str], bool]:
    """The attributes an impl uses and whether it takes ``tactic`` (signature checked)."""
    attr_names, tactic = _check_signature(func, plugin_def, "impl", Tensor,
                                          {"stream": int, "tactic": int})
    _expect(func, plugin_def, "impl", attr_names,
            ", outputs, stream, tactic" if tactic else ", outputs, stream")
    ret = inspect.signature(func).return_annotation
    if ret is not inspect.Signature.empty and ret is not None:
        msg = f"tensorrt.plugin.impl('{plugin_def.plugin_id}'): the return annotation must be None"
        raise QDPDefinitionError(msg)
    return attr_names, tactic


def validate_autotune(func: Callable, plugin_def: Any) -> List[str]:
    """The attributes an autotune function uses (signature and return annotation checked)."""
    attr_names, _ = _check_signature(func, plugin_def, "autotune", TensorDesc, {})
    _expect(func, plugin_def, "autotune", attr_names, ", outputs")
    ret = inspect.signature(func).return_annotation
    if ret is inspect.Signature.empty:
        return attr_names
    bad = (f"tensorrt.plugin.autotune('{plugin_def.plugin_id}'): returns {ret!r}; annotate "
           "List[AutoTuneCombination]")
    if typing.get_origin(ret) is not list:
        if not inspect.isclass(ret) or not issubclass(ret, AutoTuneCombination):
            raise QDPDefinitionError(bad)
    elif not all(_is_subclass(a, AutoTuneCombination, bad) for a in typing.get_args(ret)):
        raise QDPDefinitionError(bad)
    return attr_names


def _str_or_bytes(annotation: Any) -> bool:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return all(a is str or a is bytes for a in typing.get_args(annotation))
    return annotation is str or annotation is bytes


def validate_aot_impl(func: Callable, plugin_def: Any) -> List[str]:
    """The attributes an aot_impl uses (signature and the mandatory return annotation
    ``Tuple[str|bytes, str|bytes, KernelLaunchParams, SymExprs]`` checked)."""
    where = f"tensorrt.plugin.aot_impl('{plugin_def.plugin_id}')"
    attr_names, _ = _check_signature(func, plugin_def, "aot_impl", TensorDesc, {"tactic": int})
    _expect(func, plugin_def, "aot_impl", attr_names, ", outputs, tactic")
    ret = inspect.signature(func).return_annotation
    expected = "Tuple[str | bytes, str | bytes, KernelLaunchParams, SymIntExprs]"
    if ret is inspect.Signature.empty:
        msg = f"{where}: the function has no return annotation; annotate {expected}"
        raise QDPDefinitionError(msg)
    args = typing.get_args(ret)
    if typing.get_origin(ret) is not tuple or len(args) != 4:
        msg = f"{where}: returns {ret!r}; annotate {expected}"
        raise QDPDefinitionError(msg)
    for index in (0, 1):
        if not _str_or_bytes(args[index]):
            msg = f"{where}: return item {index} is {args[index]!r}; it must be str or bytes"
            raise QDPDefinitionError(msg)
    if not _is_subclass(args[2], KernelLaunchParams, where):
        msg = f"{where}: return item 2 is {args[2]!r}; it must be tensorrt.plugin.KernelLaunchParams"
        raise QDPDefinitionError(msg)
    if not _is_subclass(args[3], SymExprs, where):
        msg = f"{where}: return item 3 is {args[3]!r}; it must be a tensorrt.plugin.SymExprs"
        raise QDPDefinitionError(msg)
    return attr_names
