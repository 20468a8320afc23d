"""textcalls.litellm, the LiteLLM proxy callback, driven through the real litellm package.

Responses and streams come from ``litellm.acompletion(mock_response=…)`` (litellm's own objects) or, where a
case needs chunks its mock cannot make (random splits, structured calls), are built from litellm's types; they
go through the hooks as the proxy calls them, and what comes out is serialised as the proxy serialises it and
read back with the openai SDK's types. The last test runs a real ``litellm`` proxy process configured with
``callbacks: textcalls.litellm.recovery`` in front of the stub upstream, driven by the openai SDK.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import logging
import os
import re
import subprocess
import sys

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported: no cost map download
litellm = pytest.importorskip("litellm", reason="textcalls.litellm needs litellm: pip install 'textcalls[litellm]'")
openai = pytest.importorskip("openai", reason="the output is read back with the openai SDK's types")
pytest.importorskip("aiohttp", reason="the stub upstream runs on aiohttp")

from hypothesis import given  # noqa: E402
from litellm.integrations.custom_logger import CustomLogger  # noqa: E402
from litellm.types.utils import Delta, ModelResponseStream, StreamingChoices  # noqa: E402
from openai.types.chat import ChatCompletion, ChatCompletionChunk  # noqa: E402

import textcalls  # noqa: E402
import textcalls.litellm as tl  # noqa: E402
from textcalls.litellm import TextcallsRecovery, recovery  # noqa: E402

from ..gateway.test_proxy_e2e import EXPECTED, MESSAGES, TOOLS, check_calls, collect  # noqa: E402
from ..gateway_support.upstream import DEEPSEEK, HERMES, NATIVE_CALL, PLAIN, LoopThread, Upstream  # noqa: E402
from ..unit.test_stream_chunks import PROPERTY, split_text  # noqa: E402

# litellm's own types, built lazily by pydantic on first use, warn about their ReadOnly TypedDict items
pytestmark = pytest.mark.filterwarnings("ignore:Items? .* using the `ReadOnly` qualifier:UserWarning")

TEXTS = {"hermes": HERMES, "deepseek": DEEPSEEK}
GLM_NAME = "get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"


def completion(mock_response, **kwargs):
    """A ``ModelResponse`` from litellm's mock (a string: the assistant text; a dict: the response)."""
    return asyncio.run(
        litellm.acompletion(model="openai/stub", messages=MESSAGES, mock_response=mock_response, **kwargs)
    )


def mock_stream(text, **kwargs):
    """The ``ModelResponseStream`` chunks of litellm's mock stream of ``text`` (3 characters a chunk)."""

    async def go():
        stream = await litellm.acompletion(
            model="openai/stub", messages=MESSAGES, mock_response=text, stream=True, **kwargs
        )
        return [chunk async for chunk in stream]

    return asyncio.run(go())


def chunk(content=None, *, finish=None, **delta):
    """A ``ModelResponseStream`` with one choice (litellm's types, for chunks its mock cannot make)."""
    return ModelResponseStream(
        id="chatcmpl-t",
        created=1,
        model="m",
        choices=[StreamingChoices(index=0, finish_reason=finish, delta=Delta(content=content, **delta))],
    )


def success(data, response, callback=recovery):
    return asyncio.run(callback.async_post_call_success_hook(data=data, user_api_key_dict=None, response=response))


def through(items, request_data, callback=recovery):
    """Every item the streaming hook yields for ``items``."""

    async def source():
        for item in items:
            yield item

    async def go():
        hook = callback.async_post_call_streaming_iterator_hook(
            user_api_key_dict=None, response=source(), request_data=request_data
        )
        return [item async for item in hook]

    return asyncio.run(go())


def wire(chunks):
    """The chunks as the proxy serialises them, read back by the openai SDK."""
    return [
        ChatCompletionChunk.model_validate_json(c.model_dump_json(exclude_none=True, exclude_unset=True))
        for c in chunks
    ]


