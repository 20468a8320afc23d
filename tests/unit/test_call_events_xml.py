"""Call events for Qwen3-Coder XML calls (``<function=NAME><parameter=KEY>VALUE</parameter>…</function>``) and GLM
calls (``NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>…``).

For any split: the pieces of each call join to the ``arguments`` ``parse`` gives (``json.dumps`` of the trimmed,
typed values), both implementations give the same events, the content is what it is without the option, and
a string value's unsent text is never more than its possible closing layout (``HELD``) and ``LAG`` characters;
with the body read in runs of ``PIECE_MIN`` characters (the default) and at every delta (``PIECE_MIN`` 1).
"""

import json
import re
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from textcalls import _events, parse
from textcalls.dialects.xml import trim_value
from textcalls.stream import ChunkRecovery, recover_stream

from ..conftest import IMPLS
from .test_call_events import (
    C_IMPL,
    PROSE,
    SETTINGS,
    assert_same_events_on_both,
    cuts_of,
    run,
    run_drawn,
    streamed,
    streamed_prefix,
)

_STRING = {"type": "string"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "parameters": {
                "properties": {"path": _STRING, "content": _STRING, "count": {"type": "integer"}, "mode": {}}
            },
        },
    },
    {"type": "function", "function": {"name": "edit", "parameters": {"properties": {"old": _STRING, "new": _STRING}}}},
]
KEYS = {"write_file": ["path", "content", "count", "mode"], "edit": ["old", "new"]}
LAG = 64  # the most a string value's unsent text may hold besides its possible closing layout
#: what a string value's end may still lose to the trim: a last line of spaces or tabs and its line break, a
#: last space or "\r"; or a run of blanks (a value may be only layout; a run read apart from the text before
#: it is held whole until what follows it is known), "\r" after it
HELD = re.compile(r"\r?\n[ \t]*|[ \t]+\r?|.?", re.S)

_FRAGMENTS = st.sampled_from(
    [
        "a < b",
        "x<y>z",
        "</param",
        "<parameter=",
        "</function",
        "</arg_val",
        "<arg_key",
        "<invoke",
        "</steptml:param",
        "<｜DSML｜param",
        "</|DSML|parameter",
        "<",
        "\\",
        '"',
        '{"k": "v"}',
        "\t",
        "\r\n",
        "é€😀",
        "\x01\x1f",
        "  ",
        "\n    ",
        " " * 40,  # runs of blanks longer than PIECE_MIN: read apart from the text around them
        "\t " * 20,
    ]
)
_strings = st.lists(st.one_of(st.text(alphabet="ab \n\t'\\{}é😀\r", max_size=8), _FRAGMENTS), max_size=6).map("".join)
#: values of blanks, line breaks and letters: the text the layout trim reads
_blank_strings = st.lists(
    st.one_of(
        st.text(alphabet=" \t\r\nab", max_size=8),
        st.sampled_from([" " * 40, "\t" * 33, " \t" * 20, "\n" + " " * 36, "\r\n" + "\t" * 35, "\r", " a "]),
    ),
    max_size=6,
).map("".join)
_integers = st.integers(-(10**6), 10**6).map(str)


DIALECTS = ["tool_call", "function", "glm", "glm-4.7", "seed", "minimax", "step3", "dsml", "dsml-ascii"]
OPEN = {
    "tool_call": "<tool_call>\n<function={name}>\n",
    "function": "<function={name}>\n",
    "glm": "<tool_call>{name}\n",
    "glm-4.7": "<tool_call>{name}",
    "seed": "<seed:tool_call>\n<function={name}>\n",
    "minimax": '<minimax:tool_call>\n<invoke name="{name}">\n',
    "step3": '<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="{name}">\n',
    "dsml": '<｜DSML｜function_calls>\n<｜DSML｜invoke name="{name}">\n',
    "dsml-ascii": '<|DSML|tool_calls>\n<|DSML|invoke name="{name}">\n',
}
CLOSE = {
    "tool_call": "</function>\n</tool_call>",
    "function": "</function>",
    "glm": "</tool_call>",
    "glm-4.7": "</tool_call>",
    "seed": "</function>\n</seed:tool_call>",
    "minimax": "</invoke>\n</minimax:tool_call>",
    "step3": "</steptml:invoke><｜tool_call_end｜>",
    "dsml": "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    "dsml-ascii": "</|DSML|invoke>\n</|DSML|tool_calls>",
}
#: a parameter's opening and closing tags, by dialect (Qwen3-Coder's otherwise)
PARAM = {
    "minimax": ('<parameter name="{key}">', "</parameter>"),
    "step3": ('<steptml:parameter name="{key}">', "</steptml:parameter>"),
    "dsml": ('<｜DSML｜parameter name="{key}">', "</｜DSML｜parameter>"),
    "dsml-ascii": ('<|DSML|parameter name="{key}">', "</|DSML|parameter>"),
}


