"""Recordings beside the tests: where they live, when to record, and the client a test gets.

Used by the ``recorded_client`` fixture of the pytest plugin (``daemon_client_pytest``),
which passes in what pytest knows (the test's file and name, the marker's arguments, the
command-line options). Runs on the test's thread.

Record modes, as in pytest-recording:

* ``none`` (default): replay only; a missing recording fails the test;
* ``once``: replay when the recording exists, else record it against ``--daemon-url``;
* ``rewrite``: always record against ``--daemon-url``, replacing the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from daemon_client.client import Client
from daemon_client.config import ReconnectPolicy
from daemon_client.testing.replay.daemon import ReplayDaemon, ReplayMismatch

__all__ = ["RECORD_MODES", "RecordedSession", "RecordingSettings", "RecordingUnavailable", "recording_path"]

RECORD_MODES = ("none", "once", "rewrite")
RECORDINGS_DIR = "recordings"
_FAST_RECONNECT = ReconnectPolicy(base_delay=0.05, max_delay=0.5)


class RecordingUnavailable(Exception):
    """The recording is missing in mode ``none``, or recording needs ``--daemon-url``."""


@attrs.frozen
class RecordingSettings:
    """What ``@pytest.mark.daemon_recording(name, **options)`` asks for."""

    name: str
    volatile: tuple[str, ...] = ()
    pace: float | None = None
    on_unmatched: str = "fail"
    connections: tuple[str, ...] | None = None
    allow_unplayed: bool = False
    """``False`` (default): after the test, every recorded frame must have been played."""

    @classmethod
    def from_marker(cls, args: Sequence[Any], kwargs: Mapping[str, Any], test_name: str) -> RecordingSettings:
        """The settings of a marker (``args``/``kwargs``; none: named after the test)."""
        if len(args) > 1:
            raise TypeError("daemon_recording takes one positional argument, the recording's name")
        unknown = set(kwargs) - {"name", "volatile", "pace", "on_unmatched", "connections", "allow_unplayed"}
        if unknown:
            raise TypeError(f"daemon_recording got unknown options: {', '.join(sorted(unknown))}")
        name = args[0] if args else kwargs.get("name") or re.sub(r"[^\w.-]+", "_", test_name).strip("_")
        if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
            raise ValueError(f"daemon_recording: {name!r} is not a usable file name")
        connections = kwargs.get("connections")
        return cls(
            name=name,
            volatile=tuple(kwargs.get("volatile", ())),
            pace=kwargs.get("pace"),
            on_unmatched=kwargs.get("on_unmatched", "fail"),
            connections=None if connections is None else tuple(connections),
            allow_unplayed=bool(kwargs.get("allow_unplayed", False)),
        )


def recording_path(test_file: Path, name: str) -> Path:
    """``<the test's folder>/recordings/<the test module>/<name>.jsonl``."""
    return test_file.parent / RECORDINGS_DIR / test_file.stem / f"{name}.jsonl"


class RecordedSession:
    """The client of one test: replaying ``path``, or recording it against ``daemon_url``.

    Raises ``ValueError`` for a bad mode. :meth:`open` connects; :meth:`finish` closes and,
    replaying, fails the test (:class:`ReplayMismatch`) on an unrecorded request and, unless
    ``allow_unplayed``, on recorded frames the test did not play.
    """

    def __init__(self, path: Path, settings: RecordingSettings, *, mode: str, daemon_url: str | None) -> None:
        if mode not in RECORD_MODES:
            raise ValueError(f"record mode must be one of {', '.join(RECORD_MODES)}, got {mode!r}")
        self.path = path
        self.settings = settings
        self.recording = mode == "rewrite" or (mode == "once" and not path.exists())
        self._mode = mode
        self._url = daemon_url
        self._replay: ReplayDaemon | None = None
        self._client: Client | None = None

    def open(self) -> Client:
        """A connected strict client. Raises :class:`RecordingUnavailable` when the recording
        is missing in mode ``none`` or when recording without ``daemon_url``."""
        if self.recording:
            if not self._url:
                raise RecordingUnavailable(
                    f"recording {self.path} needs a daemon: pass --daemon-url ws://host:port/ws "
                    f"(record mode {self._mode!r})"
                )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._client = Client(self._url, trace=self.path, strict=True)
        else:
            if not self.path.exists():
                raise RecordingUnavailable(
                    f"no recording at {self.path}: record it once against a daemon with "
                    "--daemon-record-mode=once --daemon-url ws://host:port/ws"
                )
            settings = self.settings
            self._replay = ReplayDaemon(
                self.path,
                volatile=settings.volatile,
                pace=settings.pace,
                on_unmatched="error_reply" if settings.on_unmatched == "error_reply" else "fail",
                connections=settings.connections,
            )
            self._client = Client(
                "ws://localhost/ws",
                transport_factory=self._replay.transport_factory,
                strict=True,
                reconnect=_FAST_RECONNECT,
            )
        try:
            self._client.connect()
        except BaseException:
            self.finish(check=False)
            raise
        return self._client

    def finish(self, *, check: bool = True) -> None:
        """Close the client (and the replay); with ``check``, raise what the replay found."""
        client, replay = self._client, self._replay
        self._client = self._replay = None
        missing: list[str] = []
        try:
            if client is not None:
                client.close()  # first: what close() sends (releases) is in the recording too
            if replay is not None and check and not self.settings.allow_unplayed:
                missing = replay.unplayed()
        finally:
            if replay is not None:
                replay.close()
        if replay is None or not check:
            return
        replay.check()
        if missing:
            shown = "\n  ".join(missing[:20])
            raise ReplayMismatch(f"{self.path.name}: {len(missing)} recorded frame(s) were not played:\n  {shown}")
