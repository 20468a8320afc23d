"""``stream_arguments=True`` in the gateway layers: ``ChunkRecovery`` / ``recover_stream``, ``SSERecovery`` and
the proxy send a JSON-bodied call's arguments in pieces as its body arrives.

For any split, the openai SDK's own accumulator (``ChatCompletionStreamState``) rebuilds from the recovered
chunks the calls the option off gives (names, arguments, ids) and the same content; the pieces trail the
model by at most ``LAG`` characters; SSE in any byte split gives the chunks ``ChunkRecovery`` gives; abandoned
calls give what ``ChunkRecovery``'s docstring says.
"""

from __future__ import annotations

import asyncio
import json
import logging
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import _events, parse
from textcalls.sse import SSERecovery, recover_sse
from textcalls.stream import ChunkRecovery, abandoned_error_chunk, arecover_stream, recover_stream

from ..unit.test_call_events import FRESH, LAG, TOOLS, cuts_of, transcripts
from ..unit.test_call_events_xml import TOOLS as XML_TOOLS
from ..unit.test_call_events_xml import _blank_strings
from ..unit.test_call_events_xml import transcripts as xml_transcripts
from ..waiting import wait_until

openai = pytest.importorskip("openai", reason="the client side is the openai SDK's accumulator")
from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402
from openai.types.chat import ChatCompletionChunk  # noqa: E402

# the impl fixture only switches the implementation: nothing in it needs resetting between examples
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def chunk(delta, finish=None, index=0):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "m",
        "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def chunks_of(text, cuts, *, finish="stop"):
    """A role chunk, ``text`` cut at ``cuts`` as content deltas, a finish chunk."""
    out, start = [chunk({"role": "assistant", "content": ""})], 0
    for cut in cuts:
        if cut > start:
            out.append(chunk({"content": text[start:cut]}))
        start = cut
    return [*out, chunk({}, finish)]


def accumulate(chunks):
    """What the openai SDK rebuilds: (content, [(id, name, arguments)], finish_reason) of choice 0."""
    state = ChatCompletionStreamState()
    for c in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(c))
    try:
        choice = state.get_final_completion().choices[0]
    except openai.LengthFinishReasonError:  # (finish_reason "length": the SDK's parsing helper refuses it)
        choice = state.current_completion_snapshot.choices[0]
    calls = [(tc.id, tc.function.name, tc.function.arguments) for tc in choice.message.tool_calls or []]
    return choice.message.content or "", calls, choice.finish_reason


def entries(chunks):
    """Every ``tool_calls`` entry sent, in order."""
    return [e for c in chunks for ch in c.get("choices", ()) for e in (ch["delta"].get("tool_calls") or [])]


def fresh(call_id):
    return call_id.startswith(FRESH)


@SETTINGS
@given(transcripts(), st.data())
def test_the_sdk_rebuilds_the_calls_and_content_of_the_option_off(impl, transcript, data):
    text, written = transcript
    cuts = cuts_of(data, text)
    chunks = chunks_of(text, cuts)
    machine = ChunkRecovery(native=True, has_tools=True, tools=TOOLS, stream_arguments=True)
    on, fed, lag = [], 0, []  # lag: (characters pushed, {index: arguments received so far})
    so_far: dict = {}
    with mock.patch.object(_events, "PIECE_MIN", data.draw(st.sampled_from([1, _events.PIECE_MIN]))):
        for c in chunks:
            out = machine.push(c)
            on += out
            fed += len(c["choices"][0]["delta"].get("content") or "")
            for e in entries(out):
                so_far[e["index"]] = so_far.get(e["index"], "") + e["function"]["arguments"]
            lag.append((fed, dict(so_far)))
        on += machine.close()
    off = list(recover_stream(chunks, native=True, has_tools=True, tools=TOOLS))
    whole = parse(text, tools=TOOLS)
    on_content, on_calls, on_finish = accumulate(on)
    off_content, off_calls, off_finish = accumulate(off)
    assert on_content == off_content and on_content.strip() == whole.content
    assert [c[1:] for c in on_calls] == [c[1:] for c in off_calls] == [(c.name, c.arguments) for c in whole.calls]
    assert on_finish == off_finish == "tool_calls"
    assert (machine.recovered, machine.abandoned) == (len(written), 0)
    for (on_id, *_), (off_id, *_), call in zip(on_calls, off_calls, whole.calls, strict=True):
        if fresh(off_id):  # one id, sent once (the SDK joins the ids sent for one index)
            assert fresh(on_id) and len(on_id) == len(off_id)
        else:  # written in the body (Kimi, Mistral [CALL_ID]): kept
            assert on_id == off_id == call.id
    ids = [c[0] for c in on_calls if fresh(c[0])]
    assert len(set(ids)) == len(ids)
    # every call was streamed: one start entry (empty arguments), then pieces only, never the call whole
    starts = [e for e in entries(on) if "id" in e]
    assert [(e["index"], e["function"]["arguments"], e["type"]) for e in starts] == [
        (i, "", "function") for i in range(len(written))
    ]
    # the pieces trail the text pushed by at most LAG characters (call j has index j)
    for fed, got in lag:
        for j, (offset, arguments) in enumerate(written):
            due = min(max(fed - offset, 0), len(arguments))
            assert len(got.get(j, "")) >= due - LAG, (j, fed, due)


