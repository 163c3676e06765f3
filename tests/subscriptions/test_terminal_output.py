"""The pull side of terminal streams (``OutputReader``), escape-sequence handling and the binary
frame codec, without a daemon."""

from __future__ import annotations

import logging
import re
import threading
import time

import pytest

import daemon_client as dc
from daemon_client.protocol.terminal_frames import (
    TerminalFrame,
    decode_output,
    decode_terminal_frame,
    encode_input,
    encode_resize,
)
from daemon_client.protocol.terminals import (
    KEY_TOKENS,
    encode_keys,
    incomplete_escape_at,
    parse_terminal_state,
    raw_index,
    strip_ansi,
)
from daemon_client.subscriptions.terminal_output import OutputReader, exited


def test_expect_consumes_up_to_the_match_and_output_continues_from_there() -> None:
    reader = OutputReader("t")
    reader.push("echo hi\r\nhi\r\n")
    reader.push("$ ")
    assert reader.expect(r"\nhi\r\n", 1, strip=True).group(0) == "\nhi\r\n"
    assert reader.next_chunk(0) == "$ "
    assert reader.next_chunk(0) is None  # nothing within the timeout


def test_matching_on_cleaned_text_maps_back_to_the_raw_output() -> None:
    reader = OutputReader("t")
    reader.push("\x1b[1mfake$\x1b[0m echo\r\n\x1b[31mred\x1b[0m\r\nrest")
    found = reader.expect(r"red\r\n", 1, strip=True)
    assert found.string == "fake$ echo\r\nred\r\nrest"
    assert reader.next_chunk(0) == "rest"


def test_an_escape_sequence_still_arriving_is_not_matched() -> None:
    reader = OutputReader("t")
    reader.push("x\x1b[3")
    with pytest.raises(dc.ExpectTimeout) as caught:
        reader.expect(r"3", 0.05, strip=True)  # "3" belongs to the unfinished "ESC [ 3 1 m"
    assert caught.value.output == "x"
    reader.push("1mcolour 3")
    assert reader.expect(r"colour 3", 1, strip=True).group(0) == "colour 3"


def test_the_end_reason_is_raised_once_everything_was_read() -> None:
    reader = OutputReader("t")
    reader.push("last words")
    reader.end(exited("terminal t"))
    reader.end(lambda output: dc.SubscriptionReleased("later reasons are ignored"))
    reader.push("after the end: ignored")
    assert reader.expect("last", 1, strip=True).group(0) == "last"
    with pytest.raises(dc.TerminalExited) as caught:
        reader.expect("more", 1, strip=True)
    assert caught.value.output == " words"
    assert list(reader.chunks(1)) == [" words"]
    assert reader.ended


def test_a_waiter_wakes_up_for_output_from_another_thread() -> None:
    reader = OutputReader("t")
    started = threading.Event()
    found: list[str] = []

    def wait() -> None:
        started.set()
        found.append(reader.expect("ready", 10, strip=True).group(0))

    waiter = threading.Thread(target=wait)
    waiter.start()
    started.wait(5)
    reader.push("not yet\r\n")
    reader.push("ready\r\n")
    waiter.join(10)
    assert found == ["ready"]


def test_the_buffer_keeps_the_newest_text() -> None:
    reader = OutputReader("t", limit=10)
    reader.push("0123456789")
    with pytest.raises(dc.ExpectTimeout):
        reader.expect("never", 0, strip=False)  # now held by expect
    reader.push("abcde")
    assert reader.dropped == 5
    assert list(reader.chunks(0)) == ["56789", "abcde"]
    with pytest.raises(ValueError, match="0 or more"):
        OutputReader("t", limit=-1)


def test_a_buffer_of_zero_keeps_nothing_and_says_so() -> None:
    reader = OutputReader("terminal t", limit=0)
    reader.push("lost to pulling, delivered to callbacks")
    assert reader.dropped == 0
    with pytest.raises(ValueError, match=r"terminal t: output\(\) .* keeps none"):
        reader.chunks(0)
    with pytest.raises(ValueError, match=r"expect\(\)"):
        reader.expect("lost", 0, strip=False)
    with pytest.raises(ValueError, match="buffer_limit=0"):
        reader.next_chunk(0)


