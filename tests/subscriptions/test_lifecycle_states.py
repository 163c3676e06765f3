"""The one subscription state model: every family's states map onto its phases, every
transition is checked against one table, and an illegal one is refused loudly."""

from __future__ import annotations

import enum
import itertools
import logging
from collections.abc import Iterator

import pytest

from daemon_client.subscriptions.config import ConfigState
from daemon_client.subscriptions.directory import ObservationState
from daemon_client.subscriptions.lifecycle import (
    MEANINGS,
    TRANSITIONS,
    IllegalTransition,
    Phase,
    allowed,
    move,
    set_strict_transitions,
)
from daemon_client.subscriptions.membership import State
from daemon_client.subscriptions.terminal_directory import DirectoryState
from daemon_client.subscriptions.terminal_streams import StreamState

P = Phase
LEGAL = {
    (P.PENDING, P.ESTABLISHING), (P.PENDING, P.EXITED), (P.PENDING, P.FAILED), (P.PENDING, P.RELEASED),
    (P.ESTABLISHING, P.PENDING), (P.ESTABLISHING, P.LIVE), (P.ESTABLISHING, P.RESTORING),
    (P.ESTABLISHING, P.EXITED), (P.ESTABLISHING, P.FAILED), (P.ESTABLISHING, P.RELEASED),
    (P.LIVE, P.PENDING), (P.LIVE, P.RESTORING), (P.LIVE, P.EXITED), (P.LIVE, P.FAILED), (P.LIVE, P.RELEASED),
    (P.RESTORING, P.LIVE), (P.RESTORING, P.PENDING), (P.RESTORING, P.EXITED), (P.RESTORING, P.FAILED),
    (P.RESTORING, P.RELEASED),
    (P.EXITED, P.RELEASED), (P.FAILED, P.RELEASED),
}  # fmt: skip
"""Every allowed change of phase (staying in a phase is always allowed)."""

FAMILIES: list[type[enum.Enum]] = [ObservationState, State, DirectoryState, StreamState, ConfigState]


class Subject:
    def __init__(self, state: object) -> None:
        self.state = state


@pytest.fixture
def lenient() -> Iterator[None]:
    set_strict_transitions(False)
    yield
    set_strict_transitions(True)


@pytest.mark.parametrize(("old", "new"), list(itertools.product(Phase, Phase)))
def test_the_transition_table(old: Phase, new: Phase) -> None:
    assert allowed(old, new) is (old is new or (old, new) in LEGAL)


def test_every_phase_has_a_meaning_and_final_phases_only_become_released() -> None:
    assert set(MEANINGS) == set(Phase) == set(TRANSITIONS)
    for phase, meaning in MEANINGS.items():
        assert all((meaning.callbacks, meaning.restore, meaning.release)), phase
        if meaning.final:
            assert TRANSITIONS[phase] <= {Phase.RELEASED}


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_every_family_state_is_a_phase(family: type[enum.Enum]) -> None:
    phases = {member.phase for member in family}  # type: ignore[attr-defined]
    assert {Phase.LIVE, Phase.RELEASED} <= phases
    assert DirectoryState.ASKED.phase is Phase.ESTABLISHING


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__)
def test_move_follows_the_table_in_every_family(family: type[enum.Enum]) -> None:
    for old, new in itertools.product(family, family):
        subject = Subject(old)
        if allowed(old.phase, new.phase):  # type: ignore[attr-defined]
            assert move(subject, new) is True  # type: ignore[arg-type]
            assert subject.state is new
        else:
            with pytest.raises(IllegalTransition, match=f"{old.phase.value} -> {new.phase.value}"):  # type: ignore[attr-defined]
                move(subject, new)  # type: ignore[arg-type]
            assert subject.state is old


def test_an_illegal_transition_is_logged_and_refused_outside_strict_mode(
    lenient: None, caplog: pytest.LogCaptureFixture
) -> None:
    subject = Subject(StreamState.RELEASED)
    with caplog.at_level(logging.ERROR, "daemon_client.subscriptions"):
        assert move(subject, StreamState.LIVE) is False  # type: ignore[arg-type]
    assert subject.state is StreamState.RELEASED
    assert any("illegal subscription transition released -> live" in r.getMessage() for r in caplog.records)
