"""``daemon-client top`` and the ``tui`` extra: without Textual the package raises
``MissingExtra`` and the command says what to install (status 2); the rest of the command line
never imports Textual; the keys ``top --help`` lists are the dashboard's; and the real
``daemon-client demo`` draws the dashboard in a terminal (tmux) and quits on ``q``."""

from __future__ import annotations

import importlib
import io
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import daemon_client as dc
from daemon_client.cli.commands.top import KEYS
from daemon_client.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
INSTALL = "pip install 'daemon-client[tui]'"


def _hide_textual(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "textual", None)  # as if the extra were not installed
    for name in [name for name in sys.modules if name == "daemon_client.tui" or name.startswith("daemon_client.tui.")]:
        monkeypatch.delitem(sys.modules, name)


def test_importing_the_package_without_textual_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide_textual(monkeypatch)
    with pytest.raises(dc.MissingExtra, match=r"the 'tui' extra .*pip install 'daemon-client\[tui\]'"):
        importlib.import_module("daemon_client.tui")


def test_top_without_textual_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _hide_textual(monkeypatch)
    assert main(["top"]) == 2
    assert capsys.readouterr().err == f"daemon-client: top needs the 'tui' extra (textual is missing): {INSTALL}\n"


def test_the_rest_of_the_command_line_never_imports_textual() -> None:
    script = (
        "import sys, contextlib, io\n"
        "from daemon_client.cli.main import main\n"
        "for argv in (['--help'], ['top', '--help'], ['demo', '--help'], ['agents', '--help']):\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "        main(argv)\n"
        "main(['completion', 'bash'], out=io.StringIO())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual' or m.startswith('daemon_client.tui')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_top_help_lists_every_key_of_the_dashboard() -> None:
    pytest.importorskip("textual")
    from daemon_client.tui import TopApp

    documented = {part.strip().lower() for key, _ in KEYS for part in key.split(" / ")}
    aliases = {"slash": "/"}
    bound = set()
    for binding in TopApp.BINDINGS:
        for key in binding.key.split(","):  # type: ignore[union-attr]
            bound.add(aliases.get(key, key).lower())
    assert bound <= documented, bound - documented
    assert {"q", "/", "escape", "s", "a", "d", "p", "c", "x", "t", "h", "home"} <= documented


def _pane(session: str) -> str:
    done = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True,
                          timeout=10, check=False)  # fmt: skip
    return done.stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_demo_binary_draws_the_dashboard_and_quits_on_q(tmp_path: Path) -> None:
    pytest.importorskip("textual")
    session = f"dc-top-{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "exit-status"
    env = f"PYTHONPATH={ROOT} DAEMON_CLIENT_HOSTS={tmp_path / 'hosts.toml'} TERM=xterm-256color"
    command = f"cd {ROOT} && env {env} {sys.executable} -m daemon_client demo; echo $? > {marker}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "48", command],
                   check=True, timeout=10)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        screen = ""
        while time.monotonic() < deadline:
            screen = _pane(session)
            if "Fix flaky sync test" in screen and "demo: connected" in screen:
                break
            time.sleep(0.2)  # polls the screen; bounded
        assert "Fix flaky sync test" in screen, screen  # a row
        assert "demo: connected" in screen, screen  # the status line
        assert "events/s" in screen, screen
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True, timeout=10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not marker.exists():
            time.sleep(0.2)  # waits for the process to end; bounded
        assert marker.exists(), _pane(session)
        assert marker.read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, timeout=10, check=False)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def followed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[list[dc.Host], dict[str, str]]]:
    """What ``top`` would follow: the dashboard replaced by a recorder; an empty host store."""
    pytest.importorskip("textual")
    from daemon_client.cli.actions import top

    monkeypatch.setenv("DAEMON_CLIENT_HOSTS", str(tmp_path / "hosts.toml"))
    for name in ("PASEO_HOST", "PASEO_LISTEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PASEO_HOME", str(tmp_path / "paseo-home"))
    seen: list[tuple[list[dc.Host], dict[str, str]]] = []

    def dashboard(hosts: list[dc.Host], where: dict[str, str], **options: object) -> int:
        seen.append((hosts, dict(where)))
        return 0

    monkeypatch.setattr(top, "dashboard", dashboard)
    return seen


def test_top_follows_every_stored_host(followed: list[tuple[list[dc.Host], dict[str, str]]], tmp_path: Path) -> None:
    store = dc.HostStore(tmp_path / "hosts.toml")
    store.add("laptop", "127.0.0.1:7001")
    store.add("buildbox", "127.0.0.1:7002")
    assert main(["top"], out=_Terminal()) == 0
    [(hosts, where)] = followed
    assert [host.label for host in hosts] == ["laptop", "buildbox"]
    assert where == {"laptop": "laptop", "buildbox": "buildbox"}


def test_top_without_stored_hosts_follows_the_daemon_found_as_usual(
    followed: list[tuple[list[dc.Host], dict[str, str]]],
) -> None:
    assert main(["top"], out=_Terminal()) == 0
    [(hosts, _)] = followed
    assert [(host.label, [c.id for c in host.connections]) for host in hosts] == [("daemon", ["direct:localhost:6767"])]
    assert main(["top", "--host", "127.0.0.1:7003"], out=_Terminal()) == 0
    assert [c.id for c in followed[1][0][0].connections] == ["direct:127.0.0.1:7003"]
    assert followed[1][1] == {"daemon": "127.0.0.1:7003"}


def test_top_refuses_what_it_cannot_do(
    followed: list[tuple[list[dc.Host], dict[str, str]]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["top", "--all-hosts"], out=_Terminal()) == 2
    assert "no stored hosts" in capsys.readouterr().err
    assert main(["top", "--all-hosts", "--host", "127.0.0.1:7003"], out=_Terminal()) == 2
    assert "leave out --host" in capsys.readouterr().err
    assert main(["top"], out=io.StringIO()) == 2  # not a terminal
    assert "standard output is not one" in capsys.readouterr().err
    assert followed == []
