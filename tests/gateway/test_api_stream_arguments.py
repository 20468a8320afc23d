"""``stream_arguments=True`` on the Responses and Messages APIs (``ResponsesRecovery``, ``MessagesRecovery``, their
SSE machines and helpers, the proxy): a text call goes out in its place as a ``function_call`` item or a ``tool_use``
block of its own, its arguments in pieces as the model writes them; the text before it is closed as it stands and
the text after it goes on in a new message item or text block.

For any split of the upstream events and bytes, the official SDKs (the openai SDK's Responses stream, the anthropic
SDK's Messages stream, each over its own HTTP stack, with its HTTP library's mock transport in place of the network)
rebuild the calls and the joined text of the option off, and each call's deltas join to its arguments; the pieces
trail the text by at most ``LAG`` characters; abandoned calls, the gate, the JSON the Messages deltas keep, and the
proxy end to end with the real SDKs.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import logging

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from textcalls import parse
from textcalls.messages_api import (
    MessagesRecovery,
    MessagesSSERecovery,
    _JsonPrefix,
    abandoned_error,
    arecover_messages_sse,
    recover_message,
    recover_message_bytes,
    recover_messages_sse,
)
from textcalls.responses_api import (
    ResponsesRecovery,
    ResponsesSSERecovery,
    arecover_responses_sse,
    recover_responses,
    recover_responses_bytes,
    recover_responses_sse,
)

from ..gateway_support.api_texts import log_lines, run, seen, split
from ..gateway_support.api_upstream import message_body, message_events, response_body, response_events, sse
from ..gateway_support.upstream import LONG, MALFORMED, PLAIN
from ..unit.test_call_events import LAG
from ..unit.test_call_events import TOOLS as JSON_TOOLS
from ..unit.test_call_events import transcripts as json_transcripts
from ..unit.test_call_events_xml import TOOLS as XML_TOOLS
from ..unit.test_call_events_xml import transcripts as xml_transcripts
from . import test_messages_api, test_responses_api

openai = pytest.importorskip("openai", reason="the Responses client is the openai SDK")
anthropic = pytest.importorskip("anthropic", reason="the Messages client is the anthropic SDK")

SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
#: body kind -> (transcripts of prose and calls, the tools they call, chat-shaped)
BODIES = {"json": (json_transcripts, JSON_TOOLS), "xml": (xml_transcripts, XML_TOOLS)}


def responses_shape(tools: list) -> list:
    return [
        {"type": "function", "name": t["function"]["name"], "parameters": t["function"]["parameters"]} for t in tools
    ]


def messages_shape(tools: list) -> list:
    return [{"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in tools]


R_TOOLS, M_TOOLS = responses_shape(JSON_TOOLS), messages_shape(JSON_TOOLS)


class Canned:
    """An SDK client whose every request is answered with ``body`` (event-stream bytes), through the SDK's own
    HTTP stack: its HTTP library's mock transport stands in for the network."""

    def __init__(self, sdk, make):
        # the HTTP library the SDK is built on (httpx; its fork httpx2 in newer releases): its client is the base
        http = importlib.import_module(sdk.DefaultHttpxClient.__mro__[1].__module__.partition(".")[0])
        self.body = b""

        def answer(request):
            return http.Response(200, headers={"content-type": "text/event-stream"}, content=self.body)

        self.client = make(
            base_url="http://upstream.test/v1" if sdk is openai else "http://upstream.test",
            api_key="sk-test",
            max_retries=0,
            http_client=sdk.DefaultHttpxClient(transport=http.MockTransport(answer)),
        )


@pytest.fixture(scope="module")
def responses_client():
    canned = Canned(openai, openai.OpenAI)
    yield canned
    canned.client.close()


@pytest.fixture(scope="module")
def messages_client():
    canned = Canned(anthropic, anthropic.Anthropic)
    yield canned
    canned.client.close()


def responses_view(canned: Canned, body: bytes) -> tuple:
    """What ``client.responses.stream`` makes of ``body``: (its final response, {function_call item id: the
    ``response.function_call_arguments.delta`` events' deltas joined})."""
    canned.body = body
    deltas: dict = {}
    with canned.client.responses.stream(model="m", input="hi") as stream:
        for event in stream:
            if event.type == "response.function_call_arguments.delta":
                deltas[event.item_id] = deltas.get(event.item_id, "") + event.delta
        return stream.get_final_response(), deltas


def messages_view(canned: Canned, body: bytes) -> tuple:
    """What ``client.messages.stream`` makes of ``body``: (its final message, {block index: the
    ``input_json_delta`` events' ``partial_json`` joined})."""
    canned.body = body
    deltas: dict = {}
    messages = [{"role": "user", "content": "hi"}]
    with canned.client.messages.stream(model="m", max_tokens=1024, messages=messages) as stream:
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                deltas[event.index] = deltas.get(event.index, "") + event.delta.partial_json
        return stream.get_final_message(), deltas


