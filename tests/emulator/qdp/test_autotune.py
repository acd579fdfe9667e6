"""AutoTuneCombination: the type/format grammar ('|' dependent, '*' independent), pos() and
tactics, and the errors TensorRT raises for malformed strings."""

from __future__ import annotations

import pytest

from pyplugins.emulator.plugin.combinations import AutoTuneCombination, expand_one_side
from pyplugins.errors import (QDPAssertionError, QDPAttributeError, QDPDefinitionError,
                              QDPTypeError)


def _names(combination):
    return [([t.name for t in c.types], [f.name for f in c.layouts], c.tactics)
            for c in combination._get_combinations()]


def test_dependent_choices_move_together():
    assert _names(AutoTuneCombination("FP32|FP16, FP32|FP16", "LINEAR", [1])) == [
        (["FLOAT", "FLOAT"], ["LINEAR", "LINEAR"], [1]),
        (["HALF", "HALF"], ["LINEAR", "LINEAR"], [1])]


def test_independent_choices_multiply_types_and_formats():
    got = _names(AutoTuneCombination("FP32*FP16, FP32", "LINEAR*HWC, LINEAR"))
    assert [(t, f) for t, f, _ in got] == [
        (["FLOAT", "FLOAT"], ["LINEAR", "LINEAR"]), (["FLOAT", "FLOAT"], ["HWC", "LINEAR"]),
        (["HALF", "FLOAT"], ["LINEAR", "LINEAR"]), (["HALF", "FLOAT"], ["HWC", "LINEAR"])]
    assert got[0][2] is None  # no tactics given: the default tactic only


def test_member_names_and_single_entries_repeat():
    got = _names(AutoTuneCombination("INT8, BF16, INT64"))
    assert got == [(["INT8", "BF16", "INT64"], ["LINEAR"] * 3, None)]
    assert expand_one_side(["A|B|C", "X", "A|B|C"]) == [["A", "X", "A"], ["B", "X", "B"],
                                                         ["C", "X", "C"]]


def test_pos_fills_positions_and_takes_a_list():
    c = AutoTuneCombination()
    c.pos([0, 2], "FP32|FP16")
    c.pos([1], "INT32", "HWC")
    c.tactics([5])
    assert _names(c) == [(["FLOAT", "INT32", "FLOAT"], ["LINEAR", "HWC", "LINEAR"], [5]),
                         (["HALF", "INT32", "HALF"], ["LINEAR", "HWC", "LINEAR"], [5])]
    with pytest.raises(QDPDefinitionError, match="position 1 are already set"):
        c.pos([1], "FP32")
    with pytest.raises(QDPTypeError, match=r"pos\(\[3\]"):  # TensorRT: max(3) -> TypeError
        c.pos(3, "FP32")


@pytest.mark.parametrize("types, layouts, error, match", [
    ("FP32|FP16*INT8", None, QDPDefinitionError, "mixes"),
    ("FP32|FP16, FP32|FP16|INT8", None, QDPDefinitionError, "different numbers"),
    ("FP64", None, QDPAttributeError, "Unknown data type 'FP64'"),
    ("FP32", "NCHW", QDPAttributeError, "Unknown tensor format 'NCHW'"),
])
def test_malformed_strings_fail_when_expanded(types, layouts, error, match):
    combination = AutoTuneCombination(types, layouts)  # accepted until TensorRT expands it
    with pytest.raises(error, match=match):
        combination._get_combinations()


def test_type_and_format_counts_must_agree():
    with pytest.raises(QDPAssertionError, match="2 type entries but 3 format entries"):
        AutoTuneCombination("FP32, FP32", "LINEAR, LINEAR, HWC")
    assert issubclass(QDPAssertionError, AssertionError)
