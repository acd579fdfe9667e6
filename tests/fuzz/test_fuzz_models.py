"""Fuzzing the model path (hypothesis, CPU, seeded, well under 30 s): every named hostile model and
random byte-level and structural mutations of a valid one, through ``pyplugins check
MODEL.onnx --json`` and the model runner. None may crash (a traceback, an undocumented
exception, an exit status outside {0, 1, 2}, stdout that is not one JSON object), hang, or open a
file outside the model's folder."""

from __future__ import annotations

import random
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from tests.fuzz import model_cases as mc

SETTINGS = dict(deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
seeds = st.integers(min_value=0, max_value=2**32 - 1)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz_models")
    inside, outside = mc.folders(root)
    return root, inside, outside


def clean(verdict_detail):
    verdict, detail = verdict_detail
    assert verdict == "clean", detail


def test_every_hostile_model_is_judged_clean(folders, capfd):
    root, _, outside = folders
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in mc.hostile_cases(root).values():
            clean(mc.judge_check(case.path, outside))


@settings(max_examples=300, **SETTINGS)
@given(seed=seeds)
def test_mutated_models_through_pyplugins_check(seed, folders, capfd):
    _, inside, outside = folders
    path = mc.mutate(random.Random(seed), inside, outside, seed)
    clean(mc.judge_check(path, outside))


@settings(max_examples=150, **SETTINGS)
@given(seed=seeds)
def test_mutated_models_through_the_runner(seed, folders, capfd):
    _, inside, outside = folders
    path = mc.mutate(random.Random(seed), inside, outside, seed)
    clean(mc.judge_runner(path, outside))


# -- the judge catches what it must (a planted defect each) ------------------------------------------

def test_the_judge_flags_a_read_outside_the_folder(folders, monkeypatch):
    root, inside, outside = folders
    from pyplugins.models import model_file

    real = model_file.load_model

    def leaky(path):
        (outside / "secret.bin").read_bytes()
        return real(path)

    monkeypatch.setattr(model_file, "load_model", leaky)
    monkeypatch.setattr("pyplugins.models.check.load_model", leaky)
    case = mc.hostile_cases(root)["cycle"]
    verdict, detail = mc.judge_check(case.path, outside)
    assert verdict == "leak" and "secret.bin" in detail


def test_the_judge_flags_a_traceback_a_crash_and_a_hang(folders, monkeypatch):
    root, _, outside = folders
    case = mc.hostile_cases(root)["cycle"]
    import pyplugins.models.check as check

    def broken(*args, **kwargs):
        raise KeyError("t_local")

    monkeypatch.setattr(check, "validate_model", broken)
    verdict, detail = mc.judge_check(case.path, outside)
    assert verdict == "crash" and "KeyError" in detail
    monkeypatch.setattr(mc, "run_check", lambda *a: (3, "{}", ""))
    assert mc.judge_check(case.path, outside)[0] == "crash"
    monkeypatch.setattr(mc, "run_check", lambda *a: (2, "not json", ""))
    assert mc.judge_check(case.path, outside)[0] == "crash"
    monkeypatch.setattr(mc, "CASE_LIMIT_S", 0.2)
    monkeypatch.setattr(mc, "run_check", lambda *a: __import__("time").sleep(1))
    assert mc.judge_check(case.path, outside)[0] == "hang"
