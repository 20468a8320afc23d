"""The one table of tool-call markup. Both scanners (Cython and the twin) are built from it.

A dialect is one or more ``Block`` kinds (opener, closer, body grammar) and the ``Marker`` literals
that wrap them. Adding a dialect is adding its entries here and its grammar in ``dialects/``.
U+FF5C is the full-width bar ``｜``; U+2581 is ``▁``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Characters that may follow a tag opener such as ``<tool_call`` (besides end of text while streaming).
HERMES_DELIMITERS = ">| \t\n\r\f\v"
#: Whitespace, as the scanners understand it (section wrappers, "only whitespace between").
WHITESPACE = " \t\n\r\f\v"
#: How far (characters after a tag opener's literal) the ``>`` ending its attribute text may be.
ATTR_MAX = 256
#: How much whitespace may separate a section opener from the block it wraps.
SECTION_GAP_MAX = 256
#: Default cap on a block's body, in characters (``max_block``).
MAX_BLOCK = 1 << 20

# The table's limits. The Cython scanner keeps per-character arrays sized by them, so they are checked
# here, once, for the whole table (``check_limits``; every enabled subset is then within them too).
#: How many distinct first characters (of openers, markers and word openers' anchors) the table may have.
FIRST_CHARS_MAX = 8
#: How long an opener or marker literal may be: at least 2 characters (a 1-character literal would hold
#: every such character in prose), at most 40.
LITERAL_MIN = 2
LITERAL_MAX = 40
#: How much of a block's body may come before its call's arguments (``stream_arguments``): past that, the
#: call is not streamed (``_events.HEAD_MAX``).
HEAD_MAX = 512
#: How many value tag pairs (``Block.values``) a block kind may have.
VALUES_MAX = 4


@dataclass(frozen=True)
class Block:
    """A block kind: ``opener`` … ``closer``, its body read by ``grammar`` (a name in ``dialects.GRAMMARS``).

    ``delimiters``: the opener is a tag — one of these characters must follow the literal, and a ``>``
    within ATTR_MAX characters ends it (attributes between are ignored); ``None``: the literal alone.
    ``closer=None``: the block ends where the JSON value that starts the body ends (the first ``{``,
    or a ``[`` that is the body's first non-blank character).
    ``json_strings``: from the body's first ``{``, a closer inside a JSON string does not end it.
    ``strong``: meeting this opener inside another block's body makes that other block prose (any
    opener met again inside its own kind of block does that too).
    ``starts``: the characters the body may start with (after whitespace); any other makes the opener
    text at once — for openers that are also words people write (``<tool_calls>``, ``<json>`` …).
    ``anchor``: a plain-word opener (``functools``) is looked for at this character, which must follow it
    and begins the body; a stream holds back any tail that could be the start of the word.
    ``values``: the body's value tags, ``(opening, closing)`` pairs (``VALUES_MAX`` at most, each tag
    starting with ``<``): from an ``opening`` to its ``closing``, the block's closer and openers are the
    value's data — unless the value never closes (another ``opening`` comes first, or the body's end or
    cap): then the first of them inside it ends the block as if there were no value (the scanning rules,
    "Values"). An ``opening`` that ends with ``>`` is the whole tag; any other is followed by the tag's
    head up to ``value_head_end``, within ATTR_MAX characters and with no ``<`` or ``>`` before it (else
    it is no tag).
    ``stripped_closer``: the closer is a special token servers strip (``skip_special_tokens``) and the
    opener cannot be prose: a block the message ends inside may be a call even without ``tools``
    (``_table.read_unterminated``). Not DeepSeek: the seed's rule (an unterminated opener stays verbatim)
    stands for it without tools.
    """

    dialect: str
    opener: str
    closer: str | None
    grammar: str
    delimiters: str | None = None
    json_strings: bool = True
    strong: bool = True
    starts: str | None = None
    anchor: str | None = None
    values: tuple[tuple[str, str], ...] = ()
    value_head_end: str = ">"
    stripped_closer: bool = False


@dataclass(frozen=True)
class Marker:
    """A wrapper literal that is markup only next to a block of ``dialect`` (only whitespace between):
    right before one of its openers (``before=True``) or right after the end of one (``before=False``).

    ``reasoning=1``: instead, the literal opens a reasoning span (where the text is not content); ``-1``:
    it closes one. Each is markup only where it switches: an opener in content, a closer in reasoning.
    ``always``: markup wherever it stands (special tokens no prose contains); with ``reasoning``, it is
    removed where it does not switch.
    """

    dialect: str
    literal: str
    before: bool = False
    reasoning: int = 0
    always: bool = False


HERMES = "hermes"
DEEPSEEK = "deepseek"

HERMES_OPEN = "<tool_call"
HERMES_CLOSE = "</tool_call>"
#: Keys that may hold a call object's arguments, by priority (the first present wins).
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
DEEPSEEK_OPEN = "<\uff5ctool\u2581call\u2581begin\uff5c>"
DEEPSEEK_CLOSE = "<\uff5ctool\u2581call\u2581end\uff5c>"
DEEPSEEK_SECTION_OPEN = "<\uff5ctool\u2581calls\u2581begin\uff5c>"
DEEPSEEK_SECTION_CLOSE = "<\uff5ctool\u2581calls\u2581end\uff5c>"
DEEPSEEK_SEP = "<\uff5ctool\u2581sep\uff5c>"
_BAR = "\uff5c"


def _ascii(text: str) -> str:
    """Ollama's DeepSeek templates write the bars as ASCII ``|``."""
    return text.replace(_BAR, "|")


