"""Import stubs for SGLang's tests, for tests only: the package SGLang's parser and protocol modules live in
imports torch and triton at module level (``sglang.srt.utils.common``) without using them on that path, and
the tests install SGLang with ``--no-deps``, without either.

``install()``, when SGLang is installed: ``torch`` from ``torch_stub`` (unless torch is installed), an empty
``triton`` module (unless triton is installed: only ``import triton`` runs), and, with torch stubbed,
``transformers.models.llama.modeling_llama`` made unimportable: SGLang's import-time transformers patches
import it (transformers, seeing a torch, then builds its models on the stub and fails) and skip that one
patch on ImportError. It also sets ``TVM_FFI_DISABLE_TORCH_C_DLPACK=1``, or tvm_ffi (under xgrammar) would
try to compile a torch extension.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import types

from . import torch_stub

#: imported for SGLang's transformers patches only; building it needs a real torch
MODELING_LLAMA = "transformers.models.llama.modeling_llama"


def install() -> bool:
    """Install the stubs SGLang needs; False (and nothing installed) when SGLang is not installed."""
    if importlib.util.find_spec("sglang") is None:
        return False
    os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")
    if torch_stub.install():
        sys.modules.setdefault(MODELING_LLAMA, None)  # type: ignore[arg-type]
    if "triton" not in sys.modules and importlib.util.find_spec("triton") is None:
        triton = types.ModuleType("triton")
        triton.__spec__ = importlib.machinery.ModuleSpec("triton", None)
        sys.modules["triton"] = triton
    return True