@st.composite
def transcripts(draw, strings=_strings):
    """``(text, [[(key, value, offset of the value or None, indented), …] per call]``): prose, Qwen3-Coder (in
    ``<tool_call>``, ``<function=…>`` and Seed-OSS blocks), GLM, MiniMax-M2, Step-3 and DSML calls.

    An offset is given for a value that its layout trims to itself (``<parameter=KEY>\\nVALUE\\n</parameter>``,
    ``<arg_value>VALUE</arg_value>``)."""
    parts, calls, size = [], [], 0

    def put(text):
        nonlocal size
        parts.append(text)
        size += len(text)

    for _ in range(draw(st.integers(1, 3))):
        put(draw(st.sampled_from(PROSE)))
        name = draw(st.sampled_from(sorted(KEYS)))
        dialect = draw(st.sampled_from(DIALECTS))
        put(OPEN[dialect].format(name=name))
        params = []
        # (a call without parameters is not streamed: a <function=NAME> block of it is JSON, a GLM one is a name)
        keys = draw(
            st.lists(
                st.sampled_from(KEYS[name]), unique=True, min_size=dialect in ("function", "glm", "glm-4.7"), max_size=3
            )
        )
        for key in keys:
            value = draw(_integers if key == "count" else strings)
            opening, closing = PARAM.get(dialect, ("<parameter={key}>", "</parameter>"))
            opening = opening.format(key=key)
            if dialect.startswith("glm"):
                sep = "\n" if dialect == "glm" else ""
                put(f"<arg_key>{key}</arg_key>{sep}<arg_value>")
                offset = size if key != "count" and trim_value(value) == value else None
                put(f"{value}</arg_value>{sep}")
            elif dialect.startswith("dsml") and draw(st.booleans()):  # DSML's string="true": the value as written
                put(f'{opening[:-1]} string="true">')
                offset = size
                put(f"{value}{closing}\n")
            elif draw(st.booleans()):
                put(f"{opening}\n")
                offset = size if key != "count" and trim_value(f"\n{value}\n") == value else None
                put(f"{value}\n{closing}\n")
            else:  # written inline: trimmed by the one-space rule, no lag check
                put(f"{opening}{value}{closing}\n")
                offset = None
            # written right before a closing tag after a line break and indentation: the value is dedented
            # (unless written as a DSML string="true", whose offset is never None)
            indented = bool(re.search(r"\n[ \t]+\Z", value)) and (dialect.startswith("glm") or offset is None)
            params.append((key, value, offset, indented))
        put(CLOSE[dialect])
        calls.append(params)
    put(draw(st.sampled_from(PROSE)))
    return "".join(parts), calls


def _partial(arguments):
    """The parameters sent so far: ``arguments`` (a prefix of an object's text, cut between escapes) read."""
    if not arguments:
        return {}
    for end in ("", '"}', "}", "null}"):
        try:
            return json.loads(arguments + end)
        except ValueError:
            continue
    raise AssertionError(f"not a prefix of an arguments object: {arguments!r}")