#: Dialect names in table order, and whether each is on by default. The off ones have no marker of
#: their own: they are whole-message formats, chosen with ``formats=``.
DIALECTS: dict[str, bool] = {
    "reasoning": True,  # <think>…</think>: reasoning, not content (see calls_in_reasoning)
    HERMES: True,  # <tool_call …>: JSON objects or arrays (Hermes, Qwen, Granite), Qwen3-Coder XML, GLM
    "seed_oss": True,  # <seed:tool_call>: Qwen3-Coder XML
    DEEPSEEK: True,  # DeepSeek V3/R1/V3.1 (full-width or ASCII bars), R1-distill section opener
    "deepseek_dsml": True,  # DeepSeek V3.2 / V4 DSML
    "kimi_k2": True,
    "kimi_k3": True,  # Kimi K3 XTML: <|open|>tools<|sep|> calls, its think and response channels
    "minimax_m2": True,
    "minimax_m1": True,  # <tool_calls> JSON lines / array: MiniMax-M1, Jamba, Hunyuan (only when calls)
    "mistral": True,  # [TOOL_CALLS]
    "gemma4": True,
    "function_gemma": True,
    "lfm2": True,  # <|tool_call_start|>[f(a=1)]<|tool_call_end|> (Kimi/LFM2 pythonic)
    "olmo3": True,
    "llama4": True,
    "llama3": True,  # <|python_tag|>{…}
    "granite3": True,  # <|tool_call|>[…]
    "internlm": True,
    "command_r": True,
    "nemotron": True,
    "step3": True,
    "functionary": True,  # <function=NAME>{…}</function>, <function name="NAME">{…}</function>
    "longcat": True,
    "apertus": True,
    "wrappers": True,  # <tools>, <tool>, <response>, <json>, <JSON>, <xml>, <function_call> around a call
    "harmony": True,  # gpt-oss Harmony written as text: commentary calls, analysis = reasoning, final = content
    "lmstudio": True,  # [TOOL_REQUEST]{…}[END_TOOL_REQUEST]: LM Studio's own call format
    "bracket_tool_call": True,  # [TOOL_CALL]{tool => "NAME", args => {--key "v"}}[/TOOL_CALL]: MiniMax M2.5/M2.7
    "harmony_text": False,  # gpt-oss with its special tokens stripped: a plain phrase as opener — held deltas (opt-in)
    "phi4_mini": False,  # functools[{…}]: a plain word as opener — every delta ending in f… is held (opt-in)
    "json_message": False,  # the whole message is a call object / array of them (Llama 3.x)
    "pythonic_message": False,  # the whole message is a pythonic call list [f(a=1), g()]
}

