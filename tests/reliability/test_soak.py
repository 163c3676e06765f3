"""The soak run (``tests/reliability/soak.py``) in the suite: 30 seconds in its own process, and
its loss checker on synthetic input."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.protocol.timeline import AssistantMessage, SubscriptionRestored, TimelineEvent

from .soak import SeqTracker, Stats

ROOT = Path(__file__).resolve().parents[2]
SECONDS = 30


def _figure(output: str, pattern: str) -> tuple[str, ...]:
    found = re.search(pattern, output, re.MULTILINE)
    assert found is not None, f"{pattern!r} not in the soak's output:\n{output}"
    return found.groups()


@pytest.mark.budget(SECONDS + 100)  # the watchdog of tests/reliability/conftest.py
def test_a_30_second_soak_loses_nothing_and_survives_every_fault() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tests.reliability.soak", "--seconds", str(SECONDS), "--seed", "20240"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=SECONDS + 90,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert _figure(output, r"^result: (\S+)") == ("PASS",)
    injected, survived = (int(n) for n in _figure(output, r"^faults injected: (\d+).*\n^faults survived: (\d+)"))
    assert injected >= 5, output  # a fault every 1-3 s after the first healthy stretch
    assert survived == injected
    assert int(_figure(output, r"^reconnects: (\d+)")[0]) >= 1
    assert int(_figure(output, r"^timeline events delivered: (\d+)")[0]) > 1000
    assert _figure(output, r"^events lost on healthy stretches: (\d+)") == ("0",)
    assert _figure(output, r"^agent observation matches the daemon at the end: (\w+)") == ("yes",)
    assert _figure(output, r"\(leaked: ([^)]*)\)") == ("none",)
    assert _figure(output, r"^RSS: start [\d.]+ MiB, after \d+ s [\d.]+ MiB, end [\d.]+ MiB()")


def _row(seq: int, epoch: str = "e1") -> dc.TimelineUpdate:
    return dc.TimelineUpdate(
        "a1", TimelineEvent(item=AssistantMessage(text="x"), provider="mock"), seq=seq, epoch=epoch
    )


def test_the_soak_loss_checker_counts_gaps_within_a_segment_only() -> None:
    stats = Stats()
    tracker = SeqTracker(stats, "a1", long_lived=True)
    for seq in (5, 6, 7, 9, 10):  # 8 is missing on a healthy stretch
        tracker(_row(seq))
    tracker(dc.TimelineUpdate("a1", SubscriptionRestored()))
    for seq in (20, 21):  # after a reconnect nothing is replayed: a new segment, no loss
        tracker(_row(seq))
    tracker(_row(21))  # a duplicate
    tracker(_row(1, epoch="e2"))  # a new epoch starts a segment too
    tracker(_row(2, epoch="e2"))
    assert (stats.lost, stats.out_of_order, stats.segments, stats.events) == (1, 1, 3, 10)
    assert stats.gaps == ["a1: seq 9 after 7 (1 lost)", "a1: seq 21 after 21 (out of order)"]
    assert tracker.last == 2
