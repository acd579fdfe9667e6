"""The benchmark harness: ``--quick`` runs without a GPU, and the report/table generator turns a
(synthetic, clearly labelled) result into the right ratios and verdicts. Nothing here times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # benchmarks/ is a top-level folder, not an installed package
    sys.path.insert(0, str(REPO))

from benchmarks import report  # noqa: E402
from benchmarks.cases import CASES, DEFAULT_SIZES, format_bytes, parse_bytes, select  # noqa: E402
from benchmarks.run import main  # noqa: E402


def _env() -> dict:
    env = dict(os.environ, PYPLUGINS_TRT="emulator")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    return env


def test_quick_runs_on_cpu_and_writes_only_to_its_out_dir(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, env=_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 2 and files[0].startswith("quick-") and files[0].endswith(".json")
    result = json.loads((tmp_path / files[0]).read_text())
    assert result["quick"] is True and result["synthetic"] is False
    assert {r["case"] for r in result["quick_cases"]} == {c.name for c in CASES}
    assert "kernels" not in result and "overhead" not in result  # nothing timed
    md = (tmp_path / files[1]).read_text()
    assert "`--quick` run" in md and "| LeakyReLU | float32 | 64 KiB | 16x1024 |" in md


def test_quick_refuses_unknown_section(capsys):
    assert main(["--quick", "--sections", "overhead,warp"]) == 2
    assert "warp" in capsys.readouterr().err


def test_full_run_without_gpu_says_why(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("PYPLUGINS_DEVICE", "cpu")
    assert main(["--out", str(tmp_path)]) == 2
    assert "--quick" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_byte_sizes_parse_and_format():
    assert [parse_bytes(s) for s in DEFAULT_SIZES] == [1 << 16, 1 << 20, 16 << 20, 64 << 20,
                                                       256 << 20, 1 << 30]
    assert parse_bytes("512MiB") == 512 << 20 and parse_bytes("100") == 100
    with pytest.raises(ValueError, match="64K"):
        parse_bytes("1.5G")
    assert format_bytes(64 << 20) == "64 MiB" and format_bytes(133136) == "130.0 KiB"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_every_case_fits_every_default_size_and_counts_bytes(case):
    for dtype in case.dtypes:
        for size in map(parse_bytes, DEFAULT_SIZES):
            prob = case.problem(size, dtype)
            assert prob is not None, (case.name, dtype, size)
            main_input = prob.in_shapes[0]
            itemsize = {"float32": 4, "float16": 2, "int8": 1}[dtype]
            n_main = 1
            for d in main_input:
                n_main *= d
            if case.name == "BarPlugin":  # two inputs of half the bytes each
                assert 2 * n_main * itemsize == size
            else:
                assert n_main * itemsize == size
            assert prob.moved_bytes > size


def test_shape_rules_of_cases():
    pad = select(["CircPad"])[0].problem(1 << 16, "float32")
    assert pad.in_shapes == ((1, 1, 128, 128),) and pad.out_shapes == ((1, 1, 130, 130),)
    pool = select(["Pool-max"])[0].problem(1 << 20, "int8")
    assert pool.out_shapes == ((1, 4, 256, 256),)
    bar = select(["BarPlugin"])[0].problem(1 << 16, "float16")
    assert bar.out_shapes == ((32, 1024), (16, 1024))
    assert bar.moved_bytes == 5 * (1 << 16) // 2  # a, b read; out0 = a + b, out1 = b written
    seq = select(["SeqRepeat"])[0].problem(1 << 20, "float32")
    assert seq.out_shapes == ((1, 512, 1024),)
    with pytest.raises(KeyError, match="known"):
        select(["Nope"])


def test_argument_bytes_become_scalars_with_the_same_bytes():
    np = pytest.importorskip("numpy")
    from benchmarks.overhead import _scalar

    for raw in (b"\x01", np.float32(0.01).tobytes(), np.int64(1024).tobytes(), bytes(range(256)) + bytes(32),
                bytes(range(12))):
        value = _scalar(raw)
        assert np.asarray(value).tobytes() == raw and np.asarray(value).nbytes == len(raw)
    assert np.asarray(_scalar(bytes(288))).dtype.alignment == 8


def synthetic_result() -> dict:
    """SYNTHETIC numbers, chosen so each ratio and verdict is known; not a measurement."""
    def s(median):  # a stats dict as timing.stats makes
        return {"min": median * 0.9, "median": median, "max": median * 1.2, "n": 20}

    def host(us, check="ok"):
        return {"host_us": s(us), "sync_us": s(us + 1.0), "calls": 10000, "batch": 200,
                "check": check}

    mib = 1 << 20
    return {
        "schema": 1, "synthetic": True, "quick": False, "file": "synthetic.json",
        "env": {"device": "SYNTHETIC (test data)", "date": "2000-01-01T00:00:00+00:00"},
        "section_seconds": {"overhead+graph": 10.0},
        "notes": ["SYNTHETIC: RoPE skipped"],
        "overhead": {
            "problem": {"LeakyReLU": "tiny"}, "calls": 10000, "batch": 200,
            "host": {"LeakyReLU": {"cpp_floor": host(3.0), "driver_ctypes": host(5.0),
                                   "plugin_enqueue": host(5.5), "vendor_sample": host(15.0)}},
            "graph": {"LeakyReLU": {"plugin_graph_us": s(1.2), "cpp_graph_us": s(1.0),
                                    "cpp_launch_us": s(3.0)}},
        },
        "kernels": [
            # 64 MiB fp32 LeakyReLU: 128 MiB moved in 38 us; copy 64 MiB (128 MiB moved) in 32 us
            {"case": "LeakyReLU", "dtype": "float32", "in_bytes": 64 * mib,
             "moved_bytes": 128 * mib, "copy_bytes": 64 * mib, "plugin_s": s(38e-6),
             "copy_s": s(32e-6), "torch": {"F.leaky_relu": {"s": s(36e-6), "rel_err": 0.0}}},
            {"case": "RMSNorm", "dtype": "float16", "in_bytes": 64 * mib,
             "moved_bytes": 128 * mib, "copy_bytes": 64 * mib, "plugin_s": s(34e-6),
             "copy_s": s(32e-6),
             "torch": {"RMSNorm composed": {"s": s(340e-6), "rel_err": 1e-3},
                       "F.rms_norm": {"s": s(44e-6), "rel_err": 1e-3}}},
            {"case": "RMSNorm", "dtype": "float16", "in_bytes": 1 * mib,
             "moved_bytes": 2 * mib, "copy_bytes": 1 * mib, "plugin_s": s(5e-6),
             "copy_s": s(2e-6)},
        ],
        "coldstart": {"problem": "64 KiB",
                      "cold_process": {"cuda_init_s": 0.5, "import_ops_s": 0.1,
                                       "ops": {"LeakyReLU": {"first_s": 2.0, "second_s": 0.001,
                                                             "import_s": 0.02},
                                               "RoPE": {"skipped": "ModuleNotFoundError"}}},
                      "warm_process": {"ops": {"LeakyReLU": {"first_s": 0.1,
                                                             "second_s": 0.0005}}}},
    }


def _verdicts(result: dict) -> dict:
    return {what: ok for what, _measured, ok in report.targets(result)}


def test_targets_from_synthetic_result():
    v = _verdicts(synthetic_result())
    assert v["LeakyReLU: plugin enqueue <= 1.15x bare driver (host)"] is True     # 1.10x
    assert v["LeakyReLU: plugin enqueue <= 1.6x C++ floor (host)"] is False        # 1.83x
    assert v["LeakyReLU: plugin enqueue >= 2.5x faster than the vendor sample"] is True  # 2.73x
    assert v["LeakyReLU float32: >= 0.8 of copy bandwidth at >= 64 MiB"] is True   # 0.84
    assert v["LeakyReLU float32: >= torch (every equivalent, >= 64 MiB)"] is False  # 0.95x
    assert v["RMSNorm float16: >= torch (every equivalent, >= 64 MiB)"] is True     # 1.29x
    assert v["RMSNorm float16: >= 1.5x torch composed"] is True                     # 10x
    assert not any("1 MiB" in what for what in v)  # targets speak of >= 64 MiB only


def test_rendered_tables_show_ratios_with_absolute_values():
    md = report.render(synthetic_result(), {"bandwidth": "results/x-bandwidth.png"})
    assert md.startswith("> **SYNTHETIC DATA")
    assert "| **plugin `enqueue`** (as TensorRT calls it) | 5.50 (min 4.95) | 1.83x | 1.10x |" in md
    assert "| LeakyReLU | 1.20 | 3.00 | 0.40x | 1.00 | 1.20x |" in md
    # 0.84 of copy: 128 MiB / 38 us = 3.53 TB/s against 2 * 64 MiB / 32 us = 4.19 TB/s
    assert "0.84 (3.53 / 4.19 TB/s)" in md
    assert "0.95x (36.0 / 38.0 us)" in md and "10.00x (340.0 / 34.0 us)" in md
    assert "| LeakyReLU | 2.000 | 0.100 | 0.0005 | 20.0x | 4000x | 0.020 |" in md
    assert "| RoPE | ModuleNotFoundError |" in md
    assert "![3. Kernel efficiency against a device-to-device copy](results/x-bandwidth.png)" in md
    assert "- SYNTHETIC: RoPE skipped" in md
    assert md.count("**not met**") == 2


def test_readme_block_is_replaced_in_place_and_text_around_it_kept(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nintro\n\n{report.BEGIN}\nold\n{report.END}\n\nafter\n")
    report.update_readme(readme, "new table")
    text = readme.read_text()
    assert text == f"# Title\n\nintro\n\n{report.BEGIN}\nnew table\n{report.END}\n\nafter\n"
    report.update_readme(readme, "new table")
    assert readme.read_text() == text
    fresh = tmp_path / "fresh.md"
    report.update_readme(fresh, "x")
    assert fresh.read_text() == f"{report.BEGIN}\nx\n{report.END}\n"


def test_report_command_uses_newest_real_result_and_skips_synthetic(tmp_path, monkeypatch):
    from benchmarks import run

    results = tmp_path / "results"
    results.mkdir()
    synthetic = synthetic_result()
    (results / "synthetic.json").write_text(json.dumps(synthetic))
    readme = tmp_path / "README.md"
    monkeypatch.setattr(run, "RESULTS", results)
    assert report.latest(results) is None
    assert main(["report", "--readme", str(readme), "--no-plots"]) == 0
    assert "_No results yet" in readme.read_text()
    real = dict(synthetic, synthetic=False, file="2000-01-02-x.json")
    real["env"] = dict(synthetic["env"], date="2000-01-02T00:00:00+00:00")
    (results / "2000-01-02-x.json").write_text(json.dumps(real))
    older = dict(real, env=dict(real["env"], date="1999-01-01T00:00:00+00:00"))
    (results / "1999-01-01-x.json").write_text(json.dumps(older))
    assert report.latest(results) == results / "2000-01-02-x.json"
    assert main(["report", "--readme", str(readme), "--no-plots"]) == 0
    text = readme.read_text()
    assert "2000-01-02T00:00:00" in text and "| 1.10x |" in text


@pytest.mark.gpu
@pytest.mark.slow
def test_every_section_runs_tiny_on_a_gpu(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--out", str(tmp_path), "--sizes", "64K",
         "--calls", "400", "--reps", "3", "--graph-replays", "5",
         "--cases", "LeakyReLU,CircPad", "--no-plots"],
        capture_output=True, text=True, cwd=REPO, env=_env(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (json_path,) = tmp_path.glob("*.json")
    result = json.loads(json_path.read_text())
    host = result["overhead"]["host"]["LeakyReLU"]
    assert host["driver_ctypes"]["host_us"]["median"] > 0
    assert all(row["check"] == "ok" for row in host.values())


def _toy_plugin_class(fail_configure: bool = False):
    """A minimal plugin written against the emulator's raw API (no GPU work anywhere)."""
    import numpy as np

    from pyplugins import emulator as trt

    class Toy(trt.IPluginV2DynamicExt):
        def __init__(self, alpha=1.0):
            trt.IPluginV2DynamicExt.__init__(self)
            self.num_outputs, self.plugin_type, self.plugin_version = 1, "BenchToy", "1"
            self.plugin_namespace = ""
            self.alpha, self.configured = alpha, None

        def get_output_datatype(self, index, input_types):
            return input_types[0]

        def get_output_dimensions(self, index, inputs, builder):
            dims = trt.DimsExprs(inputs[0])
            dims[0] = builder.operation(trt.DimensionOperation.PROD, inputs[0][0],
                                        builder.constant(2))
            return dims

        def supports_format_combination(self, pos, in_out, num_inputs):
            return in_out[pos].type == trt.DataType.FLOAT

        def configure_plugin(self, inp, out):
            if fail_configure:
                raise ValueError("toy refuses")
            self.configured = (tuple(inp[0].desc.dims), tuple(out[0].desc.dims))

        def enqueue(self, *args):
            return 0

    class ToyCreator(trt.IPluginCreator):
        def __init__(self):
            trt.IPluginCreator.__init__(self)
            self.name, self.plugin_version, self.plugin_namespace = "BenchToy", "1", ""
            self.field_names = trt.PluginFieldCollection(
                [trt.PluginField("alpha", np.array([], np.float32), trt.PluginFieldType.FLOAT32)])

        def create_plugin(self, name, fc):
            return Toy(float(fc[0].data[0]) if len(fc) else 1.0)

    Toy.creator = ToyCreator()
    return Toy