def _normal(chunks):
    """``chunks`` with fresh ids replaced by their order of appearance (each machine draws its own)."""
    ids: dict = {}
    out = json.dumps(chunks)
    for call_id in [e["id"] for e in entries(chunks) if "id" in e and fresh(e["id"])]:
        ids.setdefault(call_id, f"fresh{len(ids)}")
    for call_id, name in ids.items():
        out = out.replace(call_id, name)
    return json.loads(out)


def sse_bytes(chunks):
    return (
        b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    )


def sse_chunks(data):
    """The chunks of an SSE body (``[DONE]`` last, or the abandonment's error chunk and nothing after it)."""
    events = [e for e in data.replace(b"\r\n", b"\n").split(b"\n\n") if e]
    if events[-1] != b"data: [DONE]":
        assert json.loads(events[-1].removeprefix(b"data: ")) == abandoned_error_chunk()
        events.append(b"")
    return [json.loads(e.removeprefix(b"data: ")) for e in events[:-1]]


def sse_and_chunk_recovery(chunks, data, tools):
    """``chunks`` through chunk recovery, and as SSE bytes cut where ``data`` draws through SSE recovery, with
    ``stream_arguments``; asserts the SSE gives chunk recovery's chunks. ``(recovery, machine, its chunks)``."""
    body = sse_bytes(chunks)
    splits = sorted(set(data.draw(st.lists(st.integers(0, len(body)), max_size=20))) | {len(body)})
    recovery = SSERecovery(native=True, has_tools=True, tools=tools, stream_arguments=True)
    out, start = [], 0
    for cut in splits:
        out.append(recovery.feed(body[start:cut]))
        start = cut
    out.append(recovery.close())
    machine = ChunkRecovery(native=True, has_tools=True, tools=tools, stream_arguments=True)
    expected = [new for c in chunks for new in machine.push(c)] + machine.close()
    assert _normal(sse_chunks(b"".join(out))) == _normal(expected)
    return recovery, machine, expected


@SETTINGS
@given(transcripts(), st.data())
def test_sse_in_any_byte_split_gives_the_chunks_of_chunk_recovery(impl, transcript, data):
    text, written = transcript
    chunks = chunks_of(text, cuts_of(data, text))
    recovery, machine, expected = sse_and_chunk_recovery(chunks, data, TOOLS)
    assert (recovery.recovered, recovery.abandoned) == (machine.recovered, machine.abandoned) == (len(written), 0)
    assert len([e for e in entries(expected) if "id" in e]) == len(written)