def check_lag(calls, events, marks):
    """After every feed, each string value's unsent text is its held end (``HELD``) and at most ``LAG`` more."""
    for fed, seen in marks:
        so_far = streamed_prefix(events[:seen])
        for j, params in enumerate(calls):
            sent = _partial("".join(so_far[j])) if j < len(so_far) else {}
            for key, value, offset, *_ in params:
                if offset is None:
                    continue
                received = value[: max(fed - offset, 0)]
                got = sent.get(key, "")
                assert value.startswith(got), (key, got)
                unsent = received[len(got) :]
                held = HELD.match(unsent)
                assert held is not None and len(unsent) - held.end() <= LAG, (fed, key, unsent)


@pytest.mark.parametrize("mod", IMPLS)
@SETTINGS
@given(transcripts(), st.data())
def test_any_split_streams_each_call_as_parse_reads_it(mod, transcript, data):
    assert_streams_as_parse_reads(mod, transcript, data)


@pytest.mark.parametrize("mod", IMPLS)
@SETTINGS
@given(transcripts(_blank_strings), st.data())
def test_any_split_of_blank_layouts_streams_as_parse_reads_it(mod, transcript, data):
    # values of blanks, tabs, "\r", "\n" and letters, with runs of blanks longer than a run read: what the
    # trim removes (a leading line break, a closing tag's indentation, one space) is never sent
    assert_streams_as_parse_reads(mod, transcript, data)


def assert_streams_as_parse_reads(mod, transcript, data):
    """``transcript`` cut as ``data`` draws: each call's pieces join to the arguments ``parse`` gives, within the lag."""
    text, written = transcript
    cuts = cuts_of(data, text)
    content, events, marks, scrubber = run_drawn(data, mod, text, cuts, tools=TOOLS, stream_arguments=True)
    whole = parse(text, tools=TOOLS)
    calls = streamed(events)
    assert [(c.name, c.arguments) for c in scrubber.calls] == [(c.name, c.arguments) for c in whole.calls]
    for index, call_id, name, pieces, end in calls:
        if end == "ended":
            final = scrubber.calls[index]
            assert (final.id, final.name, final.arguments) == (call_id, name, "".join(pieces))
            assert json.loads("".join(pieces)) == json.loads(whole.calls[index].arguments)
    assert scrubber.abandoned == sum(c[4] == "abandoned" for c in calls)
    # A '"' after a '{' in a value starts a JSON string to the scanner of a block that reads JSON (<tool_call>,
    # <function=…>), which may then miss the closer: the block ends later, and the blocks after it are not
    # streamed (as for JSON bodies). A closing tag indented dedents the value: the call is abandoned. Without
    # either, every call streams and ends as parse reads it, within the lag.
    if not any('"' in value or indented for params in written for _, value, _, indented in params):
        assert len(calls) == len(whole.calls) == len(written) and scrubber.abandoned == 0
        check_lag(written, events, marks)
    # the option changes no content, no call and no count
    off_content, off_events, _, off = run(mod, text, cuts, tools=TOOLS)
    assert off_events == [] and off.abandoned == 0
    assert (content, scrubber.calls, scrubber.removed) == (off_content, off.calls, off.removed)


@pytest.mark.skipif(C_IMPL is None, reason="the Cython extension is disabled")
@SETTINGS
@given(transcripts(), st.data())
def test_cython_and_twin_give_the_same_events(transcript, data):
    option_sets = ({"tools": TOOLS}, {}, {"tools": TOOLS[1:], "unknown_tools": "drop"})
    assert_same_events_on_both(data, transcript[0], option_sets)


def _write_file(content):
    return (
        f"I will write it.\n<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/app.py\n</parameter>\n"
        f"<parameter=content>\n{content}\n</parameter>\n</function>\n</tool_call>"
    )


CODE = "".join(f'    line {i}: "quoted" \\ tab\t <b> é {{x}}\n' for i in range(500))[:17499] + "!"


def _deltas(text, sizes=(3, 4, 5, 6)):
    cuts, at, k = [], 0, 0
    while at < len(text):
        at = min(at + sizes[k % len(sizes)], len(text))
        cuts.append(at)
        k += 1
    return cuts


