"""Fuzzing ``pyplugins check``'s inputs (hypothesis, CPU, well under a minute): blobs, field
collections, ONNX attributes and command lines end clean: accepted, or refused with a documented
error naming the plugin and field, or a documented exit status; never a crash or a hang."""

from __future__ import annotations

import random
import resource
import struct
import warnings
from pathlib import Path

import numpy as np

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyplugins import emulator
from tests.fuzz import harness

emulator.install()
CLASSES = harness.plugin_classes()
BLOBS = harness.blobs()
PLUGIN_FILE = str(Path(__file__).resolve().parents[1] / "emulator" / "plugins" / "circ_pad.py")
FAST = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
seeds = st.integers(min_value=0, max_value=2**32 - 1)
names = st.sampled_from(sorted(CLASSES))


def judged(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = harness.timed(case)
    assert result == "clean", result
    return result


@FAST
@given(seed=seeds, name=names)
def test_mutated_blobs(seed, name, capfd):
    judged(harness.blob_case(random.Random(seed), CLASSES[name], BLOBS[name]))


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=seeds, name=names)
def test_hostile_blobs(seed, name, capfd):
    judged(harness.hostile_blob_case(random.Random(seed), CLASSES[name]))


@FAST
@given(seed=seeds, name=names)
def test_v3_headers(seed, name, capfd):
    judged(harness.v3_header_case(random.Random(seed), CLASSES[name]))


def test_the_hostile_cases_reach_the_defects_they_hunt():
    """Each hostile shape, on today's code, was a crash or a silent inf: they must be refused."""
    from pyplugins.errors import SerializationError
    from pyplugins.runtime.serialize import Tag

    pool = CLASSES["Pool"]
    deep = harness.trt.PluginField("_pyplugins", np.frombuffer(b"[" * 2000 + b"]" * 2000, np.int8),
                                   harness.trt.PluginFieldType.CHAR)
    from pyplugins.runtime import v3_fields

    with pytest.raises(SerializationError, match="levels deep"):
        v3_fields.values(pool, harness.trt.PluginFieldCollection([deep]))
    fields = [(n, int(s.tag), harness.serialize_payload(s.tag, s.to_serial(v)))
              for (n, s), v in zip(pool.__pp_fields__.items(),
                                   pool(**harness.VALID["Pool"]).field_values().values())]
    nan = [(n, t, struct.pack("<d", float("nan")) if n == "in_scale" else p) for n, t, p in fields]
    with pytest.raises(SerializationError, match="'in_scale'.*NaN"):
        pool.from_bytes(harness._encode(pool, nan))
    huge = [(n, t, bytes(8 * 2_000_000) if t == Tag.INTS and n == "stride" else p)
            for n, t, p in fields]
    with pytest.raises(SerializationError, match="'stride' .*holds 2000000 elements"):
        pool.from_bytes(harness._encode(pool, huge))


@FAST
@given(seed=seeds, name=names)
def test_field_collections(seed, name, capfd):
    judged(harness.fields_case(random.Random(seed), CLASSES[name]))


@FAST
@given(seed=seeds)
def test_onnx_attributes(seed, capfd):
    judged(harness.onnx_case(random.Random(seed)))


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=seeds)
def test_command_lines(seed, monkeypatch):
    monkeypatch.setenv("PYPLUGINS_DEVICE", "cpu")
    judged(harness.cli_case(random.Random(seed), PLUGIN_FILE))


def test_the_judge_would_flag_a_crash_and_an_unclear_error():
    from pyplugins.errors import FieldError

    assert harness._judge(KeyError("x"), ("Pool",), (FieldError,)) == "crash"
    assert harness._judge(FieldError("bad value"), ("Pool",), (FieldError,)) == "unclear"
    assert harness._judge(FieldError("plugin 'Pool': bad"), ("Pool",), (FieldError,)) == "clean"


def test_memory_stays_bounded():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rng = random.Random(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(500):
            name = rng.choice(sorted(CLASSES))
            harness.blob_case(rng, CLASSES[name], BLOBS[name])()
            harness.onnx_case(rng)()
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 256, grown_mb


@pytest.mark.parametrize("argv, code", [
    (["check", PLUGIN_FILE], 2),  # no --input
    (["check", PLUGIN_FILE, "--input", "1000000x1000000:float32"], 2),
    (["check", PLUGIN_FILE, "--input", "2:float32", "--attr", "pads=\udcff"], 2),
    (["check", PLUGIN_FILE, "--input", "2:float32", "--timeout", "-1"], 2),
])
def test_hostile_command_lines_are_usage_errors_with_json(argv, code, capsys, monkeypatch):
    import json

    from pyplugins import cli

    monkeypatch.setenv("PYPLUGINS_DEVICE", "cpu")
    assert cli.main(argv + ["--json"]) == code
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False and data["exit_status"] == code
