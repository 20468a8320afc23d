"""recover_response_bytes: a non-streamed chat.completion body as gateways hold it (both implementations)."""

from __future__ import annotations

import json

import pytest

from textcalls.chat_bytes import recover_response_bytes

BLOCK = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


def body(content, *, tool_calls=None, compact=False):
    message = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    response = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }
    return json.dumps(response, separators=(",", ":") if compact else None, ensure_ascii=False).encode()


def test_no_markup_is_the_very_same_object(impl):
    data = body("Just text, a < b.")
    assert recover_response_bytes(data, native=True, has_tools=True) is data


def test_without_tools_the_same_object_even_with_markup(impl):
    data = body("Hi " + BLOCK)
    assert recover_response_bytes(data, native=False, has_tools=False) is data


def test_markup_is_recovered_and_reserialised_compactly(impl):
    out = recover_response_bytes(body("Let me check. " + BLOCK + " Done."), native=True, has_tools=True)
    response = json.loads(out)
    call = response["choices"][0]["message"]["tool_calls"][0]
    assert response["choices"][0] == {
        "index": 0,
        "message": {
            "role": "assistant",
            "content": "Let me check.  Done.",
            "tool_calls": [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        "logprobs": None,
        "finish_reason": "tool_calls",
    }
    assert (
        out
        == (
            '{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":'
            '{"role":"assistant","content":"Let me check.  Done.","tool_calls":[{"id":"' + call["id"] + '","type":'
            '"function","function":{"name":"get_weather","arguments":"{\\"city\\": \\"Paris\\"}"}}]},"logprobs":null,'
            '"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}'
        ).encode()
    )


def test_json_escaped_markup_is_found(impl):
    # Go encoders write "<" as \u003c: the body still holds the call
    data = body("x " + BLOCK).replace(b"<", b"\\u003c")
    assert b"<" not in data
    response = json.loads(recover_response_bytes(data, native=False, has_tools=True))
    assert response["choices"][0]["message"]["content"] == "x"
    assert response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_mistral_and_options(impl):
    data = body('Sure. [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo"}}]')
    message = json.loads(recover_response_bytes(data, native=True, has_tools=True))["choices"][0]["message"]
    assert message["content"] == "Sure."
    assert message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    assert recover_response_bytes(data, native=True, has_tools=True, formats=["hermes"]) is data
    plain = body("A list: [1, 2] and [x].")
    assert recover_response_bytes(plain, native=True, has_tools=True) is plain


def test_whole_message_format(impl):
    data = body('{"name": "get_weather", "arguments": {"city": "Rome"}}')
    assert recover_response_bytes(data, native=True, has_tools=True) is data  # not a default format
    message = json.loads(recover_response_bytes(data, native=True, has_tools=True, formats=["json_message"]))
    message = message["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Rome"}'}


def test_tools_option_keeps_calls_of_other_tools_as_text(impl):
    data = body("Hi " + BLOCK)
    other = [{"type": "function", "function": {"name": "get_time", "parameters": {}}}]
    assert recover_response_bytes(data, native=True, has_tools=True, tools=other) is data
    out = recover_response_bytes(data, native=True, has_tools=True, tools=other, unknown_tools="drop")
    assert json.loads(out)["choices"][0]["message"]["content"] == "Hi"


def test_non_ascii_kept_as_utf8(impl):
    out = recover_response_bytes(body("Zürich ☀ " + BLOCK), native=True, has_tools=True)
    assert "Zürich ☀".encode() in out
    assert json.loads(out)["choices"][0]["message"]["content"] == "Zürich ☀"


def test_lone_surrogate_stays_escaped(impl):
    data = b'{"choices":[{"index":0,"message":{"content":"\\ud83d ' + BLOCK.replace('"', '\\"').encode() + b'"}}]}'
    out = recover_response_bytes(data, native=True, has_tools=True)
    assert b"\\ud83d" in out
    assert json.loads(out)["choices"][0]["message"]["content"] == "\ud83d"


def test_native_gate_leaves_a_choice_with_structured_calls(impl):
    structured = [{"id": "call_s", "type": "function", "function": {"name": "s", "arguments": "{}"}}]
    data = body("Hi " + BLOCK, tool_calls=structured)
    assert recover_response_bytes(data, native=True, has_tools=True) is data
    out = json.loads(recover_response_bytes(data, native=False, has_tools=True))
    assert [t["function"]["name"] for t in out["choices"][0]["message"]["tool_calls"]] == ["s", "get_weather"]


@pytest.mark.parametrize(
    "data",
    [
        b"<tool_call> not json",
        b'{"error": {"message": "bad <tool_call>"}}',
        b'["<tool_call>"]',
        b'{"choices": "<tool_call>"}',
        b'{"choices": [{"message": "<tool_call>"}]}',
        b'{"choices": [{"message": {"content": "<tool_call>", "tool_calls": 5}}]}',
        b"\xff<tool_call>",
        b"[" * 100000 + b"<tool_call>",
    ],
)
def test_bodies_that_are_not_completions_come_back_as_they_are(impl, data):
    assert recover_response_bytes(data, native=True, has_tools=True) is data


def test_bytearray_and_memoryview_are_accepted(impl):
    data = body("Hi " + BLOCK)
    for view in (bytearray(data), memoryview(data)):
        out = recover_response_bytes(view, native=True, has_tools=True)
        assert json.loads(out)["choices"][0]["message"]["content"] == "Hi"
    plain = bytearray(body("plain"))
    assert recover_response_bytes(plain, native=True, has_tools=True) is plain


def test_bad_arguments():
    with pytest.raises(TypeError, match="body must be bytes, bytearray or memoryview, not str"):
        recover_response_bytes("{}", native=True, has_tools=True)
    with pytest.raises(TypeError, match="native must be a bool, not NoneType"):
        recover_response_bytes(b"{}", native=None, has_tools=True)
    with pytest.raises(TypeError, match="has_tools must be a bool, not int"):
        recover_response_bytes(b"{}", native=True, has_tools=1)
    with pytest.raises(TypeError, match="format"):  # a misspelt option is an error, even on a plain body
        recover_response_bytes(b"{}", native=True, has_tools=True, format=["hermes"])
    with pytest.raises(ValueError, match="unknown_tools"):
        recover_response_bytes(b"{}", native=True, has_tools=True, unknown_tools="ignore")


def test_the_old_module_name_is_the_same_function():
    from textcalls import chat_bytes, responses_bytes

    assert responses_bytes.recover_response_bytes is chat_bytes.recover_response_bytes
