"""Issue 26: a cut output is never a call, and a streamed call abandoned is never left executable -- seen by
the clients themselves: the openai SDK through the proxy (a stub upstream whose model is cut by max_tokens
inside a call's value, `rm -rf /tmp/build` after `rm -rf /`), the anthropic SDK's and the openai SDK's own
types over the whole-answer helpers, on both implementations."""

from __future__ import annotations

import json

import pytest

from textcalls import parse
from textcalls.messages_api import recover_message
from textcalls.openai import recover_response
from textcalls.responses_api import recover_responses

openai = pytest.importorskip("openai", reason="the client is the openai SDK")
anthropic = pytest.importorskip("anthropic", reason="the Messages client is the anthropic SDK")
from openai.lib.streaming.chat import ChatCompletionStreamState  # noqa: E402

RUN = {
    "type": "function",
    "function": {
        "name": "run",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}


@pytest.fixture(scope="module")
def proxies():
    """Two proxies on one stub upstream, ``stream_arguments`` off and on: ``{False: client, True: client}``."""
    pytest.importorskip("aiohttp", reason="the proxy and the stub upstream run on aiohttp")
    from textcalls import proxy

    from ..gateway_support.upstream import LoopThread, Upstream

    loop = LoopThread()
    upstream_runner, upstream_url = loop.serve(Upstream().app)
    runners, clients = [], {}
    for on in (False, True):
        runner = loop.run(proxy.start(upstream_url, host="127.0.0.1", port=0, stream_arguments=on))
        host, port = runner.addresses[0][:2]
        runners.append(runner)
        clients[on] = openai.OpenAI(base_url=f"http://{host}:{port}/v1", api_key="sk-test", max_retries=0, timeout=10)
    yield clients
    loop.close(*runners, upstream_runner)


MODELS = ["truncated", "truncated_xml"]  # a JSON body cut in a string; a Qwen3-Coder XML value cut


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("on", [False, True], ids=["off", "on"])
def test_a_cut_answer_is_no_call_and_says_length(impl, proxies, model, on):
    completion = proxies[on].chat.completions.create(
        model=model, messages=[{"role": "user", "content": "clean up"}], tools=[RUN]
    )
    choice = completion.choices[0]
    # the unfinished block removed, no call, the cut shown (the option changes nothing for whole answers)
    assert (choice.message.content, choice.message.tool_calls, choice.finish_reason) == ("Running it.", None, "length")


def cut_stream(client, model: str, seed: int):
    """The proxy's stream of ``model`` (cut by max_tokens), its deltas in the splits ``seed`` draws."""
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "clean up"}], tools=[RUN], stream=True, seed=seed
    )


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_cut_stream_without_the_option_gives_its_text_and_length(impl, proxies, model, seed):
    state = ChatCompletionStreamState()
    for chunk in cut_stream(proxies[False], model, seed):
        state.handle_chunk(chunk)
    with pytest.raises(openai.LengthFinishReasonError):  # the SDK's own refusal of a cut answer
        state.get_final_completion()
    choice = state.current_completion_snapshot.choices[0]
    assert choice.message.content.strip() == "Running it." and not choice.message.tool_calls
    assert choice.finish_reason == "length"


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_cut_stream_with_the_option_is_withdrawn_and_the_sdk_raises(impl, proxies, model, seed):
    state = ChatCompletionStreamState()
    with pytest.raises(openai.APIError, match="abandoned"):
        for chunk in cut_stream(proxies[True], model, seed):
            state.handle_chunk(chunk)
    # what had come before the error: a call started, its arguments never a complete JSON object
    snapshot = state.current_completion_snapshot.choices[0].message
    for call in snapshot.tool_calls or ():
        with pytest.raises(ValueError):
            json.loads(call.function.arguments)


# --- the whole-answer helpers, read back by the SDKs' own types ------------------------------------------------

CUT_JSON = 'Running it.<tool_call>{"name": "run", "arguments": {"command": "rm -rf /'
CUT_XML = "Running it.\n<tool_call>\n<function=run>\n<parameter=command>\nrm -rf /"
DONE = '<tool_call>{"name": "run", "arguments": {"command": "ls"}}</tool_call> Running it.'


def chat_completion(text: str, finish: str) -> dict:
    message = {"role": "assistant", "content": text}
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}


def recovered(response: dict):
    """``recover_response`` of ``response`` (prompt-guided, RUN offered), read by the openai SDK's type."""
    return openai.types.chat.ChatCompletion.model_validate(
        recover_response(response, native=False, has_tools=True, tools=[RUN])
    )


