"""Call events (``stream_arguments=True``): the arguments of JSON-bodied calls streamed as they arrive.

For any split: the pieces of each call that ends join to its final ``arguments`` (those ``parse`` gives),
both implementations give the same events, the content is what it is without the option, and the
pieces are never more than ``LAG`` characters behind the text fed. The properties hold with the body read
in runs of ``PIECE_MIN`` characters (the default) and at every delta (``PIECE_MIN`` 1: the reader's own rules).
"""

import json
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from textcalls import Options, _events, _scan_py, parse
from textcalls.toolcall import new_call_id

from ..conftest import IMPLS

TOOLS = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("f", "get_weather", "write_file")]
LAG = 64  # the most the pieces may trail the text fed
FRESH = new_call_id()[:-10]  # this process's prefix of fresh ids
C_IMPL = next((p.values[0] for p in IMPLS if p.id == "c"), None)

# dialect -> (text before the arguments object, text after it), for a tool name
DIALECTS = {
    "hermes": lambda n: (f'<tool_call>\n{{"name": "{n}", "arguments": ', "}\n</tool_call>"),
    "hermes-compact": lambda n: (f'<tool_call>{{"name":"{n}","parameters":', "}</tool_call>"),
    "longcat": lambda n: (f'<longcat_tool_call>{{"name": "{n}", "arguments": ', "}</longcat_tool_call>"),
    "deepseek-v3.1": lambda n: (
        f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{n}<｜tool▁sep｜>",
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    ),
    "deepseek-ascii": lambda n: (f"<|tool▁call▁begin|>{n}<|tool▁sep|>", "<|tool▁call▁end|>"),
    "deepseek-v3": lambda n: (
        f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n",
        "\n```<｜tool▁call▁end｜>",
    ),
    "deepseek-object": lambda n: (f'<｜tool▁call▁begin｜>{{"name": "{n}", "arguments": ', "}<｜tool▁call▁end｜>"),
    "kimi-k2": lambda n: (
        f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{n}:0<|tool_call_argument_begin|>",
        "<|tool_call_end|><|tool_calls_section_end|>",
    ),
    "kimi-k2-reserved": lambda n: (
        f"<|reserved_token_163597|>functions.{n}:3<|reserved_token_163598|>",
        "<|reserved_token_163599|>",
    ),
    "kimi-k2-spaced": lambda n: (f"<|tool_call_begin|>{n}:1 ", "<|tool_call_end|>"),
    "functionary": lambda n: (f"<function={n}>", "</function>"),
    "functionary-name": lambda n: (f'<function name="{n}">\n', "\n</function>"),
    "mistral": lambda n: (f"[TOOL_CALLS]{n}", ""),
    "mistral-args": lambda n: (f"[TOOL_CALLS]{n}[ARGS]", ""),
    "mistral-call-id": lambda n: (f"[TOOL_CALLS]{n}[CALL_ID]a1B2c3D4e[ARGS]", ""),
    "dsml-toolcall": lambda n: (f"<｜DSML｜toolcall>{n}\n```json\n", "\n```</｜DSML｜toolcall>"),
}
PROSE = ["", " ", "Let me check.\n", "ok, ", "\n\n", "Done: é€😀 ", "a < b and c > d. "]

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.sampled_from([0.5, -1.25, 3.0, 100.125]),
    st.text(max_size=12),
    st.sampled_from(["</tool_call>", '"', "\\", "\\u00e9", "<｜tool▁call▁end｜>", "{[", "}]", "\n"]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_objects = st.dictionaries(st.text(max_size=8), _values, max_size=4)
_styles = st.sampled_from(
    [
        {},
        {"separators": (",", ":")},
        {"ensure_ascii": False},
        {"indent": 2},
        {"ensure_ascii": False, "separators": (",", ":")},
    ]
)


@st.composite
def transcripts(draw):
    """``(text, [(offset of the arguments' "{", arguments text), …])``: prose and calls."""
    parts, calls, size = [], [], 0
    for _ in range(draw(st.integers(1, 3))):
        lead = draw(st.sampled_from(PROSE))
        before, after = DIALECTS[draw(st.sampled_from(sorted(DIALECTS)))](draw(st.sampled_from(["f", "get_weather"])))
        arguments = json.dumps(draw(_objects), **draw(_styles))
        size += len(lead) + len(before)
        calls.append((size, arguments))
        parts += [lead, before, arguments, after]
        size += len(arguments) + len(after)
    parts.append(draw(st.sampled_from(PROSE)))
    return "".join(parts), calls


def cuts_of(data, text):
    """Up to 12 cuts of ``text`` as ``data`` draws them, its end included."""
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    return sorted(set(cuts) | {len(text)})


def run(mod, text, cuts, **options):
    """Feed ``text`` cut at ``cuts``: (content, events, [(characters fed, events so far)], scrubber)."""
    scrubber = mod.StreamScrubber(**options)
    content, events, marks, start = [], [], [], 0
    for cut in cuts:
        content.append(scrubber.feed(text[start:cut]))
        events += scrubber.take_events()
        marks.append((cut, len(events)))
        start = cut
    content.append(scrubber.flush())
    events += scrubber.take_events()
    return "".join(content), events, marks, scrubber


def streamed(events):
    """``[(index, id, name, pieces, end)]`` per started call, checking the order of its events."""
    out, current = [], None
    for event in events:
        if event[0] == "started":
            assert current is None, "a call started while another was open"
            current = [event[1], event[2], event[3], [], None]
        else:
            assert current is not None and event[1] == current[0], event
            if event[0] == "arguments":
                assert event[2], "an empty piece"
                current[3].append(event[2])
            else:
                assert event[0] in ("ended", "abandoned")
                current[4] = event[0]
                out.append(tuple(current))
                current = None
    assert current is None, "a call left open at the end"
    return out


def _no_open_escape(prefix):
    """Whether ``prefix`` of arguments text does not end inside a string escape."""
    in_str, k = False, 0
    while k < len(prefix):
        c = prefix[k]
        if in_str and c == "\\":
            size = 6 if prefix.startswith("u", k + 1) else 2
            if k + size > len(prefix):
                return False
            k += size
            continue
        if c == '"':
            in_str = not in_str
        k += 1
    return True


def _normal(events):
    """Events with fresh ids (different per scrubber) replaced by their order of appearance."""
    ids: dict = {}
    out = []
    for e in events:
        if e[0] == "started" and e[2].startswith(FRESH):
            e = (e[0], e[1], ids.setdefault(e[2], f"fresh{len(ids)}"), e[3])
        out.append(e)
    return out


def run_drawn(data, mod, text, cuts, **options):
    """``run``, the body of a started call read in runs of ``PIECE_MIN`` characters or at every delta, as
    ``data`` draws."""
    with mock.patch.object(_events, "PIECE_MIN", data.draw(st.sampled_from([1, _events.PIECE_MIN]))):
        return run(mod, text, cuts, **options)


def assert_same_events_on_both(data, text, option_sets):
    """Cython and the twin give the same content, events (fresh ids in order of appearance), calls and count of
    abandoned calls for ``text`` cut as ``data`` draws, under each of ``option_sets`` (``stream_arguments`` on)."""
    cuts = cuts_of(data, text)
    piece_min = data.draw(st.sampled_from([1, _events.PIECE_MIN]))
    for options in option_sets:
        with mock.patch.object(_events, "PIECE_MIN", piece_min):
            c_run = run(C_IMPL, text, cuts, stream_arguments=True, **options)
            py_run = run(_scan_py, text, cuts, stream_arguments=True, **options)
        assert c_run[0] == py_run[0]
        assert _normal(c_run[1]) == _normal(py_run[1])
        assert c_run[3].calls == py_run[3].calls and c_run[3].abandoned == py_run[3].abandoned


SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("mod", IMPLS)
@SETTINGS
@given(transcripts(), st.data())
def test_any_split_streams_each_call_as_parse_reads_it(mod, transcript, data):
    text, written = transcript
    cuts = cuts_of(data, text)
    content, events, marks, scrubber = run_drawn(data, mod, text, cuts, tools=TOOLS, stream_arguments=True)
    whole = parse(text, tools=TOOLS)
    calls = streamed(events)
    assert [c.name for c in whole.calls] == [c.name for c in scrubber.calls] == [c[2] for c in calls]
    assert len(calls) == len(written)  # every call was streamed
    for index, call_id, name, pieces, end in calls:
        assert end == "ended" and scrubber.abandoned == 0
        final = scrubber.calls[index]
        assert (final.id, final.name, final.arguments) == (call_id, name, "".join(pieces))
        assert final.arguments == whole.calls[index].arguments
        assert json.loads("".join(pieces)) == json.loads(whole.calls[index].arguments)
        if not call_id.startswith(FRESH):  # an id written in the body: parse keeps it too
            assert call_id == whole.calls[index].id
        joined = ""
        for piece in pieces:
            joined += piece
            assert _no_open_escape(joined)
    # the pieces trail what was fed by at most LAG characters (the j-th call is the j-th written)
    for fed, seen in marks:
        so_far = streamed_prefix(events[:seen])
        for j, (offset, arguments) in enumerate(written):
            due = min(max(fed - offset, 0), len(arguments))
            got = len("".join(so_far[j])) if j < len(so_far) else 0
            assert got >= due - LAG, (j, fed, due, got)
    # the option changes no content, no call and no count
    off_content, off_events, _, off = run(mod, text, cuts, tools=TOOLS)
    assert off_events == [] and off.abandoned == 0
    assert (content, scrubber.calls, scrubber.removed) == (off_content, off.calls, off.removed)


def streamed_prefix(events):
    """The pieces of each call started so far, in order (calls may still be open)."""
    calls = []
    for event in events:
        if event[0] == "started":
            calls.append([])
        elif event[0] == "arguments":
            calls[-1].append(event[2])
    return calls


@pytest.mark.skipif(C_IMPL is None, reason="the Cython extension is disabled")
@SETTINGS
@given(transcripts(), st.data())
def test_cython_and_twin_give_the_same_events(transcript, data):
    option_sets = ({"tools": TOOLS}, {}, {"tools": TOOLS[:1], "unknown_tools": "drop"})
    assert_same_events_on_both(data, transcript[0], option_sets)


def test_a_long_write_file_streams_within_the_lag(impl):
    content = "".join(f'line {i}: "quoted" \\ tab\t <tool_call> é\n' for i in range(500))[:17500]
    arguments = json.dumps({"path": "src/app.py", "content": content})
    text = f'I will write it.\n<tool_call>\n{{"name": "write_file", "arguments": {arguments}}}\n</tool_call>'
    offset = text.index(arguments)
    cuts = list(range(0, len(text), 7)) + [len(text)]
    _, events, marks, scrubber = run(impl, text, cuts, tools=TOOLS, stream_arguments=True)
    ((index, _, name, pieces, end),) = streamed(events)
    assert (index, name, end, "".join(pieces)) == (0, "write_file", "ended", arguments)
    assert len(content) == 17500 and scrubber.calls[0].arguments == arguments
    # one piece per run of PIECE_MIN characters or more (7-character deltas: 32 to 38), not one at the end
    assert len(arguments) // 40 < len(pieces) <= len(arguments) // _events.PIECE_MIN + 1
    for fed, seen in marks:
        got = sum(len(e[2]) for e in events[:seen] if e[0] == "arguments")
        assert got >= min(max(fed - offset, 0), len(arguments)) - LAG


def test_started_comes_once_the_arguments_begin(impl, per_delta):
    scrubber = impl.StreamScrubber(tools=TOOLS, stream_arguments=True)
    assert scrubber.feed('<tool_call>{"name": "get_weather"') == ""
    assert scrubber.take_events() == []
    scrubber.feed(', "arguments": {"city": "Par')
    (started, piece) = scrubber.take_events()
    assert started[0] == "started" and started[1:2] + started[3:] == (0, "get_weather")
    assert piece == ("arguments", 0, '{"city": "Par')
    scrubber.feed("is\\")  # an escape not yet complete is held back
    assert scrubber.take_events() == [("arguments", 0, "is")]
    scrubber.feed('"", "days": 3}}</tool')  # a possible closer is held back by the scanner, and the object's "}"
    assert scrubber.take_events() == [("arguments", 0, '\\"", "days": 3')]
    scrubber.feed("_call>")  # the block's end settles the call: the "}" it held, then the end
    assert scrubber.take_events() == [("arguments", 0, "}"), ("ended", 0)]
    assert scrubber.calls[0].arguments == '{"city": "Paris\\"", "days": 3}'
    assert scrubber.calls[0].id == started[2]


def test_a_started_call_is_read_in_runs_of_piece_min_characters(impl):
    assert _events.PIECE_MIN == 32
    scrubber = impl.StreamScrubber(tools=TOOLS, stream_arguments=True)
    scrubber.feed('<tool_call>{"name": "write_file", "arguments": {"content": "')
    (started, piece) = scrubber.take_events()  # the start, and the arguments so far, at once
    assert (started[0], started[3], piece) == ("started", "write_file", ("arguments", 0, '{"content": "'))
    for _ in range(6):
        scrubber.feed("abcde")
        assert scrubber.take_events() == []  # fewer than 32 characters since the last piece
    scrubber.feed("f\\")  # the 32nd character: the run is read, but for an escape not yet complete
    assert scrubber.take_events() == [("arguments", 0, "abcde" * 6 + "f")]
    scrubber.feed('""}}</tool_call>')  # the escape completed (an escaped quote); the block's end sends the rest
    assert scrubber.take_events() == [("arguments", 0, '\\""}'), ("ended", 0)]
    assert scrubber.calls[0].arguments == '{"content": "' + "abcde" * 6 + 'f\\""}'


def _one(impl, text, **options):
    content, events, _, scrubber = run(impl, text, [len(text)], stream_arguments=True, **options)
    return content, streamed(events), scrubber


@pytest.mark.parametrize(
    ("text", "sent", "arguments"),
    [
        # (the pieces stop before the object's "}": it is held until the block's end settles the call)
        # an exponent: the arguments are read and written again, so they differ from the pieces
        ('<tool_call>{"name": "f", "arguments": {"a": 1e5}}</tool_call>', '{"a": 1e5', '{"a": 100000.0}'),
        # a repair (a trailing comma): the call is delivered whole, as repaired
        ('<tool_call>{"name": "f", "arguments": {"a": [1, 2,]}}</tool_call>', '{"a": [1, 2,]', '{"a": [1, 2]}'),
        ('[TOOL_CALLS]f{"n": NaN}', '{"n": NaN', None),  # not JSON: malformed, no call
        ('<tool_call>{"name": "f", "arguments": {"a": tru}}</tool_call>', '{"a": tru', None),
    ],
)
def test_arguments_other_than_the_pieces_abandon_the_call(impl, text, sent, arguments):
    content, calls, scrubber = _one(impl, text, tools=TOOLS)
    ((index, _, name, pieces, end),) = calls
    assert (index, name, "".join(pieces), end, scrubber.abandoned) == (0, "f", sent, "abandoned", 1)
    assert [c.arguments for c in scrubber.calls] == ([] if arguments is None else [arguments])
    assert (content, scrubber.calls) == (parse(text, tools=TOOLS).content, parse(text, tools=TOOLS).calls)


def test_a_call_renamed_to_an_unknown_tool_is_abandoned_and_its_text_stays(impl):
    text = '<tool_call>{"name": "f", "arguments": {"a": 1}, "name": "rm"}</tool_call> ok'
    content, calls, scrubber = _one(impl, text, tools=TOOLS)
    assert [(c[2], c[4]) for c in calls] == [("f", "abandoned")]
    assert (content, scrubber.calls, scrubber.abandoned) == (text, [], 1)


def test_a_call_cut_by_another_opener_is_abandoned(impl):
    first = '<tool_call>{"name": "f", "arguments": {"a": 1, '
    text = first + '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    content, events, _, scrubber = run(impl, text, [len(first), len(text)], tools=TOOLS, stream_arguments=True)
    calls = streamed(events)
    assert [(c[0], "".join(c[3]), c[4]) for c in calls] == [(0, '{"a": 1, ', "abandoned"), (0, "{}", "ended")]
    assert content == first and scrubber.calls[0].arguments == "{}" and scrubber.abandoned == 1
    # fed at once, the first block is found to be text before any of it is sent: no events for it
    assert [c[4] for c in _one(impl, text, tools=TOOLS)[1]] == ["ended"]


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ('<tool_call>{"name": "rm", "arguments": {"a": 1}}</tool_call>', {"tools": TOOLS}),  # keep_text
        ('<tool_call>{"name": "rm", "arguments": {"a": 1}}</tool_call>', {"tools": TOOLS, "unknown_tools": "drop"}),
        ('<tool_call>{"arguments": {"a": 1}, "name": "f"}</tool_call>', {}),  # the name after the arguments
        ('<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>', {}),  # arguments as JSON text
        ('<tool_call>[{"name": "f", "arguments": {}}]</tool_call>', {}),  # an array of calls
        ('<tool_call name="f">{"a": 1}</tool_call>', {}),  # the opener names the tool
        ('<think>try <tool_call>{"name": "f", "arguments": {}}</tool_call> no</think>Hi', {}),  # a rehearsal
        ('<think><tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call></think>', {}),  # taken at the end
        ('```\n<tool_call>{"name": "f", "arguments": {}}</tool_call>\n```', {}),  # in a code fence: text
    ],
)
def test_calls_that_do_not_start_have_no_events(impl, text, options):
    content, calls, scrubber = _one(impl, text, **options)
    whole = parse(text, **options)
    assert (calls, scrubber.abandoned) == ([], 0)
    assert (content.strip(), scrubber.calls) == (whole.content, whole.calls)


