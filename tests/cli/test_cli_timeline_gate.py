"""The join of history and live rows in ``tail`` (:class:`~daemon_client.cli.timeline_gate.TimelineGate`),
driven directly: rows printed once and in order, the catch-up after a reconnect, and errors."""

from __future__ import annotations

from collections.abc import Iterable

from daemon_client.cli.timeline_gate import TimelineGate
from daemon_client.errors import ClientClosed, DaemonClientError
from daemon_client.protocol.timeline import (
    AssistantMessage,
    Replacement,
    SubscriptionError,
    SubscriptionRestored,
    TimelineCursor,
    TimelineEntry,
    TimelineEvent,
    TimelinePage,
    TimelineUpdate,
)

AGENT = "agent-1"
EPOCH = "epoch-1"


def _entry(seq: int) -> TimelineEntry:
    return TimelineEntry(item=AssistantMessage(f"row {seq}"), seq_start=seq, seq_end=seq)


def _page(*seqs: int) -> TimelinePage:
    return TimelinePage(entries=tuple(_entry(seq) for seq in seqs), epoch=EPOCH)


def _live(seq: int, epoch: str = EPOCH) -> TimelineUpdate:
    return TimelineUpdate(AGENT, TimelineEvent(AssistantMessage(f"row {seq}")), seq=seq, epoch=epoch)


class Recorder:
    """The gate's outputs: rows printed (by seq), notes, errors, and what it fetched."""

    def __init__(self, fetched: Iterable[TimelinePage] | DaemonClientError = ()) -> None:
        self.printed: list[int | str] = []
        self.replacements: list[TimelineUpdate] = []
        self.notes: list[str] = []
        self.errors: list[SubscriptionError] = []
        self.asked: list[TimelineCursor] = []
        self._fetched = fetched
        self.gate = TimelineGate(
            self._print_update,
            self._print_entry,
            self._fetch_after,
            agent_id=AGENT,
            on_error=self.errors.append,
            on_note=self.notes.append,
        )

    def _print_update(self, update: TimelineUpdate) -> None:
        if isinstance(update.event, Replacement):
            self.replacements.append(update)
        self.printed.append(update.seq if update.seq is not None else update.event.type)

    def _print_entry(self, epoch: str, entry: TimelineEntry) -> None:
        self.printed.append(entry.seq_end)

    def _fetch_after(self, cursor: TimelineCursor) -> Iterable[TimelinePage]:
        self.asked.append(cursor)
        if isinstance(self._fetched, DaemonClientError):
            raise self._fetched
        return self._fetched


def test_rows_of_overlapping_history_pages_are_printed_once() -> None:
    rec = Recorder()
    rec.gate.history([_page(1, 2), _page(2, 3)])
    assert rec.printed == [1, 2, 3]


def test_live_rows_already_in_the_history_are_skipped() -> None:
    rec = Recorder()
    rec.gate(_live(2))  # held: the gate is closed while the history is printed
    rec.gate(_live(3))
    assert rec.printed == []
    rec.gate.history([_page(1, 2)])
    rec.gate.open()
    rec.gate(_live(3))  # again, once open
    assert rec.printed == [1, 2, 3]


def test_rows_written_while_disconnected_are_fetched_after_the_reconnect() -> None:
    rec = Recorder(fetched=[_page(2, 3)])
    rec.gate.open()
    rec.gate(_live(1))
    rec.gate(TimelineUpdate(AGENT, SubscriptionRestored()))
    assert rec.asked == [TimelineCursor(EPOCH, 1)]
    assert rec.printed == [1, "subscription_restored", 2, 3]
    assert rec.notes == ["2 rows written while disconnected were fetched"]


def test_nothing_written_while_disconnected_is_not_noted() -> None:
    rec = Recorder(fetched=[_page(1)])
    rec.gate.open()
    rec.gate(_live(1))
    rec.gate(TimelineUpdate(AGENT, SubscriptionRestored()))
    assert rec.printed == [1, "subscription_restored"]
    assert rec.notes == []


def test_a_failed_catch_up_is_noted_and_the_rows_go_on() -> None:
    rec = Recorder(fetched=DaemonClientError("fetch refused"))
    rec.gate.open()
    rec.gate(_live(1))
    rec.gate(TimelineUpdate(AGENT, SubscriptionRestored()))
    rec.gate(_live(2))
    assert rec.notes == ["rows written while disconnected could not be fetched: fetch refused"]
    assert rec.printed == [1, "subscription_restored", 2]


def test_a_failed_subscription_is_an_error_but_a_closed_client_is_not() -> None:
    rec = Recorder()
    rec.gate(TimelineUpdate(AGENT, SubscriptionError("Daemon client closed", exception=ClientClosed())))
    assert rec.errors == []
    failure = SubscriptionError("refused")
    rec.gate(TimelineUpdate(AGENT, failure))
    assert rec.errors == [failure]
    assert rec.printed == []


def test_a_live_row_of_a_new_epoch_is_preceded_by_a_replacement() -> None:
    rec = Recorder()
    rec.gate.open()
    rec.gate(_live(5))
    rec.gate(_live(1, "epoch-2"))  # a daemon without replacement announcements rebuilt the history
    rec.gate(_live(2, "epoch-2"))
    assert rec.printed == [5, "replacement", 1, 2]
    assert rec.replacements == [TimelineUpdate(AGENT, Replacement(epoch="epoch-2"), epoch="epoch-2")]


def test_an_announced_replacement_is_printed_once() -> None:
    rec = Recorder()
    rec.gate.open()
    rec.gate(_live(5))
    rec.gate(TimelineUpdate(AGENT, Replacement(epoch="epoch-2")))
    rec.gate(_live(1, "epoch-2"))
    rec.gate(TimelineUpdate(AGENT, Replacement(epoch="epoch-2")))  # noted already
    assert rec.printed == [5, "replacement", 1]


def test_the_first_row_printed_is_no_replacement() -> None:
    rec = Recorder()
    rec.gate.history([TimelinePage(entries=(_entry(1),), epoch="epoch-2")])
    assert rec.printed == [1]
