"""Call ids are unique in a message (issue 28): an id the model wrote (Kimi's ``functions.NAME:0``, Mistral's
``[CALL_ID]``) is kept the first time; a call that repeats an id an earlier call of the message has gets a
fresh one. The same with ``stream_arguments`` (the ``started`` event names the id the call ends with), for any
split, on both implementations, and through the chat-completion rewriting."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls.openai import recover_response
from textcalls.toolcall import new_call_id

FRESH = new_call_id()[:-10]  # this process's prefix of fresh ids
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("lookup", "get_time")]


def kimi(name: str, call_id: str, args: str) -> str:
    return f"<|tool_call_begin|>functions.{name}:{call_id}<|tool_call_argument_begin|>{args}<|tool_call_end|>"


def mistral(name: str, call_id: str, args: str) -> str:
    return f"[TOOL_CALLS]{name}[CALL_ID]{call_id}[ARGS]{args}"


KIMI_TWICE = (
    "<|tool_calls_section_begin|>"
    + kimi("lookup", "0", '{"q": "a"}')
    + kimi("lookup", "0", '{"q": "b"}')
    + kimi("get_time", "1", "{}")
    + "<|tool_calls_section_end|>"
)
MISTRAL_TWICE = mistral("lookup", "a1B2c3D4e", '{"q": "a"}') + mistral("lookup", "a1B2c3D4e", '{"q": "b"}')


@pytest.mark.parametrize(
    ("text", "written"),
    [
        (KIMI_TWICE, ["functions.lookup:0", None, "functions.get_time:1"]),
        (MISTRAL_TWICE, ["a1B2c3D4e", None]),
    ],
    ids=["kimi", "mistral"],
)
def test_a_written_id_is_kept_once_and_a_repeat_gets_a_fresh_one(impl, tc, text, written):
    calls = tc.parse(text).calls
    assert [json.loads(c.arguments).get("q") for c in calls] == ["a", "b", None][: len(calls)]
    for call, want in zip(calls, written, strict=True):
        if want is None:
            assert call.id.startswith(FRESH)
        else:
            assert call.id == want
    assert len({c.id for c in calls}) == len(calls)


@st.composite
def messages(draw):
    """A message of Kimi or Mistral calls whose written ids repeat (drawn from two)."""
    family = draw(st.sampled_from(["kimi", "mistral"]))
    calls = [
        (draw(st.sampled_from(["lookup", "get_time"])), draw(st.sampled_from(["0", "1"])), draw(st.sampled_from("abc")))
        for _ in range(draw(st.integers(1, 4)))
    ]
    if family == "kimi":
        body = "".join(kimi(n, i, json.dumps({"q": q})) for n, i, q in calls)
        return "ok. <|tool_calls_section_begin|>" + body + "<|tool_calls_section_end|>", family, calls
    return "".join(mistral(n, f"id{i}xyzAB", json.dumps({"q": q})) for n, i, q in calls), family, calls


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=messages(), data=st.data(), stream_arguments=st.booleans())
def test_any_split_gives_unique_ids_and_the_events_name_them(impl, drawn, data, stream_arguments):
    text, family, written = drawn
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=10)))
    scrubber = impl.StreamScrubber(tools=TOOLS, stream_arguments=stream_arguments)
    start = 0
    for cut in [*cuts, len(text)]:
        scrubber.feed(text[start:cut])
        start = cut
    scrubber.flush()
    calls = scrubber.calls
    assert [(c.name, json.loads(c.arguments)["q"]) for c in calls] == [(n, q) for n, _, q in written]
    assert len({c.id for c in calls}) == len(calls)
    seen = set()
    for call, (name, i, _) in zip(calls, written, strict=True):
        own = f"functions.{name}:{i}" if family == "kimi" else f"id{i}xyzAB"
        if own in seen:  # written before in this message: a fresh id
            assert call.id.startswith(FRESH)
        else:
            assert call.id == own
        seen.add(own)
    if stream_arguments:
        events = scrubber.take_events()
        started = {e[1]: e[2] for e in events if e[0] == "started"}
        ended = {e[1] for e in events if e[0] == "ended"}
        assert {i: calls[i].id for i in ended} == {i: started[i] for i in ended}


def test_the_chat_completion_has_unique_tool_call_ids(impl):
    response = {
        "id": "c",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": KIMI_TWICE}, "finish_reason": "stop"}],
    }
    out = recover_response(response, native=False, has_tools=True)
    calls = out["choices"][0]["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["lookup", "lookup", "get_time"]
    ids = [c["id"] for c in calls]
    assert ids[0] == "functions.lookup:0" and ids[2] == "functions.get_time:1" and ids[1].startswith(FRESH)
