"""JSON as gateways send it: the one encoder of the bytes the response and SSE helpers write."""

from __future__ import annotations

import json

__all__ = ["dumps_compact"]


def dumps_compact(obj: object) -> bytes:
    """Compact UTF-8 JSON (no spaces, non-ASCII as is); with a lone surrogate, which UTF-8 cannot carry,
    ASCII JSON with every escape instead."""
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them escaped
        return json.dumps(obj, separators=(",", ":")).encode("ascii")
