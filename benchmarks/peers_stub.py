"""Benchmark-only: import vLLM's and SGLang's own tool parsers without torch or their GPU stacks.

``install()`` must run before the first ``import vllm`` / ``import sglang``. It

- puts a finder first on ``sys.meta_path`` that answers, for each top-level name in ``STUBBED`` that is
  not installed, with an empty permissive module: any attribute is a class that can be called,
  subclassed, subscripted, used as a decorator, in ``X | None`` and in pydantic fields. vLLM's import
  chain from ``vllm.tool_parsers`` runs through ``vllm.config`` (model, quantization, distributed),
  which imports these at module level; the parsers never call them;
- registers ``sglang`` as a bare package: ``sglang/__init__.py`` imports the runtime (torch, triton,
  starlette) and patches ``transformers``; the parsers live in namespace packages under it
  (``sglang.srt.function_call``) and need none of that.

What the parsers really run (regex, pydantic, partial-json-parser, orjson, msgspec, openai's types)
must be installed: a stub stands only for code that the parsing never reaches.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

#: Imported at module level on the way to the parsers, never used by them. torch is the one that
#: must not be installed; the others are stubbed only when absent.
STUBBED = frozenset(
    {
        # vLLM (vllm.tool_parsers -> vllm.config -> model_executor, distributed, multimodal, v1)
        "torch",
        "numpy",
        "PIL",
        "fastapi",
        "cbor2",
        "psutil",
        "zmq",
        "urllib3",
        "requests",
        "aiohttp",
        "transformers",
        "huggingface_hub",
        "safetensors",
        "openai_harmony",
        "pybase64",
        "cachetools",
        "prometheus_client",
        "cloudpickle",
        "uvloop",
        # SGLang (sglang.utils, imported by sglang.srt.entrypoints.openai.protocol; xgrammar by
        # function_call_parser through one of its detectors)
        "IPython",
        "tqdm",
        "xgrammar",
    }
)
TORCH_VERSION = "2.14.0"  # what vLLM 0.33 pins: its version gates then skip the torch patches


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


class _StubType(type):
    """The type of every stub class: its attributes are stubs too."""

    def __getattr__(cls, name: str) -> type:
        if _is_dunder(name):
            raise AttributeError(name)
        return _stub_class(name)

    def __getitem__(cls, item: object) -> type:
        return cls

    def __or__(cls, other: object) -> type:
        return cls

    __ror__ = __or__

    def __iter__(cls):
        return iter(())


class _Stub(metaclass=_StubType):
    """An instance of a stub: falsy, empty, absorbing arithmetic; called on a function it returns it."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __getattr__(self, name: str) -> type:
        if _is_dunder(name):
            raise AttributeError(name)
        return _stub_class(name)

    def __call__(self, *args: object, **kwargs: object) -> object:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator
        return _Stub()

    def __bool__(self) -> bool:
        return False

    def __iter__(self):
        return iter(())

    def __getitem__(self, key: object) -> _Stub:
        return _Stub()

    def __add__(self, other: object) -> _Stub:
        return self

    __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = __truediv__ = __or__ = __ror__ = __add__

    def __lt__(self, other: object) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __enter__(self) -> _Stub:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False

    @classmethod
    def __get_pydantic_core_schema__(cls, source: object, handler: object) -> object:
        from pydantic_core import core_schema

        return core_schema.any_schema()


def _stub_class(name: str) -> type:
    return _StubType(name, (_Stub,), {})


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> type:
        if _is_dunder(name):
            raise AttributeError(name)
        value = _stub_class(name)
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers for the names in ``STUBBED`` (and their submodules) that no other finder can import."""

    def find_spec(self, fullname, path, target=None):
        if fullname.partition(".")[0] not in STUBBED:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is not self and find is not None and find(fullname, path, target) is not None:
                return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        if module.__name__ == "torch":
            module.__version__ = TORCH_VERSION


def stubbed_modules() -> list[str]:
    """The modules that are stubs in this process (to report what the import chain needed)."""
    return sorted(name for name, module in sys.modules.items() if isinstance(module, _StubModule))


def install() -> None:
    """Make the peers' parser modules importable. Idempotent."""
    if not any(isinstance(finder, _StubFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _StubFinder())
    if "sglang" not in sys.modules:
        spec = importlib.util.find_spec("sglang")
        if spec is not None and spec.submodule_search_locations is not None:
            package = types.ModuleType("sglang")
            package.__path__ = list(spec.submodule_search_locations)
            sys.modules["sglang"] = package


class FakeTokenizer:
    """What vLLM's Hermes and DeepSeek V3 parsers use of a tokenizer: ``get_vocab()`` (the markers' ids).

    Text that is not a marker is one token per delta: ``ids(delta)`` gives a delta's token ids.
    """

    TEXT_ID = 1

    def __init__(self, special_tokens: list[str]) -> None:
        self._vocab = {token: 100 + i for i, token in enumerate(special_tokens)}

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def ids(self, delta: str) -> list[int]:
        return [self._vocab.get(delta, self.TEXT_ID)]
