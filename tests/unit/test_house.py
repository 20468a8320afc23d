"""The house's rules, read off the source (``ast``; the ``.pyx`` by its Python-level lines): no module of the
package reads another module's private names, by ``from M import _x`` or by ``M._x``."""

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
            if line.startswith(("from textcalls", "import textcalls", "from . ")) and "cimport" not in line:
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
