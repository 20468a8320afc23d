"""JSON as gateways send it: the one decoder of the bytes the helpers read (SSE events, bodies), and the one
encoder of the bytes they write.

``loads(data)`` is ``json.loads(data)`` for bytes: the same value, or the same error, faster. With msgspec
installed (the extra ``fast``) msgspec reads first, and whatever it refuses — ``NaN`` and ``Infinity``, a number
beyond a float's range or an int past Python's digit limit, a lone surrogate (escaped or as bytes), a byte order
mark, UTF-16 or UTF-32, nesting it will not follow, malformed JSON — is read again by the standard library,
which decides. The backend is chosen once, at import: ``TEXTCALLS_JSON=stdlib`` forces the standard library
(msgspec is then not even imported); ``BACKEND`` says which one is in use.
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["BACKEND", "dumps_compact", "loads", "loads_msgspec", "loads_stdlib"]

_raw_decode = json.JSONDecoder().raw_decode  # json.loads's own reader: (value, end)


def loads_stdlib(data: bytes | bytearray) -> Any:
    """``json.loads(data)``, by the standard library only. A UTF-8 object (the usual chunk) skips the
    encoding detection and the whitespace matching that ``json.loads`` does on every call."""
    if data.startswith(b"{") and not data.startswith(b"\x00", 1):  # what json.detect_encoding takes for UTF-8
        text = data.decode("utf-8", "surrogatepass")  # json.loads's own decoding: its error, if any
        value, end = _raw_decode(text)  # json.loads's error for a malformed value
        if end == len(text) or not text[end:].strip(" \t\n\r"):  # else "Extra data": json.loads raises it
            return value
    return json.loads(data)


def _msgspec_loads():
    """``json.loads`` by msgspec where it gives the same value, by the standard library elsewhere; None
    without msgspec, or with ``TEXTCALLS_JSON=stdlib`` (then msgspec is not even imported)."""
    if os.environ.get("TEXTCALLS_JSON") == "stdlib":
        return None
    try:
        import msgspec  # type: ignore[import-not-found, unused-ignore]  # the extra "fast"
    except ImportError:
        return None
    decode = msgspec.json.decode  # untyped: dict, list, str, int (any size), float, bool, None
    refused = (msgspec.MsgspecError, RecursionError)

    def loads_msgspec(data: bytes | bytearray) -> Any:
        """``json.loads(data)``: msgspec's value, or the standard library's when msgspec refuses."""
        try:
            return decode(data)
        except refused:  # not JSON as msgspec reads it (or not in its bounds): json.loads decides
            return loads_stdlib(data)

    return loads_msgspec


#: ``loads`` by msgspec first (None when msgspec is not installed, or not used)
loads_msgspec = _msgspec_loads()
#: which one ``loads`` is: "msgspec", or "stdlib" (msgspec not installed, or ``TEXTCALLS_JSON=stdlib``)
BACKEND = "stdlib" if loads_msgspec is None else "msgspec"
loads = loads_stdlib if loads_msgspec is None else loads_msgspec


def dumps_compact(obj: object) -> bytes:
    """Compact UTF-8 JSON (no spaces, non-ASCII as is); with a lone surrogate, which UTF-8 cannot carry,
    ASCII JSON with every escape instead."""
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: keep them escaped
        return json.dumps(obj, separators=(",", ":")).encode("ascii")
