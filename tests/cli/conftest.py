"""Fixtures of the command-line tests: ``cli`` starts ``daemon-client`` in a subprocess; ``fake``
is a capable fake daemon on a loopback port; ``serve(kind)`` one of the given host kind."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon

from .cli_process import CliProcess, clean_env

Start = Callable[..., CliProcess]


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[Start]:
    """``cli(*argv, env_extra=..., **options)`` starts the command; everything is stopped after the test."""
    started: list[CliProcess] = []
    home = tmp_path / "paseo-home"
    home.mkdir()

    def start(*argv: str, env_extra: dict[str, str] | None = None, **options: object) -> CliProcess:
        process = CliProcess(list(argv), clean_env(home, **(env_extra or {})), **options)  # type: ignore[arg-type]
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def fake() -> Iterator[FakeDaemon]:
    with FakeDaemon(host_kind=dc.HostKind.CAPABLE) as daemon:
        daemon.serve()
        yield daemon


@pytest.fixture
def serve(fakes: Callable[..., FakeDaemon]) -> Callable[[str], FakeDaemon]:
    """``serve(kind)``: a fake daemon of that host kind on a loopback port, closed after the test."""

    def make(kind: str) -> FakeDaemon:
        daemon = fakes(kind)
        daemon.serve()
        return daemon

    return make
