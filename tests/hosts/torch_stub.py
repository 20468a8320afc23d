"""An import stub for ``torch``, for tests only: vLLM's parser and protocol modules import torch (and much of
vLLM with it) at module level without using it, and the tests install vLLM with ``--no-deps``, without torch.

``install()`` makes ``import torch`` and ``import torch.<anything>`` give permissive stand-ins, for the rest of
the process, when torch is not installed (with torch installed it does nothing): every attribute is a
placeholder class that can be called, subscripted, combined with ``|`` and ``+``, compared and iterated
(empty), and is false; ``torch.iinfo`` gives int64's bounds. Nothing in it computes: code that needs a tensor fails. It also sets
``TVM_FFI_DISABLE_TORCH_C_DLPACK=1``, or tvm_ffi (under xgrammar) would try to compile a torch extension.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

#: the torch release vLLM 0.33.0 pins (``torch==2.14.0``): its version checks read ``torch.__version__``
VERSION = "2.14.0"


class _Placeholder(type):
    """The type of every stub attribute: a class whose every use gives itself back (or nothing)."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Placeholder(name, (), {})

    def __call__(cls, *args, **kwargs):
        return cls

    def __getitem__(cls, key):
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __add__(cls, other):
        return cls

    def __radd__(cls, other):
        return cls

    def __iter__(cls):
        return iter(())

    def __bool__(cls):
        return False

    def __lt__(cls, other):
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __enter__(cls):
        return cls

    def __exit__(cls, *exc):
        return False


def _iinfo(dtype):
    """``torch.iinfo`` of any dtype, as int64's: vLLM's request models bound their seeds with it."""
    return types.SimpleNamespace(bits=64, min=-(2**63), max=2**63 - 1)


class _Module(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _Placeholder(name, (), {})
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``torch`` and every ``torch.*`` module, as stub packages."""

    def find_spec(self, fullname, path, target=None):
        if fullname == "torch" or fullname.startswith("torch."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []
        if spec.name == "torch":
            module.__version__ = VERSION
            module.iinfo = _iinfo
        return module

    def exec_module(self, module):
        pass


def install() -> bool:
    """Install the stub unless torch is installed (or the stub already is); True if the stub is in use."""
    if any(isinstance(finder, _Finder) for finder in sys.meta_path):
        return True
    if importlib.util.find_spec("torch") is not None:
        return False
    os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")
    sys.meta_path.insert(0, _Finder())
    return True