def test_driver_configures_through_the_trampoline_without_gpu():
    from benchmarks import driver

    cfg = driver.configure(_toy_plugin_class(), {"alpha": 0.5}, [(3, 4)], ["float32"])
    assert cfg.plugin.alpha == 0.5 and cfg.plugin.configured == ((3, 4), (6, 4))
    assert cfg.out_shapes == [(6, 4)] and cfg.out_dtypes == ["float32"]
    assert [tuple(d.dims) for d in cfg.in_desc + cfg.out_desc] == [(3, 4), (6, 4)]
    assert driver.output_shapes_only(_toy_plugin_class(), {}, [(5, 2)], ["float32"]) == [(10, 2)]


def test_driver_turns_swallowed_errors_and_unknown_fields_into_setup_errors(capfd):
    from benchmarks import driver

    with pytest.raises(driver.SetupError, match="toy refuses"):
        driver.configure(_toy_plugin_class(fail_configure=True), {}, [(3, 4)], ["float32"])
    with pytest.raises(driver.SetupError, match="refuses position 0"):
        driver.configure(_toy_plugin_class(), {}, [(3, 4)], ["float16"])
    with pytest.raises(driver.SetupError, match=r"\['beta'\] are not among"):
        driver.configure(_toy_plugin_class(), {"beta": 1}, [(3, 4)], ["float32"])
    capfd.readouterr()  # the trampoline's [ERROR] lines


