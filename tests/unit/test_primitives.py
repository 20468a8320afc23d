"""hold_from and may_contain_markup, on both implementations."""

import json

import pytest


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("abc", 3),
        ("a<", 1),
        ("a<tool_cal", 1),
        ("a<tool_call", 1),
        ("a<tool_calls", 12),
        ("a <tool_call x", 2),
        ("a<｜tool", 1),
        ("", 0),
        ("<", 0),
        ("a<tool_call>", 12),  # a complete opener is not held by hold_from
        ("a<tool_call|x", 1),
        ("a<tool_call\nx", 1),
        ("x <tool_call a> b <tool_call c", 18),  # the first '<tool_call' has a '>' after it
        ("a<｜tool▁calls▁end", 1),
        ("a<｜tool▁calls▁begin｜", 1),
        ("a<｜tool▁call▁begin｜>", 20),
        ("a</tool_call", 12),  # closers are not held outside a block
        # 1-byte text where a literal has a wide character: a NUL there is not it (nor a Latin-1 letter)
        ("a<\x00", 3),
        ("a<\x00\x00", 4),
        ("a<\xff", 3),
    ],
)
def test_hold_from_values(impl, text, expected):
    # the checked values, for the table they were written for (Hermes and DeepSeek)
    assert impl.hold_from(text, formats=("hermes", "deepseek")) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a<tool_calls", 1),  # MiniMax-M1's <tool_calls> is an opener of the full table
        ("x [TOOL_CA", 2),
        ("x <|python_ta", 2),
        ("x <minimax:tool", 2),
        ("x <function", 2),
        ("x <function=get", 2),  # a tag opener waiting for its '>'
        ("x <functions", 12),
    ],
)
def test_hold_from_over_every_default_dialect(impl, text, expected):
    assert impl.hold_from(text) == expected


def test_hold_from_gives_up_after_the_attribute_window(impl):
    # The '>' must come within 256 characters after '<tool_call'.
    assert impl.hold_from("<tool_call " + "a" * 254) == 0  # 255 after it: the next could be '>'
    assert impl.hold_from("<tool_call " + "a" * 255) == 266  # 256 after it: too late, nothing held


def test_hold_from_rejects_unknown_formats(impl):
    with pytest.raises(ValueError, match="unknown dialect"):
        impl.hold_from("x", formats=["nope"])


def test_hold_from_rejects_non_str(impl):
    with pytest.raises(TypeError, match="hold_from"):
        impl.hold_from(b"<tool_call")


POSITIVE = [
    "<tool_call>",
    "x <tool_call id=1>",
    "<tool_calls>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁calls▁end｜>",
    "\\u003ctool_call>",
    "\\u003Ctool_call>",
    "\\u003c\\uff5ctool\\u2581call\\u2581begin\\uFF5C\\u003e",
    "<\\uff5ctool▁calls▁begin｜>",
    "[TOOL_CALLS]",
    "<|tool_call_begin|>",
    "<minimax:tool_call>",
    "<think>",
    "<\\/think>",
    "\\u003cthink\\u003e",
    "<|python_tag|>",
    "<function=f>",
]
NEGATIVE = [
    "",
    "plain text",
    '{"tool_calls": [], "finish_reason": "stop"}',
    "tool_call",
    "<tool call>",
    "<|tool_call|>"[2:],
    "\\U003ctool_call",
    "｜tool_call",
    "<｜tool call",
    "tool▁call",
    "\\uff5ctool\\u2581call",
    "TOOL_CALLS",
    "[tool_calls]",
    "think about it",
    "functions and calls",
]


@pytest.mark.parametrize("text", POSITIVE)
def test_may_contain_markup_positive(impl, text):
    assert impl.may_contain_markup(text) is True
    assert impl.may_contain_markup(text.encode()) is True
    assert impl.may_contain_markup(bytearray(text.encode())) is True
    assert impl.may_contain_markup(memoryview(text.encode())) is True


@pytest.mark.parametrize("text", NEGATIVE)
def test_may_contain_markup_negative(impl, text):
    assert impl.may_contain_markup(text) is False
    assert impl.may_contain_markup(text.encode()) is False


def test_may_contain_markup_sees_json_escaped_bodies(impl):
    content = "Sure.<｜tool▁call▁begin｜>f<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
    body = {"choices": [{"message": {"content": content}}]}
    assert impl.may_contain_markup(json.dumps(body).encode())  # ensure_ascii: \uff5c, \u2581
    go_style = json.dumps({"content": "<tool_call>{}</tool_call>"}).replace("<", "\\u003c")
    assert impl.may_contain_markup(go_style.encode())
    assert not impl.may_contain_markup(json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode())


def test_may_contain_markup_follows_formats(impl):
    assert impl.may_contain_markup(b"[TOOL_CALLS]")
    assert not impl.may_contain_markup(b"[TOOL_CALLS]", formats=["hermes"])
    assert impl.may_contain_markup(b"no markup at all", formats=["hermes", "json_message"])  # reads all


def test_may_contain_markup_rejects_other_types(impl):
    with pytest.raises(TypeError, match="may_contain_markup"):
        impl.may_contain_markup(12)
    with pytest.raises(TypeError, match="may_contain_markup"):
        impl.may_contain_markup(None)
