"""The recovery gate and chat.completion rewriting, on both implementations."""

import collections
import copy
import json

import pytest

CALL_TEXT = 'Let me look.\n<tool_call>{"name": "lookup", "arguments": {"q": "paris"}}</tool_call>'
STRUCTURED = {"id": "call_native", "type": "function", "function": {"name": "native", "arguments": "{}"}}


def completion(*messages, finish="stop"):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": i, "message": {"role": "assistant", **m}, "finish_reason": finish, "logprobs": None}
            for i, m in enumerate(messages)
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }


@pytest.mark.parametrize(
    ("native", "has_tools", "structured", "expected"),
    [
        (False, True, 0, True),
        (False, True, 2, True),
        (True, True, 0, True),
        (True, True, 1, False),
        (False, False, 0, False),
        (True, False, 0, False),
        (True, False, 3, False),
    ],
)
def test_should_recover_truth_table(tc, native, has_tools, structured, expected):
    assert tc.should_recover(native, has_tools, structured) is expected


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((1, True, 0), TypeError),
        ((True, "yes", 0), TypeError),
        ((True, True, 1.0), TypeError),
        ((True, True, True), TypeError),
        ((True, True, -1), ValueError),
    ],
)
def test_should_recover_rejects_bad_input(tc, args, error):
    with pytest.raises(error):
        tc.should_recover(*args)


def test_prompt_guided_recovery(impl, tc):
    response = completion({"content": CALL_TEXT})
    before = copy.deepcopy(response)
    out = tc.recover_response(response, native=False, has_tools=True)
    assert response == before  # the input is never mutated
    choice = out["choices"][0]
    assert choice["message"]["content"] == "Let me look."
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"] == {"name": "lookup", "arguments": json.dumps({"q": "paris"})}
    # every other field untouched
    assert {k: v for k, v in out.items() if k != "choices"} == {k: v for k, v in before.items() if k != "choices"}
    assert choice["index"] == 0 and choice["logprobs"] is None and choice["message"]["role"] == "assistant"


def test_content_becomes_none_when_only_markup(impl, tc):
    out = tc.recover_response(
        completion({"content": '<tool_call>{"name":"f"}</tool_call>'}), native=False, has_tools=True
    )
    assert out["choices"][0]["message"]["content"] is None


def test_no_tools_returns_the_same_object(impl, tc):
    response = completion({"content": CALL_TEXT})
    assert tc.recover_response(response, native=False, has_tools=False) is response
    assert tc.recover_response(response, native=True, has_tools=False) is response


def test_nothing_to_recover_returns_the_same_object(impl, tc):
    for content in ("  plain answer with trailing space  ", "", None, "a <tool_calls> mention"):
        response = completion({"content": content})
        assert tc.recover_response(response, native=False, has_tools=True) is response


def test_native_with_structured_calls_is_left_alone(impl, tc):
    response = completion({"content": CALL_TEXT, "tool_calls": [STRUCTURED]}, finish="tool_calls")
    assert tc.recover_response(response, native=True, has_tools=True) is response


def test_native_without_structured_calls_is_recovered(impl, tc):
    out = tc.recover_response(completion({"content": CALL_TEXT, "tool_calls": []}), native=True, has_tools=True)
    assert [c["function"]["name"] for c in out["choices"][0]["message"]["tool_calls"]] == ["lookup"]


def test_prompt_guided_appends_after_existing_calls(impl, tc):
    out = tc.recover_response(
        completion({"content": CALL_TEXT, "tool_calls": [STRUCTURED]}), native=False, has_tools=True
    )
    calls = out["choices"][0]["message"]["tool_calls"]
    assert calls[0] is STRUCTURED or calls[0] == STRUCTURED
    assert [c["function"]["name"] for c in calls] == ["native", "lookup"]


def test_gate_is_per_choice(impl, tc):
    response = completion({"content": CALL_TEXT, "tool_calls": [STRUCTURED]}, {"content": CALL_TEXT})
    out = tc.recover_response(response, native=True, has_tools=True)
    assert out["choices"][0] is response["choices"][0]  # had its own structured call
    assert [c["function"]["name"] for c in out["choices"][1]["message"]["tool_calls"]] == ["lookup"]