def function_calls(response, status=None) -> list:
    """(name, arguments) of a response's function_call items (those of ``status`` when given)."""
    return [
        (o.name, o.arguments)
        for o in response.output
        if o.type == "function_call" and (status is None or o.status == status)
    ]


def tool_uses(message) -> list:
    return [(b.name, b.input) for b in message.content if b.type == "tool_use"]


def message_text(message) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


def _cuts(data, text):
    return sorted(set(data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=16))) | {len(text)})


def pieces_of(text, cuts):
    return [text[a:b] for a, b in zip([0, *cuts], cuts, strict=False) if b > a] or [""]


# --- the SDKs rebuild the answer of the option off ------------------------------------------------------------


@pytest.mark.parametrize("body", sorted(BODIES))
@SETTINGS
@given(st.data())
def test_the_openai_sdk_rebuilds_the_calls_and_text_of_the_option_off(impl, responses_client, body, data):
    transcripts, tools = BODIES[body]
    text = data.draw(transcripts())[0]
    ids = [call.id for call in parse(text, tools=tools).calls]
    assume(len(set(ids)) == len(ids))  # ids written in the text (Kimi, Mistral) told apart (the SDK needs it)
    upstream = sse(response_events("m", pieces_of(text, _cuts(data, text))))
    on = ResponsesSSERecovery(native=True, has_tools=True, tools=responses_shape(tools), stream_arguments=True)
    sent, _ = run(on, split(data.draw, upstream))
    off, _ = run(ResponsesSSERecovery(native=True, has_tools=True, tools=responses_shape(tools)), [upstream])
    final, deltas = responses_view(responses_client, sent)
    final_off, _ = responses_view(responses_client, off)
    assert final.output_text == final_off.output_text
    # the calls of the option off, in order; besides them only the abandoned ones, each an incomplete item
    assert function_calls(final, "completed") == function_calls(final_off)
    assert len(function_calls(final, "incomplete")) == on.abandoned
    assert on.recovered == len(function_calls(final_off))
    for item in final.output:
        if item.type == "function_call":  # every call streamed or sent whole: its deltas are its arguments
            assert deltas.get(item.id, "") == item.arguments
    assert len({o.call_id for o in final.output if o.type == "function_call"}) == len(function_calls(final))
    if not on.abandoned:  # every event as the accumulator reads it; the final output the items done
        test_responses_api.check(seen(sent), leaks=())


@pytest.mark.parametrize("body", sorted(BODIES))
@SETTINGS
@given(st.data())
def test_the_anthropic_sdk_rebuilds_the_calls_and_text_of_the_option_off(impl, messages_client, body, data):
    transcripts, tools = BODIES[body]
    text = data.draw(transcripts())[0]
    upstream = sse(message_events("m", pieces_of(text, _cuts(data, text))))
    on = MessagesSSERecovery(native=True, has_tools=True, tools=messages_shape(tools), stream_arguments=True)
    sent, _ = run(on, split(data.draw, upstream))
    off, _ = run(MessagesSSERecovery(native=True, has_tools=True, tools=messages_shape(tools)), [upstream])
    final_off, deltas_off = messages_view(messages_client, off)
    if on.abandoned:  # the stream ends with an error event, which the SDK raises: no message holds the call
        assert on.abandoned == 1 and b"event: error\n" in sent
        assert sent.endswith(b"\n\n") and sent.rindex(b"event: error\n") == sent.rindex(b"event: ")
        with pytest.raises(anthropic.APIStatusError, match="abandoned"):
            messages_view(messages_client, sent)
        return
    final, deltas = messages_view(messages_client, sent)
    assert message_text(final) == message_text(final_off)
    calls, calls_off = tool_uses(final), tool_uses(final_off)
    # "tool_use" when the client holds a call
    assert (final.stop_reason, final_off.stop_reason) == tuple(
        "tool_use" if c else "end_turn" for c in (calls, calls_off)
    )
    assert on.recovered == len(calls_off)
    # the same calls, each block's input text exactly the option off's
    assert calls == calls_off
    assert list(deltas.values()) == list(deltas_off.values())
    test_messages_api.check(seen(sent), leaks=())


@SETTINGS
@given(st.data())
def test_a_stream_without_markup_is_relayed_byte_for_byte(impl, data):
    text = PLAIN.replace("<", "(")
    for events, make, tools in (
        (response_events("m", pieces_of(text, _cuts(data, text))), ResponsesSSERecovery, R_TOOLS),
        (message_events("m", pieces_of(text, _cuts(data, text))), MessagesSSERecovery, M_TOOLS),
    ):
        upstream = sse(events)
        sent, _ = run(make(native=True, has_tools=True, tools=tools, stream_arguments=True), split(data.draw, upstream))
        assert sent == upstream


