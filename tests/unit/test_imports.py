"""Every module of the package imports alone, first, in a fresh interpreter (as multidict's
``test_circular_imports.py``): none needs another imported before it, whatever the order the modules of an
import circle are met in. The host plugins (``textcalls.vllm``, ``sglang``, ``litellm``) import their hosts,
whose GPU stacks the test environment stubs: they are imported through their hosts in ``tests/hosts``;
``textcalls.__main__`` runs the command line."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys

import pytest

import textcalls

HOST_PLUGINS = {"textcalls.vllm", "textcalls.sglang", "textcalls.litellm", "textcalls.__main__"}
MODULES = sorted(
    {"textcalls"} | {m.name for m in pkgutil.walk_packages(textcalls.__path__, "textcalls.")} - HOST_PLUGINS
)


def test_the_package_has_the_modules_it_is_known_for():
    # (a walk that finds nothing would pass the test below vacuously)
    assert {"textcalls.parse", "textcalls._scan_py", "textcalls.dialects.xml", "textcalls.proxy"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_a_module_imports_alone(module, impl):
    env = {"TEXTCALLS_NO_EXTENSIONS": "1"} if impl.__name__.endswith("_py") else {}
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if k != "TEXTCALLS_NO_EXTENSIONS"}, **env},
    )
    assert done.returncode == 0, done.stderr[-2000:]