def test_a_long_write_file_streams_as_it_is_written(impl):
    text = _write_file(CODE)
    cuts = _deltas(text)
    _, events, marks, scrubber = run(impl, text, cuts, tools=TOOLS, stream_arguments=True)
    ((index, _, name, pieces, end),) = streamed(events)
    arguments = json.dumps({"path": "src/app.py", "content": CODE}, ensure_ascii=False)
    assert (index, name, end, "".join(pieces)) == (0, "write_file", "ended", arguments)
    assert len(CODE) == 17500 and scrubber.calls[0].arguments == parse(text, tools=TOOLS).calls[0].arguments
    assert len(pieces) > len(CODE) // 64  # pieces per run of PIECE_MIN characters or more, not one at the end
    offset = text.index(CODE)
    check_lag([[("path", "src/app.py", text.index("src/app.py")), ("content", CODE, offset)]], events, marks)
    # half the file fed: well over 8000 of its characters are out
    half = next(seen for fed, seen in marks if fed >= offset + 8750)
    assert len(json.loads("".join(streamed_prefix(events[:half])[0]) + '"}')["content"]) > 8700


def test_the_sdk_rebuilds_the_call_of_the_option_off(impl):
    pytest.importorskip("openai", reason="the client side is the openai SDK's accumulator")
    from ..gateway.test_stream_arguments import accumulate, chunks_of, entries

    text = _write_file(CODE[:3000])
    chunks = chunks_of(text, _deltas(text))
    on = list(recover_stream(chunks, native=True, has_tools=True, tools=TOOLS, stream_arguments=True))
    off = list(recover_stream(chunks, native=True, has_tools=True, tools=TOOLS))
    on_content, on_calls, on_finish = accumulate(on)
    off_content, off_calls, off_finish = accumulate(off)
    assert (on_content, on_finish) == (off_content, off_finish) == ("I will write it.\n", "tool_calls")
    assert [c[1:] for c in on_calls] == [c[1:] for c in off_calls]
    assert on_calls[0][1:] == ("write_file", parse(text, tools=TOOLS).calls[0].arguments)
    pieces = [e["function"]["arguments"] for e in entries(on)]
    assert len(pieces) > 3000 // 64 and pieces[0] == ""  # the start, then the arguments in runs
    machine = ChunkRecovery(native=True, has_tools=True, tools=TOOLS, stream_arguments=True)
    for c in chunks:
        machine.push(c)
    machine.close()
    assert (machine.recovered, machine.abandoned) == (1, 0)


def _one(impl, text, cuts=None, **options):
    content, events, _, scrubber = run(impl, text, cuts or [len(text)], stream_arguments=True, **options)
    return content, streamed(events), scrubber


def _calls_of(impl, text, **options):
    """Each started call's (joined pieces, how it ended), fed one character at a time and read at every one."""
    with mock.patch.object(_events, "PIECE_MIN", 1):
        content, calls, scrubber = _one(impl, text, list(range(1, len(text) + 1)), **options)
    whole = parse(text, **options)
    assert (content.strip(), scrubber.calls) == (whole.content, whole.calls)
    return [("".join(c[3]), c[4]) for c in calls], scrubber


def test_pieces_are_escaped_and_held_as_the_trim_needs(impl, per_delta):
    scrubber = impl.StreamScrubber(tools=TOOLS, stream_arguments=True)
    scrubber.feed("<tool_call>\n<function=edit>\n<parameter=old>")
    assert [e[0] for e in scrubber.take_events()] == ["started", "arguments"]  # {"old": "
    scrubber.feed("\n")  # the leading line break: dropped
    scrubber.feed('say "hi"\tnow\n')  # the line break may be the trailing one: held
    assert scrubber.take_events() == [("arguments", 0, 'say \\"hi\\"\\tnow')]
    scrubber.feed("  ")  # spaces after it may be the closing tag's indentation
    assert scrubber.take_events() == []
    scrubber.feed("x ")  # not indentation: out, but for a last space (one may be collapsed)
    assert scrubber.take_events() == [("arguments", 0, "\\n  x")]
    scrubber.feed("\n</param")  # a closing tag forming
    assert scrubber.take_events() == [("arguments", 0, " ")]
    scrubber.feed("eter>\n</function>")  # the object's "}" waits for the block's end
    assert scrubber.take_events() == [("arguments", 0, '"')]
    scrubber.feed("\n</tool_call>")
    assert scrubber.take_events() == [("arguments", 0, "}"), ("ended", 0)]
    assert scrubber.calls[0].arguments == json.dumps({"old": 'say "hi"\tnow\n  x '}, ensure_ascii=False)