def text_of(event) -> str:
    """The text an upstream event brings."""
    if event["type"] == "response.output_text.delta":
        return event["delta"]
    delta = event.get("delta")
    return delta["text"] if event["type"] == "content_block_delta" and delta["type"] == "text_delta" else ""


def call_started(event) -> int | None:
    """The index (as sent) of the call item or block ``event`` starts, if it starts one."""
    if event["type"] == "response.output_item.added" and event["item"]["type"] == "function_call":
        return event["output_index"]
    if event["type"] == "content_block_start" and event["content_block"]["type"] == "tool_use":
        return event["index"]
    return None


def call_piece(event) -> tuple | None:
    """(the index as sent, the arguments text) ``event`` brings to a call, if it brings some."""
    if event["type"] == "response.function_call_arguments.delta":
        return event["output_index"], event["delta"]
    if event["type"] == "content_block_delta" and event["delta"]["type"] == "input_json_delta":
        return event["index"], event["delta"]["partial_json"]
    return None


@pytest.mark.parametrize("api", ["responses", "messages"])
@SETTINGS
@given(json_transcripts(), st.data())
def test_the_pieces_trail_the_model_by_at_most_lag(impl, api, transcript, data):
    text, written = transcript
    pieces = pieces_of(text, _cuts(data, text))
    if api == "responses":
        machine: ResponsesRecovery | MessagesRecovery = ResponsesRecovery(
            native=True, has_tools=True, tools=responses_shape(JSON_TOOLS), stream_arguments=True
        )
        events = response_events("m", pieces)
    else:
        machine = MessagesRecovery(native=True, has_tools=True, tools=messages_shape(JSON_TOOLS), stream_arguments=True)
        events = message_events("m", pieces)
    fed, calls, so_far = 0, {}, {}  # calls: index as sent -> call number; so_far: call number -> arguments sent
    for event in events:
        fed += len(text_of(event))
        for e in machine.push(event):
            if call_started(e) is not None:
                calls[call_started(e)] = len(calls)
            elif call_piece(e) is not None:
                at, piece = call_piece(e)
                so_far[calls[at]] = so_far.get(calls[at], "") + piece
        for j, (offset, arguments) in enumerate(written):
            due = min(max(fed - offset, 0), len(arguments))
            assert arguments.startswith(so_far.get(j, "")) and len(so_far.get(j, "")) >= due - LAG, (j, fed)
    assert [so_far.get(j) for j in range(len(written))] == [arguments for _, arguments in written]
    assert (machine.recovered, machine.abandoned) == (len(written), 0)


# --- the shapes sent -------------------------------------------------------------------------------------------

HERMES_CALL = '<tool_call>{"name": "f", "arguments": {"city": "Paris"}}</tool_call>'
#: "Hi ", the call (begun in one delta, ended in the next), " bye": each part in deltas of its own
DELTAS = ["Hi ", HERMES_CALL[:45], HERMES_CALL[45:], " bye"]


def pushed(machine, events) -> list:
    return [e for event in events for e in machine.push(event)] + machine.close()


def runs(kinds: list) -> list:
    """``kinds`` with each run of equal neighbours as one (how many pieces a call comes in is not fixed)."""
    return [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]


def test_a_responses_call_is_an_item_in_its_place_and_the_text_after_it_a_new_message(impl):
    machine = ResponsesRecovery(native=True, has_tools=True, tools=R_TOOLS, stream_arguments=True)
    events = response_events("m", DELTAS)
    out = pushed(machine, events)
    assert runs([(e["type"].removeprefix("response."), e.get("output_index")) for e in out]) == [
        ("created", None),
        ("in_progress", None),
        ("output_item.added", 0),
        ("content_part.added", 0),
        ("output_text.delta", 0),
        ("output_text.done", 0),  # the message as it stands when the call starts
        ("content_part.done", 0),
        ("output_item.done", 0),
        ("output_item.added", 1),  # the call: in progress, empty arguments
        ("function_call_arguments.delta", 1),
        ("function_call_arguments.done", 1),
        ("output_item.done", 1),
        ("output_item.added", 2),  # the text after it: a new message item
        ("content_part.added", 2),
        ("output_text.delta", 2),
        ("output_text.done", 2),
        ("content_part.done", 2),
        ("output_item.done", 2),
        ("completed", None),
    ]
    assert all(a is b for a, b in zip(out[:5], events[:5], strict=True))  # up to "Hi ": the upstream's own events
    assert [e["sequence_number"] for e in out] == list(range(len(out)))
    added = [e for e in out if e["type"] == "response.output_item.added"]
    done = [e["item"] for e in out if e["type"] == "response.output_item.done"]
    call = added[1]["item"]
    assert (call["type"], call["status"], call["name"], call["arguments"]) == ("function_call", "in_progress", "f", "")
    assert call["id"].startswith("fc_") and call["call_id"].startswith("call_")
    pieces = [e["delta"] for e in out if e["type"] == "response.function_call_arguments.delta"]
    assert "".join(pieces) == '{"city": "Paris"}' == done[1]["arguments"]
    assert done[1] == {**call, "status": "completed", "arguments": '{"city": "Paris"}'}
    after = added[2]["item"]
    assert after["id"].startswith("msg_") and after["id"] != "msg_stub" and after["content"] == []
    assert {e.get("item_id") for e in out[-7:-2]} == {after["id"], None}
    assert out[-1]["response"]["output"] == done
    assert [item["content"][0]["text"] for item in done[::2]] == ["Hi ", " bye"]
    assert (machine.recovered, machine.abandoned) == (1, 0)


