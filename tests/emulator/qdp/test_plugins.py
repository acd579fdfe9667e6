"""QDP modules register creators, and the plugins those create answer what TensorRT asks (§8).

No ``from __future__ import annotations`` here: tensorrt.plugin reads the annotations of the
plugins defined below as objects, as TensorRT does."""

import numpy as np
import pytest

from pyplugins import emulator as trt
from pyplugins._config import override
from pyplugins.emulator.bases_quick import ISymExprs, KernelLaunchParams
from pyplugins.checker.size_tensors import SizeTensorBuilder, evaluate
from pyplugins.errors import QDPAssertionError, QDPDefinitionError, QDPTypeError

from .support import combos, create, creator, desc, dyn, fc, load

SCALE_ATTRS = {"mode": "half", "fast": True, "coeffs": np.array([0.5, 2.0], np.float32),
               "blob": b"\x00\x01"}


def test_register_puts_a_quick_creator_with_typed_fields_in_the_registry(trtp):
    load("elementwise")
    c = creator("qdp_tests::scale")
    assert isinstance(c, trt.IPluginCreatorV3Quick) and not isinstance(c, trt.IPluginCreatorV3One)
    assert (c.name, c.plugin_namespace, c.plugin_version) == ("scale", "qdp_tests", "1")
    assert [(f.name, f.type.name) for f in c.field_names] == [
        ("mode", "CHAR"), ("fast", "INT8"), ("coeffs", "FLOAT32"), ("blob", "UNKNOWN")]
    assert trtp.op.qdp_tests.scale.num_outputs == 1


@pytest.mark.parametrize("value, field_type, data", [
    (7, "INT64", [7]), (2.5, "FLOAT64", [2.5]), (True, "INT8", [1]), ("ab", "CHAR", [97, 98]),
    (b"\x05", "UNKNOWN", [5]), (np.array([1, 2], np.int16), "INT16", [1, 2]),
    (np.array([1.0], np.float16), "UNKNOWN", [0, 60]), (np.array([True]), "INT8", [1])])
def test_attribute_values_travel_as_tensorrt_types_them(value, field_type, data):
    (field,) = fc({"a": value})
    assert field.type.name == field_type
    assert field.data.tolist() == data


def test_fields_round_trip_through_get_fields_to_serialize(trtp):
    load("elementwise")
    plugin = create("qdp_tests::scale", SCALE_ATTRS)
    fields = plugin.get_fields_to_serialize()
    assert [f.name for f in fields] == ["mode", "coeffs"]  # only what impl names travels
    again = create("qdp_tests::scale", {"mode": "half",
                                        "coeffs": np.array([0.5, 2.0], np.float32)})
    assert again.attrs["mode"] == "half" and again.attrs["coeffs"].dtype == np.float32
    assert again.attrs["coeffs"].tolist() == [0.5, 2.0]
    with pytest.raises(QDPAssertionError, match="'unknown'"):
        create("qdp_tests::scale", {"unknown": "x"})


def test_an_int_attribute_is_recreated_as_numpy_allows(trtp):
    @trtp.register("qdp_tests::int_attr")
    def desc_fn(inp0: trtp.TensorDesc, block: int) -> trtp.TensorDesc:
        return inp0.like()

    try:
        expected = int(np.array([256]))
    except TypeError:  # NumPy 2.x refuses int() of a 1-D array: TensorRT's create_plugin fails
        with pytest.raises(QDPTypeError, match=r"int\(f.data\).*_lib.py:279"):
            create("qdp_tests::int_attr", {"block": 256})
    else:
        assert create("qdp_tests::int_attr", {"block": 256}).attrs == {"block": expected}


def test_output_types_and_symbolic_shapes_evaluate_at_concrete_shapes(trtp):
    load("circ_pad")
    plugin = create("qdp_tests::circ_pad", {"pads": np.array([1, 1, 2, 2], np.int32)})
    assert plugin.get_num_outputs() == 1
    assert plugin.get_output_data_types([trt.DataType.HALF], [4]) == [trt.DataType.HALF]
    eb = SizeTensorBuilder()
    (out,) = plugin.get_output_shapes([eb._input(0, (-1, 3, 32, -1))], [], eb)
    assert evaluate(out, {0: (2, 3, 32, 8)}) == (2, 3, 36, 10)
    assert evaluate(out, {0: (5, 3, 32, 1)}) == (5, 3, 36, 3)
    assert out[2].is_constant() and not out[0].is_constant()


