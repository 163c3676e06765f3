"""The command's output streams and value types, in the test process: broken pipes, encodings,
split characters, progress only on a terminal, logging levels, range-checked numbers."""

from __future__ import annotations

import argparse
import errno
import io
import logging
import os
import threading

import pytest

from daemon_client.cli import argtypes
from daemon_client.cli.logs import configured, level_for
from daemon_client.cli.notes import Notes
from daemon_client.cli.output import Output, TextJoiner, fix_surrogates
from daemon_client.cli.password import can_prompt
from daemon_client.protocol.codec import decode_frame

EMOJI = "\U0001f600"
HIGH, LOW = "\ud83d", "\ude00"  # EMOJI as two UTF-16 code units


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_character_split_between_chunks_is_joined() -> None:
    joiner = TextJoiner()
    assert joiner.feed("smile " + HIGH) == "smile "
    assert joiner.feed(LOW + " done") == EMOJI + " done"
    assert joiner.feed("end " + HIGH) == "end "
    assert joiner.end() == "\ufffd"  # a half that never got its other half
    assert fix_surrogates("a" + LOW + "b") == "a\ufffdb"
    assert fix_surrogates("plain") == "plain"


def test_a_frame_with_a_lone_surrogate_is_decoded() -> None:
    frame = decode_frame('{"type":"session","message":{"type":"agent_stream","payload":{"text":"a\\ud83d"}}}')
    assert frame.payload == {"text": "a" + HIGH}  # type: ignore[union-attr]


def test_output_replaces_what_the_stream_cannot_encode() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="latin-1")
    out = Output(stream)
    assert not out.encodes("▶")
    assert out.encodes("é")
    out.write("▶ café " + HIGH + LOW + "\n")
    assert raw.getvalue().decode("latin-1") == "? café ?\n"


def test_a_closed_pipe_marks_the_output_broken_and_drops_later_writes() -> None:
    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "w", encoding="utf-8")
    out = Output(stream)
    out.write("first\n")
    assert os.read(read_end, 100) == b"first\n"
    os.close(read_end)
    writers = [threading.Thread(target=out.write, args=("more\n",)) for _ in range(3)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(5)
    assert out.broken.is_set()
    out.write("dropped\n")
    stream.close()  # the descriptor points at /dev/null now: closing flushes without an error


def test_a_sealed_output_drops_writes() -> None:
    stream = io.StringIO()
    out = Output(stream)
    out.line("result")
    out.seal()
    out.line("late")
    assert stream.getvalue() == "result\n"


def test_progress_is_drawn_only_on_a_terminal_and_erased_before_a_note() -> None:
    piped, terminal, quiet = io.StringIO(), Terminal(), Terminal()
    for stream, notes in ((piped, Notes(piped)), (terminal, Notes(terminal)), (quiet, Notes(quiet, quiet=True))):
        notes.progress("running… 3 events")
        notes.note("agent created")
        notes.error("failed")
        assert stream.getvalue().endswith("daemon-client: failed\n")
    assert piped.getvalue() == "daemon-client: agent created\ndaemon-client: failed\n"
    assert terminal.getvalue() == (
        "\r\x1b[Krunning… 3 events\r\x1b[Kdaemon-client: agent created\ndaemon-client: failed\n"
    )
    assert quiet.getvalue() == "daemon-client: failed\n"


def test_logging_levels_follow_the_verbosity() -> None:
    assert level_for(0, False) == logging.ERROR
    assert level_for(1, False) == logging.INFO
    assert level_for(2, False) == logging.DEBUG
    assert level_for(2, True) > logging.CRITICAL
    logger = logging.getLogger("daemon_client.cli.test")
    for verbosity, shown in ((0, ["error"]), (1, ["warning", "info", "error"]), (2, ["debug", "warning", "error"])):
        stream = io.StringIO()
        with configured(Notes(stream), verbosity, quiet=False):
            if verbosity < 2:
                logger.warning("warning")
                logger.info("info")
            else:
                logger.debug("debug")
                logger.warning("warning")
            logger.error("error")
        printed = [line.rsplit(": ", 1)[1] for line in stream.getvalue().splitlines()]
        assert printed == shown, verbosity
    assert logging.getLogger("daemon_client").handlers == []  # restored


@pytest.mark.parametrize(
    ("convert", "good", "bad"),
    [
        (argtypes.seconds, {"0.5": 0.5, "15": 15.0, "1e6": 1e6}, ["0", "-1", "inf", "nan", "1e7", "x", ""]),
        (argtypes.count, {"0": 0, "5": 5}, ["-5", "1.5", "x"]),
        (argtypes.positive_count, {"1": 1}, ["0", "-1"]),
        (argtypes.port, {"0": 0, "65535": 65535}, ["70000", "-1", "http"]),
    ],
)
def test_numbers_are_range_checked(convert: object, good: dict[str, object], bad: list[str]) -> None:
    assert callable(convert)
    for text, value in good.items():
        assert convert(text) == value
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError):
            convert(text)


def test_key_value() -> None:
    assert argtypes.key_value("team=infra") == ("team", "infra")
    assert argtypes.key_value("empty=") == ("empty", "")
    for text in ("team", "=x"):
        with pytest.raises(argparse.ArgumentTypeError):
            argtypes.key_value(text)


class Unwritable(io.StringIO):
    """A stream that fails in ways other than a closed pipe."""

    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_stream_that_cannot_say_whether_it_is_a_terminal_is_not_one() -> None:
    stream = Unwritable()
    assert not Output(stream).isatty()
    notes = Notes(stream)
    assert not notes.shows_progress
    assert not notes.quiet
    assert Notes(io.StringIO(), quiet=True).quiet


def test_an_output_error_other_than_a_closed_pipe_is_raised() -> None:
    out = Output(Unwritable())
    out.write("")  # nothing to write: nothing fails
    with pytest.raises(OSError, match="No space left"):
        out.write("data\n")
    assert not out.broken.is_set()


def test_a_stream_closed_under_the_output_marks_it_broken() -> None:
    stream = io.StringIO()
    out = Output(stream)
    stream.close()
    out.write("late\n")
    assert out.broken.is_set()


def test_a_log_record_that_cannot_be_written_does_not_break_the_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logging, "raiseExceptions", False)  # handleError stays silent, as in production
    stream = io.StringIO()
    with configured(Notes(stream), 1, quiet=False):
        logging.getLogger("daemon_client.cli.test").error("%d rows", "many")  # cannot be formatted
        logging.getLogger("daemon_client.cli.test").error("written")
    assert stream.getvalue() == "daemon-client: ERROR daemon_client.cli.test: written\n"
    assert capsys.readouterr().err == ""


def test_no_password_prompt_without_a_usable_standard_input() -> None:
    closed = io.StringIO()
    closed.close()
    assert not can_prompt(argparse.Namespace(), stdin=closed)
    assert not can_prompt(argparse.Namespace(), stdin=object())  # type: ignore[arg-type]
