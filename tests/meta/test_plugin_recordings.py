"""The plugin's recorded sessions: ``@pytest.mark.daemon_recording`` with ``recorded_client``
and the record modes ``none``, ``once`` and ``rewrite``, run in a separate pytest."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from daemon_client.testing import FakeDaemon

SAMPLE = """
import pytest

import daemon_client as dc


@pytest.mark.daemon_recording("titles")
def test_titles(recorded_client: dc.Client) -> None:
    assert [e.agent.title for e in recorded_client.agents.list().entries] == ["one"]


def test_named_after_the_test(recorded_client: dc.Client) -> None:
    assert recorded_client.ping().request_id
"""

CHANGED = """
import pytest

import daemon_client as dc


@pytest.mark.daemon_recording("titles")
def test_titles(recorded_client: dc.Client) -> None:
    recorded_client.agents.list(filter=dc.AgentFilter(statuses=["running"]))
"""

FEWER = """
import pytest

import daemon_client as dc


@pytest.mark.daemon_recording("titles")
def test_strict(recorded_client: dc.Client) -> None:
    pass


@pytest.mark.daemon_recording("titles", allow_unplayed=True)
def test_lenient(recorded_client: dc.Client) -> None:
    pass
"""


def run_pytest(folder: Path, source: str, *options: str) -> tuple[int, str]:
    (folder / "test_sample.py").write_text(source, encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_sample.py", *options]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, done.stdout + done.stderr


def test_record_once_then_replay_offline(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    code, out = run_pytest(tmp_path, SAMPLE)
    assert code != 0, out
    assert "no recording at" in out
    assert "--daemon-record-mode=once" in out

    fake = fakes()
    fake.agents.upsert(title="one")
    code, out = run_pytest(tmp_path, SAMPLE, "--daemon-record-mode=once", f"--daemon-url={fake.serve()}")
    assert code == 0, out
    folder = tmp_path / "recordings" / "test_sample"
    assert sorted(p.name for p in folder.iterdir()) == ["test_named_after_the_test.jsonl", "titles.jsonl"]
    fake.close()  # from now on there is no daemon

    code, out = run_pytest(tmp_path, SAMPLE)
    assert code == 0, out
    assert "2 passed" in out

    code, out = run_pytest(tmp_path, SAMPLE, "--daemon-record-mode=once")  # present: replayed, not recorded
    assert code == 0, out

    code, out = run_pytest(tmp_path, CHANGED)
    assert code != 0, out
    assert "not in the recording" in out
    assert 'filter: sent {"statuses":["running"]}, not in the recording' in out

    code, out = run_pytest(tmp_path, FEWER)
    assert code != 0, out
    assert "2 passed, 1 error" in out  # the strict test fails in its teardown
    assert "ERROR test_sample.py::test_strict" in out
    assert "were not played" in out


def test_rewrite_records_again_and_needs_a_daemon(tmp_path: Path, fakes: Callable[..., FakeDaemon]) -> None:
    fake = fakes()
    fake.agents.upsert(title="one")
    code, out = run_pytest(tmp_path, SAMPLE, "--daemon-record-mode=rewrite")
    assert code != 0, out
    assert "needs a daemon: pass --daemon-url" in out
    recording = tmp_path / "recordings" / "test_sample" / "titles.jsonl"
    recording.parent.mkdir(parents=True)
    recording.write_text("stale\n", encoding="utf-8")
    code, out = run_pytest(tmp_path, SAMPLE, "--daemon-record-mode=rewrite", f"--daemon-url={fake.serve()}")
    assert code == 0, out
    assert "stale" not in recording.read_text(encoding="utf-8")
    assert '"fetch_agents_request"' in recording.read_text(encoding="utf-8")
