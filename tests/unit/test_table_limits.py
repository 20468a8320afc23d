"""The table's limits are checked where the table is defined (``markers.check_limits``), with errors
that name the entry; the Cython scanner is built for the same limits."""

import pytest

from textcalls import markers, parse
from textcalls.markers import BLOCKS, MARKERS, Block, Marker, check_limits
from textcalls.options import Options


def test_the_shipped_table_is_within_its_limits():
    check_limits(BLOCKS, MARKERS)
    firsts = {b.opener[0] for b in BLOCKS if b.anchor is None} | {m.literal[0] for m in MARKERS}
    assert len(firsts | {b.anchor for b in BLOCKS if b.anchor}) <= markers.FIRST_CHARS_MAX


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (Marker("x", "<"), "2-40 characters long: '<'"),
        (Marker("x", "<" + "a" * markers.LITERAL_MAX), "2-40 characters long"),
        (Block("x", "｜tool", "｜end", "hermes"), "start with an ASCII character: '｜tool'"),
        (Block("x", "<x>", "</" + "x" * markers.LITERAL_MAX + ">", "hermes"), "a closer must be 1-40 characters long"),
        (Block("x", "word", None, "hermes", anchor="（"), "anchor must be one ASCII character"),
        (Marker("x", "<\U0001f527>"), "characters must be in the BMP: '<\U0001f527>'"),
        (Block("x", "<x>", "</\U0001f527>", "hermes"), "characters must be in the BMP"),
        (Block("x", "<x>", "</x>", "hermes", values=(("<v>", "</v>"),) * 5), "at most 4 value tag pairs a block"),
        (Block("x", "<x>", "</x>", "hermes", values=(("[v]", "</v>"),)), "a value tag must be 2-40 BMP"),
        (Block("x", "<x>", "</x>", "hermes", values=(("<v>", "<"),)), "a value tag must be 2-40 BMP"),
        (Block("x", "<x>", "</x>", "hermes", values=(("<v ", "</v>"),), value_head_end="|>"), "'|>'"),
    ],
)
def test_an_entry_outside_the_limits_is_named(extra, message):
    blocks = (*BLOCKS, extra) if isinstance(extra, Block) else BLOCKS
    marks = (*MARKERS, extra) if isinstance(extra, Marker) else MARKERS
    with pytest.raises(ValueError) as info:
        check_limits(blocks, marks)
    assert str(info.value).startswith("x: ") and message in str(info.value)


def test_too_many_first_characters():
    extra = tuple(Marker("x", c + "ab") for c in "!#$%&*+,-.")
    with pytest.raises(ValueError, match="at most 8 distinct first characters"):
        check_limits(BLOCKS, MARKERS + extra)


def test_the_extension_is_built_for_these_limits():
    _scan_c = pytest.importorskip("textcalls._scan_c")
    assert _scan_c.TABLE_LIMITS == (markers.LITERAL_MAX, markers.FIRST_CHARS_MAX, markers.VALUES_MAX)


@pytest.fixture
def colliding(monkeypatch):
    """Hermes with markers whose second characters share the low six bits with ``t`` (0x74, of
    ``<tool_call`` and the marker ``<tk>``) after the same ``<``: ``4`` (0x34) and ``ô`` (0xF4, a wide
    second character). The Cython scanner's second-character look-up (``_CSpec.pair_at``) finds that slot
    shared and tells them apart by a binary search; no shipped table has such a slot."""
    from textcalls import _table

    extra = (Marker("hermes", "<4>", before=True), Marker("hermes", "<ôk>", always=True))
    extra += (Marker("hermes", "<tk>", always=True),)
    monkeypatch.setattr(_table, "MARKERS", (*MARKERS, *extra))
    _table._table.cache_clear()
    yield Options(formats=("hermes",))
    monkeypatch.undo()
    _table._table.cache_clear()


CALL = '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>'


@pytest.mark.parametrize(
    ("text", "content", "markup"),
    [
        (f"a <4>{CALL} b", "a  b", 2),  # the marker right before the opener, and the block
        (f"a {CALL} b", "a  b", 1),
        ("x <4> y <4 <t <tool <ô <ôk <ő <Ŵ <", "x <4> y <4 <t <tool <ô <ôk <ő <Ŵ <", 0),  # (Ŵ: 0x174, ő: 0x151)
        ("x <ôk> y", "x  y", 1),
        (f"<ôk>{CALL}<4>", "<4>", 2),
        ("Ŵ<Ŵk><ôk>", "Ŵ<Ŵk>", 1),
        (f"<tk>{CALL}<t <tk", "<t <tk", 2),
    ],
)
def test_literals_whose_second_characters_share_a_slot(impl, colliding, text, content, markup):
    parsed = parse(text, options=colliding)
    assert (parsed.content, parsed.removed) == (content.strip(), markup)
    assert [(c.name, c.arguments) for c in parsed.calls] == ([("f", '{"a": 1}')] if CALL in text else [])
    for cut in range(len(text) + 1):
        s = impl.StreamScrubber(options=colliding)
        assert s.feed(text[:cut]) + s.feed(text[cut:]) + s.flush() == content
        assert s.removed == markup


@pytest.fixture
def prefix_openers(monkeypatch):
    """Hermes with a second opener that ``<tool_call`` is a prefix of, ``<tool_call_x>``, and a section marker
    ``<m1`` before either: no shipped dialect with a section marker has one opener that starts another."""
    from textcalls import _table

    monkeypatch.setattr(_table, "BLOCKS", (*BLOCKS, Block("hermes", "<tool_call_x>", "</tool_call_x>", "hermes")))
    monkeypatch.setattr(_table, "MARKERS", (*MARKERS, Marker("hermes", "<m1", before=True)))
    _table._table.cache_clear()
    yield Options(formats=("hermes",))
    monkeypatch.undo()
    _table._table.cache_clear()


def test_a_section_marker_before_an_opener_that_starts_a_longer_one(impl, prefix_openers):
    # "<tool_c" after the marker may begin either opener; "all" makes "<tool_call" whole, and the marker is
    # removed at once (held while the text goes on with the longer opener only if no other could end first)
    s = impl.StreamScrubber(options=prefix_openers)
    assert s.feed("x <m1<tool_c") == "x "
    assert (s.feed("all"), s.removed) == ("", 1)
    assert s.feed('>{"name": "f", "arguments": {"a": 1}}</tool_call> y') + s.flush() == " y"
    assert ([(c.name, c.arguments) for c in s.calls], s.removed) == ([("f", '{"a": 1}')], 2)