def test_runs_of_blanks_are_held_until_what_follows_them_is_known(impl, per_delta):
    scrubber = impl.StreamScrubber(tools=TOOLS, stream_arguments=True)
    steps = [
        ("<tool_call>\n<function=edit>\n<parameter=old>", ['{"old": "']),
        # blanks first: they may come before the leading line break, or be all the value (trimmed to "")
        (" \t", []),
        (" \t", []),
        (" \ta", [" \\t \\t \\ta"]),  # not a space before a character: kept (rule 4)
        # blanks after the text sent: held, read with what follows them
        ("  ", []),
        ("  ", []),
        ("\r", ["    "]),  # a "\r" that may precede the trailing line break: held
        (" ", ["\\r"]),  # not blanks: read with the "\r", a last space held
        ("\n", [" "]),
        ("\t\t", []),  # a last line of blanks: may be the closing tag's indentation
        ("\t\t", []),
        ("\r", ["\\n\\t\\t\\t\\t"]),  # not blanks: the line is text, but for a "\r" that may precede a break
        ("\n", []),
        ("</parameter>\n<parameter=new>", ['"', ', "new": "']),
        ("  ", []),
        ("\r", []),  # blanks and "\r": may be a leading line break yet
        ("  ", ["  \\r "]),  # not one: the value's text, but for a last space
        ("b\n</parameter>\n</function>", [" b", '"']),  # the object's "}" waits for the block's end
    ]
    for delta, pieces in steps:
        scrubber.feed(delta)
        assert [e[2] for e in scrubber.take_events() if e[0] == "arguments"] == pieces, delta
    scrubber.feed("\n</tool_call>")
    assert scrubber.take_events() == [("arguments", 0, "}"), ("ended", 0)]
    arguments = json.dumps({"old": " \t \t \ta    \r \n\t\t\t\t", "new": "  \r  b"}, ensure_ascii=False)
    assert scrubber.calls[0].arguments == arguments


BLANKS = 1_000_000
#: shape -> (a call whose string value holds a run of BLANKS blanks at ``{}``, that value as parse reads it,
#: the blanks the run repeats)
LONG_BLANKS = {
    # the run on a last line: it may be the closing tag's indentation until the line ends
    "trailing": (
        "<tool_call>\n<function=edit>\n<parameter=old>\nx\n{}\n</parameter>\n</function>\n</tool_call>",
        "x\n{}",
        " ",
    ),
    # the run first: it may come before a leading line break, or be the whole value
    "leading": ("<tool_call>\n<function=edit>\n<parameter=old>{}x</parameter>\n</function>\n</tool_call>", "{}x", " "),
    "minimax-tabs": (
        '<minimax:tool_call><invoke name="edit"><parameter name="old">{}x</parameter></invoke></minimax:tool_call>',
        "{}x",
        "\t",
    ),
    # the run after text on its line (GLM)
    "inner": ("<tool_call>edit<arg_key>old</arg_key><arg_value>a{}b</arg_value></tool_call>", "a{}b", " \t"),
}


