"""Pick the hot path: the Cython ``_scan_c`` when built, else the pure-Python twin ``_scan_py``.

``TEXTCALLS_NO_EXTENSIONS=1`` forces the twin. ``impl`` is read at call time by the rest of the
package, so tests can switch it and exercise both implementations in one process: ``use`` switches this
selector and the kernels' (``_kernels.impl``) together, to a scanner and the kernels it calls.
"""

import os
from types import ModuleType

from . import _kernels, _scan_py

impl = _scan_py
if not os.environ.get("TEXTCALLS_NO_EXTENSIONS"):
    try:
        # the extension or its twin: one API, the stub's (_scan_c.pyi); mypy types ``impl`` as the twin
        from . import _scan_c as impl  # type: ignore[no-redef]
    except ImportError:  # not built (pure-Python install): the twin gives the same answers
        pass

IMPLEMENTATION = "python" if impl is _scan_py else "cython"


def use(scanner: ModuleType) -> ModuleType:
    """Switch both selectors: ``impl`` to ``scanner`` (``_scan_c`` or ``_scan_py``) and ``_kernels.impl`` to the
    kernels it calls (its ``KERNELS``); return the scanner selected before (``use`` it again to restore)."""
    global impl
    before, impl = impl, scanner
    _kernels.impl = scanner.KERNELS
    return before
