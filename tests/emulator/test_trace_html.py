"""``pyplugins check --trace-html FILE``: a self-contained page, a lane per object, the planted
violation marked at its call, and (where a Chromium is installed) drawn by a real browser."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from pyplugins import cli
from pyplugins.checker.trace import Trace
from pyplugins.checker.trace_html import render_page
from pyplugins.checker.trace_svg import violation_sites

PLUGINS = Path(__file__).parent / "plugins"
_VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "embed", "source",
         "track", "wbr"}
#: SVG elements the page closes with "/>".
_SELF_CLOSED = {"rect", "circle", "line", "path", "stop"}


class _Checker(HTMLParser):
    """Every element closed in order; collects the attributes of each start tag."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack, self.problems, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def _parse(page: str) -> _Checker:
    checker = _Checker()
    checker.feed(page)
    checker.close()
    assert page.startswith("<!DOCTYPE html>")
    assert not checker.problems and not checker.stack, (checker.problems, checker.stack)
    return checker


def _data(page: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="pp-data">(.*?)</script>',
                                page, flags=re.S).group(1))


def _check(tmp_path, *argv):
    out = tmp_path / "trace.html"
    code = cli.main(["check", *map(str, argv), "--device", "cpu", "--trace-html", str(out)])
    return code, out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The page of a plugin whose serialize() changes its bytes on every call."""
    return _check(tmp_path_factory.mktemp("planted"), PLUGINS / "bad_serialize.py",
                  "--input", "2x8:float32")


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return _check(tmp_path_factory.mktemp("clean"), PLUGINS / "circ_pad.py",
                  "--input", "1-2-4x3x4x4:float32", "--attr", "pads=1,1,2,2")


def test_the_page_is_written_valid_and_self_contained(planted):
    code, page = planted
    assert code == 1  # the check's verdict is unchanged by the page
    tags = _parse(page).tags
    text = page.lower()
    assert "http://" not in text and "https://" not in text and "@import" not in text
    assert not [a for t, a in tags if "src" in a or not a.get("href", "#").startswith("#")]
    assert "xmlns" not in text  # inline SVG needs no namespace URL
    assert any(t == "style" for t, _ in tags) and any(t == "svg" for t, _ in tags)


def test_one_lane_per_object_in_order_of_appearance(clean):
    code, page = clean
    assert code == 0
    tags = _parse(page).tags
    lanes = [a["data-lane"] for t, a in tags if t == "g" and a.get("class") == "lane"]
    labels = [a["data-lane"] for t, a in tags if t == "g" and a.get("class") == "lane-label"]
    seen = list(dict.fromkeys(e["obj"] for e in _data(page)["entries"]))
    assert lanes == labels == seen
    assert [lane.split()[0] for lane in lanes] == ["C0", "P0", "P1", "P2", "P3", "P4"]
    phases = [a["data-phase"] for t, a in tags if t == "g" and a.get("class") == "phase"]
    assert phases == ["parse", "build", "runtime"]
    # the format search folds as --trace folds it: fewer columns than calls, every call listed
    calls = [a for t, a in tags if t == "g" and "call" in a.get("class", "").split()]
    assert len(calls) < len(_data(page)["entries"]) and any("fold" in a["class"] for a in calls)
    assert "violation" not in " ".join(a["class"] for a in calls)  # a clean run marks nothing


def test_the_planted_violation_is_marked_at_its_call(planted):
    _, page = planted
    data = _data(page)
    (violation,) = data["violations"]
    assert violation["check"] == "serialize_nondeterministic"
    site = data["entries"][violation["at"]]
    assert site["method"] == "serialize" and site["violations"] == [0]
    marked = [a for t, a in _parse(page).tags
              if t == "g" and "violation" in a.get("class", "").split()]
    assert [int(a["data-i"]) for a in marked] == [violation["at"]]
    assert f'data-goto="{violation["at"]}"' in page  # the list links to the call


def test_violation_sites():
    calls = [SimpleNamespace(index=i, method=m, obj_label=o, error=err) for i, (m, o, err) in
             enumerate([("configure_plugin", "P2 X", None), ("configure_plugin", "P2 X", "boom"),
                        ("configure_plugin", "P2 X", "boom"), ("configure_plugin", "P4 X", "boom"),
                        ("serialize", "P2 X", None)])]
    found = [SimpleNamespace(check="callback_error", method="configure_plugin", message=m)
             for m in ("P2 X (build): [ERROR]", "P2 X (build): [ERROR]", "P4 X (runtime)")]
    found += [SimpleNamespace(check="kernel_compile", method=None, message="P2 no kernel"),
              SimpleNamespace(check="enqueue_unconfigured", method="enqueue", message="on P4")]
    # raised calls first; a second report of one check on one object goes to the next call
    assert violation_sites(calls, found) == [1, 2, 3, None, None]


def test_a_check_without_calls_still_writes_a_page():
    report = SimpleNamespace(plugin="X:1:", ok=False, enqueue_ran=False, skipped=None,
                             violations=[SimpleNamespace(check="lifecycle", method=None,
                                                         message="timed out </script>")])
    page = render_page(None, report)
    _parse(page)
    assert "no plugin callbacks recorded" in page and "X (version 1)" in page
    assert _data(page)["violations"][0]["message"] == "timed out </script>"
    assert render_page(Trace(), None, title="t").count("<svg") == 0


def test_trace_html_that_cannot_be_written_is_a_usage_error(tmp_path, capsys):
    code = cli.main(["check", str(PLUGINS / "bad_serialize.py"), "--input", "2x8:float32",
                     "--device", "cpu", "--trace-html", str(tmp_path / "no" / "such" / "x.html")])
    assert code == 2 and "--trace-html" in capsys.readouterr().err


# -- in a real browser ----------------------------------------------------------------------------

def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome", "headless_shell"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium here (apt-get install chromium): the page is not rendered")


def _headless(browser, *args):
    done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", *args], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode()


def _png_pixels(data: bytes) -> np.ndarray:
    """RGB(A) pixels of an 8-bit PNG (what Chromium writes), by undoing the row filters."""
    pos, idat, head = 8, [], None
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + size]
        head = struct.unpack(">IIBB", body[:10]) if kind == b"IHDR" else head
        idat += [body] if kind == b"IDAT" else []
        pos += 12 + size
    width, height, depth, colour = head
    assert depth == 8 and colour in (2, 6), head
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(idat)), width * bpp
    rows, prev = [], np.zeros(stride, np.int64)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int64)
        if kind == 0:
            cur = line
        elif kind == 1:
            cur = line.reshape(width, bpp).cumsum(axis=0).reshape(-1) & 255
        elif kind == 2:
            cur = (line + prev) & 255
        else:  # average (3) or Paeth (4): each byte needs its left neighbour's result
            out, up = line.tolist(), prev.tolist()
            for i in range(stride):
                a, b = (out[i - bpp] if i >= bpp else 0), up[i]
                c = up[i - bpp] if i >= bpp else 0
                if kind == 3:
                    out[i] = (out[i] + ((a + b) >> 1)) & 255
                else:
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    out[i] = (out[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            cur = np.array(out, np.int64)
        rows.append(cur)
        prev = cur
    return np.array(rows, np.uint8).reshape(height, width, bpp)


def _red(pixels: np.ndarray) -> int:
    return int(((pixels[..., 0] > 180) & (pixels[..., 1] < 90) & (pixels[..., 2] < 90)).sum())


def test_a_browser_draws_the_page(planted, clean, tmp_path):
    browser = _browser()
    shots = {}
    for name, (_, page) in (("planted", planted), ("clean", clean)):
        path = tmp_path / f"{name}.html"
        path.write_text(page, encoding="utf-8")
        dom = _headless(browser, "--dump-dom", path.as_uri())
        # the script ran: it marked the page ready and filled the details panel
        assert f'data-ready="{len(_data(page)["entries"])}"' in dom
        assert 'class="call' in dom and " sel" in dom
        assert "Click a call in the timeline." not in dom
        assert dom.count('class="lane"') == len(dict.fromkeys(e["obj"]
                                                              for e in _data(page)["entries"]))
        _headless(browser, f"--screenshot={tmp_path / name}.png", "--window-size=1400,900",
                  path.as_uri())
        shots[name] = _png_pixels((tmp_path / f"{name}.png").read_bytes())
    for pixels in shots.values():
        assert pixels.shape[:2] == (900, 1400)
        assert len(np.unique(pixels.reshape(-1, pixels.shape[2])[::7], axis=0)) > 200  # drawn
    # the planted violation is drawn in red (its column, badge and list); the clean page has
    # only the legend's few red swatches in view
    assert _red(shots["planted"]) > 4 * max(_red(shots["clean"]), 200)
