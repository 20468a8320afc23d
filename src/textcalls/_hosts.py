"""What the host integrations (``vllm``, ``sglang``, ``litellm``) share: the dialects their parsers recover by
default, the host's version, the errors for a host they cannot serve, and the checking of their options."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, ClassVar, NoReturn, Protocol, TypeVar, cast

from .markers import DIALECTS
from .options import Options

__all__ = ["FORMATS", "check_options", "host_version", "import_failed", "register_class", "unknown_api"]

#: The dialects a host's tool parser recovers by default: every default one but reasoning (the host's
#: ``--reasoning-parser`` does that) and Harmony (the hosts serve gpt-oss with their own parsers).
FORMATS = tuple(name for name, on in DIALECTS.items() if on and name not in ("reasoning", "harmony"))


class _Recovering(Protocol):
    recovery: ClassVar[dict[str, Any]]


_E = TypeVar("_E", bound=Exception)
_R = TypeVar("_R", bound=_Recovering)


def host_version(dist: str) -> str:
    """The installed version of the distribution ``dist``, or ``"(version unknown)"``."""
    try:
        return version(dist)
    except PackageNotFoundError:
        return "(version unknown)"


def unknown_api(module: str, host: str, found: str, tested_with: str, what: str, error_type: type[_E]) -> _E:
    """The ``error_type`` saying that ``textcalls.MODULE`` does not know the interface of ``host`` ``found``
    (its version): ``what`` differs; it names ``tested_with`` and the extra to install."""
    return error_type(
        f"textcalls.{module} does not know the API of {host} {found}: {what} "
        f"(tested with {host} {tested_with}; pip install 'textcalls[{module}]')"
    )


def import_failed(error: ImportError, module: str, host: str, unknown: Callable[[str], Exception]) -> NoReturn:
    """Raise what ``error``, from importing the host's names for ``textcalls.MODULE``, means: ImportError
    "needs HOST" when the host (distribution ``module``) is not installed; ``error`` itself when one of the
    host's own dependencies is missing (its message says which); else ``unknown(str(error))``."""
    if isinstance(error, ModuleNotFoundError):
        if error.name == module or importlib.util.find_spec(module) is None:
            raise ImportError(f"textcalls.{module} needs {host}: pip install 'textcalls[{module}]'") from error
        if not (error.name or "").startswith(f"{module}."):
            raise error
    raise unknown(str(error)) from error


def check_options(options: dict) -> None:
    """TypeError/ValueError naming the bad one unless ``options`` are ``parse``'s keywords but ``tools`` (the
    tools come from each request) and ``stream_arguments`` (not supported here)."""
    if "tools" in options or "options" in options:
        raise TypeError("the tools come from each request: give parse's other keywords")
    if Options(**options).stream_arguments:  # bad keywords raise now, not at the first request
        raise ValueError("stream_arguments is not supported in the host integrations (each call goes out whole)")


def register_class(base: type[_R], name: object, options: dict) -> type[_R]:
    """The class to register as ``name`` for ``options`` (``check_options``; ``formats`` defaults to
    ``FORMATS``): ``base`` when its ``recovery`` is that already, else a subclass whose ``recovery`` it is.
    TypeError/ValueError for a bad ``name``."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__}")
    if not name:
        raise ValueError("name must not be empty")
    recovery = {"formats": FORMATS, **options}
    check_options(recovery)
    if recovery == base.recovery:
        return base
    return cast("type[_R]", type(base.__name__, (base,), {"recovery": recovery, "__module__": base.__module__}))
