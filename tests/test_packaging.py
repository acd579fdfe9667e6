"""A non-editable install ships every package and kernels_cu/ as package data, and finds them there."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _local_build_backend() -> bool:
    """Whether setuptools (>= 64) and wheel are installed, so pip can build without a network."""
    try:
        import setuptools
        import wheel  # noqa: F401 - only whether it imports
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 64


@pytest.mark.slow
def test_non_editable_install_finds_every_kernel_source(tmp_path):
    target = tmp_path / "site"
    isolation = [] if not _local_build_backend() else ["--no-build-isolation"]
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
         *isolation, "--target", str(target), str(ROOT)],
        capture_output=True, text=True, timeout=300)
    if build.returncode != 0 and not isolation and "No matching distribution" in build.stderr:
        pytest.skip("no network to fetch the build backend and none installed here")
    assert build.returncode == 0, build.stderr
    probe = ("import pyplugins, pyplugins.runtime.kernels as k; "
             "print(pyplugins.__file__); print(k.kernels_dir()); "
             "print(' '.join(sorted(p.name for p in k.kernel_sources())))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=tmp_path, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                         timeout=120)
    assert run.returncode == 0, run.stderr
    module_file, kernels_dir, names = run.stdout.strip().splitlines()
    assert module_file.startswith(str(target)) and kernels_dir.startswith(str(target))
    expected = sorted(p.name for p in (ROOT / "kernels_cu").glob("*.cu"))
    assert names.split() == expected
    assert (Path(kernels_dir) / "common.cuh").is_file()


def test_the_distribution_name_is_ours_and_install_hints_match_the_extras():
    """``pyplugins`` on PyPI is another project: install lines name ours, or the real packages."""
    import configparser

    from pyplugins.errors import OPTIONAL

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg["metadata"]["name"] == "pyplugins-trt"
    extras = {name: [line.strip() for line in text.strip().splitlines()]
              for name, text in cfg["options.extras_require"].items()}
    for module, (requirement, extra) in OPTIONAL.items():
        assert requirement in extras[extra], (module, requirement, extra)
    texts = [p.read_text() for p in [ROOT / "README.md", *ROOT.glob("docs/**/*.md"),
                                     *ROOT.glob("pyplugins/**/*.py")]]
    assert not [t for t in texts if "pip install 'pyplugins[" in t or "pip install pyplugins" in t]


def test_setup_cfg_lists_every_package():
    # setuptools installs only the packages listed: an unlisted subpackage (the checker's
    # checks/ or the emulator's plugin/) would be missing from a non-editable install, and `import` would fail.
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    on_disk = {".".join(p.parent.relative_to(ROOT).parts)
               for p in (ROOT / "pyplugins").rglob("__init__.py")}
    assert on_disk <= listed, sorted(on_disk - listed)
    assert {"pyplugins.checker.checks", "pyplugins.emulator.plugin"} <= on_disk
