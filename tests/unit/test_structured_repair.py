"""Structured calls whose ``function.name`` carries markup (issue 8, class 7), on both implementations.

``recover_response`` repairs a whole message's calls; ``ChunkRecovery`` (``recover_stream``, ``SSERecovery``)
repairs streamed ``tool_calls`` deltas and gives what the whole message gives. The names are the shapes seen in
the field: GLM's ``read<arg_key>filePath</arg_key><arg_value>…</arg_value>`` (zai-org/GLM-5#84) and a bare
name followed by a stray ``</arg_value>`` (fw-ai-external/python-sdk#119), and cousins of them (a trailing
``</tool_call>``, DeepSeek's ``<｜tool▁sep｜>``, Kimi's argument token).
"""

from __future__ import annotations

import copy
import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls.openai import NameRepair
from textcalls.options import Options
from textcalls.sse import SSERecovery
from textcalls.stream import ChunkRecovery, recover_stream

GLM_NAME = "read<arg_key>filePath</arg_key><arg_value>/home/u/exam</arg_value>"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "parameters": {
                "type": "object",
                "properties": {
                    "filePath": {"type": "string"},
                    "limit": {"type": "integer"},
                    "offset": {"type": "integer"},
                },
            },
        },
    },
    {"type": "function", "function": {"name": "tool_12", "parameters": {"type": "object", "properties": {}}}},
]
BLOCK_F = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'


def entry(name, arguments="{}", call_id="call_s0"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def completion(*entries, content=None, finish="tool_calls"):
    message = {"role": "assistant", "content": content}
    if entries:
        message["tool_calls"] = list(entries)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }


def functions(response):
    """(name, decoded arguments) of every tool call of choice 0."""
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in response["choices"][0]["message"].get("tool_calls") or []
    ]


# --- recover_response ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        # GLM: the key/value markup leaked into the name, the arguments field left empty
        (GLM_NAME, "{}", ("read", {"filePath": "/home/u/exam"})),
        (GLM_NAME, "", ("read", {"filePath": "/home/u/exam"})),
        (GLM_NAME, "null", ("read", {"filePath": "/home/u/exam"})),
        (
            "task<arg_key>description</arg_key><arg_value>Explore</arg_value><arg_key>prompt</arg_key><arg_value>look</arg_value>",
            "{ }",
            ("task", {"description": "Explore", "prompt": "look"}),
        ),
        # GLM-4.5's line breaks, and a value laid out on its own lines
        ("read\n<arg_key>filePath</arg_key>\n<arg_value>\n  /x\n</arg_value>\n", "{}", ("read", {"filePath": "  /x"})),
        # stray closers after the arguments or after a bare name
        (GLM_NAME + "</tool_call>", "{}", ("read", {"filePath": "/home/u/exam"})),
        ("tool_12</arg_value>", "{}", ("tool_12", {})),
        ("get_weather</tool_call>", '{"city": "Paris"}', ("get_weather", {"city": "Paris"})),
        ("get_weather</arg_value></tool_call>", '{"city": "Paris"}', ("get_weather", {"city": "Paris"})),
        ("get_weather<｜tool▁call▁end｜>", '{"city": "Paris"}', ("get_weather", {"city": "Paris"})),
        ("  get_weather</tool_call>\n", "{}", ("get_weather", {})),
        # DeepSeek V3.1 and Kimi K2: the separator and the arguments in the name
        ('get_weather<｜tool▁sep｜>{"city": "Paris"}', "", ("get_weather", {"city": "Paris"})),
        ('get_weather<|tool▁sep|>{"city": "Paris"}', "{}", ("get_weather", {"city": "Paris"})),
        ('get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>', "", ("get_weather", {"city": "Paris"})),
        (
            'functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}',
            "",
            ("get_weather", {"city": "Paris"}),
        ),
        # Qwen3-Coder's tags
        (
            "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
            "{}",
            ("get_weather", {"city": "Paris"}),
        ),
    ],
)
def test_markup_in_a_name_is_repaired(impl, tc, name, arguments, expected):
    response = completion(entry(name, arguments))
    before = copy.deepcopy(response)
    out = tc.recover_response(response, native=True, has_tools=True)
    assert response == before  # never mutated
    assert functions(out) == [expected]
    (call,) = out["choices"][0]["message"]["tool_calls"]
    assert call["id"] == "call_s0" and call["type"] == "function"
    assert out["choices"][0]["finish_reason"] == "tool_calls"
    assert out["choices"][0]["message"]["content"] is None
    assert {k: v for k, v in out.items() if k != "choices"} == {k: v for k, v in before.items() if k != "choices"}