def test_malformed_block_is_scrubbed_without_a_call(impl, tc):
    out = tc.recover_response(completion({"content": "Hi <tool_call>oops</tool_call>"}), native=False, has_tools=True)
    choice = out["choices"][0]
    assert choice["message"]["content"] == "Hi"
    assert choice["finish_reason"] == "stop" and "tool_calls" not in choice["message"]


def test_deepseek_response(impl, tc):
    content = (
        '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city":"Paris"}'
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    )
    out = tc.recover_response(completion({"content": content}), native=False, has_tools=True)
    message = out["choices"][0]["message"]
    assert message["content"] is None
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}


def test_response_without_choices_passes(impl, tc):
    error = {"error": {"message": "bad"}}
    assert tc.recover_response(error, native=False, has_tools=True) is error


@pytest.mark.parametrize(
    ("response", "where"),
    [
        ([], "response must be a dict"),
        ({"choices": {}}, r"response\['choices'\] must be a list"),
        ({"choices": [1]}, r"response\['choices'\]\[0\] must be a dict"),
        ({"choices": [{"message": "x"}]}, r"\['message'\] must be a dict"),
        ({"choices": [{"message": {"content": "x", "tool_calls": {}}}]}, r"\['tool_calls'\] must be a list"),
    ],
)
def test_recover_response_names_bad_shapes(impl, tc, response, where):
    with pytest.raises(TypeError, match=where):
        tc.recover_response(response, native=False, has_tools=True)


def test_think_text_goes_to_reasoning_content(impl, tc):
    out = tc.recover_response(
        completion({"content": "<think>plan it</think>" + CALL_TEXT}), native=False, has_tools=True
    )
    message = out["choices"][0]["message"]
    assert message["reasoning_content"] == "plan it"
    assert message["content"] == "Let me look."
    out = tc.recover_response(
        completion({"content": "<think>more</think>ok", "reasoning_content": "first"}), native=False, has_tools=True
    )
    assert out["choices"][0]["message"]["reasoning_content"] == "first\nmore"
    assert out["choices"][0]["message"]["content"] == "ok"


TALLY_TEXT = (
    'a<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    "b<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>g<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
    "c<tool_call>not json</tool_call>d"
)
TALLY = {("calls", "hermes"): 1, ("calls", "deepseek"): 1, ("malformed", ""): 1}


def test_a_tally_counts_calls_by_dialect_and_malformed_blocks(impl, tc):
    response = {"choices": [{"index": 0, "message": {"role": "assistant", "content": TALLY_TEXT}}]}
    tally = collections.Counter()
    recovered = tc.recover_response(response, native=False, has_tools=True, tally=tally)
    assert len(recovered["choices"][0]["message"]["tool_calls"]) == 2
    assert tally == TALLY
    tally = collections.Counter()  # the same from the raw body
    tc.recover_response_bytes(json.dumps(response).encode(), native=False, has_tools=True, tally=tally)
    assert tally == TALLY
    # and streamed, in any pieces: ChunkRecovery.tally, SSERecovery.tally
    recovery = tc.ChunkRecovery(native=False, has_tools=True)
    for k in range(0, len(TALLY_TEXT), 7):
        recovery.push({"choices": [{"index": 0, "delta": {"content": TALLY_TEXT[k : k + 7]}}]})
    recovery.close()
    assert recovery.tally == TALLY


def test_no_tally_is_kept_for_a_gated_choice(impl, tc):
    structured = [{"id": "c", "type": "function", "function": {"name": "x", "arguments": "{}"}}]
    message = {"role": "assistant", "content": TALLY_TEXT, "tool_calls": structured}
    tally = collections.Counter()
    tc.recover_response({"choices": [{"index": 0, "message": message}]}, native=True, has_tools=True, tally=tally)
    assert tally == {}  # the native model's structured call: the content is not read