#: One example of each dialect, as a model writes it: each calls ``get_weather`` with ``{"city": "Paris"}``
#: (``reasoning``: a reasoning span, no call). ``textcalls dialects`` shows them, the docs' dialect reference is
#: made from them, and a test reads each with its dialect enabled (``tests/unit/test_dialects.py``).
EXAMPLES: dict[str, str] = {
    "reasoning": "<think>The user wants the weather in Paris.</think>It is sunny in Paris.",
    HERMES: '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    "seed_oss": "<seed:tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n"
    "</seed:tool_call>",
    DEEPSEEK: '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}'
    "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    "deepseek_dsml": '<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n'
    '<｜DSML｜parameter name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
    "</｜DSML｜function_calls>",
    "kimi_k2": "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
    "kimi_k3": '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" '
    'type="string"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>',
    "minimax_m2": '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
    "</invoke>\n</minimax:tool_call>",
    "minimax_m1": '<tool_calls>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_calls>',
    "mistral": '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
    "gemma4": '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
    "function_gemma": "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>",
    "lfm2": "<|tool_call_start|>[get_weather(city='Paris')]<|tool_call_end|>",
    "olmo3": '<function_calls>get_weather(city="Paris")</function_calls>',
    "llama4": '<|python_start|>[get_weather(city="Paris")]<|python_end|>',
    "llama3": '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>',
    "granite3": '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    "internlm": '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>',
    "command_r": '<|START_ACTION|>[{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|>',
    "nemotron": '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</TOOLCALL>',
    "step3": '<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_weather">'
    '<steptml:parameter name="city">Paris</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>',
    "functionary": '<function=get_weather>{"city": "Paris"}</function>',
    "longcat": '<longcat_tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</longcat_tool_call>',
    "apertus": '<|tools_prefix|>[{"get_weather": {"city": "Paris"}}]<|tools_suffix|>',
    "wrappers": '<tools>{"name": "get_weather", "arguments": {"city": "Paris"}}</tools>',
    "harmony": "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    '{"city": "Paris"}<|call|>',
    "lmstudio": '[TOOL_REQUEST]{"name": "get_weather", "arguments": {"city": "Paris"}}[END_TOOL_REQUEST]',
    "bracket_tool_call": '[TOOL_CALL]\n{tool => "get_weather", args => {\n  --city "Paris"\n}}\n[/TOOL_CALL]',
    "harmony_text": 'commentary to=functions.get_weather json{"city": "Paris"}',
    "phi4_mini": 'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    "json_message": '{"name": "get_weather", "parameters": {"city": "Paris"}}',
    "pythonic_message": '[get_weather(city="Paris")]',
}

# value tags (Block.values): the XML dialects' parameter values, Gemma's quoted strings, Kimi K3's arguments
_QWEN_VALUES = (("<parameter=", "</parameter>"),)
_HERMES_VALUES = (*_QWEN_VALUES, ("<arg_value>", "</arg_value>"))  # Qwen3-Coder XML and GLM in <tool_call>
_DSML_VALUES = tuple(
    (f"<{bar}DSML{bar}{space}parameter ", f"</{bar}DSML{bar}{space}parameter>")
    for bar in (_BAR, "|")
    for space in ("", " ")
)


def _harmony(opener: str) -> Block:
    """A Harmony (gpt-oss) block kind: a header opener, the body up to ``<|call|>`` (a stripped stop token)."""
    return Block("harmony", opener, "<|call|>", "harmony", delimiters=" \t\n", strong=False, stripped_closer=True)


def _dsml(opener: str, closer: str) -> Block:
    """A DSML block kind (DeepSeek V3.2 / V4 / V4.1): its invokes and parameter values."""
    return Block("deepseek_dsml", opener, closer, "dsml", json_strings=False, values=_DSML_VALUES)


_WRAPPERS = ("tools", "tool", "response", "json", "JSON", "xml", "function_call")

