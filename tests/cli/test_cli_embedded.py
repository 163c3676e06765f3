"""``serve`` and ``demo``, the embedded simulated daemon: TLS certificates, the missing ``demo``
extra, and the live screen of ``demo`` on a terminal. In the test process."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
import trustme

from daemon_client.cli.main import main

EXTRA = "the embedded daemon needs the 'demo' extra ({} is missing): pip install 'daemon-client[demo]'"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(argv: list[str], out: io.StringIO | None = None) -> tuple[int, str]:
    out = out or io.StringIO()
    code = main(argv, out=out)
    return code, out.getvalue()


def test_serve_speaks_tls_with_the_certificate_given(tmp_path: Path) -> None:
    cert = trustme.CA().issue_cert("127.0.0.1")
    certfile, keyfile = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.cert_chain_pems[0].write_to_path(str(certfile))
    cert.private_key_pem.write_to_path(str(keyfile))
    code, out = run(["serve", "--certfile", str(certfile), "--keyfile", str(keyfile), "--duration", "0.1"])
    assert code == 0
    assert out.startswith("simulated daemon (capable host) listening at wss://127.0.0.1:")


def test_serve_with_a_missing_certificate_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.pem"
    assert run(["serve", "--certfile", str(missing), "--duration", "0.1"]) == (1, "")
    assert capsys.readouterr().err.startswith(f"daemon-client: cannot load the TLS certificate {missing}: ")


@pytest.mark.parametrize("module", ["daemon_client.testing.simulation", "websockets.sync.server"])
def test_serve_without_the_demo_extra_says_what_to_install(
    module: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # as if the package were not installed
    assert run(["serve", "--duration", "0.1"]) == (1, "")
    assert capsys.readouterr().err == f"daemon-client: {EXTRA.format(module)}\n"


def test_demo_plain_on_a_terminal_scrolls_and_never_erases() -> None:
    code, out = run(["demo", "--plain", "--duration", "0.5"], Terminal())
    assert code == 0
    assert out.startswith("embedded demo daemon (capable host) at ws://127.0.0.1:")
    assert "\x1b" not in out  # no screen redraw: what was printed stays
    assert "Publish the 2.4 release" in out  # the varied cast of the simulation


def test_demo_without_a_terminal_is_plain() -> None:
    code, out = run(["demo", "--duration", "0.3"])
    assert code == 0
    assert out.startswith("embedded demo daemon (capable host) at ws://127.0.0.1:")
    assert "\x1b" not in out


def test_demo_on_a_terminal_without_textual_is_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "textual", None)  # as if the tui extra were not installed
    for name in [name for name in sys.modules if name.startswith("daemon_client.tui")]:
        monkeypatch.delitem(sys.modules, name)  # imported by an earlier test: import it again
    code, out = run(["demo", "--duration", "0.3"], Terminal())
    assert code == 0
    assert out.startswith("embedded demo daemon (capable host) at ws://127.0.0.1:")


def test_demo_on_a_terminal_runs_the_dashboard(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("textual")
    from daemon_client.cli.actions import top

    seen: list[tuple[list[str], dict[str, str], float | None]] = []

    def dashboard(hosts: list[Any], where: dict[str, str], **options: Any) -> int:
        seen.append(([host.label for host in hosts], dict(where), options.get("duration")))
        return 0

    monkeypatch.setattr(top, "dashboard", dashboard)
    code, out = run(["demo", "--duration", "2"], Terminal())
    assert code == 0
    assert out == ""
    [(labels, where, duration)] = seen
    assert labels == ["demo"]
    assert where["demo"].startswith("ws://127.0.0.1:")
    assert duration == 2.0