@pytest.mark.parametrize("shape", sorted(LONG_BLANKS))
def test_long_runs_of_blanks_stay_linear(impl, shape):
    # Each run of the body read while blanks were held copied and scanned all the blanks held: a megabyte of
    # them fed in small deltas took minutes per call; the suite would hang otherwise.
    text, value, blank = LONG_BLANKS[shape]
    blanks = blank * (BLANKS // len(blank))
    text, value = text.format(blanks), value.format(blanks)
    content, calls, scrubber = _one(impl, text, _deltas(text, sizes=(5, 7, 11, 13)), tools=TOOLS)
    ((index, _, name, pieces, end),) = calls
    arguments = json.dumps({"old": value}, ensure_ascii=False)
    assert (index, name, end, content) == (0, "edit", "ended", "")
    assert "".join(pieces) == scrubber.calls[0].arguments == parse(text, tools=TOOLS).calls[0].arguments == arguments


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        # no parameters
        ("<tool_call>\n<function=edit>\n</function>\n</tool_call>", "{}"),
        # a closing tag followed by text is text of the value, when a real one comes later
        (
            "<tool_call>\n<function=edit>\n<parameter=old>\nif a</parameter> b:\n</parameter>\n</function>\n</tool_call>",
            '{"old": "if a</parameter> b:"}',
        ),
        # an unclosed value ends at a parameter tag that starts a line
        (
            "<function=edit>\n<parameter=old>\nx\n<parameter=new>\ny\n</parameter>\n</function>",
            '{"old": "x", "new": "y"}',
        ),
        # the one-space rule, a tag inside a value, the integer typed by the schema, a parameter without schema
        (
            "<function=write_file><parameter=path> a.py </parameter><parameter=content>x = '<tool>'"
            "</parameter><parameter=count> 7\n</parameter><parameter=mode>\n 0644\n</parameter></function>",
            '{"path": "a.py", "content": "x = \'<tool>\'", "count": 7, "mode": " 0644"}',
        ),
        # the closing tag's indentation is dropped; no dedent when not every line starts with it
        ("<tool_call><function=edit><parameter=old>\na\nb\n  </parameter></function></tool_call>", '{"old": "a\\nb"}'),
        ("<tool_call><function=edit><parameter=old>\n</parameter></function></tool_call>", '{"old": ""}'),
        # the call's closing tag left out
        ("<tool_call>\n<function=edit>\n<parameter=old>\nx\n</parameter>\n</tool_call>", '{"old": "x"}'),
    ],
)
def test_layouts_stream_to_what_parse_reads(impl, text, arguments):
    calls, scrubber = _calls_of(impl, text, tools=TOOLS)
    assert calls == [(arguments, "ended")] and scrubber.calls[0].arguments == arguments


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        # pretty-printed tags: the value is dedented, so what was sent differs (rare: Qwen3-Coder writes
        # its closing tags at the start of a line)
        (
            "<tool_call>\n<function=edit>\n  <parameter=old>\n    if x:\n      y\n    </parameter>\n</function>"
            "\n</tool_call>",
            '{"old": "    if x:\\n      y',
        ),
        # a repeated key keeps its first place and its last value
        (
            "<function=edit>\n<parameter=old>\na\n</parameter>\n<parameter=old>\nb\n</parameter>\n</function>",
            '{"old": "a"',
        ),
        # text between parameters: malformed
        # text after a closing tag: read as text of the value (no other closing tag came: malformed)
        (
            "<tool_call>\n<function=edit>\n<parameter=old>\na\n</parameter>\noops\n</function>\n</tool_call>",
            '{"old": "a\\n</parameter>\\noops',
        ),
    ],
)
def test_calls_read_otherwise_are_abandoned(impl, text, sent):
    calls, scrubber = _calls_of(impl, text, tools=TOOLS)
    assert calls == [(sent, "abandoned")] and scrubber.abandoned == 1


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("<tool_call>\n<function=rm>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>", {"tools": TOOLS}),
        ("<function=rm>\n<parameter=a>\n1\n</parameter>\n", {"tools": TOOLS, "unknown_tools": "drop"}),
        ("<tool_call>\n<function=edit bad>\n</function>\n</tool_call>", {}),  # not a name
        ("<tool_call>\n<tool>\n</tool_call>", {}),  # not a call tag
        ("<think><tool_call>\n<function=edit>\n</function>\n</tool_call></think>Hi", {}),  # a rehearsal
        ('<minimax:tool_call><invoke nam="edit">\n</invoke></minimax:tool_call>', {}),  # no name attribute
        ('<minimax:tool_call>\n<invoke name="rm">\n</invoke>\n</minimax:tool_call>', {"tools": TOOLS}),  # not offered
        (
            '<｜tool_call_begin｜>search<｜tool_sep｜><steptml:invoke name="edit"></steptml:invoke><｜tool_call_end｜>',
            {},
        ),
    ],
)
def test_calls_that_do_not_start_have_no_events(impl, text, options):
    calls, scrubber = _calls_of(impl, text, **options)
    assert (calls, scrubber.abandoned) == ([], 0)


