"""Every ``arguments`` string handed out is read by a strict JSON parser (issue 28): a lone surrogate, escaped
(``\\ud83d`` with no low surrogate's escape after it, or a low one alone) or written raw, becomes U+FFFD (its
escape ``\\ufffd`` for an escape, the character for a raw one); an escaped pair stays as written. The same
with ``stream_arguments`` (the pieces join to the arguments), for any split, on both implementations."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls._json_rules import strict_surrogates

TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {}}}]


def strict(arguments: str) -> object:
    """What a strict parser reads (msgspec refuses lone surrogates, as orjson does; UTF-8 cannot carry them)."""
    return msgspec.json.decode(arguments.encode("utf-8"))


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (r'{"q":"\ud83d"}', r'{"q":"\ufffd"}'),  # a high one alone
        (r'{"q":"\ude00x"}', r'{"q":"\ufffdx"}'),  # a low one alone
        (r'{"q":"\ud83d\ude00"}', r'{"q":"\ud83d\ude00"}'),  # a pair: as written
        (r'{"q":"\uD83D\uDE00 \uDE00\uD83D"}', r'{"q":"\uD83D\uDE00 \ufffd\ufffd"}'),  # upper case; a pair reversed
        (r'{"q":"\\ud83d"}', r'{"q":"\\ud83d"}'),  # a backslash, then text
        (r'{"q":"\\\ud83d"}', r'{"q":"\\\ufffd"}'),  # a backslash, then a lone escape
        ('{"q":"a\ud83db"}', '{"q":"a\ufffdb"}'),  # raw: the character U+FFFD
        ('{"q":"\ud83d\ude00"}', '{"q":"\ufffd\ufffd"}'),  # two raw code points: each (UTF-8 has no pairs)
        (r'{"q":"\u00e9\n"}', r'{"q":"\u00e9\n"}'),  # other escapes: as written
    ],
)
def test_strict_surrogates_replaces_each_lone_surrogate(impl, kernels, text, want):
    assert strict_surrogates(text) == want
    assert kernels.strict_json(text) == want
    strict(want)


_pieces = st.sampled_from(["a", "é", "\\\\", '\\"', "\\n", "\\u00e9", "\\ud83d", "\\ude00", "\\uDBFF", "\ud83d", "😀"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_pieces, max_size=8))
def test_strict_json_is_the_rule_and_keeps_what_needs_nothing(impl, kernels, parts):
    text = '{"q": "' + "".join(parts) + '"}'
    got = kernels.strict_json(text)
    assert got == strict_surrogates(text)
    strict(got)
    if not {"\\ud83d", "\\ude00", "\\uDBFF", "\ud83d"} & set(parts):
        assert got is text  # nothing that may be a surrogate: the very string
    assert kernels.strict_json("plain {} text") == "plain {} text"


def test_strict_json_of_a_non_string_is_a_type_error(impl, kernels):
    with pytest.raises(TypeError):
        kernels.strict_json(b'{"q": 1}')


CALLS = {
    "hermes-plain": '<tool_call>{"name": "f", "arguments": {"q": "%s"}}</tool_call>',
    "hermes-reread": '<tool_call>{"name": "f", "arguments": {"q": "%s", "n": 1e5}}</tool_call>',
    "deepseek": '<｜tool▁call▁begin｜>f<｜tool▁sep｜>{"q": "%s"}<｜tool▁call▁end｜>',
    "kimi": '<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{"q": "%s"}<|tool_call_end|>',
    "qwen-xml": "<tool_call>\n<function=f>\n<parameter=q>\n%s\n</parameter>\n</function>\n</tool_call>",
}
# the value as written in a JSON string -> the string the arguments hold
JSON_VALUES = {
    "\\ud83d": "\ufffd",
    "x\\ude00y": "x\ufffdy",
    "\\ud83d\\ude00": "😀",
    "a\ud83db": "a\ufffdb",
    "é\\n": "é\n",
}
# the value as written in an XML value (its text as it is) -> the string the arguments hold
XML_VALUES = {"a\ud83db": "a\ufffdb", "\\ud83d": "\\ud83d", "x😀\ude00": "x😀\ufffd", "é": "é"}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), kind=st.sampled_from(sorted(CALLS)))
def test_recovered_arguments_read_strictly_for_any_split(impl, data, kind, per_delta):
    values = XML_VALUES if kind == "qwen-xml" else JSON_VALUES
    value = data.draw(st.sampled_from(sorted(values)))
    text = "Sure. " + CALLS[kind] % value
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    stream_arguments = data.draw(st.booleans())
    scrubber = impl.StreamScrubber(tools=TOOLS, stream_arguments=stream_arguments)
    start = 0
    for cut in [*cuts, len(text)]:
        scrubber.feed(text[start:cut])
        start = cut
    scrubber.flush()
    (call,) = scrubber.calls
    assert strict(call.arguments)["q"] == values[value]
    assert call.arguments == impl.KERNELS.strict_json(call.arguments)
    if stream_arguments:
        events = scrubber.take_events()
        ends = [e[0] for e in events if e[0] != "arguments"]
        # arguments read and written again ("n": 1e5) are not the text streamed: abandoned (then whole), unless
        # the pieces stopped at a surrogate before the first difference
        assert ends == ["started", "ended"] or (kind == "hermes-reread" and ends == ["started", "abandoned"])
        if ends[-1] == "ended":
            assert "".join(e[2] for e in events if e[0] == "arguments") == call.arguments
