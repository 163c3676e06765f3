"""Escape-sequence removal and the "still arriving" rule: the visible text of any prefix of a
stream is a prefix of the visible text of the whole stream, so nothing inside a sequence that has
not arrived whole is ever shown (and so never matched by ``expect()``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from daemon_client.protocol.terminals import incomplete_escape_at, raw_index, strip_ansi

STRING_INTRODUCERS = {"OSC": "]", "DCS": "P", "SOS": "X", "PM": "^", "APC": "_"}
TERMINATORS = {"BEL": "\x07", "ST": "\x1b\\"}


def visible(text: str) -> str:
    """What ``expect(strip_ansi=True)`` matches in ``text`` as received so far."""
    cut = incomplete_escape_at(text)
    return strip_ansi(text if cut is None else text[:cut])


def test_a_title_split_between_the_escape_and_the_backslash_of_its_terminator_is_not_shown() -> None:
    stream = "before\x1b]0;secret title\x1b\\after"
    split = stream.index("\\")  # the last ESC ends the first frame, "\" begins the next
    assert visible(stream[:split]) == "before"
    assert visible(stream) == "beforeafter"


def test_every_string_sequence_with_either_terminator_is_removed_whole() -> None:
    for introducer in STRING_INTRODUCERS.values():
        for terminator in TERMINATORS.values():
            stream = f"a\x1b{introducer}0;body [x] \\ ^_P\\{terminator}b"
            assert strip_ansi(stream) == "ab", repr(stream)
            for split in range(len(stream) + 1):
                assert "body" not in visible(stream[:split]), (stream, split)
                assert "ab".startswith(visible(stream[:split])), (stream, split)


def test_a_string_cut_short_by_another_escape_shows_nothing_of_its_body() -> None:
    # a terminal abandons a string at the next ESC that is not ST; its body is never shown
    assert strip_ansi("a\x1b]0;half\x1b[1mb") == "ab"
    assert visible("a\x1b]0;half\x1b") == "a"


def test_the_escape_helpers_keep_working_on_complete_sequences() -> None:
    text = "a\x1b[1mb\x1b]0;title\x07c\x1b(Bd\x1b=e\x1bPdata\x1b\\f"
    assert strip_ansi(text) == "abcdef"
    assert raw_index(text, 2) == text.index("\x1b]")
    assert [incomplete_escape_at(t) for t in ("ok", "a\x1b", "a\x1b[", "a\x1b[12", "a\x1b[1m", "a\x1b]0;x")] == [
        None, 1, 1, 1, None, 1,
    ]  # fmt: skip


def test_an_unterminated_string_longer_than_any_lookback_is_still_arriving() -> None:
    text = "a\x1b]0;" + "t" * 100_000
    assert incomplete_escape_at(text) == 1
    assert visible(text) == "a"


_plain = st.text(alphabet="abc xyz;\\[]P^_X019\r\n", max_size=6)
_body = st.text(alphabet="SECRET;0 \\[]P^_X", max_size=8)


@st.composite
def _string_sequence(draw: st.DrawFn) -> str:
    introducer = draw(st.sampled_from(sorted(STRING_INTRODUCERS.values())))
    terminator = draw(st.sampled_from(sorted(TERMINATORS.values())))
    return "\x1b" + introducer + "SECRET" + draw(_body) + terminator


_other_sequence = st.sampled_from(["\x1b[1m", "\x1b[0m", "\x1b[31;1m", "\x1b[?25h", "\x1b(B", "\x1b=", "\x1b7"])
_stream = st.lists(st.one_of(_plain, _string_sequence(), _other_sequence), max_size=8).map("".join)


@given(_stream)
def test_no_prefix_of_a_stream_shows_what_the_whole_stream_does_not(stream: str) -> None:
    whole = strip_ansi(stream)
    assert "SECRET" not in whole
    assert incomplete_escape_at(stream) is None
    for split in range(len(stream) + 1):
        seen = visible(stream[:split])
        assert whole.startswith(seen), (stream, split, seen)
