"""The context the namespaces share: connection facts, futures on the callback thread, and a
request that still times out when its timer cannot fire."""

from __future__ import annotations

import threading

import pytest

import daemon_client as dc
from daemon_client.runtime import context as context_module


def test_the_context_reports_the_host_kind_of_the_current_connection(fakes, make_client) -> None:
    fake = fakes("broadcast")
    client = make_client(fake)
    assert client._context.host_kind is None
    assert client._context.server_info is None
    client.connect()
    assert client._context.host_kind is dc.HostKind.BROADCAST
    assert client._connection._heartbeat.misses == 0


def test_futures_of_the_context_call_back_on_the_callback_thread(fakes, make_client) -> None:
    client = make_client(fakes())
    client.connect()
    future = client._context.new_future()
    called = threading.Event()
    threads: list[str] = []

    def callback(done: object) -> None:
        threads.append(threading.current_thread().name)
        called.set()

    future.add_done_callback(callback)
    future.set_result(1)
    assert called.wait(5)
    assert threads != [threading.current_thread().name]


def test_a_request_whose_timer_cannot_fire_times_out_after_a_grace(fakes, make_client, monkeypatch) -> None:
    fake = fakes()
    fake.ignore("ping")
    client = make_client(fake, heartbeat=dc.Heartbeat(enabled=False))
    client.connect()
    monkeypatch.setattr(context_module, "RESULT_GRACE", 0.01)
    client._timers.stop()  # a timer thread that no longer runs anything
    with pytest.raises(dc.RequestTimeout, match=r"ping \(.+\) got no reply within 0\.05 s \(waiting for the reply\)"):
        client.request({"type": "ping"}, timeout=0.05)
