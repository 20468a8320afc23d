"""The code examples of README.md and docs/ run as written (issue 30): each ``python`` block is executed, and each
``console`` block's ``$`` commands run in a scratch folder, their output compared with what the block shows (``…``
stands for any text). ``sh`` blocks (installs, a server's command line) and ``yaml`` ones are not run."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```$", re.M | re.S)


def blocks(kind: str) -> list:
    found = []
    for page in PAGES:
        text = page.read_text("utf-8")
        for m in _BLOCK.finditer(text):
            if m.group(1) == kind:
                line = text.count("\n", 0, m.start()) + 1
                found.append(pytest.param(m.group(2), id=f"{page.name}:{line}"))
    return found


def test_the_pages_have_examples_of_each_kind():
    assert len(blocks("python")) >= 6 and len(blocks("console")) >= 1


@pytest.mark.parametrize("code", blocks("python"))
def test_python_example_runs(impl, code):
    exec(compile(code, "<docs example>", "exec"), {"__name__": "__docs__"})


def _expected(lines: list) -> re.Pattern:
    return re.compile("\n".join(re.escape(line).replace("…", ".*") for line in lines), re.S)


@pytest.mark.parametrize("block", blocks("console"))
def test_console_example_runs_and_says_what_it_shows(tmp_path, block):
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    steps: list = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    for command, shown in steps:
        done = subprocess.run(
            command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, encoding="utf-8", timeout=60
        )
        assert done.returncode == 0, (command, done.stderr)
        said = (done.stdout + done.stderr).rstrip("\n")
        assert _expected(shown).fullmatch(said), (command, said)