@pytest.mark.parametrize("text", [CUT_JSON, CUT_XML])
def test_a_cut_chat_completion_has_no_call(impl, text):
    response = chat_completion(text, "length")
    out = recovered(response)
    assert (out.choices[0].message.content, out.choices[0].message.tool_calls) == ("Running it.", None)
    assert out.choices[0].finish_reason == "length"
    # not cut, the JSON body stays text (a body cut in a value is never repaired) and so does the XML one
    response["choices"][0]["finish_reason"] = "stop"
    kept = recover_response(response, native=False, has_tools=True, tools=[RUN])
    assert kept is response


def test_a_call_finished_before_the_cut_stays_and_the_finish_stays_length(impl):
    out = recovered(chat_completion(DONE + ' <tool_call>{"name": "run", "arguments": {"command": "rm -rf /', "length"))
    ((call,),) = [out.choices[0].message.tool_calls]
    assert (call.function.name, json.loads(call.function.arguments)) == ("run", {"command": "ls"})
    assert (out.choices[0].message.content, out.choices[0].finish_reason) == ("Running it.", "length")


M_RUN = {"name": "run", "input_schema": RUN["function"]["parameters"]}


@pytest.mark.parametrize("text", [CUT_JSON, CUT_XML])
def test_a_cut_messages_answer_has_no_tool_use(impl, text):
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "max_tokens",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    out = anthropic.types.Message.model_validate(recover_message(message, native=False, has_tools=True, tools=[M_RUN]))
    # the text before the block, as written (Messages text blocks keep the model's blanks)
    assert [b.type for b in out.content] == ["text"] and out.content[0].text == text[: text.index("<tool_call>")]
    assert out.stop_reason == "max_tokens"


R_RUN = {"type": "function", **RUN["function"]}


@pytest.mark.parametrize("text", [CUT_JSON, CUT_XML])
def test_a_cut_responses_answer_has_no_function_call(impl, text):
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "m",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "incomplete",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    out = openai.types.responses.Response.model_validate(
        recover_responses(response, native=False, has_tools=True, tools=[R_RUN])
    )
    assert [o.type for o in out.output] == ["message"] and out.output_text == text[: text.index("<tool_call>")]
    assert out.status == "incomplete"
    # the same answer completed (not cut): the JSON body cut in a value stays text, no call either
    done = recover_responses({**response, "status": "completed", "incomplete_details": None}, native=False,
                             has_tools=True, tools=[R_RUN])  # fmt: skip
    assert [o["type"] for o in done["output"]] == ["message"]


@pytest.mark.parametrize("text", [CUT_JSON, CUT_XML])
def test_parse_says_the_same(impl, text):
    assert (parse(text, tools=[RUN], truncated=True).content, parse(text, tools=[RUN], truncated=True).calls) == (
        "Running it.",
        [],
    )
    assert parse(text, tools=[RUN]).calls == []  # not cut: still no call (a value cut is never closed)


# --- a streamed Messages answer cut by max_tokens ------------------------------------------------------------

from ..gateway_support.api_upstream import message_events, sse  # noqa: E402
from .test_api_stream_arguments import messages_client, messages_view  # noqa: E402, F401 (a fixture)

# complete but for its closer: a call when the message simply ended there (the closer a stripped token), no call
# when the output was cut there
ENDS_OPEN = 'Running it.<tool_call>{"name": "run", "arguments": {"command": "ls"}}'
M_TOOLS = [M_RUN]


def streamed_message(stop: str, step: int, **options) -> tuple:
    """ENDS_OPEN as a Messages stream in deltas of ``step``, ending with ``stop``, through a prompt-guided
    ``MessagesRecovery`` (``options`` besides the tools): (the events sent, the machine)."""
    from textcalls.messages_api import MessagesRecovery

    events = message_events("m", [ENDS_OPEN[i : i + step] for i in range(0, len(ENDS_OPEN), step)])
    for e in events:
        if e["type"] == "message_delta":
            e["delta"]["stop_reason"] = stop
    machine = MessagesRecovery(native=False, has_tools=True, tools=M_TOOLS, **options)
    return [new for e in events for new in machine.push(e)] + machine.close(), machine