def test_unknown_tools_accept_streams_any_name(impl):
    text = "<tool_call>\n<function=rm>\n<parameter=path>\n/tmp\n</parameter>\n</function>\n</tool_call>"
    calls, _ = _calls_of(impl, text, tools=TOOLS, unknown_tools="accept")
    assert calls == [('{"path": "/tmp"}', "ended")]


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        # GLM-4.5/4.6: a line break between the tags; the integer typed by the schema
        (
            "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a.py</arg_value>\n<arg_key>count</arg_key>\n"
            "<arg_value>7</arg_value>\n</tool_call>",
            '{"path": "a.py", "count": 7}',
        ),
        # GLM-4.7: no line breaks, or a backslash-n written out between key and value; a value of lines
        (
            '<tool_call>edit<arg_key>old</arg_key>\\n<arg_value>a "b"\n\tc</arg_value></tool_call>',
            '{"old": "a \\"b\\"\\n\\tc"}',
        ),
        # GLM-4.7's compact body: whitespace is data, no layout trimmed (CanIToolCall
        # glm/glm47-significant-whitespace); GLM-4.5's line-broken one keeps the trim
        (
            "<tool_call>edit<arg_key>old</arg_key><arg_value>  two  spaces\n</arg_value>"
            "<arg_key>new</arg_key><arg_value>\nx\n</arg_value></tool_call>",
            '{"old": "  two  spaces\\n", "new": "\\nx\\n"}',
        ),
        (
            "<tool_call>edit\n<arg_key>old</arg_key>\n<arg_value>\nx\n</arg_value>\n</tool_call>",
            '{"old": "x"}',
        ),
        # a closing tag followed by text is text of the value; an unclosed value ends at the next key
        (
            "<tool_call>edit<arg_key>old</arg_key><arg_value>x</arg_value>y</arg_value>"
            "<arg_key>new</arg_key><arg_value>z<arg_key>k</arg_key><arg_value>1</arg_value></tool_call>",
            '{"old": "x</arg_value>y", "new": "z", "k": "1"}',
        ),
    ],
)
def test_glm_calls_stream_to_what_parse_reads(impl, text, arguments):
    calls, scrubber = _calls_of(impl, text, tools=TOOLS, unknown_tools="accept")
    assert calls == [(arguments, "ended")] and scrubber.calls[0].arguments == arguments


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>edit<arg_key>old</arg_key>x</arg_value></tool_call>",  # <arg_value> left out: read whole
        "<tool_call>edit\n</tool_call>",  # no arguments
        "<tool_call>rm<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",  # not offered
        "<tool_call>a b\nc<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",  # not a name
    ],
)
def test_glm_calls_that_do_not_start(impl, text):
    calls, scrubber = _calls_of(impl, text, tools=TOOLS)
    assert (calls, scrubber.abandoned) == ([], 0)


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        # MiniMax-M2: names in attributes (quoted or not), the integer typed by the schema, a value of lines
        (
            '<minimax:tool_call>\n<invoke name="write_file">\n<parameter name=path>a.py</parameter>\n'
            "<parameter name='count'>7</parameter>\n<parameter name=\"content\">\nx = 1\n\ty\n</parameter>\n"
            "</invoke>\n</minimax:tool_call>",
            '{"path": "a.py", "count": 7, "content": "x = 1\\n\\ty"}',
        ),
        # Step-3: the type and separator before the invoke, or the invoke at once
        (
            '<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="edit"><steptml:parameter name="old">'
            "a\nb</steptml:parameter></steptml:invoke><｜tool_call_end｜>",
            '{"old": "a\\nb"}',
        ),
        (
            '<｜tool_call_begin｜> <steptml:invoke name="edit">\n<steptml:parameter name="old">\n a </steptml:parameter>\n'
            "</steptml:invoke><｜tool_call_end｜>",
            '{"old": " a"}',  # the leading break dropped, its space kept; one space before the tag collapsed
        ),
        # DSML: string="true" as written (no trim), string="false" JSON, neither: trimmed and typed by the schema
        (
            '<｜DSML｜function_calls>\n<｜DSML｜invoke name="write_file">\n<｜DSML｜parameter name="path" string="true">'
            ' a.py\n</｜DSML｜parameter>\n<｜DSML｜parameter name="mode" string="false">{"x": [1, 2.5]}'
            '</｜DSML｜parameter>\n<｜DSML｜parameter name="count">\n3\n</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
            "</｜DSML｜function_calls>",
            '{"path": " a.py\\n", "mode": {"x": [1, 2.5]}, "count": 3}',
        ),
        # the ASCII bar; a V4 invoke holding a JSON object: started at the invoke, its arguments at the end
        (
            '<|DSML|tool_calls><|DSML|invoke name="edit">{"old": "a"}</|DSML|invoke></|DSML|tool_calls>',
            '{"old": "a"}',
        ),
        # Seed-OSS: Qwen3-Coder XML in its own block
        (
            "<seed:tool_call>\n<function=edit>\n<parameter=old>\nif x:\n</parameter>\n</function>\n</seed:tool_call>",
            '{"old": "if x:"}',
        ),
    ],
)
def test_attribute_and_seed_calls_stream_to_what_parse_reads(impl, text, arguments):
    calls, scrubber = _calls_of(impl, text, tools=TOOLS)
    assert calls == [(arguments, "ended")] and scrubber.calls[0].arguments == arguments


