"""The package's import graph: no cycles, no private names across modules, no re-export shims."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Dict, List, Set, Tuple

PACKAGE = Path(__file__).resolve().parent.parent / "pyplugins"

#: Facades that mirror ``tensorrt`` (or the package's public surface): they exist to re-export.
FACADES = {"pyplugins", "pyplugins.emulator"}

#: Known exceptions, each to be removed by the work named beside it. The lead deletes an entry at
#: merge once that work lands; the test then holds the rule for that module too.
KNOWN_PRIVATE: set = set()
KNOWN_REEXPORTS: set = set()
#: Known exceptions, each to be removed by the work named beside it (none now).
KNOWN_UP: set = set()


def _modules() -> Dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _source(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if MODULES[module].name != "__init__.py":
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _runtime_nodes(tree: ast.Module) -> List[ast.AST]:
    """Every node that can run: the module body and every function body, but not the imports
    under ``if TYPE_CHECKING:`` (those never run)."""
    out: List[ast.AST] = []
    todo: List[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo += node.orelse
            continue
        out.append(node)
        todo += list(ast.iter_child_nodes(node))
    return out


def _imports(module: str) -> List[Tuple[str, str]]:
    """``(source module, name)`` of every ``from pyplugins... import name`` in ``module``."""
    tree = ast.parse(MODULES[module].read_text())
    return [(_source(module, node), alias.name) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) for alias in node.names
            if _source(module, node).startswith("pyplugins")]


def _edges(module: str) -> Set[str]:
    """The package modules ``module`` imports, at import time or inside a function (a cycle
    through a function-level import is a cycle all the same), or names to
    ``importlib.import_module`` as a literal."""
    tree = ast.parse(MODULES[module].read_text())
    out = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom):
            source = _source(module, node)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                out.add(sub if sub in MODULES else source)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"):
            out.add(str(node.args[0].value))
    return {m for m in out if m in MODULES and m != module}


def _cycles() -> List[List[str]]:
    graph = {m: _edges(m) for m in MODULES}
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    found: List[List[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycle_between_package_modules():
    assert _cycles() == []


#: The layers, bottom up (README's Layout): a module imports only from its own layer or below.
LAYERS: List[Tuple[str, Tuple[str, ...]]] = [
    ("leaves", ("pyplugins", "pyplugins.errors", "pyplugins.dtypes", "pyplugins._config",
                "pyplugins.echo", "pyplugins.testing")),
    ("the tensorrt stand-in", ("pyplugins.emulator",)),
    ("the active TensorRT", ("pyplugins._trt", "pyplugins.trt")),
    ("the authoring runtime", ("pyplugins.runtime",)),
    ("the shipped ops", ("pyplugins.ops",)),
    ("the checker", ("pyplugins.checker",)),
    ("models", ("pyplugins.models",)),
    ("the command line", ("pyplugins.cli", "pyplugins.__main__")),
]


def _layer(module: str) -> int:
    best = (-1, -1)  # (length of the longest matching prefix, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best[0]:
                best = (len(prefix), index)
    return best[1]


def test_every_module_has_a_layer():
    assert [m for m in MODULES if _layer(m) < 0] == []


def test_no_import_runs_up_a_layer():
    up = sorted(f"{m} ({LAYERS[_layer(m)][0]}) -> {t} ({LAYERS[_layer(t)][0]})"
                for m in MODULES for t in _edges(m) if _layer(t) > _layer(m))
    assert [u for u in up if u not in KNOWN_UP] == []
    assert KNOWN_UP <= set(up), "a known exception is fixed: remove it from KNOWN_UP"


def test_the_stand_in_imports_only_the_leaves_numpy_and_the_standard_library():
    # onnx: the parser's attribute conversion, imported lazily; tensorrt: install() defers to it
    allowed = {"numpy", "onnx", "tensorrt"}
    outside = set()
    for module in (m for m in MODULES if _layer(m) == 1):
        tree = ast.parse(MODULES[module].read_text())
        for node in _runtime_nodes(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            for name in names:
                top = name.split(".")[0]
                if top != "pyplugins" and top not in allowed and top not in sys.stdlib_module_names:
                    outside.add((module, name))
    assert sorted(outside) == []


def test_no_private_name_is_imported_across_modules():
    bad = sorted((module, source, name) for module in MODULES for source, name in _imports(module)
                 if name.startswith("_") and not name.startswith("__") and source != module
                 and f"{source}.{name}" not in MODULES)
    assert [b for b in bad if b not in KNOWN_PRIVATE] == []
    assert KNOWN_PRIVATE <= set(bad), "a known exception is fixed: remove it from KNOWN_PRIVATE"


def _reexports(module: str) -> List[str]:
    tree = ast.parse(MODULES[module].read_text())
    defined, exported = set(), []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            defined |= names
            if "__all__" in names and isinstance(node.value, (ast.List, ast.Tuple)):
                exported = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]
    imported = {name for _, name in _imports(module)}
    return [name for name in exported if name in imported and name not in defined]


def test_no_name_is_imported_only_to_be_reexported():
    bad = sorted((module, name) for module in MODULES if module not in FACADES
                 for name in _reexports(module))
    assert [b for b in bad if b not in KNOWN_REEXPORTS] == []
    assert KNOWN_REEXPORTS <= set(bad), "a known exception is fixed: remove it from KNOWN_REEXPORTS"


def test_the_checks_see_what_they_look_for():
    # The walkers must find real edges, or the tests above would pass on an empty graph.
    assert "pyplugins.runtime.fields" in _edges("pyplugins.runtime.plugin")
    assert ("pyplugins.runtime.error_reports", "wrap_methods") in _imports("pyplugins.runtime.plugin")
    assert "DataType" in _reexports("pyplugins.emulator")  # a facade: re-exporting is its job
