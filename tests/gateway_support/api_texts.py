"""What the Responses and Messages tests share: assistant texts made of prose and tool-call markup
(hypothesis), feeding bytes in splits, and a plain SSE reading of what a client gets."""

from __future__ import annotations

import itertools
import json

from hypothesis import strategies as st

from .sse_events import events

#: The tools offered, chat-shaped; the tests give them in each API's own shape.
NAMES = ("get_weather", "get_time")
#: Prose holds none of the characters markup begins with, so a '<', '｜', '[', '{' or backtick that
#: reaches a client is markup leaking.
PROSE = st.text(alphabet="abc xyz.,!?\n", max_size=30)
LEAKS = ("<", "｜", "[", "{", "`")


@st.composite
def calls(draw) -> tuple:
    """A call in markup: (its text, name, arguments)."""
    name = draw(st.sampled_from(NAMES))
    args = {"city": draw(st.sampled_from(["Paris", "Oslo", "a b"]))}
    dialect = draw(st.sampled_from(["hermes", "deepseek", "qwen"]))
    if dialect == "hermes":
        text = f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"
    elif dialect == "deepseek":
        text = f"<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{json.dumps(args)}<｜tool▁call▁end｜>"
    else:
        text = (
            f"<tool_call>\n<function={name}>\n<parameter=city>\n{args['city']}\n</parameter>\n</function>\n</tool_call>"
        )
    return text, name, args


#: Ends of a text that could still begin markup, so a stream holds them until the text ends.
HELD_ENDS = ("", "", "<", "<tool_c", "<tool_call", "<｜tool▁call")


@st.composite
def texts(draw) -> tuple:
    """(an assistant text of prose with calls among it, the calls' (name, arguments), its held end: text
    that could still begin markup, sent only when the text ends)."""
    parts, found = [draw(PROSE)], []
    for _ in range(draw(st.integers(0, 3))):
        text, name, args = draw(calls())
        parts += [text, draw(PROSE)]
        found.append((name, args))
    end = draw(st.sampled_from(HELD_ENDS))
    return "".join(parts) + end, found, end


def pieces(draw, text: str) -> list:
    """``text`` cut at drawn places (at least one piece)."""
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=8))) if len(text) > 1 else []
    return [text[a:b] for a, b in itertools.pairwise([0, *cuts, len(text)])] or [""]


def split(draw, data: bytes) -> list:
    """``data`` cut at drawn places."""
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(data) - 1)), max_size=12)))
    return [data[a:b] for a, b in itertools.pairwise([0, *cuts, len(data)])]


def run(recovery, chunks) -> tuple:
    """(everything ``recovery`` sent for ``chunks``, what each ``feed`` returned)."""
    fed = [recovery.feed(c) for c in chunks]
    return b"".join(fed) + recovery.close(), fed


def seen(data: bytes) -> list:
    """What a client dispatches: (event type, JSON data) of each event."""
    return [(kind, json.loads(payload)) for kind, payload, _ in events(data)]