def test_a_messages_call_is_a_block_in_its_place_and_the_text_after_it_a_new_block(impl):
    machine = MessagesRecovery(native=True, has_tools=True, tools=M_TOOLS, stream_arguments=True)
    events = message_events("m", DELTAS, native=True)  # the upstream's tool_use block after the text
    out = pushed(machine, events)
    kinds = [(e["type"], e.get("index"), (e.get("delta") or e.get("content_block") or {}).get("type")) for e in out]
    assert runs(kinds) == [
        ("message_start", None, None),
        ("content_block_start", 0, "text"),
        ("ping", None, None),
        ("content_block_delta", 0, "text_delta"),
        ("content_block_stop", 0, None),  # the text block as it stands when the call starts
        ("content_block_start", 1, "tool_use"),
        ("content_block_delta", 1, "input_json_delta"),
        ("content_block_stop", 1, None),
        ("content_block_start", 2, "text"),  # the text after it: a new block
        ("content_block_delta", 2, "text_delta"),
        ("content_block_stop", 2, None),
        ("content_block_start", 3, "tool_use"),  # the upstream's block 1, all its events moved to 3
        ("content_block_delta", 3, "input_json_delta"),
        ("content_block_stop", 3, None),
        ("message_delta", None, None),
        ("message_stop", None, None),
    ]
    assert out[-2]["delta"]["stop_reason"] == "tool_use"
    assert all(a is b for a, b in zip(out[:4], events[:4], strict=True))
    starts = [e["content_block"] for e in out if e["type"] == "content_block_start"]
    assert starts[1] == {"type": "tool_use", "id": starts[1]["id"], "name": "f", "input": {}}
    assert starts[1]["id"].startswith("toolu_") and starts[3]["id"] == "toolu_native0"
    json_pieces = [e["delta"]["partial_json"] for e in out if e.get("index") == 1 and "delta" in e]
    assert "".join(json_pieces) == '{"city": "Paris"}'
    assert [e["delta"]["text"] for e in out if e.get("delta", {}).get("type") == "text_delta"] == ["Hi ", " bye"]
    assert (machine.recovered, machine.abandoned) == (1, 0)


def test_text_a_delta_brings_around_a_whole_call_goes_on_each_side_of_it(impl):
    # one delta holds the text before the call, the call and the text after it: the text the delta ends with
    # goes after the call, the rest before it
    text = "Hi " + HERMES_CALL + " bye"
    output = pushed(
        ResponsesRecovery(native=True, has_tools=True, tools=R_TOOLS, stream_arguments=True),
        response_events("m", [text]),
    )[-1]["response"]["output"]
    assert [o.get("name") or o["content"][0]["text"] for o in output] == ["Hi ", "f", " bye"]
    out = pushed(
        MessagesRecovery(native=True, has_tools=True, tools=M_TOOLS, stream_arguments=True),
        message_events("m", ["Hi " + HERMES_CALL[:20], HERMES_CALL[20:] + " bye"]),
    )
    starts = [(e["index"], e["content_block"]["type"]) for e in out if e["type"] == "content_block_start"]
    texts = [(e["index"], e["delta"]["text"]) for e in out if e.get("delta", {}).get("type") == "text_delta"]
    assert (starts, texts) == ([(0, "text"), (1, "tool_use"), (2, "text")], [(0, "Hi "), (2, " bye")])


def test_an_upstream_item_after_a_split_message_moves_and_the_sdk_reads_it(impl, responses_client):
    # the native model's function_call item comes after the message: a prompt-guided gateway streams the text call
    events = response_events("native", DELTAS, native=True)
    machine = ResponsesRecovery(native=False, has_tools=True, tools=R_TOOLS, stream_arguments=True)
    final, deltas = responses_view(responses_client, sse(pushed(machine, events)))
    assert [(o.type, o.id if o.id in ("msg_stub", "fc_native0") else o.id[:3]) for o in final.output] == [
        ("message", "msg_stub"),
        ("function_call", "fc_"),
        ("message", "msg"),
        ("function_call", "fc_native0"),
    ]
    assert function_calls(final) == [("f", '{"city": "Paris"}'), ("lookup", '{"q": "native"}')]
    assert deltas["fc_native0"] == '{"q": "native"}' and final.output_text == "Hi  bye"


