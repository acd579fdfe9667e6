"""docs/lifecycle.md's trace excerpts are what its own ``pyplugins check --trace`` command prints
today: the legend line for line, and every call line (index, phase, object, call, result) in
order, with only the timings, ``...`` shortenings and ``(... ...)`` elisions allowed to differ."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "lifecycle.md").read_text()
_CALL = re.compile(r"^\s*(\d+)\s+\+[\d.]+ms\s+(.*?)\s+[\d.]+ms$")


def _fenced(kind: str) -> List[str]:
    fenced = re.findall(r"^```(\w*)\n(.*?)\n```$", PAGE, flags=re.S | re.M)
    return [body for lang, body in fenced if lang == kind]


@functools.lru_cache(maxsize=None)
def _fresh_output() -> str:
    command = _fenced("bash")[0].replace("\\\n", " ")
    argv = shlex.split(command)
    assert argv[:2] == ["pyplugins", "check"] and "--trace" in argv, argv
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYPLUGINS_TRT": "emulator"}
    proc = subprocess.run([sys.executable, "-m", "pyplugins.cli", *argv[1:]], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split("Callback timeline:\n", 1)[1]


def _normal(line: str) -> str:
    """A timeline line without its timings, whitespace runs as one space."""
    match = _CALL.match(line)
    text = f"{match.group(1)} {match.group(2)}" if match else line
    return " ".join(text.split())


def _matches(excerpt: str, fresh: str) -> bool:
    pattern = re.escape(_normal(excerpt)).replace(re.escape("..."), ".*?")
    return re.fullmatch(pattern, _normal(fresh)) is not None


def _elision(line: str) -> bool:
    return line.strip().startswith("(...") and line.strip().endswith("...)")


def test_the_legend_is_todays():
    legend = [b for b in _fenced("") if b.startswith("Objects (")]
    assert len(legend) == 1
    fresh = _fresh_output().split("\nCalls (", 1)[0]
    assert legend[0] == fresh


def test_the_call_excerpts_are_todays_calls_in_order():
    blocks = [b for b in _fenced("") if _CALL.match(b.splitlines()[0])]
    assert len(blocks) == 3, "one excerpt per phase: parse, build, runtime"
    fresh = [line for line in _fresh_output().split("duration):\n", 1)[1].splitlines() if line]
    at = 0  # the next fresh line the excerpt must show (unless an elision skips ahead)
    for block in blocks:
        skipping = False
        for line in block.splitlines():
            if _elision(line):
                skipping = True
                continue
            found = next((i for i in range(at, len(fresh)) if _matches(line, fresh[i])), None)
            assert found is not None, f"docs/lifecycle.md shows a call the trace lacks:\n{line}"
            assert skipping or found == at, (
                f"docs/lifecycle.md leaves out, without a '(... ...)' line, before\n{line}\n"
                f"the trace's\n" + "\n".join(fresh[at:found]))
            at, skipping = found + 1, False
    assert at == len(fresh), "the excerpts stop before the trace does:\n" + "\n".join(fresh[at:])


def test_a_stale_excerpt_is_caught():
    """The comparison itself: another result, index or object does not match; timings do."""
    line = "   3  +0.5ms  parse    P1 CircPad         clone() -> P2 CircPad   0.05ms"
    assert _matches(line, "   3  +9.9ms  parse  P1 CircPad  clone() -> P2 CircPad   1.00ms")
    assert not _matches(line, "   3  +0.5ms  parse  P1 CircPad  clone() -> P3 CircPad   0.05ms")
    assert not _matches(line, "   4  +0.5ms  parse  P1 CircPad  clone() -> P2 CircPad   0.05ms")
    assert _matches("  9  +1ms  build  P2 X  f(in=[...]) -> None  1ms",
                    "  9  +2ms  build  P2 X  f(in=[(2,3) HALF]) -> None  3ms")
