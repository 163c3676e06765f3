"""Nothing is lost on a healthy connection: N sequenced timeline events reach every handle of
an agent gap-free and in order.

The fake appends rows to one agent's timeline in a tight loop (each row is streamed as an
``agent_stream`` frame with the next ``seq``); two handles subscribed to the agent check, as
the events arrive, that every ``seq`` is the previous one plus one under a single epoch, with
no local event (``subscription_restored``, ``replacement``, ``error``) in between. The CI
variant streams 100,000 events over a loopback socket (about 6 s); ``-m slow`` selects
1,000,000 (about a minute).
"""

from __future__ import annotations

import logging
import threading
import time

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon

ITEM = {"type": "assistant_message", "text": "chunk of an answer, a few dozen bytes long"}
TRIM_EVERY = 20_000
"""The fake keeps every row in memory; forgetting old rows (``seq`` goes on) keeps it flat."""


class SeqChecker:
    """A timeline handler that checks continuity as events arrive (no list of a million seqs)."""

    def __init__(self, name: str, count: int) -> None:
        self.name = name
        self.count = count
        self.expected = 1
        self.received = 0
        self.epochs: set[str | None] = set()
        self.anomalies: list[str] = []
        self.done = threading.Event()

    def __call__(self, update: dc.TimelineUpdate) -> None:
        if update.seq is None:  # a local event: none may happen on a healthy connection
            self._anomaly(f"unexpected {update.type} event after seq {self.expected - 1}")
            return
        if update.seq != self.expected:
            self._anomaly(f"seq {update.seq} arrived where {self.expected} was due")
        self.expected = update.seq + 1
        self.received += 1
        self.epochs.add(update.epoch)
        if self.received >= self.count:
            self.done.set()

    def _anomaly(self, text: str) -> None:
        if len(self.anomalies) < 20:
            self.anomalies.append(text)

    def report(self) -> str:
        return f"{self.name}: {self.received}/{self.count} received, next due {self.expected}, {self.anomalies}"


def _stream(fake: FakeDaemon, client: dc.Client, count: int) -> None:
    agent = client.agents.ref("a1")
    checkers = [SeqChecker("first handle", count), SeqChecker("second handle", count)]
    subs = [agent.timeline.subscribe(checker) for checker in checkers]
    for sub in subs:
        sub.ready.result(5)
    accepted = fake.accepted_count
    epoch = fake.timeline.epoch("a1")

    started = time.monotonic()
    append = fake.timeline.append
    for n in range(1, count + 1):
        append("a1", ITEM)
        if n % TRIM_EVERY == 0:
            fake.timeline.trim("a1", 0)
    produced = time.monotonic() - started
    # generous (coverage tracing in CI slows the stream about twofold): the figure of interest is
    # equality, not speed; the test's own watchdog budget below stays above it
    budget = 30.0 + count / 2_000
    for checker in checkers:
        assert checker.done.wait(max(1.0, budget - (time.monotonic() - started))), checker.report()
    assert client.flush_callbacks(10.0)
    elapsed = time.monotonic() - started

    for checker in checkers:
        assert checker.anomalies == [], checker.report()
        assert (checker.received, checker.expected) == (count, count + 1), checker.report()
        assert checker.epochs == {epoch}
    assert fake.accepted_count == accepted  # the same connection throughout
    assert client.state is dc.ConnectionState.CONNECTED
    for sub in subs:
        sub.release()
    logging.getLogger(__name__).info(
        "%d events x 2 handles: produced in %.1f s, delivered in %.1f s (%.0f events/s per handle)",
        count,
        produced,
        elapsed,
        count / elapsed,
    )


@pytest.fixture
def quiet_frames(caplog: pytest.LogCaptureFixture) -> None:
    """The suite logs every frame at DEBUG (the client's frame log and the loopback server's
    websockets log); a million of them would measure the log, not the client."""
    caplog.set_level(logging.INFO, logger="daemon_client.connection.frames")  # the client logger's frame log
    caplog.set_level(logging.INFO, logger="daemon_client.testing.fake.loopback")


@pytest.mark.usefixtures("quiet_frames")
@pytest.mark.budget(110)
@pytest.mark.parametrize(
    ("kind", "transport", "count"),
    [("capable", "loopback", 100_000), ("selective", "memory", 20_000), ("broadcast", "memory", 20_000)],
)
def test_sequenced_events_arrive_gap_free_and_in_order_at_two_handles(
    fakes, make_client, kind, transport, count
) -> None:
    fake = fakes(kind)
    fake.agents.upsert("a1")
    client = make_client(fake, transport)
    client.connect()
    _stream(fake, client, count)


@pytest.mark.slow  # skipped unless selected with -m slow (tests/reliability/conftest.py)
@pytest.mark.budget(240)
@pytest.mark.usefixtures("quiet_frames")
def test_a_million_events_arrive_gap_free_and_in_order_at_two_handles(fakes, make_client) -> None:
    fake = fakes("capable")
    fake.agents.upsert("a1")
    client = make_client(fake, "loopback")
    client.connect()
    _stream(fake, client, 1_000_000)