# --- the gate --------------------------------------------------------------------------------------------------


def test_a_native_model_with_a_structured_call_first_gets_no_call_streamed(impl):
    text = "Hi " + HERMES_CALL
    item = {"id": "fc_native0", "type": "function_call", "status": "completed", "arguments": "{}", "call_id": "c0"}
    item["name"] = "lookup"
    upstream = response_events("m", DELTAS[:3])
    events = [  # the structured call's item first, the message after it
        *upstream[:2],
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "status": "in_progress"}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        *({**e, "output_index": e["output_index"] + 1} if "output_index" in e else e for e in upstream[2:]),
    ]
    events = [{**e, "sequence_number": n} for n, e in enumerate(events)]
    for native, streamed in ((True, False), (False, True)):
        machine = ResponsesRecovery(native=native, has_tools=True, tools=R_TOOLS, stream_arguments=True)
        out = pushed(machine, events)
        added = [e["item"].get("name", e["item"]["type"]) for e in out if e["type"] == "response.output_item.added"]
        assert added == (["lookup", "message", "f"] if streamed else ["lookup", "message"]), native
        assert "".join(e["delta"] for e in out if e["type"] == "response.output_text.delta") == "Hi "
        assert machine.recovered == streamed
    blocks = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t0", "name": "g"}},
        {"type": "content_block_stop", "index": 0},
    ]
    upstream = message_events("m", DELTAS[:3])
    moved = [{**e, "index": e["index"] + 1} if "index" in e else e for e in upstream[1:-2]]
    events = [upstream[0], *blocks, *moved, *upstream[-2:]]
    for native, streamed in ((True, False), (False, True)):
        machine = MessagesRecovery(native=native, has_tools=True, tools=M_TOOLS, stream_arguments=True)
        out = pushed(machine, events)
        starts = [e["content_block"]["type"] for e in out if e["type"] == "content_block_start"]
        assert starts == (["tool_use", "text", "tool_use"] if streamed else ["tool_use", "text"]), native
        assert out[-2]["delta"]["stop_reason"] == ("tool_use" if streamed else "end_turn")
    assert text.startswith("".join(DELTAS[:3]))


def test_with_a_native_model_calls_written_before_its_structured_call_go_out(impl):
    # as in chat completions, the gate decides when a call starts, with the structured calls seen so far: the
    # native stub's function_call item comes after its text, so its text calls are sent (the option off, which
    # decides at the end, sends none)
    events = response_events("native", DELTAS, native=True)
    for stream_arguments, names in ((True, ["f", "lookup"]), (False, ["lookup"])):
        machine = ResponsesRecovery(native=True, has_tools=True, tools=R_TOOLS, stream_arguments=stream_arguments)
        output = pushed(machine, events)[-1]["response"]["output"]
        assert [o["name"] for o in output if o["type"] == "function_call"] == names
    events = message_events("native", DELTAS, native=True)
    for stream_arguments, names in ((True, ["f", "lookup"]), (False, ["lookup"])):
        machine = MessagesRecovery(native=True, has_tools=True, tools=M_TOOLS, stream_arguments=stream_arguments)
        out = pushed(machine, events)
        starts = [e["content_block"] for e in out if e["type"] == "content_block_start"]
        assert [block["name"] for block in starts if block["type"] == "tool_use"] == names


# --- abandoned calls -------------------------------------------------------------------------------------------

CUT = '<tool_call>{"name": "f", "arguments": {"city": "Rome", '  # cut by another opener: text, as without the option
CUT_TEXT = "Look: " + CUT + HERMES_CALL + " ok"
CUT_DELTAS = ["Look: ", CUT[:45], CUT[45:], *DELTAS[1:3], " ok"]


def test_an_abandoned_call_is_an_incomplete_item_and_the_text_is_as_without_the_option(impl, responses_client):
    upstream = response_events("m", CUT_DELTAS)
    machine = ResponsesRecovery(native=True, has_tools=True, tools=R_TOOLS, stream_arguments=True)
    final, deltas = responses_view(responses_client, sse(pushed(machine, upstream)))
    off = ResponsesRecovery(native=True, has_tools=True, tools=R_TOOLS)
    final_off, _ = responses_view(responses_client, sse(pushed(off, upstream)))
    assert [(o.type, getattr(o, "status", None)) for o in final.output] == [
        ("message", "completed"),
        ("function_call", "incomplete"),  # the partial call, as sent
        ("message", "completed"),  # the block's text, as the option off shows it
        ("function_call", "completed"),
        ("message", "completed"),
    ]
    partial = final.output[1].arguments
    assert '{"city": "Rome", '.startswith(partial) and deltas.get(final.output[1].id, "") == partial
    assert final.output_text == final_off.output_text == CUT_TEXT.replace(HERMES_CALL, "")
    assert function_calls(final, "completed") == function_calls(final_off) == [("f", '{"city": "Paris"}')]
    assert (machine.recovered, machine.abandoned) == (1, 1)


