"""``expect()`` on a terminal stream's unread output (``OutputReader``), without a daemon: string
sequences split anywhere, several callers waiting at once, and the bounded text one search hands
to the pattern."""

from __future__ import annotations

import re
import threading
import time

import pytest

import daemon_client as dc
from daemon_client.subscriptions.terminal_output import OutputReader
from daemon_client.subscriptions.terminal_search import DEFAULT_WINDOW, LOOK_BEHIND

STRINGS = {"OSC": "]", "DCS": "P", "SOS": "X", "PM": "^", "APC": "_"}


# ------------------------------------------------------------------------------ strings split


def test_a_window_title_split_at_its_terminator_is_not_matched() -> None:
    reader = OutputReader("t")
    reader.push(b"$ \x1b]0;secret title\x1b")  # the last ESC ends one frame ...
    with pytest.raises(dc.ExpectTimeout) as caught:
        reader.expect("secret", 0, strip=True)
    assert caught.value.output == "$ "
    reader.push(b"\\done\r\n")  # ... and "\" begins the next
    assert reader.expect(r"\$ done", 1, strip=True).group(0) == "$ done"


@pytest.mark.parametrize("terminator", ["\x07", "\x1b\\"], ids=["BEL", "ST"])
@pytest.mark.parametrize("kind", list(STRINGS))
def test_a_string_sequence_split_anywhere_is_matched_only_once_whole(kind: str, terminator: str) -> None:
    stream = f"ready? \x1b{STRINGS[kind]}2;secret ready\\{terminator}ready!"
    for split in range(1, len(stream)):
        reader = OutputReader("t")
        reader.push(stream[:split].encode())
        with pytest.raises(dc.ExpectTimeout):
            reader.expect("secret|ready!", 0, strip=True)
        reader.push(stream[split:].encode())
        found = reader.expect("secret|ready!", 0, strip=True)
        assert found.group(0) == "ready!", (kind, split)
        assert found.string == "ready? ready!"


@pytest.mark.parametrize("terminator", ["\x07", "\x1b\\"], ids=["BEL", "ST"])
@pytest.mark.parametrize("kind", list(STRINGS))
def test_a_string_sequence_arriving_a_byte_at_a_time_is_matched_only_once_whole(kind: str, terminator: str) -> None:
    """Every byte its own frame: no prefix of the string is ever matched, wherever it stops."""
    stream = f"ready? \x1b{STRINGS[kind]}2;secret ready!\\{terminator}ready!"
    reader = OutputReader("t")
    for byte in stream.encode()[:-1]:
        reader.push(bytes([byte]))
        with pytest.raises(dc.ExpectTimeout):
            reader.expect("secret|ready!", 0, strip=True)
    reader.push(stream.encode()[-1:])
    found = reader.expect("secret|ready!", 0, strip=True)
    assert found.group(0) == "ready!", kind
    assert found.string == "ready? ready!"


@pytest.mark.parametrize("terminator", ["\x07", "\x1b\\"], ids=["BEL", "ST"])
@pytest.mark.parametrize("kind", list(STRINGS))
def test_a_string_sequence_split_in_three_anywhere_is_matched_only_once_whole(kind: str, terminator: str) -> None:
    stream = f"ok \x1b{STRINGS[kind]}secret{terminator}done"
    for first in range(1, len(stream) - 1):
        for second in range(first + 1, len(stream)):
            reader = OutputReader("t")
            for part in (stream[:first], stream[first:second]):
                reader.push(part.encode())
                with pytest.raises(dc.ExpectTimeout):
                    reader.expect("secret|done", 0, strip=True)
            reader.push(stream[second:].encode())
            assert reader.expect("secret|done", 0, strip=True).group(0) == "done", (kind, first, second)


# ------------------------------------------------------------------------------ several callers


