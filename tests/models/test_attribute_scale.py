"""Huge ONNX attributes convert at NumPy speed, with a bounded number of notes (they used to be
converted value by value: 5 million FLOATS took 9 s, and each narrowed INTS value gave a note of
its own)."""

from __future__ import annotations

import time

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from pyplugins.emulator.onnx_import import fields_from_attributes
from pyplugins.errors import FieldError


def test_two_million_ints_narrow_fast_with_a_few_notes():
    values = np.arange(2_000_000, dtype=np.int64) + 2**31 - 5  # all but 5 wrap around
    attr = onnx.helper.make_attribute("w", values.tolist())
    start = time.monotonic()
    fc, notes = fields_from_attributes([attr], ["w"], node="n")
    assert time.monotonic() - start < 5
    data = fc[0].data
    assert data.dtype == np.int32 and data.size == 2_000_000
    assert data[:6].tolist() == [2**31 - 5, 2**31 - 4, 2**31 - 3, 2**31 - 2, 2**31 - 1, -2**31]
    assert len(notes) == 4 and notes[0].startswith("Attribute w: 2147483648 does not fit int32")
    assert notes[-1] == ("Attribute w: 1999992 more values do not fit int32 and are narrowed "
                         "the same way.")


def test_two_million_floats_convert_fast_and_overflow_is_still_refused():
    attr = onnx.helper.make_attribute("s", [0.5] * 2_000_000)
    start = time.monotonic()
    fc, notes = fields_from_attributes([attr], ["s"], node="n")
    assert time.monotonic() - start < 5 and fc[0].data.size == 2_000_000 and not notes
    with pytest.raises(FieldError, match="1e\\+39 does not fit an ONNX FLOAT"):
        fields_from_attributes({"s": [0.5, 1e39]}, ["s"], node="n")
    with pytest.raises(FieldError, match="does not fit an ONNX INT attribute"):
        fields_from_attributes({"s": [1, 2**64]}, ["s"], node="n")


def test_a_huge_plugin_version_is_echoed_by_head_and_tail():
    from pyplugins.emulator.onnx_import import import_node

    node = onnx.helper.make_node("NoSuchPlugin", ["x"], ["y"], name="n",
                                 plugin_version="9" * 1_000_000)
    with pytest.raises(LookupError) as info:
        import_node(node)
    assert len(str(info.value)) < 5_000 and "1000002 characters" in str(info.value)
