"""The four decorators of ``tensorrt.plugin``: ``register``, ``impl``, ``autotune`` and ``aot_impl`` (10.9+) (§8).

Each checks its function at decoration time (:mod:`pyplugins.emulator.plugin.validate`) and
records it on the plugin's definition; ``register`` also binds ``tensorrt.plugin.op.<ns>.<name>``
and, unless ``lazy_register``, registers the creator in TensorRT's plugin registry. The
decorators return the function unchanged.

Example::

    import tensorrt.plugin as trtp

    @trtp.register("my_project::add_one")
    def add_one_desc(inp0: trtp.TensorDesc, block_size: int) -> trtp.TensorDesc:
        return inp0.like()

    @trtp.impl("my_project::add_one")
    def add_one_impl(inp0, block_size: int, outputs, stream) -> None:
        ...  # launch a kernel on `stream` reading inp0, writing outputs[0]
"""

from __future__ import annotations

from typing import Callable

from pyplugins.emulator.plugin.creator import QDP_REGISTRY, register_plugin_creator
from pyplugins.emulator.plugin.definitions import PluginDef, op
from pyplugins.emulator.plugin.validate import (parse_register_inputs, parse_register_return,
                                                split_plugin_id, validate_aot_impl,
                                                validate_autotune, validate_impl)
from pyplugins.errors import QDPDefinitionError

__all__ = ["aot_impl", "autotune", "impl", "register"]


def register(plugin_id: str, lazy_register: bool = False) -> Callable[[Callable], Callable]:
    """Declare plugin ``plugin_id`` ("namespace::name") by its descriptor function.

    The function takes the inputs as ``TensorDesc`` and then the attributes (int, float, bool,
    str, bytes or ``npt.NDArray[dtype]``), all annotated, and returns the output descriptor(s),
    annotated ``TensorDesc`` or ``Tuple[TensorDesc, ...]``. With ``lazy_register`` the creator
    is registered at the first ``trtp.op`` call instead of now.

    Raises:
        QDPDefinitionError: a bad id, signature or return annotation, or an id already defined.
        QDPTypeError: an annotation that is not a class (``List[int]``, a string annotation).
    """
    def decorator(register_func: Callable) -> Callable:
        namespace, name = split_plugin_id(plugin_id)
        op_namespace = op.define_or_get(namespace)
        if hasattr(op_namespace, name):
            msg = (f"tensorrt.plugin.register('{plugin_id}'): '{plugin_id}' is already defined "
                   "(each plugin id is registered once per process)")
            raise QDPDefinitionError(msg)
        tensor_names, input_attrs, schema, attrs_types = parse_register_inputs(
            register_func, lazy_register, plugin_id)
        plugin_def = PluginDef()
        plugin_def.plugin_id = plugin_id
        plugin_def.register_func = register_func
        plugin_def.input_tensor_names = tensor_names
        plugin_def.input_attrs = input_attrs
        plugin_def.input_arg_schema = schema
        plugin_def.num_outputs = parse_register_return(register_func, plugin_id)
        QDP_REGISTRY[plugin_id] = plugin_def
        if not lazy_register:
            register_plugin_creator(name, namespace, attrs_types)
        op_namespace.define(name, plugin_def)
        return register_func

    return decorator


def _definition(plugin_id: str, role: str) -> PluginDef:
    if plugin_id not in QDP_REGISTRY:
        msg = (f"tensorrt.plugin.{role}('{plugin_id}'): no plugin '{plugin_id}' is registered; "
               "decorate its descriptor function with tensorrt.plugin.register first")
        raise QDPDefinitionError(msg)
    return QDP_REGISTRY[plugin_id]


def impl(plugin_id: str) -> Callable[[Callable], Callable]:
    """Give plugin ``plugin_id`` its JIT implementation, run at every ``enqueue``.

    The function takes ``(inputs as Tensor..., the attributes it needs..., outputs, stream[,
    tactic])``; the attributes it names are the ones serialized into the engine.
    """
    def decorator(impl_func: Callable) -> Callable:
        plugin_def = _definition(plugin_id, "impl")
        attr_names, expects_tactic = validate_impl(impl_func, plugin_def)
        plugin_def.impl_func = impl_func
        plugin_def.impl_attr_names = attr_names
        plugin_def.expects_tactic = expects_tactic
        return impl_func

    return decorator


def aot_impl(plugin_id: str) -> Callable[[Callable], Callable]:
    """Give plugin ``plugin_id`` an ahead-of-time implementation (10.9+).

    The function takes ``(inputs as TensorDesc..., attributes..., outputs, tactic)`` and returns
    ``(kernel name, PTX, KernelLaunchParams, SymIntExprs of extra int32 arguments)``, annotated.
    """
    def decorator(aot_impl_func: Callable) -> Callable:
        plugin_def = _definition(plugin_id, "aot_impl")
        plugin_def.aot_impl_attr_names = validate_aot_impl(aot_impl_func, plugin_def)
        plugin_def.aot_impl_func = aot_impl_func
        return aot_impl_func

    return decorator


def autotune(plugin_id: str) -> Callable[[Callable], Callable]:
    """Give plugin ``plugin_id`` the type/format combinations and tactics it supports.

    The function takes ``(inputs as TensorDesc..., attributes..., outputs)`` and returns a list
    of ``AutoTuneCombination``. Without one, TensorRT uses the input types given, the registered
    output types and LINEAR formats.
    """
    def decorator(autotune_func: Callable) -> Callable:
        plugin_def = _definition(plugin_id, "autotune")
        plugin_def.autotune_attr_names = validate_autotune(autotune_func, plugin_def)
        plugin_def.autotune_func = autotune_func
        return autotune_func

    return decorator
