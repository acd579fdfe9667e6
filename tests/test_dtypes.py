"""The one dtype table: every spelling pyplugins accepts resolves through ``dtypes.from_text``."""

from __future__ import annotations

import numpy as np
import pytest

from pyplugins import dtypes, emulator
from pyplugins.checker.command import UsageError, parse_input
from pyplugins.emulator.specs import datatype_from_text
from pyplugins.runtime.formats import data_type

SPELLINGS = {
    "FLOAT": ["FLOAT", "float", "fp32", "float32", "<f4"],
    "HALF": ["HALF", "half", "fp16", "float16"],
    "BF16": ["BF16", "bf16", "bfloat16"],
    "INT8": ["INT8", "int8", "i8"],
    "INT32": ["int32", "i32"],
    "INT64": ["int64", "i64"],
    "UINT8": ["uint8", "u8"],
    "FP8": ["fp8", "fp8_e4m3", "float8_e4m3fn"],
    "BOOL": ["bool"],
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_spelling_names_its_row_everywhere(name):
    for text in SPELLINGS[name]:
        assert dtypes.from_text(text).trt_name == name, text
        assert datatype_from_text(text).name == name, text  # the spec grammar
        assert data_type(text).name == name, text  # a plugin's dtypes=(...)


def test_the_cli_takes_the_same_spellings():
    assert parse_input("2x3:bf16")["dtype"] is emulator.DataType.BF16
    assert parse_input("2x3:half")["dtype"] == np.float16
    with pytest.raises(UsageError, match="float64.*has no TensorRT data type"):
        parse_input("2x3:float64")


def test_unknown_and_unsupported_spellings_list_what_is_accepted():
    with pytest.raises(ValueError, match="unknown dtype 'float65'; use one of float32, float16"):
        dtypes.from_text("float65")
    with pytest.raises(ValueError, match="'complex64' has no TensorRT data type"):
        dtypes.from_text("complex64")


def test_tensorrt_module_aliases_come_from_the_table():
    for row in dtypes.rows():
        assert getattr(emulator, row.attr).name == row.trt_name


def test_one_input_grammar_serves_the_cli_and_the_library():
    from pyplugins.emulator.specs import TensorSpec

    for text in ("1-2-4x3:fp16", "7:int32", "2x3:bf16", "1x8x4x4:float32"):
        spec, cli = TensorSpec.parse(text), parse_input(text)
        assert (spec.shape, spec.datatype) == (cli["shape"], TensorSpec(**cli).datatype)
    for bad in ("2x3x:float32", "2x-1:float32", "4-2-1x3:float32", "2x3:floot"):
        with pytest.raises(ValueError) as lib:
            TensorSpec.parse(bad)
        with pytest.raises(UsageError) as cli:
            parse_input(bad)
        assert str(lib.value).split(": ", 1)[1] == str(cli.value).split(": ", 1)[1]
