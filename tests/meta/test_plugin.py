"""The bundled pytest plugin."""

from __future__ import annotations

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon


def test_plugin_fixtures_give_a_connected_strict_client(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    fake_daemon.on_request("echo_request", lambda ctx: ctx.reply({"ok": True}))
    assert fake_client.state is dc.ConnectionState.CONNECTED
    assert fake_client.host_kind is dc.HostKind.CAPABLE
    assert fake_client.request({"type": "echo_request"})["ok"] is True


@pytest.mark.parametrize("fake_daemon", ["selective", "broadcast"], indirect=True)
def test_plugin_fixture_takes_a_host_kind(fake_daemon: FakeDaemon, fake_client: dc.Client) -> None:
    assert fake_client.host_kind is fake_daemon.host_kind
