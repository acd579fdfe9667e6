"""Every reference in the repository's code and Markdown resolves inside the repository.

Scanned: every ``*.py`` and ``*.md`` file (hidden folders such as ``.git`` and build outputs
excluded). Checked:

- ``docs/...`` paths name a file or folder that exists;
- ``§N`` / ``§N.M`` name a section of docs/trt-protocol.md (the project's convention: a bare
  section sign always means that page);
- relative Markdown links (``[text](path#anchor)``) point at an existing file, and an anchor into
  a Markdown file names one of its headings;
- nothing cites the shared notes outside the repository.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = ROOT / "docs" / "trt-protocol.md"
_SKIP_DIRS = {"__pycache__", "build", "dist", "node_modules", "venv"}
# Written in two parts so that this file does not match itself.
_OUTSIDE = re.compile("(" + r"\.\./" + "shared|/work/" + "shared|trt-python-plugin-" + "protocol"
                      + r"\.md|" + "BENCHMARKS" + r"\.md)")
_DOCS_PATH = re.compile(r"(?<![\w./-])docs/[\w./-]*[\w/]")
_SECTION = re.compile(r"§(\d+(?:\.\d+)?)")
_MD_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^()\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", flags=re.S | re.M)


def scanned_files() -> List[Path]:
    """The ``*.py`` and ``*.md`` files of the checkout, hidden and build folders left out."""
    found = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if any(part.startswith(".") or part in _SKIP_DIRS or part.endswith(".egg-info")
               for part in rel.parts[:-1]):
            continue
        if path.suffix in (".py", ".md") and path.is_file():
            found.append(path)
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.

    Example:
        >>> slug("### 2.3 The model of one ONNX import, build and run (V2)")
        '23-the-model-of-one-onnx-import-build-and-run-v2'
    """
    text = heading.lstrip("#").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: Path) -> Set[str]:
    """Every heading anchor of a Markdown file (duplicates numbered as GitHub numbers them)."""
    seen: Dict[str, int] = {}
    result = set()
    for line in _FENCE.sub("", markdown.read_text()).splitlines():
        if re.match(r"#{1,6} ", line):
            base = slug(line)
            n = seen.get(base, 0)
            seen[base] = n + 1
            result.add(base if n == 0 else f"{base}-{n}")
    return result


def protocol_sections() -> Set[str]:
    """``{"0", "1", "1.1", ...}``: the numbered headings of docs/trt-protocol.md."""
    sections = set()
    for line in PROTOCOL.read_text().splitlines():
        match = re.match(r"#{2,3} (\d+)\.(\d+)?\s", line)
        if match:
            sections.add(match.group(1) if match.group(2) is None
                         else f"{match.group(1)}.{match.group(2)}")
    return sections


def _lines(path: Path) -> Iterator[Tuple[int, str]]:
    yield from enumerate(path.read_text(errors="replace").splitlines(), start=1)


def _where(path: Path, number: int) -> str:
    return f"{path.relative_to(ROOT)}:{number}"


FILES = scanned_files()


def test_the_scan_sees_the_files_that_cite_docs():
    names = {p.relative_to(ROOT).as_posix() for p in FILES}
    assert {"README.md", "docs/trt-protocol.md", "pyplugins/checker/checks/__init__.py"} <= names
    assert not any(name.startswith(".git/") for name in names)


def test_protocol_page_keeps_the_section_numbers():
    sections = protocol_sections()
    assert {str(n) for n in range(13)} <= sections, sorted(sections)
    for sub in ("1.1", "1.2", "1.3", "1.4", "2.1", "2.2", "2.3", "2.4", "2.5", "4.1", "4.2",
                "4.3", "4.4", "5.1", "5.2", "5.3", "5.4", "10.1", "10.11", "10.14"):
        assert sub in sections, sub


def test_nothing_cites_documents_outside_the_repository():
    bad = [f"{_where(p, n)}: {line.strip()}" for p in FILES for n, line in _lines(p)
           if _OUTSIDE.search(line) and p != Path(__file__).resolve()]
    assert not bad, "references to notes outside the repository:\n" + "\n".join(bad)


def test_docs_paths_exist():
    bad = []
    for path in FILES:
        for n, line in _lines(path):
            for match in _DOCS_PATH.finditer(line):
                target = match.group(0).rstrip(".")
                if not (ROOT / target).exists():
                    bad.append(f"{_where(path, n)}: {target}")
    assert not bad, "docs/ paths that do not exist:\n" + "\n".join(bad)


def test_section_references_name_sections_of_the_protocol_page():
    sections = protocol_sections()
    bad = []
    for path in FILES:
        for n, line in _lines(path):
            for number in _SECTION.findall(line):
                if number not in sections:
                    bad.append(f"{_where(path, n)}: §{number}")
    assert not bad, ("§ references with no such section in docs/trt-protocol.md:\n"
                     + "\n".join(bad))


def _link_problem(source: Path, target: str) -> str:
    if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
        return ""
    file_part, _, anchor = target.partition("#")
    resolved = (source.parent / file_part).resolve() if file_part else source
    if not resolved.exists():
        return f"{target}: no such file"
    try:
        resolved.relative_to(ROOT)
    except ValueError:
        return f"{target}: outside the repository"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
        return f"{target}: no heading with anchor #{anchor} in {resolved.relative_to(ROOT)}"
    return ""


def test_relative_markdown_links_resolve():
    bad = []
    for path in (p for p in FILES if p.suffix == ".md"):
        text = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text())
        for n, line in enumerate(text.splitlines(), start=1):
            for target in _MD_LINK.findall(line):
                problem = _link_problem(path, target)
                if problem:
                    bad.append(f"{_where(path, n)}: {problem}")
    assert not bad, "Markdown links that do not resolve:\n" + "\n".join(bad)


@pytest.mark.parametrize("text, problem", [
    ("see [x](no/where.md)", "no such file"),
    ("see [x](trt-protocol.md#99-no-such-section)", "no heading"),
    ("see [x](../../outside.md)", "no such file"),
])
def test_the_link_check_catches_broken_links(text, problem):
    target = _MD_LINK.findall(text)[0]
    assert problem in _link_problem(ROOT / "docs" / "README.md", target)


def test_the_link_check_accepts_good_links():
    source = ROOT / "docs" / "lifecycle.md"
    anchor = "#23-the-model-of-one-onnx-import-build-and-run-v2"
    assert _link_problem(source, "trt-protocol.md" + anchor) == ""
    assert _link_problem(source, "https://example.invalid/x") == ""
    assert _link_problem(ROOT / "README.md", "benchmarks/README.md") == ""


def test_the_section_and_path_patterns():
    assert _SECTION.findall("(§1.3-§1.4, §10.11; §6)") == ["1.3", "1.4", "10.11", "6"]
    assert [m.group(0) for m in _DOCS_PATH.finditer(
        "see docs/trt-protocol.md §2.3, docs.nvidia.com/docs/x and src/docs/y")] == [
        "docs/trt-protocol.md"]
    assert _OUTSIDE.search("cites " + "../" + "shared/" + "BENCHMARKS" + ".md")
