"""The Responses API (``textcalls.responses_api``): whole responses, event streams in any byte splits, and end to
end: a stub upstream sending faithful event sequences -> the textcalls proxy -> the official ``openai`` SDK
(``client.responses.create``, streamed and not, and ``client.responses.stream``)."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from textcalls.responses_api import (
    ResponsesRecovery,
    ResponsesSSERecovery,
    recover_responses,
    recover_responses_bytes,
    responses_tools,
)

from ..gateway_support import api_texts
from ..gateway_support.api_texts import (
    EXPECTED,
    LEAKS,
    NAMES,
    PROPERTY,
    AfterBlanks,
    Gateway,
    is_end,
    log_lines,
    run,
    seen,
    split,
    texts,
    without_end,
)
from ..gateway_support.api_upstream import response_body, response_events, sse
from ..gateway_support.upstream import HERMES, PLAIN

TOOLS = [
    {
        "type": "function",
        "name": name,
        "description": "d",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    for name in NAMES
]


def check(events: list, leaks=LEAKS, end="") -> dict:
    """The final ``response`` of a stream a client saw, after checking every event against the others as the
    SDK's accumulator reads them: consecutive sequence numbers, deltas adding up to the done texts and
    arguments, items done as added, the final output the items done, and none of ``leaks`` in any text (but
    ``end``, the held end of the text, sent in one delta of its own when the text ends; an ``AfterBlanks``: maybe after blanks)."""
    assert [e["sequence_number"] for _, e in events] == list(range(len(events)))
    items: dict = {}
    texts_: dict = {}
    arguments: dict = {}
    done: dict = {}
    final = None
    for kind, e in events:
        assert kind == e["type"]
        t = e["type"]
        at = e.get("output_index")
        key = (at, e.get("content_index"))
        if t == "response.output_item.added":
            assert at not in items
            items[at] = e["item"]
        elif t == "response.content_part.added":
            texts_[key] = e["part"]["text"]
        elif t == "response.output_text.delta":
            assert e["item_id"] == items[at]["id"]
            texts_[key] += e["delta"]
            assert is_end(e["delta"], end) or not any(c in e["delta"] for c in leaks)
        elif t == "response.output_text.done":
            assert e["text"] == texts_[key]
        elif t == "response.content_part.done":
            assert e["part"]["text"] == texts_[key]
        elif t == "response.function_call_arguments.delta":
            assert e["item_id"] == items[at]["id"]
            arguments[at] = arguments.get(at, "") + e["delta"]
        elif t == "response.function_call_arguments.done":
            assert e["arguments"] == arguments[at]
        elif t == "response.output_item.done":
            item = done[at] = e["item"]
            assert (item["type"], item["id"]) == (items[at]["type"], items[at]["id"])
            if item["type"] == "message":
                assert [p["text"] for p in item["content"]] == [texts_[at, i] for i in range(len(item["content"]))]
            else:
                assert item["arguments"] == arguments[at] and item["status"] == "completed"
        elif t == "response.completed":
            final = e["response"]
    assert final is not None
    assert sorted(done) == list(range(len(done)))
    assert final["output"] == [done[i] for i in sorted(done)]
    for item in final["output"]:
        for part in item.get("content", ()):
            assert not any(c in without_end(part["text"], end) for c in leaks)
    return final


def masked(output: list) -> list:
    """Output items with the fresh ids of recovered calls left out."""
    return [
        {k: v for k, v in item.items() if k not in ("id", "call_id")} if item["id"] != "fc_native0" else item
        for item in output
    ]


def calls_of(output: list) -> list:
    return [(i["name"], json.loads(i["arguments"])) for i in output if i["type"] == "function_call"]


# --- the library ------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{}, {"trim_blanks": True}], ids=["default", "trim_blanks"])
@PROPERTY
@given(texts(), st.data())
def test_any_split_gives_the_whole_response_recovery(impl, options, drawn, data):
    text, expected, end = drawn
    upstream = sse(response_events("m", api_texts.pieces(data.draw, text)))
    # (the held end as texts() predicts it: the dialects' holds; the schema-guided stage may hold a line's start
    # too, and the differential fuzzer covers this layer with it: tests/unit/test_differential.py)
    options = {**options, "schema_guided": False}
    recovery = ResponsesSSERecovery(native=True, has_tools=True, tools=TOOLS, **options)
    out, _ = run(recovery, split(data.draw, upstream))
    final = check(seen(out), end=AfterBlanks(end) if options.get("trim_blanks") else end)
    whole = recover_responses(response_body("m", text), native=True, has_tools=True, tools=TOOLS, **options)
    assert masked(final["output"]) == masked(whole["output"])
    assert calls_of(final["output"]) == expected
    assert final["usage"] == whole["usage"] == response_body("m", text)["usage"]
    added = [e["item"] for _, e in seen(out) if e["type"] == "response.output_item.added"]
    assert [i["call_id"] for i in final["output"][1:]] == [i["call_id"] for i in added[1:]]


@PROPERTY
@given(st.data())
def test_a_stream_without_markup_is_relayed_byte_for_byte(impl, data):
    upstream = sse(response_events("m", api_texts.pieces(data.draw, PLAIN.replace("<", "("))))
    chunks = split(data.draw, upstream)
    out, fed = run(ResponsesSSERecovery(native=True, has_tools=True, tools=TOOLS), chunks)
    assert out == upstream
    # an event goes out as soon as it is complete
    assert all(
        b"".join(fed[: i + 1]) == upstream[: upstream.rfind(b"\n\n", 0, sum(map(len, chunks[: i + 1]))) + 2]
        for i in range(len(chunks))
        if upstream.rfind(b"\n\n", 0, sum(map(len, chunks[: i + 1]))) >= 0
    )


def test_without_tools_every_byte_comes_back_untouched(impl):
    upstream = sse(response_events("m", [HERMES[:20], HERMES[20:]]))
    recovery = ResponsesSSERecovery(native=True, has_tools=False)
    chunk = upstream[:77]
    assert recovery.feed(chunk) is chunk
    assert recovery.feed(upstream[77:]) + recovery.close() == upstream[77:]
    body = json.dumps(response_body("m", HERMES)).encode()
    assert recover_responses_bytes(body, native=False, has_tools=False) is body
    response = response_body("m", HERMES)
    assert recover_responses(response, native=False, has_tools=False) is response


def test_events_after_a_change_are_renumbered_and_untouched_ones_kept(impl):
    events = response_events("m", ["Hi <tool", '_call>{"name": "get_time", "arguments": {}}</tool_call>', " bye."])
    recovery = ResponsesRecovery(native=True, has_tools=True, tools=TOOLS)
    out = [e for event in events for e in recovery.push(event)] + recovery.close()
    assert all(a is b for a, b in zip(out[:4], events[:4], strict=True))  # up to the first delta: the same objects
    kinds = [e["type"] for e in out]
    assert kinds.count("response.output_text.delta") == 2  # "Hi " and " bye.": the markup's delta was dropped
    assert [e["delta"] for e in out if e["type"] == "response.output_text.delta"] == ["Hi ", " bye."]
    assert kinds[-5:] == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e["sequence_number"] for e in out] == list(range(len(out)))
    assert out[-1]["response"]["output"][1]["name"] == "get_time"
    assert out[-1]["response"]["output"][0]["content"][0]["text"] == "Hi  bye."
    assert recovery.recovered == 1


def test_a_held_tail_goes_out_before_the_text_is_done(impl):
    # "<tool_cal" could begin a block until the text ends: held, then sent as one more delta before the done event
    events = response_events("m", ["Compare a <tool", "_cal"])
    out, _ = run(ResponsesSSERecovery(native=True, has_tools=True, tools=TOOLS), [sse(events)])
    client = seen(out)
    final = check(client, leaks=())
    deltas = [e["delta"] for _, e in client if e["type"] == "response.output_text.delta"]
    assert deltas == ["Compare a ", "<tool_cal"]
    assert final["output"][0]["content"][0]["text"] == "Compare a <tool_cal"
    assert calls_of(final["output"]) == []


def test_the_gate_native_keeps_structured_calls_alone(impl):
    events = sse(response_events("native", [HERMES[:40], HERMES[40:]], native=True))
    for native, expected in (
        (True, []),
        (False, [("get_weather", {"city": "Paris", "unit": "celsius"}), ("get_time", {"tz": "Europe/Paris"})]),
    ):
        out, _ = run(ResponsesSSERecovery(native=native, has_tools=True, tools=TOOLS), [events])
        final = check(seen(out))
        assert final["output"][0]["content"][0]["text"] == "I will check the weather.\n\n"  # scrubbed either way
        assert final["output"][1]["id"] == "fc_native0"
        assert calls_of(final["output"])[1:] == expected
        whole = recover_responses(
            response_body("native", HERMES, native=True), native=native, has_tools=True, tools=TOOLS
        )
        assert masked(whole["output"]) == masked(final["output"])


def test_a_call_of_a_tool_not_offered_stays_text(impl):
    text = 'A<tool_call>{"name": "rm", "arguments": {}}</tool_call>B<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    whole = recover_responses(response_body("m", text), native=True, has_tools=True, tools=TOOLS)
    assert whole["output"][0]["content"][0]["text"] == 'A<tool_call>{"name": "rm", "arguments": {}}</tool_call>B'
    assert calls_of(whole["output"]) == [("get_time", {})]


def test_tools_in_the_responses_shape():
    assert responses_tools([*TOOLS[:1], {"type": "web_search"}, {"type": "custom", "name": "grammar"}]) == [
        {
            "type": "function",
            "function": {"name": "get_weather", "parameters": TOOLS[0]["parameters"], "description": "d"},
        }
    ]
    with pytest.raises(TypeError, match="tools: tools is an object, not an array"):
        responses_tools({"type": "function"})
    with pytest.raises(ValueError, match=r"tools\[1\] is a function tool without a name"):
        responses_tools([TOOLS[0], {"type": "function", "function": {"name": "chat_shaped"}}])
    with pytest.raises(ValueError, match=r"tools\[0\].parameters is an array, not an object"):
        recover_responses(
            response_body("m", "x"),
            native=True,
            has_tools=True,
            tools=[{"type": "function", "name": "f", "parameters": []}],
        )


def test_bad_input_raises():
    with pytest.raises(TypeError, match="response must be a dict"):
        recover_responses([], native=True, has_tools=True)
    with pytest.raises(TypeError, match="native must be a bool"):
        ResponsesRecovery(native=1, has_tools=True)
    with pytest.raises(TypeError, match="an event must be a dict"):
        ResponsesRecovery(native=True, has_tools=True).push("event")
    with pytest.raises(ValueError, match="max_event must be >= 1"):
        ResponsesSSERecovery(native=True, has_tools=True, max_event=0)
    with pytest.raises(TypeError, match=r"response\['output'\] must be a list"):
        recover_responses({"output": "x"}, native=True, has_tools=True)


def test_bytes_and_dicts_agree_and_unchanged_bodies_are_the_same_object(impl):
    body = json.dumps(response_body("m", HERMES)).encode()
    new = recover_responses_bytes(body, native=True, has_tools=True, tools=TOOLS)
    assert masked(json.loads(new)["output"]) == masked(
        recover_responses(json.loads(body), native=True, has_tools=True, tools=TOOLS)["output"]
    )
    plain = json.dumps(response_body("m", PLAIN)).encode()
    assert recover_responses_bytes(plain, native=True, has_tools=True, tools=TOOLS) is plain
    error = b'{"error": {"message": "no"}}'
    assert recover_responses_bytes(error, native=True, has_tools=True, tools=TOOLS) is error


def test_a_stream_that_stops_early_is_flushed_by_close(impl):
    events = response_events("m", ["Hi <tool_call>", '{"name": "get_time", "arguments": {}}</tool_call>'])[:6]
    recovery = ResponsesRecovery(native=True, has_tools=True, tools=TOOLS)
    out = [e for event in events for e in recovery.push(event)]
    tail = recovery.close()
    assert [e["type"] for e in tail] == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ]
    assert [e["sequence_number"] for e in out + tail] == list(range(len(out + tail)))
    assert tail[0]["output_index"] == 1 and tail[0]["item"]["name"] == "get_time"


# --- end to end: the openai SDK through the proxy --------------------------------------------------


def connect(sdk, url: str):
    return sdk.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0, timeout=10)


@pytest.fixture(scope="module")
def gateway():
    gw = Gateway("openai", connect)
    yield gw
    gw.close()


def sdk_calls(output) -> list:
    calls = [(o.name, json.loads(o.arguments)) for o in output if o.type == "function_call"]
    ids = [o.call_id for o in output if o.type == "function_call"]
    assert len(set(ids)) == len(ids)
    return calls


@pytest.mark.parametrize("model", ["hermes", "deepseek"])
def test_sdk_streamed_events_are_recovered(impl, gateway, model):
    for seed in range(3):
        stream = gateway.client().responses.create(
            model=model, input="hi", tools=TOOLS, stream=True, extra_body={"x_seed": seed}
        )
        events = list(stream)
        assert [e.sequence_number for e in events] == list(range(len(events)))
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert text == EXPECTED[model][0]
        added = {e.output_index: e.item for e in events if e.type == "response.output_item.added"}
        assert [added[i].type for i in sorted(added)] == ["message", "function_call", "function_call"]
        arguments = {e.output_index: e.arguments for e in events if e.type == "response.function_call_arguments.done"}
        assert [(added[i].name, json.loads(arguments[i])) for i in sorted(arguments)] == EXPECTED[model][1]
        final = events[-1].response
        assert final.output_text == EXPECTED[model][0]
        assert sdk_calls(final.output) == EXPECTED[model][1]
        assert final.usage.total_tokens == 30


@pytest.mark.parametrize("model", ["hermes", "deepseek"])
def test_sdk_stream_helper_and_non_streamed_are_recovered(impl, gateway, model):
    client = gateway.client()
    with client.responses.stream(model=model, input="hi", tools=TOOLS, extra_body={"x_seed": 7}) as stream:
        final = stream.get_final_response()
    assert final.output_text == EXPECTED[model][0]
    assert sdk_calls(final.output) == EXPECTED[model][1]
    response = client.responses.create(model=model, input="hi", tools=TOOLS)
    assert response.output_text == EXPECTED[model][0]
    assert sdk_calls(response.output) == EXPECTED[model][1]
    assert [o.type for o in response.output] == ["message", "function_call", "function_call"]


@pytest.mark.parametrize("stream_arguments", [False, True])
def test_sdk_gets_unique_call_ids_when_the_model_writes_one_twice(impl, stream_arguments):
    # issue 28: Kimi's written "functions.get_weather:0" twice made duplicate call_ids, and the SDK's stream
    # helper raised "conflicting output identities"; a repeat now gets a fresh id (also without streaming)
    gw = Gateway("openai", connect, stream_arguments=stream_arguments)
    try:
        client = gw.client(gw.guided)
        for seed in range(3):
            with client.responses.stream(model="kimi_ids", input="hi", tools=TOOLS, extra_body={"x_seed": seed}) as s:
                final = s.get_final_response()
            assert final.output_text == "Checking both."
            assert sdk_calls(final.output) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]
            ids = [o.call_id for o in final.output if o.type == "function_call"]
            assert ids[0] == "functions.get_weather:0" and ids[1].startswith("call_")
        response = client.responses.create(model="kimi_ids", input="hi", tools=TOOLS)
        assert sdk_calls(response.output) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]
    finally:
        gw.close()


def test_sdk_final_response_is_recovered_when_its_events_are_over_max_event(impl):
    # issue 28: through the proxy with a 1 KiB max_event, the ~2.4 KB "long" answer's final events are over the
    # cap; the SDK's final response has the call, not the markup
    gw = Gateway("openai", connect, max_event=1024)
    write_file = {"type": "function", "name": "write_file", "parameters": {"type": "object", "properties": {}}}
    try:
        with gw.client(gw.guided).responses.stream(
            model="long", input="hi", tools=[*TOOLS, write_file], extra_body={"x_seed": 5}
        ) as s:
            final = s.get_final_response()
        assert final.output_text == "Writing it.\n"
        ((name, args),) = sdk_calls(final.output)
        assert name == "write_file" and args["path"] == "notes.txt" and len(args["content"]) > 1500
    finally:
        gw.close()


def test_sdk_native_and_prompt_guided(impl, gateway):
    for url, expected in ((gateway.native, []), (gateway.guided, EXPECTED["hermes"][1])):
        with gateway.client(url).responses.stream(
            model="native", input="hi", tools=TOOLS, extra_body={"x_seed": 1}
        ) as s:
            final = s.get_final_response()
        assert final.output_text == EXPECTED["hermes"][0]
        assert sdk_calls(final.output) == [("lookup", {"q": "native"}), *expected]


def test_sdk_without_tools_or_markup_gets_the_upstream_bytes(impl, gateway):
    client = gateway.client()
    for model, tools in (("hermes", None), ("plain", TOOLS)):
        extra = {"tools": tools} if tools else {}
        with client.responses.with_streaming_response.create(
            model=model, input="hi", stream=True, extra_body={"x_seed": 2}, **extra
        ) as response:
            got = b"".join(response.iter_bytes())
        assert got == gateway.upstream.sent[-1]
        raw = client.responses.with_raw_response.create(model=model, input="hi", **extra)
        assert raw.http_response.content == gateway.upstream.sent[-1]


def test_malformed_tools_are_relayed_unrecovered(impl, gateway, caplog):
    caplog.set_level(logging.WARNING, logger="textcalls.proxy")
    bad = [{"type": "function", "parameters": {}}]
    raw = gateway.client().responses.with_raw_response.create(model="hermes", input="hi", tools=bad)
    assert raw.http_response.content == gateway.upstream.sent[-1]
    assert any("tools[0] is a function tool without a name" in r.getMessage() for r in caplog.records)
    assert json.loads(gateway.upstream.requests[-1][3])["tools"] == bad


def test_one_log_line_per_request(impl, gateway, caplog):
    caplog.set_level(logging.INFO, logger="textcalls.proxy")
    client = gateway.client()
    list(
        client.responses.create(
            model="hermes", input="hi", tools=TOOLS, stream=True, extra_body={"x_seed": 4}, extra_query={"t": "log"}
        )
    )
    client.responses.create(model="deepseek", input="hi", tools=TOOLS, extra_query={"t": "log"})
    assert log_lines(caplog, "log", 2) == [
        "POST /v1/responses?t=log 200 json recovered",
        "POST /v1/responses?t=log 200 sse recovered=2",
    ]


HOSTILE_TYPES = [
    'response.output_text.delta\ndata: {"type": "injected"}',
    "response.x\r\n\r\nevent: y",
    "odd\ud800type",
]


def hostile_sse(events: list) -> bytes:
    """Events as an upstream may send them: each ``event:`` line safe, the JSON data with any type (escaped)."""
    return b"".join(b"event: e\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)


def test_hostile_event_types_are_written_back_escaped(impl):
    # issue 28: once events are rewritten, an upstream event's type went back raw on the event line: a line
    # break in it injected an event, a lone surrogate raised UnicodeEncodeError and cut the stream
    events = response_events("m", ["Hi <tool", '_call>{"name": "get_time", "arguments": {}}</tool_call>', " bye."])
    hostile = [{"type": t, "sequence_number": 0} for t in HOSTILE_TYPES]
    events = events[:-1] + hostile + events[-1:]
    out, _ = run(ResponsesSSERecovery(native=True, has_tools=True, tools=TOOLS), [hostile_sse(events)])
    out.decode("ascii")  # the hostile types' characters escaped: nothing unencodable, nothing raw
    client = seen(out)
    assert not any(e.get("type") == "injected" or kind in ("y", "injected") for kind, e in client)
    got = [(kind, e["type"]) for kind, e in client if e["type"] in HOSTILE_TYPES]
    assert got == [(json.dumps(t)[1:-1], t) for t in HOSTILE_TYPES]  # each once, its type intact in the data
    assert calls_of(client[-1][1]["response"]["output"]) == [("get_time", {})]


@PROPERTY
@given(data=st.data(), stream_arguments=st.booleans())
def test_final_events_over_max_event_agree_with_what_was_streamed(impl, data, stream_arguments):
    # issue 28: a final event over max_event went on unread, so the final response showed the raw markup and
    # no function_call item although the call had streamed; once a stream is changed, events are read up to
    # FINAL_EVENT_FACTOR x max_event
    prose = "word " * 400  # 2000 characters: the done and completed events are over a 1024-byte cap
    pieces = [prose[i : i + 100] for i in range(0, len(prose), 100)]  # each delta under the cap
    pieces += ["<tool_call>", '{"name": "get_time", "arguments": {"tz": "UTC"}}', "</tool_call>"]
    upstream = sse(response_events("m", pieces))
    recovery = ResponsesSSERecovery(
        native=True, has_tools=True, tools=TOOLS, max_event=1024, stream_arguments=stream_arguments
    )
    out, _ = run(recovery, split(data.draw, upstream))
    final = check(seen(out))
    assert final["output"][0]["content"][0]["text"] == prose
    assert calls_of(final["output"]) == [("get_time", {"tz": "UTC"})]
    assert b"<tool_call>" not in out


def test_past_the_larger_cap_a_final_event_goes_on_unread(impl):
    # the bound on what is held: FINAL_EVENT_FACTOR x max_event, documented; past it the event goes on as it came
    from textcalls._apis import FINAL_EVENT_FACTOR

    prose = "word " * (FINAL_EVENT_FACTOR * 16 // 5 + 10)  # over 16 x FINAL_EVENT_FACTOR bytes
    events = response_events("m", ["Hi <tool", '_call>{"name": "get_time", "arguments": {}}</tool_call>', prose])
    out, _ = run(ResponsesSSERecovery(native=True, has_tools=True, tools=TOOLS, max_event=16), [sse(events)])
    done = [e for _, e in seen(out) if e["type"] == "response.output_text.done"]
    assert done[0]["text"].startswith("Hi <tool_call>")  # the upstream's own event: unread
