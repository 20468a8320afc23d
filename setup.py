"""Build the optional Cython extensions: ``textcalls._kernels_c`` (the string kernels, a leaf) and
``textcalls._scan_c`` (the scanner, which cimports the kernels: ``ext/textcalls/_kernels_c.pxd``).

All metadata lives in pyproject.toml; this file only declares the extension.

``TEXTCALLS_NO_EXTENSIONS=1`` at build time gives a pure-Python install
(``textcalls._scan`` then uses ``_scan_py``). Without it, a failure to
cythonize or compile is a build error: we never fall back silently.
"""

import os

from setuptools import setup

# Same rule as textcalls._scan at run time: any non-empty value counts.
NO_EXTENSIONS = bool(os.environ.get("TEXTCALLS_NO_EXTENSIONS"))


def extensions():
    if NO_EXTENSIONS:
        return []

    from Cython.Build import cythonize
    from setuptools import Extension

    return cythonize(
        [
            Extension("textcalls._kernels_c", ["ext/textcalls/_kernels_c.pyx"]),
            Extension("textcalls._scan_c", ["ext/textcalls/_scan_c.pyx"]),
        ],
        include_path=["ext"],  # ``cimport textcalls._text`` / ``textcalls._kernels_c``: ext/textcalls/*.pxd
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
        },
    )


setup(ext_modules=extensions())
