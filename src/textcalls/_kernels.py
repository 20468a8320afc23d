"""Pick the string kernels: the Cython ``_kernels_c`` when built, else the pure-Python twin ``_kernels_py``.

``TEXTCALLS_NO_EXTENSIONS=1`` forces the twin. ``impl`` is read at call time by the rest of the package,
so tests can switch it (with ``_scan.impl``) and exercise both implementations in one process. A leaf
but for its two implementations, which are leaves.
"""

import os

from . import _kernels_py

impl = _kernels_py
if not os.environ.get("TEXTCALLS_NO_EXTENSIONS"):
    try:
        # the extension or its twin: one API, the stub's (_kernels_c.pyi); mypy types ``impl`` as the twin
        from . import _kernels_c as impl  # type: ignore[no-redef]
    except ImportError:  # not built (pure-Python install): the twin gives the same answers
        pass

IMPLEMENTATION = "python" if impl is _kernels_py else "cython"