@SETTINGS
@given(st.one_of(xml_transcripts(), xml_transcripts(_blank_strings)), st.data())
def test_xml_calls_through_chunks_and_sse_in_any_split_stream_as_parse_reads_them(impl, transcript, data):
    """The XML reader's holds and shortcuts (a run of blanks gathered unread) seen from the chunk and SSE layers:
    SSE bytes in any split give the chunks of chunk recovery, and a client rebuilds the content and the calls of
    the option off, which are parse's."""
    text, written = transcript
    chunks = chunks_of(text, cuts_of(data, text))
    recovery, machine, expected = sse_and_chunk_recovery(chunks, data, XML_TOOLS)
    assert (recovery.recovered, recovery.abandoned) == (machine.recovered, machine.abandoned)
    off = list(recover_stream(chunks, native=True, has_tools=True, tools=XML_TOOLS))
    whole = parse(text, tools=XML_TOOLS)
    if machine.failed:  # a call abandoned (an indented closing tag: a dedent): the answer withdrawn, as the SSE's
        assert expected[-1] == abandoned_error_chunk() and machine.abandoned >= 1
        assert any(indented for params in written for *_, indented in params)
        return
    on_content, on_calls, _ = accumulate(expected)
    off_content, off_calls, _ = accumulate(off)
    assert on_content == off_content and on_content.strip() == whole.content
    # as in test_call_events_xml: a '"' after a '{' may hide a JSON-reading block's closer, an indented closing
    # tag dedents the value (the call is abandoned); without either, every call streams and ends as parse reads it
    if not any('"' in value or indented for params in written for _, value, _, indented in params):
        assert machine.abandoned == 0 and machine.recovered == len(whole.calls) == len(written)
        assert [c[1:] for c in on_calls] == [c[1:] for c in off_calls] == [(c.name, c.arguments) for c in whole.calls]


def run(text, cuts, *, native=True, **options):
    """(chunks out with the option on, the machine, the chunks out with it off)."""
    chunks = chunks_of(text, cuts)
    machine = ChunkRecovery(native=native, has_tools=True, tools=TOOLS, stream_arguments=True, **options)
    out = [new for c in chunks for new in machine.push(c)] + machine.close()
    off = list(recover_stream(chunks, native=native, has_tools=True, tools=TOOLS, **options))
    return out, machine, off


def start(index, name):
    return {"index": index, "type": "function", "function": {"name": name, "arguments": ""}}


def piece(index, text):
    return {"index": index, "function": {"arguments": text}}


def without_ids(found):
    return [{k: v for k, v in e.items() if k != "id"} for e in found]


def _withdrawn(out, machine, sent):
    """The stream sent ``sent`` (its tool_calls entries, ids aside), then ended with the abandonment's error chunk:
    one, last, and nothing after it; the machine says so and ignores what comes next."""
    assert out[-1] == abandoned_error_chunk() and all("error" not in c for c in out[:-1])
    assert without_ids(entries(out[:-1])) == sent
    assert machine.failed and machine.push(chunks_of("more", [4])[1]) == [] and machine.close() == []


def test_arguments_other_than_the_pieces_withdraw_the_answer(impl, per_delta):
    text = '<tool_call>{"name": "f", "arguments": {"a": 1e5}}</tool_call>'
    out, machine, off = run(text, [text.index("e5"), len(text)])
    # the block's end, in the chunk that brings "e5}}", reads other arguments ({"a": 100000.0}): abandoned, so
    # that chunk gives only the error
    _withdrawn(out, machine, [start(0, "f"), piece(0, '{"a": 1')])
    assert [c[1:] for c in accumulate(off)[1]] == [("f", '{"a": 100000.0}')]  # without the option: the call
    assert (machine.recovered, machine.abandoned) == (0, 1)


def test_a_malformed_call_withdraws_the_answer(impl, per_delta):
    text = '[TOOL_CALLS]f{"n": NaN}'
    out, machine, off = run(text, [text.index("NaN"), len(text)])
    _withdrawn(out, machine, [start(0, "f"), piece(0, '{"n": ')])  # then "NaN}" and the end: the error
    assert accumulate(off) == ("", [], "stop")
    assert (machine.recovered, machine.abandoned) == (0, 1)


def test_a_call_cut_by_another_opener_withdraws_the_answer(impl):
    first = '<tool_call>{"name": "f", "arguments": {"a": 1, '
    text = first + '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>'
    out, machine, off = run(text, [len(first), len(text)])
    _withdrawn(out, machine, [start(0, "f"), piece(0, '{"a": 1, ')])
    content, calls, _ = accumulate(off)  # without the option: the first block is text, the second a call
    assert (content, [c[1:] for c in calls]) == (first, [("get_weather", "{}")])
    assert (machine.recovered, machine.abandoned) == (0, 1)


