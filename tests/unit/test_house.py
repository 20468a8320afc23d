"""The house's rules, read off the source (``ast``; the ``.pyx`` by its Python-level lines): no module of the
package reads another module's private names, by ``from M import _x`` or by ``M._x``; no modules import each other
in a circle at import time (a ``cimport`` of a compiled module counts: it is imported when its importer is); and
the compiled kernels and their twin import only the package's leaves."""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "textcalls"
SOURCES = sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "ext" / "textcalls").glob("*.pyx"))


def _module(path: pathlib.Path) -> str:
    rel = path.relative_to(PACKAGE if path.suffix == ".py" else ROOT / "ext").with_suffix("")
    parts = ("textcalls", *rel.parts) if path.suffix == ".py" else rel.parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in SOURCES}


def _tree(path: pathlib.Path) -> ast.Module:
    text = path.read_text("utf-8")
    if path.suffix == ".pyx":  # its Python-level imports, and the module-level values read from what they bind
        kept = []
        for line in text.splitlines():
            line = line.split("#")[0].rstrip()
            if m := re.match(r"from (textcalls\.\w+) cimport", line):
                kept.append(f"import {m.group(1)}")  # a compiled module's C API: imported with its importer
            elif line.startswith(("from textcalls", "import textcalls", "from . ")) and "cimport" not in line:
                kept.append(line)
            elif m := re.match(r"cdef \w+ \w+ = (?:not )?(\w+(?:\.\w+)+)", line):
                kept.append(m.group(1))  # ``cdef object X = module._name…``: the read
        text = "\n".join(kept)
    return ast.parse(text)


def _target(module: str, path: pathlib.Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def reads_of_private_names(module: str, path: pathlib.Path) -> list[str]:
    tree = _tree(path)
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _target(module, path, node)
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if full in MODULES:  # a module imported by name: its attribute reads count
                    aliases[alias.asname or alias.name] = full
                elif target in MODULES and target != module and _private(alias.name):
                    found.append(f"from {target} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private(node.attr)
            and aliases[node.value.id] != module
        ):
            found.append(f"{aliases[node.value.id]}.{node.attr}")
    return found


def test_the_sources_are_found():
    assert {"textcalls._events", "textcalls.dialects.xml", "textcalls._scan_c", "textcalls.dialects"} <= set(MODULES)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_reads_another_modules_private_names(module):
    assert reads_of_private_names(module, MODULES[module]) == []


def test_the_check_sees_a_private_read():
    # (the check above would pass vacuously if it saw nothing)
    path = PACKAGE / "_events.py"
    tree_text = "from .dialects.xml import _Markup\nfrom .dialects import xml\nxml._AFTER_VALUE\n"
    original = _tree
    try:
        globals()["_tree"] = lambda p: ast.parse(tree_text)
        assert reads_of_private_names("textcalls._events", path) == [
            "from textcalls.dialects.xml import _Markup",
            "textcalls.dialects.xml._AFTER_VALUE",
        ]
    finally:
        globals()["_tree"] = original


def imports_of(module: str, path: pathlib.Path) -> set[str]:
    """The package modules ``module`` imports when it is imported: its top-level imports (those inside a
    function run later; those under ``if TYPE_CHECKING`` never)."""
    tree = _tree(path)
    found: set[str] = set()
    nodes = list(tree.body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.If, ast.Try)):
            nodes += node.body + node.orelse + [n for h in getattr(node, "handlers", ()) for n in h.body]
        elif isinstance(node, ast.ImportFrom):
            target = _target(module, path, node)
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(full if full in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in MODULES and m != module}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of ``graph`` with more than one module (Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_a_circle_is_seen():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_modules_import_each_other_in_a_circle():
    graph = {m: imports_of(m, p) for m, p in MODULES.items()}
    assert circles(graph) == []


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for m in graph.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


#: the modules that import nothing of the package: the table, the result types, the relaxed-JSON rules
LEAVES = {"textcalls.markers", "textcalls.toolcall", "textcalls._json_rules"}


def test_the_leaves_import_nothing_of_the_package():
    assert {m for m in LEAVES if imports_of(m, MODULES[m])} == set()


def test_the_kernels_import_only_leaves():
    """The string kernels (both implementations, and their selector) reach no module above them: the
    scanner, the grammars and the gateway layers may change without touching them."""
    graph = {m: imports_of(m, p) for m, p in MODULES.items()}
    kernels = {"textcalls._kernels", "textcalls._kernels_c", "textcalls._kernels_py"}
    assert {"textcalls._kernels_c", "textcalls._scan_c"} <= set(MODULES)  # the .pyx are read too
    assert _reached(graph, "textcalls._kernels") <= kernels | LEAVES
    assert "textcalls._kernels_c" in graph["textcalls._scan_c"]