def test_size_tensor_outputs_declare_and_evaluate(trtp):
    load("non_zero")
    plugin = create("qdp_tests::non_zero", {})
    assert plugin.get_output_data_types([trt.DataType.FLOAT], [2]) == [trt.DataType.INT32,
                                                                       trt.DataType.INT64]
    eb = SizeTensorBuilder()
    indices, size = plugin.get_output_shapes([eb._input(0, (-1, 4))], [], eb)
    assert sorted(eb.declared) == [1] and len(size) == 0
    assert evaluate(indices, {0: (3, 4)}) == (12, 2)  # the upper bound until the size is known
    assert evaluate(indices, {0: (3, 4), ("size", 1): 5}) == (5, 2)
    assert evaluate(DimsOf(eb.declared[1]._a), {0: (3, 4)}) == (6,)  # opt = upper // 2


def DimsOf(expr):  # noqa: N802 - a one-entry DimsExprs for evaluate()
    return trt.DimsExprs([expr])


def test_autotune_combinations_and_tactics(trtp):
    load("elementwise")
    plugin = create("qdp_tests::scale", SCALE_ATTRS)
    plugin.get_output_data_types([trt.DataType.FLOAT], [2])
    eb = SizeTensorBuilder()
    plugin.get_output_shapes([eb._input(0, (4, 8))], [], eb)
    flat = plugin.get_supported_format_combinations([dyn((4, 8)), dyn((4, 8))], 1)
    assert combos(flat, 2) == [(("FLOAT", "FLOAT"), ("LINEAR", "LINEAR")),
                               (("HALF", "HALF"), ("LINEAR", "LINEAR"))]
    plugin.configure_plugin([dyn((4, 8))], [dyn((4, 8))])
    assert sorted(plugin.get_valid_tactics()) == [1, 2, 3]  # equal combinations merge tactics
    plugin.configure_plugin([dyn((4, 8), trt.DataType.HALF)], [dyn((4, 8), trt.DataType.HALF)])
    assert sorted(plugin.get_valid_tactics()) == [1, 2]
    plugin.configure_plugin([dyn((4, 8), trt.DataType.HALF)], [dyn((4, 8))])
    with pytest.raises(QDPAssertionError, match="no autotune combination"):
        plugin.get_valid_tactics()


def test_without_autotune_the_inputs_types_registered_outputs_and_linear(trtp):
    load("elementwise")
    plugin = create("qdp_tests::add_in_place", {"delta": np.array([3])})
    plugin.get_output_data_types([trt.DataType.HALF], [1])
    eb = SizeTensorBuilder()
    plugin.get_output_shapes([eb._input(0, (6,))], [], eb)
    flat = plugin.get_supported_format_combinations([dyn((6,)), dyn((6,))], 1)
    assert combos(flat, 2) == [(("HALF", "HALF"), ("LINEAR", "LINEAR"))]
    assert plugin.get_aliased_input(0) == 0


def test_enqueue_calls_impl_with_tensors_attributes_stream_and_tactic(trtp):
    module = load("elementwise")
    plugin = create("qdp_tests::scale", SCALE_ATTRS)
    plugin.get_output_data_types([trt.DataType.HALF], [2])
    plugin.set_tactic(2)
    runtime = plugin.clone()
    assert runtime is not plugin and runtime.plugin_name == "scale"
    strides = [trt.Dims((8, 1))]
    runtime.enqueue([desc((4, 8), trt.DataType.HALF)], [desc((4, 8), trt.DataType.HALF)],
                    [4096], [8192], strides, strides, 77)
    (call,) = module.CALLS
    assert (call["mode"], call["stream"], call["tactic"]) == ("half", 77, 2)
    inp0, (out0,) = call["inp0"], call["outputs"]
    assert (inp0.data_ptr, out0.data_ptr, tuple(inp0.shape), inp0.numel()) == (4096, 8192, (4, 8),
                                                                                 32)
    with pytest.raises(QDPDefinitionError, match="Cannot set 'data_ptr'"):
        inp0.data_ptr = 0


def test_aliased_outputs_share_the_input_tensor(trtp):
    module = load("elementwise")
    plugin = create("qdp_tests::add_in_place", {"delta": np.array([3])})
    plugin.get_output_data_types([trt.DataType.FLOAT], [1])
    plugin.enqueue([desc((6,))], [desc((6,))], [100], [100], [trt.Dims((1,))],
                   [trt.Dims((1,))], 0)
    call = module.CALLS[-1]
    assert call["outputs"][0].get_aliased() is call["inp0"]
    assert call["delta"].tolist() == [3] and "tactic" not in call