def test_escape_helpers() -> None:
    text = "a\x1b[1mb\x1b]0;title\x07c\x1b(Bd\x1b=e\x1bPdata\x1b\\f"
    assert strip_ansi(text) == "abcdef"
    assert raw_index(text, 2) == text.index("\x1b]")
    assert [incomplete_escape_at(t) for t in ("ok", "a\x1b", "a\x1b[", "a\x1b[12", "a\x1b[1m", "a\x1b]0;x")] == [
        None, 1, 1, 1, None, 1,
    ]  # fmt: skip
    assert encode_keys(["ls -la", "Enter", "C-c", "Tab", "enter"]) == "ls -la\r\x03\tenter"
    assert set(KEY_TOKENS) == {"Enter", "Tab", "Escape", "Space", "BSpace", "C-c", "C-d", "C-z", "C-l", "C-a", "C-e"}


def test_frame_codec() -> None:
    assert decode_terminal_frame(b"\x01\x07hi") == TerminalFrame(1, 7, b"hi")
    assert decode_terminal_frame(b"\x10\x00file") is None
    assert decode_terminal_frame(b"\x01") is None
    assert encode_input(3, "é") == b"\x02\x03\xc3\xa9"
    assert encode_resize(0, 30, 100) == b'\x03\x00{"rows":30,"cols":100}'
    assert decode_output(b"ok \xff") == "ok \ufffd"
    with pytest.raises(ValueError, match="0-255"):
        encode_input(256, "x")


def test_snapshots_are_read_leniently() -> None:
    state = parse_terminal_state(
        b'{"rows":2,"cols":3,"grid":[[{"char":"a","fg":"red"},{"char":"b","newFlag":1}],[{"nochar":true}]],'
        b'"scrollback":[],"cursor":{"row":0,"col":2,"style":"bar"},"future":1}'
    )
    assert state.screen_lines() == ["ab", ""]
    assert state.grid[0][0].extra_fields == {"fg": "red"}
    assert state.grid[0][1].extra_fields == {"newFlag": 1}
    assert state.extra_fields == {"future": 1}
    assert state.cursor.style == "bar"
    assert state.text() == "ab"
    with pytest.raises(dc.ProtocolError, match="unreadable terminal snapshot"):
        parse_terminal_state(b"not json")
    with pytest.raises(dc.ProtocolError):
        parse_terminal_state(b"[1, 2]")


def test_output_kept_as_received_is_decoded_when_read() -> None:
    reader = OutputReader("t")
    reader.push(b"caf\xc3\xa9 \xff\r\n")  # an Output frame's payload, one invalid byte
    reader.push("$ ")
    found = reader.expect("\r\n", 1, strip=False)
    assert found.string[: found.end()] == "café \ufffd\r\n"
    assert reader.next_chunk(0) == "$ "
    reader.push(b"\xe2\x9c\x93 done")
    assert list(reader.chunks(0)) == ["✓ done"]


def test_pushes_drop_in_bulk_and_reads_never_see_more_than_the_limit() -> None:
    reader = OutputReader("t", limit=80)  # pushes drop once the output is over 90
    for n in range(9):
        reader.push(b"%09d\n" % n)
    assert reader._queued == 90  # over the limit, under the bulk threshold: nothing dropped yet
    assert reader.dropped == 10  # a read drops down to the limit first
    assert "".join(reader.chunks(0)) == "".join(f"{n:09d}\n" for n in range(1, 9))
    for n in range(1000):
        reader.push(b"%09d\n" % n)
        assert reader._queued <= 90  # memory stays bounded by the threshold
    assert reader.dropped == 10 + 1000 * 10 - 80
    assert "".join(reader.chunks(0)) == "".join(f"{n:09d}\n" for n in range(992, 1000))


def test_dropped_output_counts_characters_not_bytes() -> None:
    reader = OutputReader("t", limit=4)
    reader.push("é" * 4)  # text: four characters
    reader.push("é".encode() * 2)  # as received: four bytes, two characters
    reader.push("é".encode() * 2)
    assert reader.dropped == 6  # the text, then the first two characters of bytes
    assert list(reader.chunks(0)) == ["éé"]


