"""Pick the hot path: the Cython ``_scan_c`` when built, else the pure-Python twin ``_scan_py``.

``TEXTCALLS_NO_EXTENSIONS=1`` forces the twin. ``impl`` is read at call time by the rest of the
package, so tests can switch it and exercise both implementations in one process.
"""

import os

from . import _scan_py

impl = _scan_py
if not os.environ.get("TEXTCALLS_NO_EXTENSIONS"):
    try:
        # the extension or its twin: one API, the stub's (_scan_c.pyi); mypy types ``impl`` as the twin
        from . import _scan_c as impl  # type: ignore[no-redef]
    except ImportError:  # not built (pure-Python install): the twin gives the same answers
        pass

IMPLEMENTATION = "python" if impl is _scan_py else "cython"
