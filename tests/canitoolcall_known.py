"""CanIToolCall 0.1.1 fixtures textcalls does not conform to (``tests/unit/test_canitoolcall.py``), each a deliberate
policy of ``docs/conformance.md``: strict expected failures by fixture id, each with the check it fails and how
(as measured when listed). A fixture that starts passing must leave the list. ``KNOWN``: with
``stream_arguments`` off and on alike.
``ONLY_STREAMED_ARGUMENTS``: only with ``stream_arguments=True``, a deliberate policy: a call already
streamed in pieces and then abandoned withdraws the answer (the stream ends with an error the SDK raises),
where the fixture wants what the option off gives (no call, the text as content)."""

KNOWN = {
    # a call of a tool not offered (Harmony's built-in to=python) stays text (unknown_tools="keep_text")
    "gpt-oss/llamacpp-builtin-python-recipient": "expected_match: content differs",
    # the words between Kimi's section opener and its first call stay content (never drop unproven text)
    "kimi/k2i-vllm-noise-between-markers": "expected_match: content differs",
}

#: soft passes (a whitespace difference only), with ``trim_blanks=True``: the blank between the text and the
#: opener is the markup's (dropped), where these fixtures keep it in the content. The corpus disagrees with
#: itself here: ``gemma4/vllm-text-before-call`` (``'… for you. <|tool_call>…'`` -> ``'… for you.'``),
#: ``glm/glm45-vllm-newline-format-content-before`` and ``qwen3-hermes/sglang-text-before-call-with-space``
#: drop the same blank that ``gemma4/sglang-text-before-call`` keeps.
BLANK_BEFORE_OPENER = {
    "gemma4/sglang-text-before-call": "the blank before <|tool_call> kept in the content",
    "kimi/k2i-vllm-empty-tool-section": "the blank before <|tool_calls_section_begin|> kept in the content",
    "kimi/k2i-vllm-id-without-functions-prefix": "the blank before <|tool_calls_section_begin|> kept in the content",
    "kimi/k2i-vllm-multiline-json": "the blank before <|tool_calls_section_begin|> kept in the content",
    "kimi/k2i-vllm-single-call-content-before": "the blank before <|tool_calls_section_begin|> kept in the content",
    "kimi/k2i-vllm-three-tool-calls": "the blank before <|tool_calls_section_begin|> kept in the content",
    "llama/l3-sglang-text-before-python-tag": "the blank before <|python_tag|> kept in the content",
}

ONLY_STREAMED_ARGUMENTS = {
    "deepseek/vllm-v3-malformed-missing-brace": "a streamed call, then abandoned, withdraws the answer",
    "qwen3-hermes/bug-sglang-30480-truncated-mid-arguments": "a streamed call, then abandoned, withdraws the answer",
    "qwen3-hermes/truncated-second-parallel-call": "a streamed call, then abandoned, withdraws the answer",
    "qwen3-hermes/vllm-invalid-json-missing-brace": "a streamed call, then abandoned, withdraws the answer",
}