def _until_error(sent: bytes) -> tuple[str, dict]:
    """The SSE ``sent`` ends with the abandonment's error event and nothing after it: (the events' types, the error)."""
    events = [json.loads(line[6:]) for line in sent.decode().splitlines() if line.startswith("data: ")]
    assert sent.endswith(b"\n\n") and events[-1]["type"] == "error"
    return [e["type"] for e in events], events[-1]


def test_an_abandoned_call_ends_the_messages_stream_with_an_error_the_sdk_raises(impl, messages_client):
    upstream = message_events("m", CUT_DELTAS)
    machine = MessagesRecovery(native=True, has_tools=True, tools=M_TOOLS, stream_arguments=True)
    sent = sse(pushed(machine, upstream))
    types, error = _until_error(sent)
    # the text before the call, the call's start and its pieces, then the error: no message_stop, no stop_reason
    assert types[-3:] == ["content_block_start", "content_block_delta", "error"] and "message_stop" not in types
    assert error == abandoned_error() and error["error"]["type"] == "api_error"
    with pytest.raises(anthropic.APIStatusError, match="abandoned"):
        messages_view(messages_client, sent)  # the SDK's stream raises: no final message holds the partial call
    final_off, _ = messages_view(
        messages_client, sse(pushed(MessagesRecovery(native=True, has_tools=True, tools=M_TOOLS), upstream))
    )
    assert tool_uses(final_off) == [("f", {"city": "Paris"})]  # without the option: the later call, whole
    assert (machine.recovered, machine.abandoned) == (0, 1)
    assert pushed(machine, upstream) == [] and machine.close() == []  # nothing more goes out


def test_a_malformed_block_is_an_incomplete_item_or_an_error(impl, responses_client, messages_client):
    text = MALFORMED.replace("get_weather", "f")
    r = ResponsesRecovery(native=True, has_tools=True, tools=R_TOOLS, stream_arguments=True)
    final, _ = responses_view(responses_client, sse(pushed(r, response_events("m", [text[:45], text[45:]]))))
    assert [(o.type, o.status) for o in final.output] == [
        ("message", "completed"),
        ("function_call", "incomplete"),
        ("message", "completed"),
    ]
    assert final.output_text == "Here it is. Done." and '{"city": '.startswith(final.output[1].arguments)
    m = MessagesRecovery(native=True, has_tools=True, tools=M_TOOLS, stream_arguments=True)
    sent = sse(pushed(m, message_events("m", [text[:45], text[45:]])))
    assert _until_error(sent)[1] == abandoned_error()
    with pytest.raises(anthropic.APIStatusError, match="abandoned"):
        messages_view(messages_client, sent)
    assert (r.recovered, r.abandoned, m.recovered, m.abandoned) == (0, 1, 0, 1)


# --- what the Messages deltas keep: a prefix of strict JSON ---------------------------------------------------


def test_a_body_that_is_not_strict_json_never_breaks_the_sdk_reading_it(impl, messages_client):
    text = 'A <tool_call>{"name": "f", "arguments": {"ok": [1, 2], "x": @, "y": 3}}</tool_call> B'
    machine = MessagesRecovery(native=True, has_tools=True, tools=M_TOOLS, stream_arguments=True)
    events = message_events("m", [text[i : i + 4] for i in range(0, len(text), 4)])
    out = pushed(machine, events)
    # the pieces went out up to the first character that cannot go on a JSON object, then the error: the SDK
    # never read an input it could not parse, and raises the error
    pieces = "".join(e["delta"]["partial_json"] for e in out if e.get("delta", {}).get("type") == "input_json_delta")
    assert '{"ok": [1, 2], "x": '.startswith(pieces) and out[-1] == abandoned_error()
    with pytest.raises(anthropic.APIStatusError, match="abandoned"):
        messages_view(messages_client, sse(out))
    assert (machine.recovered, machine.abandoned) == (0, 1)