def gather(chunks, index):
    """(content, [(id, name, arguments dict)], finish_reason) of choice ``index`` over SDK chunks."""
    content, calls, finish = "", {}, None
    for c in chunks:
        for choice in c.choices:
            if choice.index == index:
                content += choice.delta.content or ""
                for tc in choice.delta.tool_calls or []:
                    entry = calls.setdefault(tc.index, ["", "", ""])
                    entry[0] += tc.id or ""
                    entry[1] += tc.function.name or ""
                    entry[2] += tc.function.arguments or ""
                finish = choice.finish_reason or finish
    return content, [(i, n, json.loads(a)) for i, n, a in (calls[k] for k in sorted(calls))], finish


def native_off(data, key="metadata"):
    """``data`` as the proxy gives it for a deployment whose model_info sets textcalls_native: false
    (under ``metadata`` on chat completions; some routes use ``litellm_metadata``)."""
    return {**data, key: {"model_info": {"id": "d1", "textcalls_native": False}}}


# --- non-streamed ----------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["hermes", "deepseek"])
def test_a_response_is_recovered_into_a_copy(impl, model):
    response = completion(TEXTS[model])
    before = response.model_dump_json()
    new = success({"tools": TOOLS}, response)
    assert response.model_dump_json() == before  # the input is not changed
    body = json.loads(new.model_dump_json(exclude_none=True))
    sdk = ChatCompletion.model_validate(body)
    message = sdk.choices[0].message
    assert message.content == EXPECTED[model][0].strip()
    check_calls(
        [(t.id, t.function.name, json.loads(t.function.arguments)) for t in message.tool_calls], EXPECTED[model][1]
    )
    assert sdk.choices[0].finish_reason == "tool_calls"
    assert (sdk.id, sdk.model, sdk.usage.total_tokens) == (response.id, response.model, response.usage.total_tokens)
    assert new._hidden_params == response._hidden_params  # the proxy reads its headers and model id from them


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ({}, HERMES),  # no tools offered
        ({"tools": []}, HERMES),
        ({"tools": None}, HERMES),
        ({"tools": TOOLS}, PLAIN),  # nothing to recover: a '<' that is not markup
    ],
)
def test_a_response_with_nothing_to_do_is_left_to_the_proxy(impl, data, text):
    assert success(data, completion(text)) is None


def test_responses_of_other_kinds_are_not_touched(impl):
    assert success({"tools": TOOLS}, litellm.EmbeddingResponse(data=[])) is None
    assert success({"tools": TOOLS}, {"choices": [{"message": {"content": HERMES}}]}) is None


@pytest.mark.parametrize(
    ("tools", "why"),
    [
        ({"type": "function"}, "tools is an object, not an array"),
        ([{"type": "function", "function": {"name": ""}}], "tools[0] is a function tool without a function name"),
        ([TOOLS[0], {"function": {"name": "x"}}], "tools[1] is an object without a string type, not a tool"),
        (
            [{"type": "function", "function": {"name": "x", "parameters": []}}],
            "tools[0].function.parameters is an array, not an object",
        ),
    ],
)
def test_malformed_tools_leave_the_request_unrecovered_with_a_warning(impl, caplog, tools, why):
    caplog.set_level(logging.WARNING, logger="textcalls.litellm")
    assert success({"tools": tools}, completion(HERMES)) is None
    chunks = mock_stream(HERMES)
    assert all(a is b for a, b in zip(through(chunks, {"tools": tools}), chunks, strict=True))
    ours = [r.getMessage() for r in caplog.records if r.name == "textcalls.litellm"]
    assert ours == [f"textcalls: request left unrecovered: {why}"] * 2


def test_a_tool_not_offered_stays_text_and_other_kinds_of_tools_are_left_out(impl):
    tools = [TOOLS[0], {"type": "custom", "custom": {"name": "get_time"}}]
    message = success({"tools": tools}, completion(HERMES)).choices[0].message
    assert [t.function.name for t in message.tool_calls] == ["get_weather"]
    assert (
        message.content
        == 'I will check the weather.\n\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "Europe/Paris"}}\n</tool_call>'
    )


