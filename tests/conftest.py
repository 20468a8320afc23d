"""Every test that takes ``impl`` runs once on the Cython hot path and once on the pure-Python twin.

The ``impl`` fixture also switches ``textcalls._scan.impl`` and ``textcalls._kernels.impl`` (``_scan.use``), so
the public API (``parse``, ``recover_response`` …) runs on that implementation too; ``kernels`` is the
string kernels' module of the same implementation. The Cython variant is required unless
``TEXTCALLS_NO_EXTENSIONS`` is set: a missing extension fails the run instead of hiding.
"""

import os

import pytest

import textcalls
from textcalls import _events, _kernels, _scan, _scan_py

IMPLS = [pytest.param(_scan_py, id="py")]
if os.environ.get("TEXTCALLS_NO_EXTENSIONS"):
    IMPLS.append(pytest.param(None, id="c", marks=pytest.mark.skip("TEXTCALLS_NO_EXTENSIONS is set")))
else:
    from textcalls import _scan_c

    IMPLS.insert(0, pytest.param(_scan_c, id="c"))


@pytest.fixture(params=IMPLS)
def impl(request, monkeypatch):
    monkeypatch.setattr(_scan, "impl", request.param)
    monkeypatch.setattr(_kernels, "impl", request.param.KERNELS)
    return request.param


@pytest.fixture
def kernels(impl):
    """The string kernels of ``impl``'s implementation (``_kernels_c`` or ``_kernels_py``)."""
    return impl.KERNELS


@pytest.fixture
def tc():
    """The public package (use together with ``impl``)."""
    return textcalls


@pytest.fixture
def per_delta(monkeypatch):
    """``stream_arguments``' reader reads a started call's body at every delta (``PIECE_MIN`` 1), not in runs:
    for tests of what it sends, and holds back, as the text arrives."""
    monkeypatch.setattr(_events, "PIECE_MIN", 1)
