"""formats: accepted/rejected combinations, and no read beyond ``pos`` (poisoned descriptors)."""

from __future__ import annotations

import numpy as np
import pytest

import pyplugins.trt as trt
from pyplugins.runtime import formats
from pyplugins.errors import PluginDefinitionError
from pyplugins.runtime.plugin import Plugin

DT, TF = trt.DataType, trt.TensorFormat
F, H, I32 = DT.FLOAT, DT.HALF, DT.INT32


def d(t, fmt=TF.LINEAR):
    return trt.PluginTensorDesc([2, 3], t, fmt)


class Poison:
    """A descriptor TensorRT has not chosen yet: reading anything from it fails the test."""

    def __init__(self, index):
        object.__setattr__(self, "index", index)

    def __getattribute__(self, name):
        index = object.__getattribute__(self, "index")
        pytest.fail(f"read in_out[{index}].{name} beyond pos")


def poisoned(prefix, n):
    return list(prefix) + [Poison(i) for i in range(len(prefix), n)]


@pytest.mark.parametrize("pos, chosen, kwargs, ok", [
    (0, [d(F)], dict(dtypes=(F, H)), True),
    (0, [d(I32)], dict(dtypes=(F, H)), False),
    (0, [d(H, TF.CHW2)], dict(dtypes=(F, H)), False),
    (0, [d(H, TF.CHW2)], dict(dtypes=(F, H), linear=False), True),
    (1, [d(H), d(F)], dict(dtypes=(F, H), same_as=0), False),
    (1, [d(H), d(H)], dict(dtypes=(F, H), same_as=0), True),
    (2, [d(F), d(F), d(H)], dict(same_as=0), False),
    (2, [d(F), d(H), d(I32)], dict(dtypes={0: (F, H), -1: (I32,)}), True),
    (2, [d(F), d(H), d(F)], dict(dtypes={0: (F, H), -1: (I32,)}), False),
    (1, [d(F), d(I32)], dict(dtypes={0: (F, H), -1: (I32,)}), True),  # tensor 1 unconstrained
    (1, [d(F), d(F)], dict(dtypes=("float32", "fp16")), True),
    (0, [d(I32)], dict(dtypes=np.int32), True),
    (2, [d(F), d(H), d(H)], dict(same_as={2: 1}), True),
    (2, [d(H), d(F), d(H)], dict(same_as={1: 2}), False),  # pair checked at the later pos
    (1, [d(H), d(F)], dict(same_as={2: 1}), True),  # nothing to compare yet at pos 1
])
def test_check(pos, chosen, kwargs, ok):
    in_out = poisoned(chosen, 3)
    assert formats.check(pos, in_out, 1, **kwargs) is ok
    assert formats.Formats(**kwargs)(pos, in_out, 1) is ok


def test_same_as_a_later_tensor_is_checked_when_that_tensor_is_chosen():
    rule = formats.Formats(same_as=2)
    assert rule(0, poisoned([d(F)], 3), 2) and rule(1, poisoned([d(F), d(H)], 3), 2)
    assert not rule(2, [d(F), d(H), d(F)], 2)  # at pos 2 both earlier tensors are compared
    assert rule(2, [d(H), d(H), d(H)], 2)


def test_partners_only_point_backwards():
    for same_as in (0, 2, -1, {0: 2}, {2: 0, 1: 0}):
        for pos in range(3):
            assert all(k < pos for k in formats.partners(same_as, pos, 3))


def test_search_like_tensorrt_finds_exactly_the_allowed_combinations():
    candidates = [d(t, f) for t in (F, H, I32) for f in (TF.LINEAR, TF.CHW4)]
    combos = formats.combinations(formats.Formats(dtypes=(F, H), same_as=0), 2, 1, candidates)
    assert combos == [((F, TF.LINEAR),) * 3, ((H, TF.LINEAR),) * 3]
    mixed = formats.Formats(dtypes={0: (F, H), 1: (I32,), 2: (F, H)}, same_as={2: 0})
    assert formats.combinations(mixed, 2, 1, candidates) == [
        ((F, TF.LINEAR), (I32, TF.LINEAR), (F, TF.LINEAR)),
        ((H, TF.LINEAR), (I32, TF.LINEAR), (H, TF.LINEAR))]


def test_bad_declarations_are_definition_errors():
    with pytest.raises(PluginDefinitionError, match="names no TensorRT data type"):
        formats.Formats(dtypes=("float128",))
    with pytest.raises(PluginDefinitionError, match="out of range"):
        formats.check(0, [d(F)], 1, same_as=3)
    assert formats.data_type("HALF") is H and formats.data_type("fp16") is H
    assert formats.data_type(np.float16) is H and formats.data_type(F) is F


def test_plugin_default_uses_class_declaration_and_respects_pos():
    class Mixed(Plugin):
        name = "FormatsMixed"
        dtypes = {0: ("float32", "float16"), 1: ("int32",), -1: ("float32", "float16")}
        same_as = {2: 0}

    p = Mixed()
    assert p.supports_format_combination(0, poisoned([d(H)], 3), 2) is True
    assert p.supports_format_combination(1, poisoned([d(H), d(I32)], 3), 2) is True
    assert p.supports_format_combination(2, [d(H), d(I32), d(F)], 2) is False
    assert p.supports_format_combination(2, [d(H), d(I32), d(H)], 2) is True

    with pytest.raises(PluginDefinitionError, match="names no TensorRT data type"):
        class _Bad(Plugin):
            name = "FormatsBad"
            dtypes = ("floaty",)