BLOCKS: tuple[Block, ...] = (
    (
        Block(HERMES, HERMES_OPEN, HERMES_CLOSE, "hermes", delimiters=HERMES_DELIMITERS, values=_HERMES_VALUES),
        Block(
            "seed_oss", "<seed:tool_call>", "</seed:tool_call>", "qwen3_xml", json_strings=False, values=_QWEN_VALUES
        ),
        Block(DEEPSEEK, DEEPSEEK_OPEN, DEEPSEEK_CLOSE, "deepseek"),
        Block(DEEPSEEK, _ascii(DEEPSEEK_OPEN), _ascii(DEEPSEEK_CLOSE), "deepseek"),
        _dsml(f"<{_BAR}DSML{_BAR}function_calls>", f"</{_BAR}DSML{_BAR}function_calls>"),
        _dsml(f"<{_BAR}DSML{_BAR}tool_calls>", f"</{_BAR}DSML{_BAR}tool_calls>"),
        Block("kimi_k2", "<|tool_call_begin|>", "<|tool_call_end|>", "kimi_k2", stripped_closer=True),
        Block(
            "kimi_k3",
            "<|open|>tools<|sep|>",
            "<|close|>tools<|sep|>",
            "kimi_k3",
            json_strings=False,
            values=(("<|open|>argument ", "<|close|>argument<|sep|>"),),
            value_head_end="<|sep|>",
        ),
        Block(
            "minimax_m2",
            "<minimax:tool_call>",
            "</minimax:tool_call>",
            "minimax_m2",
            json_strings=False,
            values=(("<parameter name=", "</parameter>"),),
        ),
        Block("minimax_m1", "<tool_calls>", "</tool_calls>", "json_lines_or_array", strong=False, starts="{["),
        Block("mistral", "[TOOL_CALLS]", None, "mistral"),
        Block("gemma4", "<|tool_call>", "<tool_call|>", "gemma4", json_strings=False, values=(('<|"|>', '<|"|>'),)),
        Block(
            "function_gemma",
            "<start_function_call>",
            "<end_function_call>",
            "function_gemma",
            json_strings=False,
            values=(("<escape>", "<escape>"),),
        ),
        Block("lfm2", "<|tool_call_start|>", "<|tool_call_end|>", "pythonic_list", json_strings=False),
        Block("olmo3", "<function_calls>", "</function_calls>", "pythonic_lines", json_strings=False),
        Block("llama4", "<|python_start|>", "<|python_end|>", "pythonic_list", json_strings=False),
        Block("llama3", "<|python_tag|>", None, "json_calls"),
        Block("granite3", "<|tool_call|>", None, "json_calls"),
        Block("internlm", "<|action_start|><|plugin|>", "<|action_end|>", "json_calls"),
        Block("command_r", "<|START_ACTION|>", "<|END_ACTION|>", "json_calls"),
        Block("nemotron", "<TOOLCALL>", "</TOOLCALL>", "json_calls"),
        Block(
            "step3",
            f"<{_BAR}tool_call_begin{_BAR}>",
            f"<{_BAR}tool_call_end{_BAR}>",
            "step3",
            json_strings=False,
            values=(("<steptml:parameter ", "</steptml:parameter>"),),
        ),
        Block(
            "functionary",
            "<function",
            "</function>",
            "function",
            delimiters="= \t\n\r\f\v",
            strong=False,
            starts="{<",
            values=_QWEN_VALUES,  # Qwen3-Coder parameters in a <function=NAME> written without its <tool_call>
        ),
        Block("phi4_mini", "functools", None, "json_calls", strong=False, anchor="["),
        Block("longcat", "<longcat_tool_call>", "</longcat_tool_call>", "hermes"),
        Block("apertus", "<|tools_prefix|>", "<|tools_suffix|>", "apertus"),
        # Harmony: <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}<|call|>, or the
        # recipient first: <|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{ARGS}<|call|>
        _harmony("<|channel|>commentary"),
        _harmony("<|start|>assistant"),
        # a call on the analysis channel (llama.cpp's tests): <|channel|>analysis to=functions.NAME<|message|>{…}
        _harmony("<|channel|>analysis"),
    )
    + tuple(Block("wrappers", f"<{w}>", f"</{w}>", "wrapped_call", strong=False, starts="{[`") for w in _WRAPPERS)
    + (
        # Cousins seen in the field (issue 8): each one's own literal and grammar.
        Block("lmstudio", "[TOOL_REQUEST]", "[END_TOOL_REQUEST]", "json_calls"),
        Block("bracket_tool_call", "[TOOL_CALL]", "[/TOOL_CALL]", "arrow_call"),
        # lowercase Nemotron: an ordinary word too, so its body must start as JSON and be calls (else text)
        Block("nemotron", "<toolcall>", "</toolcall>", "json_lines_or_array", strong=False, starts="{["),
        # DSML openers as DeepSeek V4 misspells them (vLLM #56141), and the ASCII-bar spelling
        _dsml(f"<{_BAR}DSML{_BAR}toolcalls>", f"</{_BAR}DSML{_BAR}tool_calls>"),
        _dsml(f"<{_BAR}DSML{_BAR}tool>", f"</{_BAR}DSML{_BAR}tool_calls>"),
        _dsml("<|DSML|tool_calls>", "</|DSML|tool_calls>"),
        # DeepSeek V4.1: a space after the bar, and ``calls`` (``<｜DSML｜ calls>…<｜DSML｜ invoke name="F">``)
        _dsml(f"<{_BAR}DSML{_BAR} calls>", f"</{_BAR}DSML{_BAR} calls>"),
        _dsml("<|DSML| calls>", "</|DSML| calls>"),
        _dsml("<|DSML|function_calls>", "</|DSML|function_calls>"),
        # <｜DSML｜toolcall>NAME then (fenced) JSON arguments, or invokes
        Block("deepseek_dsml", f"<{_BAR}DSML{_BAR}toolcall>", f"</{_BAR}DSML{_BAR}toolcall>", "dsml_toolcall"),
        # Llama 3.1 built-in tools: <|python_tag|>brave_search.call(query="…")<|eom_id|>
        Block("llama3", "<|python_tag|>brave_search.call(", "<|eom_id|>", "builtin_call", json_strings=False),
        Block("llama3", "<|python_tag|>wolfram_alpha.call(", "<|eom_id|>", "builtin_call", json_strings=False),
        # Kimi K2 with its tool-call tokens decoded by id (a tokenizer that lost their names)
        Block("kimi_k2", "<|reserved_token_163597|>", "<|reserved_token_163599|>", "kimi_k2", stripped_closer=True),
        # gpt-oss with its special tokens stripped: commentary to=functions.NAME json{…} (opt-in: plain phrases).
        # Anchored at the f of "functions": no word opener may hold an f past its first character, or the
        # tail a stream holds for one word (functools) could hide the start of another (see _table.word_tail).
        Block("harmony_text", "commentary to=", None, "harmony_text", strong=False, anchor="f"),
        Block("harmony_text", "to=", None, "harmony_text", strong=False, anchor="f"),
    )
)