def test_a_name_without_arguments_in_it_keeps_the_arguments_as_sent(impl, tc):
    arguments = '{"q":  1}'  # not re-serialised
    response = completion(entry("tool_12</arg_value>", arguments))
    (call,) = tc.recover_response(response, native=True, has_tools=True)["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "tool_12" and call["function"]["arguments"] is arguments


def test_arguments_in_both_places_are_merged(impl, tc):
    name = "read<arg_key>filePath</arg_key><arg_value>/x</arg_value><arg_key>limit</arg_key><arg_value>5</arg_value>"
    out = tc.recover_response(completion(entry(name, '{"offset": 3, "limit": "10"}')), native=True, has_tools=True)
    arguments = out["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    # the name's keys first (they came first), the field's value for a key in both, the field's new keys after
    assert list(json.loads(arguments).items()) == [("filePath", "/x"), ("limit", "10"), ("offset", 3)]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("read", '{"filePath": "/x"}'),  # a clean name
        ("get weather", "{}"),
        ("a<b", "{}"),  # markup that reads as no call
        ("<tool_call>read", "{}"),  # only stray tags at the end are taken off
        ("read<arg_key>filePath</arg_key>", "{}"),  # a key without a value: malformed
        ("read<arg_key>a</arg_key><arg_value>1</arg_value>trailing", "{}"),
        ("x" + "</a>" * 20, "{}"),  # more stray tags than MAX_STRAY_TAGS
        ("<b></b>", "{}"),  # nothing left of a name
        (GLM_NAME, "not json"),  # arguments in both places, the field not an object: nothing to merge
        (GLM_NAME, "[1]"),
        ('read<｜tool▁sep｜>{"a": 1}<｜tool▁call▁end｜><｜tool▁call▁begin｜>b<｜tool▁sep｜>{}', "{}"),  # two calls
    ],
)
def test_what_cannot_be_repaired_stays_the_same_object(impl, tc, name, arguments):
    response = completion(entry(name, arguments))
    assert tc.recover_response(response, native=True, has_tools=True) is response
    assert tc.recover_response(response, native=False, has_tools=True) is response


def test_without_tools_nothing_is_repaired(impl, tc):
    response = completion(entry(GLM_NAME))
    assert tc.recover_response(response, native=True, has_tools=False) is response
    assert tc.recover_response(response, native=False, has_tools=False) is response


def test_the_request_tools_type_and_filter_the_repair(impl, tc):
    name = "read<arg_key>filePath</arg_key><arg_value>/x</arg_value><arg_key>limit</arg_key><arg_value>\n  15\n</arg_value>"
    out = tc.recover_response(completion(entry(name)), native=True, has_tools=True, tools=TOOLS)
    assert functions(out) == [("read", {"filePath": "/x", "limit": 15})]  # typed by the schema after trimming
    offered_not = completion(entry("write<arg_key>p</arg_key><arg_value>1</arg_value>"))
    assert tc.recover_response(offered_not, native=True, has_tools=True, tools=TOOLS) is offered_not
    out = tc.recover_response(offered_not, native=True, has_tools=True, tools=TOOLS, unknown_tools="accept")
    assert functions(out) == [("write", {"p": "1"})]