def test_the_first_drop_is_logged_once_outside_the_lock(caplog: pytest.LogCaptureFixture) -> None:
    reader = OutputReader("terminal t", limit=10)
    seen: list[int] = []

    class ReadsTheStream(logging.Handler):  # user code in a logging handler, calling back in
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(reader.dropped)

    handler = ReadsTheStream(level=logging.WARNING)
    logger = logging.getLogger("daemon_client.subscriptions.terminal_output")
    logger.addHandler(handler)
    try:
        pusher = threading.Thread(target=lambda: [reader.push(b"0123456789") for _ in range(5)])
        pusher.start()
        pusher.join(10)
        assert not pusher.is_alive()  # a warning logged under the lock would deadlock here
        assert reader.dropped == 40
        reader.push(b"more")
        list(reader.chunks(0))
    finally:
        logger.removeHandler(handler)
    assert len(seen) == 1
    assert [r.getMessage() for r in caplog.records if r.name == logger.name] == [
        "terminal t: unread output over 10 characters; the oldest is dropped"
    ]


def test_a_first_drop_found_by_a_read_is_logged_too(caplog: pytest.LogCaptureFixture) -> None:
    reader = OutputReader("terminal t", limit=8)  # pushes drop only over 9
    reader.push(b"12345")
    reader.push(b"6789")  # 9: kept until a read
    assert caplog.records == []
    assert reader.next_chunk(0) == "6789"
    assert [r.getMessage() for r in caplog.records] == [
        "terminal t: unread output over 8 characters; the oldest is dropped"
    ]


def test_a_reader_thread_pushing_while_another_reads_loses_and_reorders_nothing() -> None:
    reader = OutputReader("t", limit=64)
    total = 20_000
    read: list[str] = []

    def consume() -> None:
        while True:
            chunk = reader.next_chunk(10)
            if chunk is None:
                return
            read.append(chunk)

    consumer = threading.Thread(target=consume)
    consumer.start()
    for n in range(total):
        reader.push(b"%07d;" % n)
    reader.end(exited("terminal t"))
    consumer.join(30)
    assert not consumer.is_alive()
    numbers = [int(part) for part in "".join(read).split(";") if part]
    assert numbers == sorted(numbers)
    assert len(set(numbers)) == len(numbers)
    assert numbers[-1] == total - 1  # the newest always stays
    assert len(numbers) * 8 + reader.dropped == total * 8  # every character read or counted as dropped