def structured_response():
    """A response with a structured call and a Hermes block in its text, as the stub's ``native`` model."""
    call = {k: v for k, v in NATIVE_CALL.items() if k != "index"}
    message = {"role": "assistant", "content": HERMES, "tool_calls": [call]}
    return completion({"model": "native", "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]})


def test_the_gate_native_by_default_and_per_model(impl):
    response = structured_response()
    assert success({"tools": TOOLS}, response) is None  # native: the model's own call stands
    for callback, data in [
        (recovery, native_off({"tools": TOOLS})),
        (recovery, native_off({"tools": TOOLS}, "litellm_metadata")),
        (TextcallsRecovery(native=False), {"tools": TOOLS}),
    ]:
        message = success(data, response, callback).choices[0].message
        assert message.tool_calls[0] is response.choices[0].message.tool_calls[0]  # kept, as the same object
        check_calls(
            [(t.id, t.function.name, json.loads(t.function.arguments)) for t in message.tool_calls[1:]],
            EXPECTED["hermes"][1],
        )
        assert message.content == EXPECTED["hermes"][0].strip()
    native_on = {"tools": TOOLS, "metadata": {"model_info": {"textcalls_native": True}}}
    assert success(native_on, response, TextcallsRecovery(native=False)) is None


def test_a_model_info_native_that_is_not_a_bool_is_an_error(impl):
    data = {"tools": TOOLS, "metadata": {"model_info": {"textcalls_native": "no"}}}
    with pytest.raises(TypeError, match=r"model_info\.textcalls_native must be a bool, not str"):
        success(data, completion(HERMES))


def test_a_structured_name_carrying_markup_is_repaired_whatever_the_gate(impl):
    call = {"id": "call_g", "type": "function", "function": {"name": GLM_NAME, "arguments": ""}}
    message = {"role": "assistant", "content": "Checking.", "tool_calls": [call]}
    response = completion(
        {"model": "glm", "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    )
    sdk = ChatCompletion.model_validate_json(success({"tools": TOOLS}, response).model_dump_json(exclude_none=True))
    (got,) = sdk.choices[0].message.tool_calls
    assert (got.id, got.function.name, json.loads(got.function.arguments)) == (
        "call_g",
        "get_weather",
        {"city": "Paris"},
    )
    assert sdk.choices[0].message.content == "Checking."


def test_think_text_goes_to_reasoning_content(impl):
    text = (
        '<think>Paris first.</think>Sure.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    )
    body = json.loads(success({"tools": TOOLS}, completion(text)).model_dump_json(exclude_none=True))
    message = body["choices"][0]["message"]
    assert (message["reasoning_content"], message["content"]) == ("Paris first.", "Sure.")
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather"]


# --- streamed -------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["hermes", "deepseek"])
def test_a_stream_is_recovered_and_unchanged_chunks_are_the_same_objects(impl, model):
    chunks = mock_stream(TEXTS[model])
    out = through(chunks, {"tools": TOOLS})
    lead = next(i for i, (a, b) in enumerate(zip(out, chunks, strict=False)) if a is not b)
    assert lead >= 5  # the chunks of the text before the markup go out as they came
    assert all(isinstance(c, ModelResponseStream) and c.id == chunks[0].id for c in out)
    content, calls, finish, _ = collect(wire(out))
    assert content == EXPECTED[model][0] and finish == "tool_calls"
    check_calls(calls, EXPECTED[model][1])
    shown = [c.choices[0].delta.content or "" for c in out if c.choices]
    assert not any(mark in piece for piece in shown for mark in ("<", "｜", "tool_"))  # no markup, not even a piece


def test_text_without_markup_passes_as_the_same_objects(impl):
    chunks = mock_stream("Paris is sunny, 24 degrees; a < b and b > c.")
    out = through(chunks, {"tools": TOOLS})
    assert len(out) == len(chunks) and all(a is b for a, b in zip(out, chunks, strict=True))


def test_without_tools_every_item_passes_as_it_came(impl):
    items = [*mock_stream(HERMES), b"data: raw\n\n", "data: text"]
    out = through(items, {"model": "m"})
    assert len(out) == len(items) and all(a is b for a, b in zip(out, items, strict=True))


def test_items_that_are_not_chunks_pass_in_place(impl):
    marker = b": keepalive\n\n"
    chunks = mock_stream(HERMES)
    out = through([*chunks[:3], marker, *chunks[3:]], {"tools": TOOLS})
    assert out[3] is marker and all(a is b for a, b in zip(out[:3], chunks[:3], strict=True))
    check_calls(collect(wire([c for c in out if c is not marker]))[1], EXPECTED["hermes"][1])


def test_two_choices_each_recovered_and_an_unfinished_one_flushed_at_the_end(impl):
    chunks = mock_stream(HERMES, n=2)  # litellm's mock finishes choice 0 only
    out = wire(through(chunks, {"tools": TOOLS}))
    for index in (0, 1):
        content, calls, finish = gather(out, index)
        assert content == EXPECTED["hermes"][0]
        check_calls(calls, EXPECTED["hermes"][1])
        assert finish == ("tool_calls" if index == 0 else None)


def test_the_held_tail_is_released_at_the_end_of_the_stream(impl):
    chunks = [chunk("Sure. <tool_ca", role="assistant"), chunk("ll")]  # no finish chunk: the stream just ends
    out = through(chunks, {"tools": TOOLS})
    assert [c.choices[0].delta.content for c in out] == ["Sure. ", "<tool_call"]
    assert out[0] is not chunks[0] and out[0].choices[0].delta.role == "assistant"


def test_a_stream_that_fails_is_not_flushed(impl):
    async def source():
        yield chunk("Sure. ", role="assistant")
        yield chunk('<tool_call>{"name": "get_weather"')
        raise ConnectionResetError("upstream gone")

    async def go(seen):
        hook = recovery.async_post_call_streaming_iterator_hook(
            user_api_key_dict=None, response=source(), request_data={"tools": TOOLS}
        )
        async for item in hook:
            seen.append(item)

    seen: list = []
    with pytest.raises(ConnectionResetError):
        asyncio.run(go(seen))
    assert [c.choices[0].delta.content for c in seen] == ["Sure. "]  # the held markup never went out


def structured_stream(name=NATIVE_CALL["function"]["name"], arguments=NATIVE_CALL["function"]["arguments"]):
    call = {**NATIVE_CALL, "function": {"name": name, "arguments": arguments}}
    pieces = [HERMES[i : i + 7] for i in range(0, len(HERMES), 7)]
    return [
        chunk("", role="assistant"),
        chunk(tool_calls=[call]),
        *(chunk(p) for p in pieces),
        chunk(finish="tool_calls"),
    ]


def test_a_native_stream_keeps_its_structured_call_and_scrubs_the_text(impl):
    chunks = structured_stream()
    out = through(chunks, {"tools": TOOLS})
    assert out[1] is chunks[1]  # the structured call's chunk, as sent
    content, calls, finish, _ = collect(wire(out))
    assert content == EXPECTED["hermes"][0]
    assert calls == [("call_native0", "lookup", {"q": "native"})] and finish == "tool_calls"


def test_a_prompt_guided_stream_adds_text_calls_after_the_structured_one(impl):
    content, calls, finish, _ = collect(wire(through(structured_stream(), native_off({"tools": TOOLS}))))
    assert calls[0] == ("call_native0", "lookup", {"q": "native"})
    check_calls(calls[1:], EXPECTED["hermes"][1])
    assert content == EXPECTED["hermes"][0] and finish == "tool_calls"


def test_a_streamed_structured_name_carrying_arguments_is_held_and_repaired(impl):
    out = wire(through(structured_stream(name=GLM_NAME, arguments=""), {"tools": TOOLS}))
    _, calls, finish, _ = collect(out)
    assert calls == [("call_native0", "get_weather", {"city": "Paris"})] and finish == "tool_calls"
    entries = [tc for c in out for choice in c.choices for tc in choice.delta.tool_calls or []]
    assert len(entries) == 1 and entries[0].index == 0  # one entry, released before the finish chunk


@PROPERTY
@given(split_text())
def test_any_split_matches_parse_of_the_whole(impl, case):
    """For any splitting of a text into chunks, the content and calls that come out equal ``parse``'s."""
    text, pieces = case
    names = ["f", "g", "h", "m", "get_time", "x"]
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]
    chunks = [chunk("", role="assistant"), *(chunk(p) for p in pieces), chunk(finish="stop")]
    out = wire(through(chunks, {"tools": tools}))
    expected = textcalls.parse(text, tools=tools)
    content, calls, finish, _ = collect(out)
    assert content.strip() == expected.content
    assert [(name, args) for _, name, args in calls] == [(c.name, json.loads(c.arguments)) for c in expected.calls]
    assert finish == ("tool_calls" if expected.calls else "stop")
    if not expected.removed and not expected.calls:
        assert content == text


# --- the module ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"native": "yes"}, TypeError, "native must be a bool, not str"),
        ({"tools": TOOLS}, TypeError, "the tools come from each request"),
        ({"formats": ["nope"]}, ValueError, "unknown dialect"),
        ({"unknown_tools": "maybe"}, ValueError, "unknown_tools must be one of"),
    ],
)
def test_bad_settings_raise_when_the_callback_is_built(kwargs, error, message):
    with pytest.raises(error, match=message):
        TextcallsRecovery(**kwargs)


def test_the_ready_instance_is_a_custom_logger_with_both_hooks_of_its_own():
    assert isinstance(recovery, CustomLogger) and recovery.native is True
    # the proxy runs an iterator hook only when the class itself defines it
    assert {"async_post_call_success_hook", "async_post_call_streaming_iterator_hook"} <= set(vars(TextcallsRecovery))


@pytest.mark.parametrize("change", ["signature", "missing"])
def test_a_litellm_whose_hooks_differ_is_refused_naming_its_version(monkeypatch, change):
    name = "async_post_call_streaming_iterator_hook"
    if change == "missing":
        monkeypatch.delattr(CustomLogger, name)
        shown = "is missing"
    else:

        async def hook(self, user_api_key_dict, response, request_data, route):
            yield None

        monkeypatch.setattr(CustomLogger, name, hook)
        shown = r"takes \(user_api_key_dict, response, request_data, route\)"
    installed = importlib.metadata.version("litellm")
    with pytest.raises(
        ImportError, match=rf"API of litellm {re.escape(installed)}: CustomLogger\.{name} {shown}"
    ) as info:
        tl._check_hooks()
    assert f"tested with litellm {tl.TESTED_WITH}" in str(info.value)


def test_a_litellm_older_than_the_tested_release_is_refused(monkeypatch):
    tl._check_version()  # the installed one passes
    monkeypatch.setattr(tl, "_litellm_version", lambda: "1.80.2")
    with pytest.raises(ImportError, match=r"API of litellm 1\.80\.2: it is older than the oldest release supported"):
        tl._check_version()


ABSENT = """
import sys

class Absent:  # what the import system raises when no litellm is installed
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "litellm":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Absent())
import textcalls.litellm
"""


def test_without_litellm_the_import_error_names_the_extra():
    done = subprocess.run([sys.executable, "-c", ABSENT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "ImportError: textcalls.litellm needs LiteLLM: pip install 'textcalls[litellm]'" in done.stderr


# --- end to end: a litellm proxy process -----------------------------------------------------------


@pytest.mark.slow
def test_a_litellm_proxy_with_the_callback_recovers_for_the_openai_sdk(tmp_path):
    from ..gateway_support.litellm_proxy import litellm_proxy

    loop = LoopThread()
    upstream = Upstream()
    runner, upstream_url = loop.serve(upstream.app)
    params = {"api_base": f"{upstream_url}/v1", "api_key": "sk-stub"}
    config = {
        "model_list": [
            {"model_name": "hermes", "litellm_params": {"model": "openai/hermes", **params}},
            {"model_name": "deepseek", "litellm_params": {"model": "openai/deepseek", **params}},
            {"model_name": "native", "litellm_params": {"model": "openai/native", **params}},
            {
                "model_name": "native-guided",
                "litellm_params": {"model": "openai/native", **params},
                "model_info": {"textcalls_native": False},
            },
        ],
        "litellm_settings": {"callbacks": "textcalls.litellm.recovery"},
    }
    try:
        with litellm_proxy(config, tmp_path) as (url, key):
            client = openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=60)
            for model in ("hermes", "deepseek"):
                stream = client.chat.completions.create(
                    model=model, messages=MESSAGES, tools=TOOLS, stream=True, seed=5
                )
                content, calls, finish, _ = collect(stream)
                assert content == EXPECTED[model][0] and finish == "tool_calls"
                check_calls(calls, EXPECTED[model][1])
                completion = client.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS)
                message = completion.choices[0].message
                assert message.content == EXPECTED[model][0].strip()
                check_calls(
                    [(t.id, t.function.name, json.loads(t.function.arguments)) for t in message.tool_calls],
                    EXPECTED[model][1],
                )
                assert completion.choices[0].finish_reason == "tool_calls"
            # without tools the markup stays, streamed and not
            plain = collect(client.chat.completions.create(model="hermes", messages=MESSAGES, stream=True, seed=5))
            assert plain[0] == HERMES and plain[1] == []
            assert (
                client.chat.completions.create(model="hermes", messages=MESSAGES).choices[0].message.content == HERMES
            )
            # native by default: the model's own call stands; textcalls_native: false in model_info adds the text's
            native = collect(
                client.chat.completions.create(model="native", messages=MESSAGES, tools=TOOLS, stream=True)
            )
            assert native[1] == [("call_native0", "lookup", {"q": "native"})]
            guided = collect(
                client.chat.completions.create(model="native-guided", messages=MESSAGES, tools=TOOLS, stream=True)
            )
            assert guided[1][0] == ("call_native0", "lookup", {"q": "native"})
            check_calls(guided[1][1:], EXPECTED["hermes"][1])
            message = (
                client.chat.completions.create(model="native-guided", messages=MESSAGES, tools=TOOLS).choices[0].message
            )
            assert [t.function.name for t in message.tool_calls] == ["lookup", "get_weather", "get_time"]
    finally:
        loop.close(runner)


# --- cut by max_tokens (issue 26) ----------------------------------------------------------------------------

# a Hermes call complete but for its closer: a call where the message just ended there, none where it was cut
ENDS_OPEN = 'Running it.<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'


@pytest.mark.parametrize("finish", ["stop", "length"])
def test_a_response_cut_by_max_tokens_has_no_call_and_keeps_length(impl, finish):
    message = {"role": "assistant", "content": ENDS_OPEN}
    response = completion({"model": "m", "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
    sdk = ChatCompletion.model_validate(json.loads(success({"tools": TOOLS}, response).model_dump_json()))
    choice = sdk.choices[0]
    assert choice.message.content == "Running it."
    if finish == "length":
        assert (choice.message.tool_calls, choice.finish_reason) == (None, "length")
    else:
        assert [(t.function.name, json.loads(t.function.arguments)) for t in choice.message.tool_calls] == [
            ("get_weather", {"city": "Paris"})
        ]
        assert choice.finish_reason == "tool_calls"


@pytest.mark.parametrize("finish", ["stop", "length"])
def test_a_stream_cut_by_max_tokens_has_no_call_and_keeps_length(impl, finish):
    pieces = [ENDS_OPEN[i : i + 5] for i in range(0, len(ENDS_OPEN), 5)]
    items = [chunk(p) for p in pieces] + [chunk(finish=finish)]
    content, calls, last = gather(wire(through(items, {"tools": TOOLS})), 0)
    assert content == "Running it."
    if finish == "length":
        assert (calls, last) == ([], "length")
    else:
        assert ([(n, a) for _, n, a in calls], last) == ([("get_weather", {"city": "Paris"})], "tool_calls")