MARKERS: tuple[Marker, ...] = (
    Marker("reasoning", "<think>", reasoning=1),
    Marker("reasoning", "</think>", reasoning=-1),
    Marker("reasoning", "[THINK]", reasoning=1),  # Mistral (Magistral, Ministral 3, v13 templates)
    Marker("reasoning", "[/THINK]", reasoning=-1),
    Marker(DEEPSEEK, DEEPSEEK_SECTION_OPEN, before=True),
    Marker(DEEPSEEK, DEEPSEEK_SECTION_CLOSE, before=False),
    Marker(DEEPSEEK, _ascii(DEEPSEEK_SECTION_OPEN), before=True),
    Marker(DEEPSEEK, _ascii(DEEPSEEK_SECTION_CLOSE), before=False),
    Marker(DEEPSEEK, f"<{_BAR}tool\u2581calls{_BAR}>", before=True),  # R1 distills' section opener
    Marker("kimi_k2", "<|tool_calls_section_begin|>", before=True, always=True),
    Marker("kimi_k2", "<|tool_calls_section_end|>", before=False, always=True),
    Marker("kimi_k2", "<|tool_call_section_begin|>", before=True, always=True),  # the singular spelling, seen too
    Marker("kimi_k2", "<|tool_call_section_end|>", before=False, always=True),  # (special tokens: markup anywhere)
    # Kimi K3 XTML (control tokens: markup wherever they stand): the think channel is reasoning, the
    # response channel content; the message's end is no text
    Marker("kimi_k3", "<|open|>think<|sep|>", reasoning=1, always=True),
    Marker("kimi_k3", "<|close|>think<|sep|>", reasoning=-1, always=True),
    Marker("kimi_k3", "<|open|>response<|sep|>", reasoning=-1, always=True),  # (or the think channel skipped)
    Marker("kimi_k3", "<|close|>response<|sep|>", always=True),
    Marker("kimi_k3", "<|close|>message<|sep|>", always=True),
    Marker("step3", f"<{_BAR}tool_calls_begin{_BAR}>", before=True),
    Marker("step3", f"<{_BAR}tool_calls_end{_BAR}>", before=False),
    Marker("gemma4", "<|channel>thought", reasoning=1, always=True),  # Gemma 4's thought channel
    Marker("gemma4", "<channel|>", reasoning=-1, always=True),
    Marker("harmony", "<|channel|>analysis<|message|>", reasoning=1, always=True),
    Marker("harmony", "<|end|>", reasoning=-1, always=True),
    Marker("harmony", "<|start|>assistant", always=True),
    Marker("harmony", "<|channel|>final<|message|>", always=True),
    Marker("harmony", "<|channel|>commentary<|message|>", always=True),
    Marker("harmony", "<|return|>", always=True),
    Marker("llama3", "<|eom_id|>", before=False),
    Marker("llama3", "<|eot_id|>", before=False),
    Marker("kimi_k2", "<|reserved_token_163595|>", before=True),  # the section tokens, decoded by id
    Marker("kimi_k2", "<|reserved_token_163596|>", before=False),
    Marker("functionary", "</tool_call>", before=False),  # Qwen3-Coder <function=…> without its <tool_call> opener
    Marker("harmony_text", "<|call|>", before=False),
)