def test_host_loops_time_every_path_in_turns():
    from benchmarks import timing

    calls = {"a": 0, "b": 0}
    fns = {name: (lambda n=name: calls.__setitem__(n, calls[n] + 1)) for name in calls}
    syncs = []
    rows = timing.host_loops(fns, lambda: syncs.append(1), calls=50, batch=10, warmup_batches=1)
    # per path: 1 warm-up batch + 5 turns x (host batch + sync batch) of 10 calls
    assert calls == {"a": 110, "b": 110} and len(syncs) == 2 * (1 + 2 * 5)
    for row in rows.values():
        assert row["calls"] == 50 and row["host_us"]["n"] == 5
        assert 0 < row["host_us"]["min"] <= row["host_us"]["median"] <= row["host_us"]["max"]


def test_cpp_floor_runs_combine_into_one_figure_per_kernel():
    from benchmarks.overhead import combine_floor_runs

    def run(us):
        per = {"calls": 10000, "batch": 200, "graph_kernels": 100,
               **{m: {"min": us - 0.5, "median": us} for m in ("host_us", "sync_us", "graph_us")}}
        return {"device": "SYNTHETIC", "cuda_runtime": 0, "cuda_driver": 0,
                "leaky_relu": per, "circ_pad": per}

    merged = combine_floor_runs([run(3.0), run(4.0)])
    assert merged["leaky_relu"]["host_us"] == {"min": 2.5, "median": 3.5, "runs": [3.0, 4.0]}
    assert merged["circ_pad"]["calls"] == 20000
    assert combine_floor_runs([run(3.0), {"skipped": "no nvcc"}]) == {"skipped": "no nvcc"}


def test_copy_bytes_round_to_whole_mib_so_the_roofline_is_stable():
    from benchmarks.bandwidth import copy_bytes

    mib = 1 << 20
    assert copy_bytes(512 * mib + 8192) == 256 * mib
    assert copy_bytes(3 * mib) == 1536 * 1024  # below 2 MiB: 4 KiB grain
    assert copy_bytes(100) == 4096