class _GatedPattern:
    """A pattern whose first search waits for the test: a slow pattern, made deterministic."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._regex = re.compile(pattern)
        self.searching = threading.Event()
        self.release = threading.Event()
        self.searched: list[str] = []

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        self.searched.append(text)
        if len(self.searched) == 1:
            self.searching.set()
            assert self.release.wait(10)
        return self._regex.search(text, pos)


def _expect_in_thread(reader: OutputReader, pattern: _GatedPattern) -> tuple[threading.Thread, list[object]]:
    result: list[object] = []

    def run() -> None:
        try:
            result.append(reader.expect(pattern, 10, strip=False))  # type: ignore[arg-type]
        except BaseException as exc:
            result.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert pattern.searching.wait(10)
    return thread, result


def test_a_slow_pattern_never_holds_up_the_reader_threads_pushes() -> None:
    reader = OutputReader("t")
    reader.push(b"booting")
    pattern = _GatedPattern("ready")
    waiter, result = _expect_in_thread(reader, pattern)
    pusher = threading.Thread(target=lambda: [reader.push(b" ... ready\r\n") for _ in range(100)])
    pusher.start()
    pusher.join(10)
    assert not pusher.is_alive()  # all 100 pushes went in while the pattern was still searching
    pattern.release.set()
    waiter.join(10)
    found = result[0]
    assert isinstance(found, re.Match)
    assert found.group(0) == "ready"
    assert pattern.searched[0] == "booting"  # the copy taken before the pushes
    assert next(reader.chunks(0)).startswith("\r\n ... ready")


def test_output_dropped_while_a_pattern_searched_is_not_consumed_twice() -> None:
    reader = OutputReader("t", limit=20)  # pushes drop over 22
    reader.push(b"aaaaaaaaaaMATCHbbbbb")
    pattern = _GatedPattern("MATCH")
    waiter, result = _expect_in_thread(reader, pattern)
    reader.push(b"0123456789")  # 30 unread: the 10 oldest characters, held by expect(), go
    pattern.release.set()
    waiter.join(10)
    assert isinstance(result[0], re.Match)
    assert "".join(reader.chunks(0)) == "bbbbb0123456789"
    assert reader.dropped == 10


def test_the_match_itself_may_have_been_dropped_meanwhile() -> None:
    reader = OutputReader("t", limit=20)
    reader.push(b"aaaaaaaaaaMATCHbbbbb")
    pattern = _GatedPattern("MATCH")
    waiter, result = _expect_in_thread(reader, pattern)
    reader.push(b"0123456789012345678")  # 39 unread: 19 dropped, past the match's end (15)
    pattern.release.set()
    waiter.join(10)
    assert isinstance(result[0], re.Match)
    assert result[0].group(0) == "MATCH"
    assert "".join(reader.chunks(0)) == "b0123456789012345678"
    assert reader.dropped == 19


def test_a_match_found_while_another_caller_consumed_is_not_used() -> None:
    reader = OutputReader("t")
    reader.push(b"prompt$ rest")
    pattern = _GatedPattern(r"\$ ")
    waiter, result = _expect_in_thread(reader, pattern)
    assert reader.next_chunk(0) == "prompt$ rest"  # taken while the pattern searched a copy of it
    pattern.release.set()
    reader.push(b"again$ ")
    waiter.join(10)
    found = result[0]
    assert isinstance(found, re.Match)
    assert found.string == "again$ "  # the first match was searched in text already consumed
    assert pattern.searched[0] == "prompt$ rest"
    assert pattern.searched[-1] == "again$ "
    assert reader.next_chunk(0) is None


def test_waiters_on_one_stream_wait_side_by_side() -> None:
    reader = OutputReader("t")
    results: list[str] = []
    started = threading.Barrier(3)

    def wait_for(pattern: str) -> None:
        started.wait(10)
        results.append(reader.expect(pattern, 10, strip=False).group(0))

    waiters = [threading.Thread(target=wait_for, args=(pattern,)) for pattern in ("first", "second")]
    for waiter in waiters:
        waiter.start()
    started.wait(10)
    reader.push(b"first\n")  # whichever waiter searches first: "first" is consumed by its own waiter only
    deadline = time.monotonic() + 10
    while not results and time.monotonic() < deadline:
        time.sleep(0.01)
    reader.push(b"second\n")
    for waiter in waiters:
        waiter.join(10)
    assert sorted(results) == ["first", "second"]


class _SlowPattern:
    """A pattern that never matches and takes a while to say so (the GIL is let go meanwhile)."""

    pattern = "never"

    def search(self, text: str, pos: int = 0) -> None:
        time.sleep(0.01)


def test_output_that_keeps_coming_and_never_matches_times_out() -> None:
    reader = OutputReader("t", limit=1000)
    stop = threading.Event()
    raised: list[BaseException] = []

    def spew() -> None:  # like `yes`: output without pause, so some is always queued after a search
        while not stop.is_set():
            reader.push(b"y\n")
            time.sleep(0.001)

    def wait() -> None:
        try:
            reader.expect(_SlowPattern(), 0.2, strip=False)  # type: ignore[arg-type]
        except BaseException as exc:
            raised.append(exc)

    spewer, waiter = threading.Thread(target=spew), threading.Thread(target=wait)
    spewer.start()
    waiter.start()
    waiter.join(10)
    stop.set()
    spewer.join(10)
    assert not waiter.is_alive()  # else it never looked at its deadline
    assert isinstance(raised[0], dc.ExpectTimeout)


def test_an_end_while_a_pattern_searches_ends_the_wait() -> None:
    reader = OutputReader("t")
    reader.push(b"no prompt yet")
    pattern = _GatedPattern(r"\$ $")
    waiter, result = _expect_in_thread(reader, pattern)
    reader.end(lambda output: dc.SubscriptionReleased(f"released with {output!r} unmatched"))
    pattern.release.set()
    waiter.join(10)
    assert not waiter.is_alive()
    assert isinstance(result[0], dc.SubscriptionReleased)
    assert "'no prompt yet' unmatched" in str(result[0])
