"""Driving ``SSERecovery`` over chat.completion.chunk events and reading what a client gets."""

from __future__ import annotations

import itertools
import json
import re

from textcalls.sse import SSERecovery

from .sse_events import events

CALL_ID = re.compile(rb"call_[0-9a-f]{22}")


def chunk(content=None, *, finish=None, index=0, **delta):
    if content is not None:
        delta["content"] = content
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def data_line(obj) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def stream(chunks, nl=b"\n", done=True) -> bytes:
    out = b"".join(data_line(c) + nl + nl for c in chunks)
    return out + (b"data: [DONE]" + nl + nl if done else b"")


def recover(data, cuts=(), **kw):
    """Feed ``data`` cut at ``cuts``; return everything sent downstream."""
    r = SSERecovery(native=kw.pop("native", True), has_tools=kw.pop("has_tools", True), **kw)
    bounds = [0, *cuts, len(data)]
    return b"".join(r.feed(data[a:b]) for a, b in itertools.pairwise(bounds)) + r.close()


def masked(data: bytes) -> bytes:
    return CALL_ID.sub(b"call_ID", data)


def seen(data: bytes) -> list:
    """What a client gets: each event's data, JSON decoded where it is JSON."""
    out = []
    for _, payload, _ in events(data):
        try:
            out.append(json.loads(payload))
        except ValueError:
            out.append(payload)
    return out


def assemble(items, index=0):
    """(content, [(tc index, name, arguments)], finish reasons) of choice ``index``."""
    text, calls, finishes = "", [], []
    for item in items:
        if not isinstance(item, dict):
            continue
        for c in item.get("choices", []):
            if c["index"] != index:
                continue
            text += c["delta"].get("content") or ""
            calls += [
                (t["index"], t["function"].get("name"), t["function"]["arguments"])
                for t in c["delta"].get("tool_calls") or []
            ]
            if c.get("finish_reason"):
                finishes.append(c["finish_reason"])
    return text, calls, finishes