def streamed_response(cut: bool, step: int, **options) -> tuple:
    """ENDS_OPEN as a Responses stream in deltas of ``step`` (``cut``: ending incomplete, max_output_tokens),
    through a prompt-guided ``ResponsesRecovery``: (the events sent, the machine)."""
    from textcalls.responses_api import ResponsesRecovery

    events = response_events("m", [ENDS_OPEN[i : i + step] for i in range(0, len(ENDS_OPEN), step)])
    if cut:
        events[-1]["type"] = "response.incomplete"
        events[-1]["response"] = {
            **events[-1]["response"],
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
        }
    machine = ResponsesRecovery(native=False, has_tools=True, tools=[R_RUN], **options)
    return [new for e in events for new in machine.push(e)] + machine.close(), machine


@pytest.mark.parametrize("stop", ["end_turn", "max_tokens"])
@pytest.mark.parametrize("step", [1, 7, len(ENDS_OPEN)])
def test_a_streamed_messages_answer_cut_by_max_tokens_has_no_call(impl, messages_client, stop, step):  # noqa: F811
    out, machine = streamed_message(stop, step)
    final, _ = messages_view(messages_client, sse(out))
    calls = [(b.name, b.input) for b in final.content if b.type == "tool_use"]
    text = "".join(b.text for b in final.content if b.type == "text")
    if stop == "max_tokens":
        assert (calls, final.stop_reason, machine.recovered) == ([], "max_tokens", 0)
    else:
        assert (calls, final.stop_reason, machine.recovered) == ([("run", {"command": "ls"})], "tool_use", 1)
    assert text == "Running it."


from ..gateway_support.api_upstream import response_events  # noqa: E402
from .test_api_stream_arguments import responses_client, responses_view  # noqa: E402, F401 (a fixture)


@pytest.mark.parametrize("cut", [False, True])
@pytest.mark.parametrize("step", [1, 7, len(ENDS_OPEN)])
def test_a_streamed_responses_answer_cut_by_max_output_tokens_has_no_call(impl, responses_client, cut, step):  # noqa: F811
    out, machine = streamed_response(cut, step)
    if cut:  # the SDK's stream helper wants response.completed: the final response is the incomplete event's
        responses_client.body = sse(out)
        with responses_client.client.responses.stream(model="m", input="hi") as stream:
            (response,) = [e.response for e in stream if e.type == "response.incomplete"]
    else:
        response, _ = responses_view(responses_client, sse(out))
    calls = [(o.name, json.loads(o.arguments)) for o in response.output if o.type == "function_call"]
    assert response.output_text == "Running it."
    if cut:
        assert (calls, response.status, machine.recovered) == ([], "incomplete", 0)
    else:
        assert (calls, response.status, machine.recovered) == ([("run", {"command": "ls"})], "completed", 1)


# --- the same with stream_arguments: the call went out (whole or ended) at the text block's end, before the cut
# was known; it cannot be taken back: Messages withdraws the answer, Responses marks the item incomplete


@pytest.mark.parametrize("stop", ["end_turn", "max_tokens"])
@pytest.mark.parametrize("step", [1, 7, len(ENDS_OPEN)])
def test_option_on_a_messages_call_sent_before_the_cut_withdraws(impl, messages_client, stop, step):  # noqa: F811
    from textcalls.messages_api import abandoned_error

    out, machine = streamed_message(stop, step, stream_arguments=True)
    if stop == "max_tokens":
        assert out[-1] == abandoned_error() and machine.failed
        with pytest.raises(anthropic.APIStatusError, match="abandoned"):
            messages_view(messages_client, sse(out))
    else:
        final, _ = messages_view(messages_client, sse(out))
        assert [(b.name, b.input) for b in final.content if b.type == "tool_use"] == [("run", {"command": "ls"})]
        assert (final.stop_reason, machine.failed) == ("tool_use", False)


@pytest.mark.parametrize("cut", [False, True])
@pytest.mark.parametrize("step", [1, 7, len(ENDS_OPEN)])
def test_option_on_a_responses_call_sent_before_the_cut_is_incomplete(impl, responses_client, cut, step):  # noqa: F811
    out, machine = streamed_response(cut, step, stream_arguments=True)
    responses_client.body = sse(out)
    with responses_client.client.responses.stream(model="m", input="hi") as stream:
        (response,) = [e.response for e in stream if e.type in ("response.completed", "response.incomplete")]
    items = [(o.name, o.status) for o in response.output if o.type == "function_call"]
    assert items == [("run", "incomplete" if cut else "completed")]
    assert (machine.abandoned, response.status) == ((1, "incomplete") if cut else (0, "completed"))
