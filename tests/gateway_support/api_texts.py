"""What the Responses and Messages tests share: assistant texts made of prose and tool-call markup
(hypothesis), feeding bytes in splits, a plain SSE reading of what a client gets, and end to end a stub
upstream behind the proxy driven by an SDK."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from textcalls import proxy

from ..waiting import wait_until
from .api_upstream import ApiUpstream
from .sse_events import events
from .upstream import LoopThread

#: The tools offered, chat-shaped; the tests give them in each API's own shape.
NAMES = ("get_weather", "get_time")
#: Prose holds none of the characters markup begins with, so a '<', '｜', '[', '{' or backtick that
#: reaches a client is markup leaking.
PROSE = st.text(alphabet="abc xyz.,!?\n", max_size=30)
LEAKS = ("<", "｜", "[", "{", "`")
PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
#: What a client gets from the stub upstream's models, recovered: (the text, the calls' (name, arguments)).
EXPECTED = {
    "hermes": (
        "I will check the weather.\n\n",
        [("get_weather", {"city": "Paris", "unit": "celsius"}), ("get_time", {"tz": "Europe/Paris"})],
    ),
    "deepseek": ("Let me look that up.", [("get_weather", {"city": "Oslo"}), ("get_time", {"tz": "Europe/Oslo"})]),
}


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


class AfterBlanks(str):
    """A held end that may go out after blanks: with ``trim_blanks`` the blanks since the last visible character
    are held with it (``docs/options.md``), or dropped where they touched removed markup."""


_BLANKS = " \t\n\r\f\v"


def is_end(delta: str, end: str) -> bool:
    """``delta`` is the held end (``end``; an ``AfterBlanks``: maybe after blanks)."""
    if isinstance(end, AfterBlanks):
        return delta.endswith(end) and not delta[: len(delta) - len(end)].strip(_BLANKS)
    return delta == end


def without_end(text: str, end: str) -> str:
    """``text`` without its held end (``str.removesuffix``; an ``AfterBlanks``: and the blanks before it)."""
    text = text.removesuffix(end)
    return text.rstrip(_BLANKS) if isinstance(end, AfterBlanks) else text


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


class Gateway:
    """An ``ApiUpstream`` behind two proxies (``native``, ``guided``: their URLs; ``options``: ``proxy.start``'s)
    and one client per proxy, ``connect(sdk, url)`` with the SDK module ``sdk`` (the test is skipped without it),
    closed with the gateway."""

    def __init__(self, sdk: str, connect, **options):
        self.sdk = pytest.importorskip(sdk, reason=f"the end-to-end tests drive the proxy with the {sdk} SDK")
        self.connect = connect
        self.loop = LoopThread()
        self.upstream = ApiUpstream()
        self.upstream_runner, url = self.loop.serve(self.upstream.app)
        self.runners = [
            self.loop.run(proxy.start(url, host="127.0.0.1", port=0, native=n, **options)) for n in (True, False)
        ]
        self.native, self.guided = (f"http://127.0.0.1:{r.addresses[0][1]}" for r in self.runners)
        self.clients: dict = {}

    def client(self, url=None):
        """One SDK client per proxy, closed with the gateway."""
        url = url or self.native
        if url not in self.clients:
            self.clients[url] = self.connect(self.sdk, url)
        return self.clients[url]

    def close(self):
        for client in self.clients.values():
            client.close()
        self.loop.close(*self.runners, self.upstream_runner)


def log_lines(caplog, tag: str, count: int) -> list:
    """The proxy's log lines of the requests whose query is ``?t=TAG``, sorted, their times cut, once there are
    ``count`` of them (the proxy logs once it has sent an answer: maybe just after)."""

    def lines():
        return sorted(
            re.sub(r" [0-9.]+ms$", "", r.getMessage()) for r in caplog.records if f"?t={tag}" in r.getMessage()
        )

    wait_until(lambda: len(lines()) >= count, f"{count} log lines")
    return lines()
