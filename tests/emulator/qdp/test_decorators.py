"""The decorators refuse what TensorRT's tensorrt.plugin refuses, with the same exception types.

TensorRT raises ValueError for every rule below, and TypeError where its ``issubclass`` meets an
annotation that is not a class (``_validate.py``); the emulator's errors subclass those builtins.
No ``from __future__ import annotations``: annotations must stay objects, as in a QDP module.
"""

import re
from typing import Any, List, Tuple, Union

import numpy as np
import pytest

from pyplugins._config import override
from pyplugins.errors import PyPluginsError, QDPDefinitionError, QDPTypeError


def _register(trtp, plugin_id, func, **kw):
    return trtp.register(plugin_id, **kw)(func)


def _bad_register_cases(trtp):
    TD = trtp.TensorDesc

    def no_annotation(inp0) -> TD: ...
    def default(inp0: TD, k: int = 3) -> TD: ...
    def star(inp0: TD, *rest: TD) -> TD: ...
    def attr_first(k: int, inp0: TD) -> TD: ...
    def interspersed(inp0: TD, k: int, inp1: TD) -> TD: ...
    def reserved_name(inp0: TD, stream: int) -> TD: ...
    def list_attr(inp0: TD, k: list) -> TD: ...
    def bare_array(inp0: TD, k: np.ndarray) -> TD: ...
    def uint8_array(inp0: TD, k: np.ndarray[Any, np.dtype[np.uint8]]) -> TD: ...
    def no_return(inp0: TD): ...
    def int_return(inp0: TD) -> int: ...
    def tuple_return(inp0: TD) -> Tuple[TD, int]: ...
    def ellipsis_return(inp0: TD) -> Tuple[TD, ...]: ...
    def typing_list(inp0: TD, k: List[int]) -> TD: ...
    def string_annotation(inp0: "TD") -> TD: ...

    return [
        ("noseparator", no_annotation, QDPDefinitionError, "namespace::name"),
        ("a.b::op", no_annotation, QDPDefinitionError, "must not contain '.'"),
        ("ns::o.p", no_annotation, QDPDefinitionError, "must not contain '.'"),
        ("trt::op", no_annotation, QDPDefinitionError, "reserved"),
        ("::op", no_annotation, QDPDefinitionError, "reserved"),
        ("qdp_tests::r1", no_annotation, QDPDefinitionError, "no type annotation"),
        ("qdp_tests::r2", default, QDPDefinitionError, "default value"),
        ("qdp_tests::r3", star, QDPDefinitionError, "positional-or-keyword"),
        ("qdp_tests::r4", attr_first, QDPDefinitionError, "first argument must be a TensorDesc"),
        ("qdp_tests::r5", interspersed, QDPDefinitionError, "follows an attribute"),
        ("qdp_tests::r6", reserved_name, QDPDefinitionError, "cannot be an attribute name"),
        ("qdp_tests::r7", list_attr, QDPDefinitionError, "cannot be serialized"),
        ("qdp_tests::r8", bare_array, QDPDefinitionError, "without lazy_register"),
        ("qdp_tests::r9", uint8_array, QDPDefinitionError, "element type"),
        ("qdp_tests::r10", no_return, QDPDefinitionError, "no return annotation"),
        ("qdp_tests::r11", int_return, QDPDefinitionError, "return annotation must be"),
        ("qdp_tests::r12", tuple_return, QDPDefinitionError, "return annotation must be"),
        ("qdp_tests::r15", ellipsis_return, QDPTypeError, "not a class"),
        ("qdp_tests::r13", typing_list, QDPTypeError, "lists and tuples"),
        ("qdp_tests::r14", string_annotation, QDPTypeError, "from __future__ import annotations"),
    ]


def test_register_refuses_what_tensorrt_refuses(trtp):
    for plugin_id, func, error, match in _bad_register_cases(trtp):
        with pytest.raises(error, match=match) as info:
            _register(trtp, plugin_id, func)
        builtin = ValueError if error is QDPDefinitionError else TypeError
        assert isinstance(info.value, (builtin, PyPluginsError)), plugin_id
        assert isinstance(info.value, builtin), plugin_id


def test_register_accepts_every_serializable_attribute_and_lazy_bare_arrays(trtp):
    TD = trtp.TensorDesc

    def ok(inp0: TD, inp1: TD, a: int, b: float, c: bool, d: str, e: bytes,
           f: np.ndarray[Any, np.dtype[np.float16]], *, g: np.ndarray[Any, np.dtype[np.bool_]]) -> Tuple[TD, TD]:
        return inp0.like(), inp1.like()

    def lazy(inp0: TD, k: np.ndarray) -> TD:
        return inp0.like()

    assert _register(trtp, "qdp_tests::ok", ok) is ok
    assert trtp.op.qdp_tests.ok.num_outputs == 2
    assert trtp.op.qdp_tests.ok.input_tensor_names == ["inp0", "inp1"]
    assert _register(trtp, "qdp_tests::lazy_bare", lazy, lazy_register=True) is lazy
    with pytest.raises(ValueError, match="already defined"):
        _register(trtp, "qdp_tests::ok", ok)


@pytest.fixture
def defined(trtp):
    TD = trtp.TensorDesc

    @trtp.register("qdp_tests::target")
    def target(inp0: TD, inp1: TD, alpha: float, name: str) -> TD:
        return inp0.like()

    return trtp


