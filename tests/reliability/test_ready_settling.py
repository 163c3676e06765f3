"""A subscription's ``ready`` future is settled once, whoever gets there first.

The callback thread resolves ``ready`` when the first push or acknowledgement arrives, while a
user thread may release the subscription (which fails ``ready``) or cancel the future itself at
the same moment. Settling must never raise ``InvalidStateError`` on the thread that lost the
race: that thread is an internal one, and the error would be logged as an internal failure (the
reader's settle hook) or reach ``on_callback_error`` (the callback thread; with ``strict=True``
it fails ``close()``).

Each test cancels ``ready`` before the client has connected, so the acknowledgement arrives
after the future is already done, deterministically; a stress variant releases subscriptions
while their first pushes arrive, with the thread switch interval narrowed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon
from daemon_client.testing.threads import live_threads

BOUND = 30.0
CWD = "/repo"

Subscribe = Callable[[dc.Client], Any]


def _terminal_directory(client: dc.Client) -> Any:
    return client.terminals.subscribe(lambda _changed: None, cwd=CWD)


def _timeline(client: dc.Client) -> Any:
    return client.agents.ref("a1").timeline.subscribe(lambda _update: None)


def _providers(client: dc.Client) -> Any:
    return client.providers.subscribe(lambda _event: None)


def _config(client: dc.Client) -> Any:
    return client.config.subscribe(lambda _change: None)


def _internal_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the client logged at ERROR: an internal thread that lost the race logs it there."""
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]


Watched = tuple[dc.Client, list[BaseException]]


@pytest.fixture
def watched(
    fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client], caplog: pytest.LogCaptureFixture
) -> Watched:
    """A client (not connected yet) of a capable fake with agent ``a1``, and the callback errors it
    reports; ERROR records of the client are captured for :func:`_internal_errors`."""
    caplog.set_level(logging.ERROR, logger="daemon_client")
    fake = fakes("capable")
    fake.agents.upsert("a1", title="one")
    errors: list[BaseException] = []
    return make_client(fake, on_callback_error=errors.append), errors


STRUCTURES: dict[str, Subscribe] = {
    "terminal-directory": _terminal_directory,
    "timeline": _timeline,
    "providers": _providers,
    "config": _config,
}


@pytest.mark.parametrize("structure", sorted(STRUCTURES))
def test_a_cancelled_ready_future_is_left_alone_when_the_acknowledgement_arrives(
    watched: Watched, structure: str, caplog: pytest.LogCaptureFixture
) -> None:
    client, errors = watched
    before = live_threads()
    sub = STRUCTURES[structure](client)
    assert sub.ready.cancel()
    client.connect()
    client.flush_callbacks(BOUND)
    probe = STRUCTURES[structure](client)  # acknowledged after the first: the first was handled
    probe.ready.result(BOUND)
    client.flush_callbacks(BOUND)
    assert errors == []
    assert _internal_errors(caplog) == []
    with pytest.raises(CancelledError):
        sub.ready.result(0)
    client.close()
    assert live_threads() <= before


@pytest.mark.usefixtures("fast_switching")
@pytest.mark.parametrize("structure", sorted(STRUCTURES))
def test_releasing_while_the_first_push_arrives_never_reports_an_internal_error(
    watched: Watched, structure: str, caplog: pytest.LogCaptureFixture
) -> None:
    client, errors = watched
    client.connect()
    subscribe = STRUCTURES[structure]
    barrier = threading.Barrier(4)
    failures: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait(BOUND)
            for _ in range(60):
                subscribe(client).release()
        except BaseException as exc:  # handed to the test
            failures.append(exc)

    workers = [threading.Thread(target=run, name=f"releaser-{n}") for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(BOUND)
    assert not any(worker.is_alive() for worker in workers)
    assert failures == []
    subscribe(client).ready.result(BOUND)
    client.flush_callbacks(BOUND)
    assert errors == []
    assert _internal_errors(caplog) == []