def test_a_lone_surrogate_stops_the_pieces_and_the_rest_goes_out_when_the_call_ends(impl):
    # a lone surrogate escape is no strict JSON (the anthropic SDK refuses it): the arguments hold U+FFFD's escape
    # in its place (issue 28), the pieces stop before it and the rest goes out, whole, when the call ends
    arguments = '{"a": "x\\ud800", "b": 1}'
    text = '<tool_call>{"name": "f", "arguments": ' + arguments + "}</tool_call>"
    machine = MessagesRecovery(native=True, has_tools=True, tools=M_TOOLS, stream_arguments=True)
    out = pushed(machine, message_events("m", [text[i : i + 3] for i in range(0, len(text), 3)]))
    pieces = [e["delta"]["partial_json"] for e in out if e.get("delta", {}).get("type") == "input_json_delta"]
    assert "".join(pieces) == '{"a": "x\\ufffd", "b": 1}' and machine.recovered == 1
    assert "\\u" not in "".join(pieces[:-1]) and pieces[-1].endswith('", "b": 1}')


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.text(max_size=5), _json_values, max_size=4),
    st.sampled_from([{}, {"ensure_ascii": False}, {"indent": 2}, {"separators": (",", ":")}]),
    st.data(),
)
def test_the_reader_takes_any_json_object_in_any_split(value, style, data):
    text = json.dumps(value, **style)
    reader, start = _JsonPrefix(), 0
    for cut in sorted(set(data.draw(st.lists(st.integers(0, len(text)), max_size=8))) | {len(text)}):
        assert reader.take(text[start:cut]) == cut - start
        start = cut


_TOKENS = st.sampled_from(
    ['{', '}', '[', ']', '"', ":", ",", " ", "1", "-", "0", ".", "e", "+", "true", "nul", "NaN", "'", "\\", "u",
     "\\ud83d", "\\ude00", "d800", "\\n", "\x01", "é", "a", "{}", "[1,]"]
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(_TOKENS, max_size=25).map("".join))
def test_what_the_reader_takes_the_sdk_reads(text):
    jiter = pytest.importorskip("jiter", reason="the anthropic SDK's partial JSON reader")
    text = "{" + text
    taken = text[: _JsonPrefix().take(text)]
    jiter.from_json(taken.encode(), partial_mode=True)  # raises ValueError on what it cannot read
    try:
        json.loads(text)
    except ValueError:
        return
    assert taken == text  # a whole JSON object is taken whole


# --- the option on the other entry points ------------------------------------------------------------------


def test_whole_answers_take_the_option_and_are_recovered_as_without_it(impl):
    text = "Hi " + HERMES_CALL + " bye"
    options = {"native": True, "has_tools": True, "stream_arguments": True}
    response = response_body("m", text)
    off = recover_responses(response, native=True, has_tools=True, tools=R_TOOLS)
    on = recover_responses(response, tools=R_TOOLS, **options)
    raw = json.loads(recover_responses_bytes(json.dumps(response).encode(), tools=R_TOOLS, **options))
    masked = test_responses_api.masked
    assert masked(on["output"]) == masked(raw["output"]) == masked(off["output"])
    assert on["output"][0]["content"][0]["text"] == "Hi  bye" and on["output"][1]["arguments"] == '{"city": "Paris"}'
    message = message_body("m", text)
    off = recover_message(message, native=True, has_tools=True, tools=M_TOOLS)
    on = recover_message(message, tools=M_TOOLS, **options)
    raw = json.loads(recover_message_bytes(json.dumps(message).encode(), tools=M_TOOLS, **options))
    masked = test_messages_api.masked
    assert masked(on["content"]) == masked(raw["content"]) == masked(off["content"])
    assert on["content"][0]["text"] == "Hi  bye" and on["content"][1]["input"] == {"city": "Paris"}


def test_the_stream_helpers_take_the_option(impl):
    text = "Hi " + HERMES_CALL
    for events, helper, ahelper, tools in (
        (response_events("m", [text[:30], text[30:]]), recover_responses_sse, arecover_responses_sse, R_TOOLS),
        (message_events("m", [text[:30], text[30:]]), recover_messages_sse, arecover_messages_sse, M_TOOLS),
    ):
        upstream = sse(events)
        chunks = [upstream[:100], upstream[100:]]
        options = {"native": True, "has_tools": True, "tools": tools, "stream_arguments": True}
        got = seen(b"".join(helper(chunks, **options)))

        async def collect(chunks=chunks, ahelper=ahelper, options=options):
            async def source():
                for chunk in chunks:
                    yield chunk

            return b"".join([data async for data in ahelper(source(), **options)])

        assert [kind for kind, _ in seen(asyncio.run(collect()))] == [kind for kind, _ in got]
        kinds = [kind for kind, _ in got]
        assert kinds.count("response.output_item.added") + kinds.count("content_block_start") == 2
        added = [e for _, e in got if e["type"] in ("response.output_item.added", "content_block_start")]
        assert (added[1].get("item") or added[1].get("content_block"))["name"] == "f"


def test_a_stream_that_stops_early_is_flushed_by_close(impl):
    text = "Hi " + HERMES_CALL.removesuffix(
        "</tool_call>"
    )  # never closed: a call at the end of the text, as parse reads
    events = response_events("m", [text[:30], text[30:]])[:6]  # no done events, no final event
    machine = ResponsesRecovery(native=True, has_tools=True, tools=R_TOOLS, stream_arguments=True)
    out = [e for event in events for e in machine.push(event)]
    tail = machine.close()
    assert [e["sequence_number"] for e in out + tail] == list(range(len(out + tail)))
    assert [e["type"] for e in tail][-2:] == ["response.function_call_arguments.done", "response.output_item.done"]
    assert tail[-1]["item"]["arguments"] == '{"city": "Paris"}' and machine.recovered == 1