def check_limits(blocks: tuple[Block, ...], markers: tuple[Marker, ...]) -> None:
    """Raise ValueError naming the entry if the table is outside the scanners' limits: every literal
    (an opener that is not a word opener, or a marker) ``LITERAL_MIN``–``LITERAL_MAX`` characters long
    and starting with an ASCII character; every closer at most ``LITERAL_MAX``; no character of a literal or
    closer above U+FFFF (the C scanner compares them as 2-byte text); every word opener's anchor one ASCII
    character; at most ``FIRST_CHARS_MAX`` distinct first characters in all; at most ``VALUES_MAX`` value tag
    pairs a block, each tag 2–``LITERAL_MAX`` characters long and starting with ``<``."""
    firsts = set()
    entries: tuple[Block | Marker, ...] = (*blocks, *markers)
    for entry in entries:
        if isinstance(entry, Block):
            if len(entry.values) > VALUES_MAX:
                raise ValueError(f"{entry.dialect}: at most {VALUES_MAX} value tag pairs a block")
            for tag in (
                *(t for pair in entry.values for t in pair),
                *[entry.value_head_end] * (entry.value_head_end != ">"),
            ):
                if not (LITERAL_MIN <= len(tag) <= LITERAL_MAX and tag[0] == "<") or max(map(ord, tag)) > 0xFFFF:
                    raise ValueError(f"{entry.dialect}: a value tag must be 2-40 BMP characters from '<': {tag!r}")
        literals = (entry.opener, entry.closer or "") if isinstance(entry, Block) else (entry.literal,)
        for literal in literals:
            if max(map(ord, literal), default=0) > 0xFFFF:
                raise ValueError(f"{entry.dialect}: a literal's characters must be in the BMP: {literal!r}")
        if isinstance(entry, Block) and entry.anchor is not None:
            if len(entry.anchor) != 1 or not entry.anchor.isascii():
                raise ValueError(
                    f"{entry.dialect}: a word opener's anchor must be one ASCII character: {entry.anchor!r}"
                )
            firsts.add(entry.anchor)
            continue
        text = entry.opener if isinstance(entry, Block) else entry.literal
        if isinstance(entry, Block) and entry.closer is not None and not 0 < len(entry.closer) <= LITERAL_MAX:
            raise ValueError(f"{entry.dialect}: a closer must be 1-{LITERAL_MAX} characters long: {entry.closer!r}")
        if not LITERAL_MIN <= len(text) <= LITERAL_MAX:
            raise ValueError(
                f"{entry.dialect}: a literal must be {LITERAL_MIN}-{LITERAL_MAX} characters long: {text!r}"
            )
        if not text[0].isascii():
            raise ValueError(f"{entry.dialect}: a literal must start with an ASCII character: {text!r}")
        firsts.add(text[0])
    if len(firsts) > FIRST_CHARS_MAX:
        raise ValueError(f"at most {FIRST_CHARS_MAX} distinct first characters, not {len(firsts)}: {sorted(firsts)}")


check_limits(BLOCKS, MARKERS)
