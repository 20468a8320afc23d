"""Conservative repair of almost-JSON written by LLMs: fix known slips, never invent content.

Repairs, all made by one tokenizer pass that respects strings, followed by a strict
``json.loads``: one surrounding markdown fence; the leaked quote tokens ``<|"|>`` and
``<|">`` used as quotes; bare and single-quoted object keys; trailing commas; and one pair
of redundant outer braces around an object. Anything else (bare values, missing or
mismatched brackets, stray text) raises ``ValueError``. Linear time.

``decode`` is how the grammars read JSON: strictly first, then with these repairs; ``NO_VALUE`` when
neither reads the text.
"""

from __future__ import annotations

import json
from typing import Final

from . import _kernels
from ._json_rules import MAX_DEPTH, PLAIN_DEPTH_MAX, PLAIN_NUMBER_MAX, REPAIR_TOKENS, strip_fence

__all__ = [
    "MAX_DEPTH",
    "NO_VALUE",
    "PLAIN_DEPTH_MAX",
    "PLAIN_NUMBER_MAX",
    "REPAIR_TOKENS",
    "decode",
    "loads",
    "strip_fence",
]

#: What ``decode`` returns for text that is not JSON, even after the repairs: the grammars' one
#: "no value" sentinel (``dialects.context`` returns it for a value that does not fit a schema type).
NO_VALUE: Final = object()


def decode(text: str) -> object:
    """The JSON value of ``text``: strict ``json.loads``, then ``loads`` (the repairs); ``NO_VALUE`` if
    neither reads it. Never raises for a ``str``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return loads(text)
    except ValueError:
        return NO_VALUE


def loads(text: str) -> object:
    """Parse ``text`` as JSON after the conservative repairs; raise ``ValueError`` if that fails (or the
    text has more than ``REPAIR_TOKENS`` tokens: the repairs read token by token)."""
    body = strip_fence(text).strip()
    try:
        return _loads_repaired(body)
    except ValueError:
        inner = body[1:-1]
        if not (body.startswith("{") and body.endswith("}") and inner.lstrip().startswith("{")):
            raise
    value = _loads_repaired(inner)
    if not isinstance(value, dict):
        raise ValueError("redundant braces around a non-object")
    return value


def _loads_repaired(text: str) -> object:
    """``json.loads`` of the repaired text; ``ValueError`` for every failure."""
    try:
        return json.loads(_kernels.impl.repair(text))  # the Cython kernel, or its twin
    except RecursionError:
        raise ValueError("nested too deeply") from None