def _bad_impls(trtp):
    T = trtp.Tensor

    def missing_stream(inp0, inp1, outputs): ...
    def attrs_out_of_order(inp0, inp1, name, alpha, outputs, stream): ...
    def wrong_attr_type(inp0, inp1, alpha: int, outputs, stream): ...
    def unknown_attr(inp0, inp1, beta: float, outputs, stream): ...
    def unknown_tensor(inp0, inp2: T, outputs, stream): ...
    def outputs_list(inp0, inp1, outputs: List[T], stream): ...
    def stream_str(inp0, inp1, outputs, stream: str): ...
    def returns_int(inp0, inp1, outputs, stream) -> int: ...
    def tactic_first(inp0, inp1, outputs, tactic, stream): ...

    return [(missing_stream, "expected (inp0, inp1, outputs, stream)"),
            (attrs_out_of_order, "expected (inp0, inp1, alpha, name, outputs, stream)"),
            (wrong_attr_type, "registered as <class 'float'>"),
            (unknown_attr, "'beta' is not an attribute"), (unknown_tensor, "not an input"),
            (outputs_list, "'outputs' must be Tuple"), (stream_str, "'stream' must be an int"),
            (returns_int, "must be None"), (tactic_first, "expected")]


def test_impl_signature_must_follow_the_registration(defined):
    trtp = defined
    for func, match in _bad_impls(trtp):
        with pytest.raises(ValueError, match=re.escape(match)):
            trtp.impl("qdp_tests::target")(func)

    def good(inp0: trtp.Tensor, inp1, name: str, outputs: Tuple[trtp.Tensor], stream: int,
             tactic: int) -> None: ...

    assert trtp.impl("qdp_tests::target")(good) is good
    definition = trtp.op.qdp_tests.target
    assert definition.impl_attr_names == ["name"] and definition.expects_tactic
    with pytest.raises(ValueError, match="no plugin 'qdp_tests::nothing'"):
        trtp.impl("qdp_tests::nothing")(good)


def test_autotune_signature_and_return_annotation(defined):
    trtp = defined

    def extra_stream(inp0, inp1, outputs, stream): ...
    def returns_str(inp0, inp1, outputs) -> str: ...
    def good(inp0: trtp.TensorDesc, inp1, alpha: float, outputs: Tuple[trtp.TensorDesc]
             ) -> List[trtp.AutoTuneCombination]: ...

    with pytest.raises(ValueError, match=r"expected \(inp0, inp1, outputs\)"):
        trtp.autotune("qdp_tests::target")(extra_stream)
    with pytest.raises(ValueError, match="annotate List\\[AutoTuneCombination\\]"):
        trtp.autotune("qdp_tests::target")(returns_str)
    trtp.autotune("qdp_tests::target")(good)
    assert trtp.op.qdp_tests.target.autotune_attr_names == ["alpha"]


def test_aot_impl_needs_tactic_and_an_annotated_four_part_return(defined):
    trtp = defined
    ok_ret = Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]

    def no_tactic(inp0, inp1, outputs) -> ok_ret: ...
    def no_return(inp0, inp1, outputs, tactic): ...
    def three(inp0, inp1, outputs, tactic) -> Tuple[str, str, trtp.KernelLaunchParams]: ...
    def int_name(inp0, inp1, outputs, tactic) -> Tuple[int, str, trtp.KernelLaunchParams,
                                                        trtp.SymExprs]: ...
    def bad_params(inp0, inp1, outputs, tactic) -> Tuple[str, bytes, dict, trtp.SymExprs]: ...
    def bad_args(inp0, inp1, outputs, tactic) -> Tuple[str, str, trtp.KernelLaunchParams,
                                                        list]: ...

    for func, match in [(no_tactic, "expected"), (no_return, "no return annotation"),
                        (three, "annotate Tuple"), (int_name, "item 0"),
                        (bad_params, "item 2"), (bad_args, "item 3")]:
        with pytest.raises(ValueError, match=match):
            trtp.aot_impl("qdp_tests::target")(func)

    def good(inp0: trtp.TensorDesc, inp1, name: str, outputs, tactic: int) -> ok_ret: ...

    trtp.aot_impl("qdp_tests::target")(good)
    assert trtp.op.qdp_tests.target.aot_impl_attr_names == ["name"]
    with override(trt_version="10.8"):
        with pytest.raises(AttributeError, match="adds it in 10.9"):
            trtp.aot_impl


def test_errors_are_pyplugins_errors_of_the_builtin_types():
    assert issubclass(QDPDefinitionError, ValueError) and issubclass(QDPTypeError, TypeError)
    assert issubclass(QDPDefinitionError, PyPluginsError)
    assert Any  # typing names above are used in annotations only


def test_numpy_typing_ndarray_is_refused_where_numpy_made_it_a_type_alias(trtp):
    """NumPy 2.5 turned ``npt.NDArray`` into a PEP 695 alias: TensorRT's ``issubclass`` check of
    each annotation raises on it, so the emulator does too, and says what to write instead."""
    import numpy.typing as npt

    TD = trtp.TensorDesc

    def desc(inp0: TD, k: npt.NDArray[np.int32]) -> TD:
        return inp0.like()

    alias = type(getattr(npt.NDArray, "__value__", None)) is not type(None)
    if not alias:  # NumPy < 2.5: a parametrized np.ndarray, accepted
        assert _register(trtp, "qdp_tests::npt_ok", desc) is desc
        return
    with pytest.raises(TypeError, match=r"NumPy >= 2.5 .* np.ndarray\[typing.Any, np.dtype"):
        _register(trtp, "qdp_tests::npt_alias", desc)