def test_formats_choose_the_grammars(impl, tc):
    response = completion(entry(GLM_NAME))
    assert tc.recover_response(response, native=True, has_tools=True, formats=["deepseek"]) is response
    # a bare name with a stray tag needs no grammar
    out = tc.recover_response(
        completion(entry("tool_12</arg_value>")), native=True, has_tools=True, formats=["deepseek"]
    )
    assert functions(out) == [("tool_12", {})]


def test_the_gate_is_kept(impl, tc):
    # native: the repaired call is the model's structured call, so text calls in the content stay unrecovered
    response = completion(entry(GLM_NAME), content="Reading. " + BLOCK_F, finish="tool_calls")
    out = tc.recover_response(response, native=True, has_tools=True)
    assert functions(out) == [("read", {"filePath": "/home/u/exam"})]
    assert out["choices"][0]["message"]["content"] == "Reading. " + BLOCK_F
    # prompt-guided: both, the recovered call after the repaired one
    out = tc.recover_response(response, native=False, has_tools=True)
    assert functions(out) == [("read", {"filePath": "/home/u/exam"}), ("f", {"a": 1})]
    assert out["choices"][0]["message"]["content"] == "Reading."


def test_only_the_marked_entry_is_replaced(impl, tc):
    clean = entry("lookup", '{"q": 1}', "call_a")
    response = completion(clean, entry("tool_12</arg_value>", "{}", "call_b"))
    calls = tc.recover_response(response, native=True, has_tools=True)["choices"][0]["message"]["tool_calls"]
    assert calls[0] is clean
    assert [c["function"]["name"] for c in calls] == ["lookup", "tool_12"]


def test_bad_options_raise_as_parse_does(impl, tc):
    response = completion(entry(GLM_NAME))
    with pytest.raises(ValueError, match="unknown_tools"):
        tc.recover_response(response, native=True, has_tools=True, unknown_tools="maybe")
    with pytest.raises(ValueError, match="unknown dialect"):
        tc.recover_response(response, native=True, has_tools=True, formats=["klingon"])


# --- streams -------------------------------------------------------------------------------------