def test_a_call_cut_by_max_tokens_withdraws_the_answer_and_without_the_option_keeps_length(impl):
    text = 'Hi <tool_call>{"name": "f", "arguments": {"a": "rm -rf /'
    chunks = chunks_of(text, [10, 40, len(text)], finish="length")
    machine = ChunkRecovery(native=True, has_tools=True, tools=TOOLS, stream_arguments=True)
    out = [new for c in chunks for new in machine.push(c)] + machine.close()
    assert out[-1] == abandoned_error_chunk() and machine.abandoned == 1
    assert [c[2] for c in accumulate(out[:-1])[1]] == ['{"a": "rm -rf /']  # never complete JSON: no "}"
    off = list(recover_stream(chunks, native=True, has_tools=True, tools=TOOLS))
    assert accumulate(off) == ("Hi ", [], "length")  # the cut block removed, no call, the cut shown


def test_a_call_renamed_to_a_tool_not_offered_withdraws_the_answer(impl):
    text = '<tool_call>{"name": "f", "arguments": {"a": 1}, "name": "rm"}</tool_call> ok'
    out, machine, off = run(text, [30, 50, len(text)])
    _withdrawn(out, machine, [start(0, "f"), piece(0, '{"a": 1')])  # "}" held, then abandoned
    assert accumulate(off)[0] == text and accumulate(off)[1] == []  # keep_text: the block stays text
    assert (machine.recovered, machine.abandoned) == (0, 1)


def test_pieces_of_a_call_started_before_a_structured_call_go_on_to_its_end(impl):
    native = {"index": 0, "id": "call_native0", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    chunks = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": 'Hi <tool_call>{"name": "f", "arguments": {"a": '}),
        chunk({"tool_calls": [native]}),
        chunk({"content": '1}}</tool_call> <tool_call>{"name": "get_weather", "arguments": {}}</tool_call>'}),
        chunk({}, "tool_calls"),
    ]
    machine = ChunkRecovery(native=True, has_tools=True, tools=TOOLS, stream_arguments=True)
    out = [new for c in chunks for new in machine.push(c)]
    # the streamed call keeps index 0; the structured call shifts past it; the later text call is not recovered
    sent = [start(0, "f"), piece(0, '{"a": '), {**native, "index": 1}, piece(0, "1}")]
    assert without_ids(entries(out)) == without_ids(sent)
    content, calls, finish = accumulate(out)
    assert [c[:2] for c in calls][1] == ("call_native0", "lookup")
    assert [c[1:] for c in calls] == [("f", '{"a": 1}'), ("lookup", "{}")]
    assert (content, finish, machine.recovered, machine.abandoned) == ("Hi  ", "tool_calls", 1, 0)
    off = list(recover_stream(chunks, native=True, has_tools=True, tools=TOOLS))
    assert accumulate(off)[:2] == ("Hi  ", [("call_native0", "lookup", "{}")])  # off: completed after it, dropped