def _waiters(reader: OutputReader, count: int, tokens: list[str]) -> tuple[list[threading.Thread], dict[str, object]]:
    results: dict[str, object] = {}
    ready = threading.Barrier(len(tokens) + 1)

    def wait_for(token: str) -> None:
        ready.wait(10)
        try:
            results[token] = reader.expect(re.escape(token), 10, strip=True).group(0)
        except BaseException as exc:
            results[token] = exc

    threads = [threading.Thread(target=wait_for, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    ready.wait(10)
    deadline = time.monotonic() + 10
    while reader.expecting < count and time.monotonic() < deadline:  # all of them are waiting
        time.sleep(0.001)
    assert reader.expecting == count
    return threads, results


@pytest.mark.usefixtures("fast_switching")
@pytest.mark.parametrize("round_", range(5))
def test_callers_waiting_for_tokens_of_one_frame_each_get_their_own(round_: int) -> None:
    reader = OutputReader("t")
    tokens = [f"tok-{n};" for n in range(1, 5)]
    threads, results = _waiters(reader, 4, tokens)
    reader.push("".join(tokens).encode())
    for thread in threads:
        thread.join(15)
    assert results == {token: token for token in tokens}
    assert reader.next_chunk(0) is None


@pytest.mark.usefixtures("fast_switching")
def test_a_caller_whose_match_comes_later_lets_the_earlier_one_go_first() -> None:
    reader = OutputReader("t")
    threads, results = _waiters(reader, 2, ["late;", "early;"])
    reader.push(b"early;late;")
    for thread in threads:
        thread.join(15)
    assert results == {"early;": "early;", "late;": "late;"}


# ------------------------------------------------------------------------------ bounded searches


class _Recording:
    """A pattern that records the text each search is handed (and where it may match from)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._regex = re.compile(pattern)
        self.handed: list[tuple[int, int]] = []  # (length of the string, pos)
        self.reached = threading.Event()  # a search was handed text ending with "TAIL"

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        self.handed.append((len(text), pos))
        if text.endswith("TAIL"):
            self.reached.set()
        return self._regex.search(text, pos)


@pytest.mark.parametrize("strip", [False, True])
def test_no_search_is_handed_more_than_a_window_of_a_long_backlog(strip: bool) -> None:
    reader = OutputReader("t")
    backlog = "".join(f"\x1b[1mline {n:06d}\x1b[0m\r\n" for n in range(20_000)) + "TAIL"
    reader.push(backlog.encode())
    pattern = _Recording("never")
    with pytest.raises(dc.ExpectTimeout):
        reader.expect(pattern, 0, strip=strip, window=4096)  # type: ignore[arg-type]
    assert pattern.reached.is_set()  # the whole backlog was searched, even with timeout=0
    assert len(pattern.handed) > 10
    assert max(length for length, _ in pattern.handed) <= 4096 + LOOK_BEHIND
    assert max(pos for _, pos in pattern.handed) <= LOOK_BEHIND


def test_new_output_is_searched_with_a_bounded_overlap_only() -> None:
    reader = OutputReader("t")
    reader.push(b"x" * 50_000 + b"TAIL")
    pattern = _Recording("DONE")
    result: list[str] = []
    waiter = threading.Thread(target=lambda: result.append(reader.expect(pattern, 10, strip=False).group(0)))  # type: ignore[arg-type]
    waiter.start()
    assert pattern.reached.wait(10)
    searches = len(pattern.handed)
    reader.push(b"DONE")
    waiter.join(10)
    assert result == ["DONE"]
    assert [length - pos for length, pos in pattern.handed[searches:]] == [DEFAULT_WINDOW // 2 + 4]


def test_matches_are_found_across_window_boundaries() -> None:
    reader = OutputReader("t")
    reader.push(b"a" * 100 + b"tok-1;" + b"c" * 22 + b"status=12345\r\n")
    assert reader.expect(r"tok-\d;", 0, strip=False, window=16).group(0) == "tok-1;"
    # the first window ends inside "12345": the match touching its end is looked at again
    assert reader.expect(r"status=(\d+)", 0, strip=False, window=32).group(1) == "12345"
    with pytest.raises(ValueError, match="2 or more"):
        reader.expect("x", 0, strip=False, window=1)


def test_a_pattern_anchored_at_the_start_matches_only_the_start_of_the_unread_output() -> None:
    reader = OutputReader("t")
    reader.push(b"x" * 100 + b"$ ")
    with pytest.raises(dc.ExpectTimeout):
        reader.expect(r"^\$ ", 0, strip=False, window=16)
    assert reader.expect(r"x+", 0, strip=False).group(0) == "x" * 100
    assert reader.expect(r"^\$ ", 0, strip=False, window=16).group(0) == "$ "