def test_aot_plugin_gives_kernel_and_symbolic_launch_parameters(trtp):
    load("circ_pad")
    request = trt.QuickPluginCreationRequest
    pads = {"pads": np.array([1, 1, 2, 2], np.int32)}
    with pytest.raises(QDPDefinitionError, match="both an AOT and a JIT"):
        create("qdp_tests::circ_pad", pads, request.UNKNOWN)
    assert isinstance(create("qdp_tests::circ_pad", pads, request.PREFER_JIT),
                      trt.IPluginV3QuickRuntime)
    plugin = create("qdp_tests::circ_pad", pads, request.STRICT_AOT)
    assert isinstance(plugin, trt.IPluginV3QuickAOTBuild)
    assert not isinstance(plugin, trt.IPluginV3QuickRuntime)
    plugin.get_output_data_types([trt.DataType.FLOAT], [4])
    eb = SizeTensorBuilder()
    inputs = [eb._input(0, (-1, 3, 32, 32))]
    plugin.get_output_shapes(inputs, [], eb)
    in_out = [dyn((-1, 3, 32, 32)), dyn((-1, 3, 36, 34))]
    flat = plugin.get_supported_format_combinations(in_out, 1)
    assert [t for t, _ in combos(flat, 2)] == [("FLOAT", "FLOAT"), ("HALF", "HALF")]
    plugin.configure_plugin(in_out[:1], in_out[1:])
    assert sorted(plugin.get_valid_tactics()) == [1, 2]
    plugin.set_tactic(2)
    params, extra = KernelLaunchParams._make(), ISymExprs._make()
    plugin.get_launch_params(inputs, in_out, 1, params, extra, eb)
    shapes = {0: (4, 3, 32, 32)}
    assert params._evaluate(shapes) == {"grid_x": 15, "grid_y": 1, "grid_z": 1,
                                        "block_x": 1024, "block_y": 1, "block_z": 1,
                                        "shared_mem": 0}  # cdiv(4*3*36*34, 1024)
    assert extra._evaluate(shapes) == [1, 4, 34, 4 * 3 * 36 * 34]
    assert {item._parts()[1].name for item in extra._items} == {"INT32"}
    name, ptx = plugin.get_kernel([desc((4, 3, 32, 32))], [desc((4, 3, 36, 34))])
    assert name == "circ_pad_fp32" and ptx.startswith(b".version")
    plugin.set_tactic(1)
    with pytest.raises(QDPAssertionError, match="get_launch_params must run first"):
        plugin.get_kernel([desc((4, 3, 32, 32))], [desc((4, 3, 36, 34))])


def test_strict_requests_need_their_implementation(trtp):
    load("non_zero")
    with pytest.raises(QDPDefinitionError, match="AOT implementation was requested"):
        create("qdp_tests::non_zero", {}, trt.QuickPluginCreationRequest.STRICT_AOT)
    strict_jit = trt.QuickPluginCreationRequest.STRICT_JIT
    assert type(create("qdp_tests::non_zero", {}, strict_jit)).__name__ == "TemplateJITPlugin"
    with override(trt_version="10.8"):  # create_plugin has no request argument before 10.9
        with pytest.raises(QDPTypeError, match="before TensorRT 10.9"):
            create("qdp_tests::non_zero", {}, strict_jit)


def _itensor():
    return object.__new__(trt.ITensor)  # only a real network makes one


def test_op_handle_is_a_function_from_10_9_and_a_tuple_before(trtp):
    load("non_zero")
    x = _itensor()
    handle = trtp.op.qdp_tests.non_zero(x)
    inputs, shape_inputs, plugin = handle(trt.QuickPluginCreationRequest.PREFER_JIT)
    assert inputs == [x] and shape_inputs == [] and isinstance(plugin, trt.IPluginV3)
    with override(trt_version="10.8"):
        x = _itensor()  # trt.ITensor of the 10.x module
        inputs, shape_inputs, plugin = trtp.op.qdp_tests.non_zero(x)
        assert inputs == [x] and isinstance(plugin, trt.IPluginV3QuickRuntime)


def test_op_call_checks_its_schema(trtp):
    load("elementwise")
    op = trtp.op.qdp_tests.scale
    x = _itensor()
    with pytest.raises(QDPDefinitionError, match="takes trt.ITensor inputs"):
        op(np.zeros(3), **SCALE_ATTRS)
    with pytest.raises(QDPDefinitionError, match="no attribute 'speed'"):
        op(x, speed=1)
    with pytest.raises(QDPDefinitionError, match="attribute 'fast' is a int"):
        op(x, **{**SCALE_ATTRS, "fast": 1})
    with pytest.raises(QDPDefinitionError, match="dtype float64, registered float32"):
        op(x, **{**SCALE_ATTRS, "coeffs": np.zeros(2)})
    with pytest.raises(QDPDefinitionError, match=r"expected \(ITensor, mode, fast, coeffs, blob\)"):
        op(x, mode="half")
    assert callable(op(x, **SCALE_ATTRS))


def test_lazy_registration_registers_at_the_first_op_call(trtp):
    @trtp.register("qdp_tests::lazy", lazy_register=True)
    def lazy_desc(inp0: trtp.TensorDesc, tag: str) -> trtp.TensorDesc:
        return inp0.like()

    assert creator("qdp_tests::lazy") is None
    trtp.op.qdp_tests.lazy(_itensor(), tag="t")
    assert [f.type.name for f in creator("qdp_tests::lazy").field_names] == ["CHAR"]