def test_unknown_tools_accept_streams_any_name(impl):
    text = '<tool_call>{"name": "rm", "arguments": {"a": 1}}</tool_call>'
    _, calls, scrubber = _one(impl, text, tools=TOOLS, unknown_tools="accept")
    assert [(c[2], "".join(c[3]), c[4]) for c in calls] == [("rm", '{"a": 1}', "ended")]
    assert scrubber.calls[0].id == calls[0][1]


def test_a_block_the_message_ends_inside(impl):
    text = '<tool_call>{"name": "f", "arguments": {"a": 1}}'
    _, calls, scrubber = _one(impl, text, tools=TOOLS)  # with tools: a call but for its closer
    assert [("".join(c[3]), c[4]) for c in calls] == [('{"a": 1}', "ended")] and len(scrubber.calls) == 1
    content, calls, scrubber = _one(impl, text)  # without tools it stays text
    assert [c[4] for c in calls] == ["abandoned"] and (content, scrubber.calls) == (text, [])


def test_index_is_the_position_in_calls(impl):
    text = (
        '<tool_call>[{"name": "f", "arguments": {}}]</tool_call>'  # whole, index 0
        '<tool_call>{"name": "f", "arguments": {"a": bad}}</tool_call>'  # abandoned, no call
        "<function=get_weather>{}</function>"  # streamed: index 1
    )
    _, calls, scrubber = _one(impl, text)
    assert [(c[0], c[4]) for c in calls] == [(1, "abandoned"), (1, "ended")]
    assert [c.name for c in scrubber.calls] == ["f", "get_weather"] and scrubber.calls[1].id == calls[1][1]


def test_off_by_default(impl):
    scrubber = impl.StreamScrubber()
    scrubber.feed('<tool_call>{"name": "f", "arguments": {}}</tool_call>')
    assert (scrubber.take_events(), scrubber.abandoned, len(scrubber.calls)) == ([], 0, 1)
    assert impl.StreamScrubber(options=Options(stream_arguments=True)).take_events() == []


def test_stream_arguments_must_be_a_bool(impl):
    with pytest.raises(TypeError, match="stream_arguments must be a bool"):
        impl.StreamScrubber(stream_arguments=1)