def test_a_call_starting_after_a_structured_call_is_not_streamed_with_a_native_model(impl):
    native = {"index": 0, "id": "call_native0", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    text = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call> done'
    chunks = [chunk({"tool_calls": [native]}), *chunks_of(text, [20, 40, len(text)])]
    machine = ChunkRecovery(native=True, has_tools=True, tools=TOOLS, stream_arguments=True)
    out = [new for c in chunks for new in machine.push(c)]
    assert entries(out) == [native] and accumulate(out)[0] == " done"
    guided = ChunkRecovery(native=False, has_tools=True, tools=TOOLS, stream_arguments=True)
    out = [new for c in chunks for new in guided.push(c)]
    assert without_ids(entries(out)) == without_ids([native, start(1, "f"), piece(1, '{"'), piece(1, 'a": 1}')])


def test_calls_without_events_go_out_whole_in_their_place(impl):
    text = (
        '<tool_call>[{"name": "f", "arguments": {}}]</tool_call>'  # an array: whole
        '<function=get_weather>{"city": "Oslo"}</function>'  # streamed
        '<tool_call>{"arguments": {}, "name": "f"}</tool_call>'  # the name last: whole
    )
    out, machine, off = run(text, list(range(7, len(text), 7)) + [len(text)])
    sent = without_ids(entries(out))
    assert sent[0] == {"index": 0, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    assert sent[1] == start(1, "get_weather") and sent[-1]["index"] == 2 and sent[-1]["function"]["name"] == "f"
    assert "".join(e["function"]["arguments"] for e in sent[2:-1]) == '{"city": "Oslo"}'
    assert [c[1:] for c in accumulate(out)[1]] == [c[1:] for c in accumulate(off)[1]]
    assert (machine.recovered, machine.abandoned) == (3, 0)


def test_each_choice_streams_its_own_calls(impl):
    a = '<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'
    b = '<function=get_weather>{"city": "Rome"}</function>'
    chunks = []
    for i in range(0, max(len(a), len(b)), 5):
        chunks.append(
            {
                **chunk({}),
                "choices": [
                    {"index": 0, "delta": {"content": a[i : i + 5]}, "logprobs": None, "finish_reason": None},
                    {"index": 1, "delta": {"content": b[i : i + 5]}, "logprobs": None, "finish_reason": None},
                ],
            }
        )
    machine = ChunkRecovery(native=True, has_tools=True, tools=TOOLS, stream_arguments=True)
    out = [new for c in chunks for new in machine.push(c)] + machine.close()
    by_choice: dict = {}
    for c in out:
        for ch in c["choices"]:
            for e in ch["delta"].get("tool_calls") or []:
                got = by_choice.setdefault((ch["index"], e["index"]), ["", ""])
                got[0] += e.get("function", {}).get("name") or ""
                got[1] += e["function"]["arguments"]
    assert by_choice == {(0, 0): ["f", '{"x": 1}'], (1, 0): ["get_weather", '{"city": "Rome"}']}


def test_the_stream_helpers_take_the_option(impl):
    text = '<tool_call>{"name": "f", "arguments": {"a": "' + "x" * 300 + '"}}</tool_call>'
    chunks = chunks_of(text, [*range(10, len(text), 10), len(text)])
    pieces = entries(recover_stream(chunks, native=True, has_tools=True, tools=TOOLS, stream_arguments=True))
    assert (
        len(pieces) > 300 // 64 and "".join(e["function"]["arguments"] for e in pieces) == '{"a": "' + "x" * 300 + '"}'
    )

    async def collect():
        return [
            c
            async for c in arecover_stream(
                _aiter(chunks), native=True, has_tools=True, tools=TOOLS, stream_arguments=True
            )
        ]

    assert without_ids(entries(asyncio.run(collect()))) == without_ids(pieces)
    body = b"".join(recover_sse([sse_bytes(chunks)], native=True, has_tools=True, tools=TOOLS, stream_arguments=True))
    assert without_ids(entries(sse_chunks(body))) == without_ids(pieces)


async def _aiter(items):
    for item in items:
        yield item


def test_the_option_must_be_a_bool(impl):
    with pytest.raises(TypeError, match="stream_arguments must be a bool"):
        ChunkRecovery(native=True, has_tools=True, stream_arguments="yes")
    with pytest.raises(TypeError, match="stream_arguments must be a bool"):
        SSERecovery(native=True, has_tools=True, stream_arguments=1)


# --- the proxy, driven by the openai SDK -------------------------------------------------------------

WRITE_FILE = {"type": "function", "function": {"name": "write_file", "parameters": {"type": "object"}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


@pytest.fixture(scope="module")
def streaming_proxy():
    pytest.importorskip("aiohttp", reason="the proxy and the stub upstream run on aiohttp")
    from textcalls import proxy

    from ..gateway_support.upstream import LoopThread, Upstream

    loop = LoopThread()
    upstream_runner, upstream_url = loop.serve(Upstream().app)
    runner = loop.run(proxy.start(upstream_url, host="127.0.0.1", port=0, stream_arguments=True))
    host, port = runner.addresses[0][:2]
    client = openai.OpenAI(base_url=f"http://{host}:{port}/v1", api_key="sk-test", max_retries=0, timeout=10)
    yield client
    loop.close(runner, upstream_runner)


def _proxy_lines(caplog, n):
    def lines():  # the proxy logs once it has sent the answer: maybe just after the client has it
        return [r.getMessage() for r in caplog.records if r.name == "textcalls.proxy"]

    wait_until(lambda: len(lines()) >= n, f"{n} log lines")
    return lines()


def test_the_proxy_streams_the_arguments_as_the_model_writes_them(impl, streaming_proxy, caplog):
    from ..gateway_support.upstream import LONG

    caplog.set_level(logging.INFO, logger="textcalls.proxy")
    arguments = json.dumps(json.loads(LONG[LONG.index("{") : LONG.rindex("}") + 1])["arguments"])
    for seed in (1, 2):
        stream = streaming_proxy.chat.completions.create(
            model="long", messages=[{"role": "user", "content": "write"}], tools=[WRITE_FILE], stream=True, seed=seed
        )
        state = ChatCompletionStreamState()
        sent = []  # the tool_calls entries, as the SDK got them
        for c in stream:
            state.handle_chunk(c)
            sent += [tc for ch in c.choices for tc in ch.delta.tool_calls or []]
        choice = state.get_final_completion().choices[0]
        ((call),) = choice.message.tool_calls
        assert (call.function.name, call.function.arguments) == ("write_file", arguments)
        assert (choice.message.content, choice.finish_reason) == ("Writing it.\n", "tool_calls")
        # a start entry, then pieces of at most 12 characters of the model (the stub's deltas) plus what was
        # held: the arguments came in as the model wrote them, not whole once the block ended
        assert (sent[0].id, sent[0].function.name, sent[0].function.arguments) == (call.id, "write_file", "")
        assert all(tc.id is None and tc.function.name is None for tc in sent[1:])
        assert len(sent) > len(arguments) // 80 and max(len(tc.function.arguments) for tc in sent) < 80
    assert [line.split(" ")[3:6] for line in _proxy_lines(caplog, 2)] == [["sse", "recovered=1", "abandoned=0"]] * 2


def test_the_proxy_logs_a_call_abandoned_after_its_start_went_out(impl, streaming_proxy, caplog):
    caplog.set_level(logging.INFO, logger="textcalls.proxy")
    stream = streaming_proxy.chat.completions.create(
        model="malformed", messages=[{"role": "user", "content": "hi"}], tools=[WEATHER], stream=True, seed=5
    )
    state = ChatCompletionStreamState()
    # the call's start and `{"city": ` went out, then the block was malformed: the stream ends with the error
    # chunk, which the openai SDK raises, so the client never gets a final completion holding the partial call
    with pytest.raises(openai.APIError, match="abandoned"):
        for c in stream:
            state.handle_chunk(c)
    ((call),) = state.current_completion_snapshot.choices[0].message.tool_calls
    assert (call.function.name, call.function.arguments) == ("get_weather", '{"city": ')  # what had come
    assert _proxy_lines(caplog, 1)[0].split(" ")[3:6] == ["sse", "recovered=0", "abandoned=1"]


def test_non_streamed_answers_are_recovered_as_without_the_option(impl, streaming_proxy):
    completion = streaming_proxy.chat.completions.create(
        model="malformed", messages=[{"role": "user", "content": "hi"}], tools=[WEATHER]
    )
    assert (completion.choices[0].message.content, completion.choices[0].message.tool_calls) == (
        "Here it is. Done.",
        None,
    )


def test_create_app_checks_the_flag():
    pytest.importorskip("aiohttp", reason="the proxy runs on aiohttp")
    from textcalls import proxy

    with pytest.raises(TypeError, match="stream_arguments must be a bool, not int"):
        proxy.create_app("http://127.0.0.1:9", stream_arguments=1)


def test_the_command_line_flag_reaches_the_proxy(monkeypatch):
    from textcalls import proxy
    from textcalls.cli import main

    seen = []
    monkeypatch.setattr(proxy, "run", lambda upstream, **kw: seen.append(kw.get("stream_arguments")))
    for flags in ([], ["--stream-arguments"]):
        assert main(["proxy", "--upstream", "http://127.0.0.1:9", *flags]) == 0
    assert seen == [None, True]  # not given: create_app's default, off


def test_the_host_integrations_refuse_the_option():
    from textcalls import _hosts

    with pytest.raises(ValueError, match="stream_arguments"):
        _hosts.check_options({"stream_arguments": True})
    _hosts.check_options({"stream_arguments": False})  # the default, given: fine


def test_the_sdks_stream_helper_gets_argument_deltas_through_the_proxy(impl, streaming_proxy):
    from openai.lib.streaming.chat import ContentDeltaEvent, FunctionToolCallArgumentsDeltaEvent

    from ..gateway_support.upstream import LONG

    arguments = json.dumps(json.loads(LONG[LONG.index("{") : LONG.rindex("}") + 1])["arguments"])
    with streaming_proxy.chat.completions.stream(
        model="long", messages=[{"role": "user", "content": "write"}], tools=[WRITE_FILE], seed=3
    ) as stream:
        events = list(stream)
        final = stream.get_final_completion()
    deltas = [e for e in events if isinstance(e, FunctionToolCallArgumentsDeltaEvent)]
    # the arguments came as deltas of the one call (index 0, name write_file), each one's snapshot growing
    assert len(deltas) > len(arguments) // 80 and {(e.index, e.name) for e in deltas} == {(0, "write_file")}
    assert "".join(e.arguments_delta for e in deltas) == deltas[-1].arguments == arguments
    assert "".join(e.delta for e in events if isinstance(e, ContentDeltaEvent)) == "Writing it.\n"
    ((call),) = final.choices[0].message.tool_calls
    assert (call.function.name, call.function.arguments, final.choices[0].finish_reason) == (
        "write_file",
        arguments,
        "tool_calls",
    )


@pytest.mark.parametrize("step", [1, 7, 10_000])
def test_nothing_follows_the_withdrawal_in_sse_bytes(impl, step):
    # after the error event: no later event, not an oversized one passed through unread, not an incomplete
    # event left at the close, not [DONE]
    first = '<tool_call>{"name": "f", "arguments": {"a": 1, '
    text = first + '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>'
    body = sse_bytes(chunks_of(text, [len(first), len(text)]))
    big = b"data: " + json.dumps(chunk({"content": "x" * 600})).encode() + b"\r\n\r\n"
    body = body.replace(b"data: [DONE]\n\n", big + b"data: [DONE]\n\ndata: {")
    recovery = SSERecovery(native=True, has_tools=True, tools=TOOLS, stream_arguments=True, max_event=300)
    out = b"".join(recovery.feed(body[i : i + step]) for i in range(0, len(body), step)) + recovery.close()
    assert recovery.failed and out.endswith(b"\n\n")
    last = out[out.rindex(b"data: ") :]
    assert json.loads(last[6:]) == abandoned_error_chunk() and b"xxxx" not in out and b"[DONE]" not in out


@pytest.mark.parametrize(
    "content",
    [
        "<｜tool▁call▁begin｜>g<｜tool▁sep｜>{",  # cut by the stream's end: the error comes at [DONE]
        "<longcat_tool_call><function=o>r</longcat_tool_call>",  # malformed: the error replaces its own event
    ],
)
def test_the_error_event_that_ends_a_crlf_stream_is_the_last_byte_in_any_split(impl, content):
    """A streamed call abandoned ends the stream with the abandonment's error event. Fed a byte at a time, an
    event's ``\\r\\n\\r`` is taken as its end, and the LF after it completes it: sent only when the error event
    itself ends with that CR (it replaced a content event), not after one written whole (at ``[DONE]``)."""
    import re

    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}],
    }
    body = b"data: " + json.dumps(chunk, ensure_ascii=False).encode() + b"\r\n\r\ndata: [DONE]\r\n\r\n"
    mask = lambda data: re.sub(rb"call_[0-9a-f]{16,}", b"call_X", data)  # noqa: E731  (the calls' ids)

    def run(pieces):
        recovery = SSERecovery(native=True, has_tools=True, stream_arguments=True)
        sent = b"".join(recovery.feed(piece) for piece in pieces) + recovery.close()
        assert recovery.failed
        return mask(sent)

    whole = run([body])
    assert whole.endswith(b'"tool_call_abandoned"}}\r\n\r\n')
    assert b"tool_call_abandoned" in whole[whole.rindex(b"data: ") :]  # the error event is the last
    for size in (1, 2, 3, 5):
        assert run([body[i : i + size] for i in range(0, len(body), size)]) == whole, size