def test_a_block_of_several_calls_streams_its_first_and_sends_the_others_whole(impl):
    text = (
        '<minimax:tool_call>\n<invoke name="edit">\n<parameter name="old">a</parameter>\n</invoke>\n'
        '<invoke name="write_file">\n<parameter name="path">b.py</parameter>\n</invoke>\n</minimax:tool_call>'
    )
    calls, scrubber = _calls_of(impl, text, tools=TOOLS)
    assert calls == [('{"old": "a"}', "ended")]  # the second call has no events: it is in calls, whole
    assert [(c.name, c.arguments) for c in scrubber.calls] == [
        ("edit", '{"old": "a"}'),
        ("write_file", '{"path": "b.py"}'),
    ]
    chunks_text = "Sure.\n" + text
    from ..gateway.test_stream_arguments import accumulate, chunks_of, entries

    on = list(
        recover_stream(
            chunks_of(chunks_text, _deltas(chunks_text)),
            native=True,
            has_tools=True,
            tools=TOOLS,
            stream_arguments=True,
        )
    )
    sent = entries(on)
    assert [(e["index"], e["function"].get("name")) for e in sent if "id" in e] == [(0, "edit"), (1, "write_file")]
    assert sent[-1] == {**sent[-1], "index": 1, "function": {"name": "write_file", "arguments": '{"path": "b.py"}'}}
    assert accumulate(on)[1:] == (
        [(sent[0]["id"], "edit", '{"old": "a"}'), (sent[-1]["id"], "write_file", '{"path": "b.py"}')],
        "tool_calls",
    )


V41 = (
    '<｜DSML｜ calls>\n<｜DSML｜ invoke name="edit">\n<｜DSML｜ parameter name="old" string="true">a "b"\n'
    "c</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls> done"
)


@pytest.mark.parametrize("step", [1, 2, 5, len(V41)])
def test_dsml_v41_streams_its_call(impl, per_delta, step):
    # DeepSeek V4.1's spaced tags stream like V3.2/V4's: a call started at its invoke, pieces as the value comes
    scrubber = impl.StreamScrubber(tools=TOOLS, stream_arguments=True)
    out = "".join(scrubber.feed(V41[i : i + step]) for i in range(0, len(V41), step)) + scrubber.flush()
    events = scrubber.take_events()
    assert out == " done" and [e[0] for e in events][:: len(events) - 1] == ["started", "ended"]
    pieces = [e[2] for e in events if e[0] == "arguments"]
    assert "".join(pieces) == scrubber.calls[0].arguments == json.dumps({"old": 'a "b"\nc'}, ensure_ascii=False)
    if step == 1:
        assert len(pieces) > 3  # streamed as it came, not whole at the end
