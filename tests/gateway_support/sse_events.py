"""A plain reading of the SSE spec (WHATWG "Interpreting an event stream"), to check what clients see."""

from __future__ import annotations

import re

_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n)")


def events(data: bytes) -> list:
    """The events a client dispatches from ``data``: (type, data, last event id) tuples.

    The stream is UTF-8 with one optional BOM; an event is dispatched at an empty line when its data
    buffer is not empty; an incomplete last event is dropped, as the spec says.
    """
    text = data.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    out = []
    kind, buffer, last_id = "", [], ""
    for line, _ in _LINE.findall(text):
        if line == "":
            if buffer:
                out.append((kind or "message", "\n".join(buffer), last_id))
            kind, buffer = "", []
            continue
        if line.startswith(":"):
            continue
        field, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if field == "data":
            buffer.append(value)
        elif field == "event":
            kind = value
        elif field == "id" and "\0" not in value:
            last_id = value
    return out