# --- the proxy, driven by the SDKs ---------------------------------------------------------------------------

WRITE_FILE = [t for t in JSON_TOOLS if t["function"]["name"] == "write_file"]


@pytest.fixture(scope="module")
def streaming_gateway():
    pytest.importorskip("aiohttp", reason="the proxy and the stub upstream run on aiohttp")
    from textcalls import proxy

    from ..gateway_support.api_upstream import ApiUpstream
    from ..gateway_support.upstream import LoopThread

    loop = LoopThread()
    upstream_runner, upstream_url = loop.serve(ApiUpstream().app)
    runner = loop.run(proxy.start(upstream_url, host="127.0.0.1", port=0, stream_arguments=True))
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    clients = (
        openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0, timeout=10),
        anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=0, timeout=10),
    )
    yield clients
    for client in clients:
        client.close()
    loop.close(runner, upstream_runner)


def _long_arguments():
    return json.dumps(json.loads(LONG[LONG.index("{") : LONG.rindex("}") + 1])["arguments"])


def test_the_proxy_streams_responses_arguments_as_the_model_writes_them(impl, streaming_gateway, caplog):
    caplog.set_level(logging.INFO, logger="textcalls.proxy")
    client = streaming_gateway[0]
    for seed in (1, 2):
        deltas = []
        with client.responses.stream(
            model="long", input="write", tools=responses_shape(WRITE_FILE), extra_body={"x_seed": seed},
            extra_query={"t": "r-long"},
        ) as stream:  # fmt: skip
            for event in stream:
                if event.type == "response.function_call_arguments.delta":
                    deltas.append(event.delta)
            final = stream.get_final_response()
        assert final.output_text == "Writing it.\n"
        assert function_calls(final) == [("write_file", _long_arguments())] == [("write_file", "".join(deltas))]
        # the arguments came as they were written, not whole once the block ended: at most LAG characters behind
        # the model, whose deltas (the stub's) are at most 12 characters, no delta is longer than LAG + 12
        assert max(map(len, deltas)) <= LAG + 12
    assert log_lines(caplog, "r-long", 2) == ["POST /v1/responses?t=r-long 200 sse recovered=1 abandoned=0"] * 2


def test_the_proxy_streams_messages_arguments_as_the_model_writes_them(impl, streaming_gateway, caplog):
    caplog.set_level(logging.INFO, logger="textcalls.proxy")
    client = streaming_gateway[1]
    deltas = []
    with client.messages.stream(
        model="long", max_tokens=1024, messages=[{"role": "user", "content": "write"}],
        tools=messages_shape(WRITE_FILE), extra_body={"x_seed": 3}, extra_query={"t": "m-long"},
    ) as stream:  # fmt: skip
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                deltas.append(event.delta.partial_json)
        message = stream.get_final_message()
    assert message_text(message) == "Writing it.\n" and message.stop_reason == "tool_use"
    assert tool_uses(message) == [("write_file", json.loads(_long_arguments()))]
    assert "".join(deltas) == _long_arguments() and max(map(len, deltas)) <= LAG + 12  # (as for Responses)
    assert log_lines(caplog, "m-long", 1) == ["POST /v1/messages?t=m-long 200 sse recovered=1 abandoned=0"]


def test_the_proxy_counts_and_logs_an_abandoned_call(impl, streaming_gateway, caplog):
    caplog.set_level(logging.INFO, logger="textcalls.proxy")
    weather = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    openai_client, anthropic_client = streaming_gateway
    with openai_client.responses.stream(
        model="malformed", input="hi", tools=responses_shape(weather), extra_body={"x_seed": 5},
        extra_query={"t": "abandon"},
    ) as stream:  # fmt: skip
        final = stream.get_final_response()
    assert final.output_text == "Here it is. Done." and function_calls(final, "completed") == []
    assert [o.name for o in final.output if o.type == "function_call"] == ["get_weather"]
    with pytest.raises(anthropic.APIStatusError, match="abandoned"), anthropic_client.messages.stream(
        model="malformed", max_tokens=1024, messages=[{"role": "user", "content": "hi"}],
        tools=messages_shape(weather), extra_body={"x_seed": 5}, extra_query={"t": "abandon"},
    ) as stream:  # fmt: skip
        stream.get_final_message()  # the stream ends with the abandonment's error event: the SDK raises it
    assert log_lines(caplog, "abandon", 2) == [
        "POST /v1/messages?t=abandon 200 sse recovered=0 abandoned=1",
        "POST /v1/responses?t=abandon 200 sse recovered=0 abandoned=1",
    ]