def ch(*, index=0, finish=None, **delta):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def first(name, arguments="", index=0, call_id="call_s0"):
    """The first delta of a structured call: id, type, name (and maybe the start of its arguments)."""
    return ch(
        tool_calls=[
            {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ]
    )


def more(arguments, index=0):
    return ch(tool_calls=[{"index": index, "function": {"arguments": arguments}}])


def run(chunks, *, native=True, **options):
    return list(recover_stream(chunks, native=native, has_tools=True, **options))


def assembled(chunks, index=0):
    """What a client accumulates from the deltas of choice ``index``: the calls by tool_calls index."""
    calls: dict = {}
    for chunk in chunks:
        for choice in chunk["choices"]:
            if choice["index"] != index:
                continue
            for t in choice["delta"].get("tool_calls") or []:
                call = calls.setdefault(t["index"], {"id": None, "name": "", "arguments": ""})
                call["id"] = t.get("id") or call["id"]
                fn = t.get("function") or {}
                call["name"] += fn.get("name") or ""
                call["arguments"] += fn.get("arguments") or ""
    return [(i, c["id"], c["name"], c["arguments"]) for i, c in sorted(calls.items())]


def finishes(chunks):
    return [c["finish_reason"] for chunk in chunks for c in chunk["choices"] if c["finish_reason"] is not None]


def test_a_name_without_arguments_is_renamed_in_its_own_delta(impl):
    chunks = [
        ch(role="assistant", content=""),
        first("tool_12</arg_value>"),
        more('{"q"'),
        more(": 1}"),
        ch(finish="tool_calls"),
    ]
    out = run(chunks)
    assert len(out) == len(chunks)
    assert out[0] is chunks[0] and out[2] is chunks[2] and out[3] is chunks[3] and out[4] is chunks[4]
    assert out[1]["choices"][0]["delta"]["tool_calls"][0] == {
        "index": 0,
        "id": "call_s0",
        "type": "function",
        "function": {"name": "tool_12", "arguments": ""},
    }
    assert assembled(out) == [(0, "call_s0", "tool_12", '{"q": 1}')]


def test_arguments_in_the_name_hold_the_call_until_the_finish(impl):
    m = ChunkRecovery(native=True, has_tools=True)
    assert m.push(ch(role="assistant")) != []
    assert m.push(first(GLM_NAME)) == []  # held: nothing else in the chunk
    assert m.push(more('{"limit"')) == [] and m.push(more(": 5}")) == []
    out = m.push(ch(finish="tool_calls"))
    assert [list(c["choices"][0]["delta"]) for c in out] == [["tool_calls"], []]
    (call,) = out[0]["choices"][0]["delta"]["tool_calls"]
    assert call == {
        "index": 0,
        "id": "call_s0",
        "type": "function",
        "function": {"name": "read", "arguments": '{"filePath": "/home/u/exam", "limit": 5}'},
    }
    assert finishes(out) == ["tool_calls"]
    assert m.close() == []


def test_a_held_call_is_sent_when_the_next_call_starts(impl):
    chunks = [
        first(GLM_NAME, "{"),
        more("}"),
        first("lookup", '{"q": 1}', index=1, call_id="call_s1"),
        ch(finish="tool_calls"),
    ]
    out = run(chunks)
    entries = [t for chunk in out for t in chunk["choices"][0]["delta"].get("tool_calls") or []]
    assert [(t["index"], t["function"]["name"]) for t in entries] == [(0, "read"), (1, "lookup")]
    assert assembled(out) == [
        (0, "call_s0", "read", '{"filePath": "/home/u/exam"}'),
        (1, "call_s1", "lookup", '{"q": 1}'),
    ]
    assert out[-1] is chunks[-1]


def test_a_held_call_goes_out_at_close_without_a_finish(impl):
    m = ChunkRecovery(native=True, has_tools=True)
    assert m.push(first(GLM_NAME)) == []
    out = m.close()
    assert assembled(out) == [(0, "call_s0", "read", '{"filePath": "/home/u/exam"}')]
    assert finishes(out) == []


def test_unmergeable_arguments_go_out_as_they_came(impl):
    out = run([first(GLM_NAME, "[1,"), more(" 2]"), ch(finish="tool_calls")])
    assert assembled(out) == [(0, "call_s0", GLM_NAME, "[1, 2]")]


def test_a_finish_chunk_carrying_the_last_fragment(impl):
    last = more('"/y"}')
    last["choices"][0]["finish_reason"] = "tool_calls"
    out = run([first(GLM_NAME, '{"offset": 1, "filePath": '), last])
    assert assembled(out) == [(0, "call_s0", "read", '{"filePath": "/y", "offset": 1}')]
    assert finishes(out) == ["tool_calls"] and out[-1]["choices"][0]["delta"] == {}


def test_clean_structured_streams_are_the_very_same_objects(impl):
    chunks = [
        ch(role="assistant"),
        first("read", '{"file'),
        more('Path": "/x"}'),
        first("a<b", index=1),
        ch(finish="tool_calls"),
    ]
    out = run(chunks)
    assert len(out) == len(chunks) and all(a is b for a, b in zip(out, chunks, strict=False))


def test_without_tools_streams_are_untouched(impl):
    chunks = [first(GLM_NAME), more("{}"), ch(finish="tool_calls")]
    out = list(recover_stream(chunks, native=True, has_tools=False))
    assert len(out) == 3 and all(a is b for a, b in zip(out, chunks, strict=False))


def test_the_stream_gate_is_kept(impl):
    text = ch(content="note " + BLOCK_F)
    # native: a structured call was seen, so the text call is scrubbed but not recovered
    out = run([first(GLM_NAME), text, ch(finish="tool_calls")], native=True)
    assert [c[2] for c in assembled(out)] == ["read"]
    # prompt-guided: recovered after the structured call
    out = run([first(GLM_NAME), text, ch(finish="tool_calls")], native=False)
    assert [(c[0], c[2]) for c in assembled(out)] == [(0, "read"), (1, "f")]


def test_indexes_shift_past_a_recovered_call(impl):
    out = run([ch(content=BLOCK_F), first(GLM_NAME), more("{}"), ch(finish="tool_calls")])
    assert [(c[0], c[2]) for c in assembled(out)] == [(0, "f"), (1, "read")]


def test_each_choice_holds_its_own(impl):
    a, b = first(GLM_NAME), first("tool_12</arg_value>", "{}", call_id="call_t")
    b["choices"][0]["index"] = 1
    done = ch(finish="tool_calls")
    done["choices"].append({"index": 1, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"})
    out = run([a, b, done])
    assert assembled(out, 0) == [(0, "call_s0", "read", '{"filePath": "/home/u/exam"}')]
    assert assembled(out, 1) == [(0, "call_t", "tool_12", "{}")]


def test_sse_bytes_are_repaired_too(impl):
    events = [first(GLM_NAME, "{"), more("}"), ch(finish="tool_calls")]
    raw = (
        b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    )
    sse = SSERecovery(native=True, has_tools=True)
    out = b"".join(sse.feed(raw[i : i + 7]) for i in range(0, len(raw), 7)) + sse.close()
    chunks = [json.loads(line[6:]) for line in out.split(b"\n") if line.startswith(b"data: {")]
    assert assembled(chunks) == [(0, "call_s0", "read", '{"filePath": "/home/u/exam"}')]
    assert out.endswith(b"data: [DONE]\n\n")


# --- the stream gives what the whole message gives -----------------------------------------------

NAMES = [
    GLM_NAME,
    GLM_NAME + "</tool_call>",
    "tool_12</arg_value>",
    "read",
    "a<b",
    'get_weather<｜tool▁sep｜>{"city": "Paris"}',
    "read<arg_key>limit</arg_key><arg_value>\n  7\n</arg_value>",
]
ARGUMENTS = ["", "{}", '{"limit": 5, "filePath": "/y"}', '{"offset": "é"}', "[1]", "nope", "null"]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(NAMES),
    arguments=st.sampled_from(ARGUMENTS),
    data=st.data(),
    typed=st.booleans(),
    finish=st.booleans(),
)
def test_stream_equals_the_whole_message(impl, tc, name, arguments, data, typed, finish):
    options = {"tools": TOOLS, "unknown_tools": "accept"} if typed else {}
    cuts = sorted(data.draw(st.lists(st.integers(0, len(arguments)), max_size=4)))
    bounds = [0, *cuts, len(arguments)]
    pieces = [arguments[a:b] for a, b in itertools.pairwise(bounds)]
    chunks = [first(name, pieces[0])] + [more(p) for p in pieces[1:]] + ([ch(finish="tool_calls")] if finish else [])
    streamed = assembled(run(chunks, **options))
    whole = tc.recover_response(completion(entry(name, arguments)), native=True, has_tools=True, **options)
    expected = [
        (0, c["id"], c["function"]["name"], c["function"]["arguments"])
        for c in whole["choices"][0]["message"]["tool_calls"]
    ]
    assert streamed == expected


def test_name_repair_directly():
    names = NameRepair(Options())
    assert names.name("read") is None and names.name(None) is None
    assert names.name(GLM_NAME) == ("read", {"filePath": "/home/u/exam"})
    assert names.name("tool_12</arg_value>") == ("tool_12", {})
    typed = NameRepair(Options(tools=TOOLS))
    assert typed.name("read<arg_key>limit</arg_key><arg_value> 5 </arg_value>") == ("read", {"limit": 5})
    assert typed.name("write</tool_call>") is None  # not offered
