"""Callbacks that misbehave: raise, sleep, block, release their own subscription, close the client,
or wait for something only the callback thread can deliver.

``tests/runtime/test_callbacks.py`` covers the basics with push listeners (a raising listener, strict
mode, ``request``/``ping``/``close`` from a listener, ``flush_callbacks`` and
``RecordingHandler.wait_for`` raising ``WouldDeadlock``). This file does the same from every
other kind of callback (timeline handlers, directory callbacks, provider handlers, state
listeners, done-callbacks of futures), adds the remaining ``WouldDeadlock`` waits, and checks
each time that the callbacks of the other subscriptions keep coming, in order.
"""

from __future__ import annotations

import collections
import contextlib
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(0.005)
    return True


def client_threads(client: dc.Client) -> list[str]:
    prefix = f"{client._name}-"
    return [t.name for t in threading.enumerate() if t.name.startswith(prefix) and t.is_alive()]


class Boom(Exception):
    """What a misbehaving callback raises: which callback, and its call number."""

    def __init__(self, where: str, n: int) -> None:
        super().__init__(f"{where} #{n}")
        self.where = where
        self.n = n


def _setup(fakes: Callable[..., FakeDaemon], make_client: Callable[..., dc.Client], **options: Any) -> tuple:
    fake = fakes("capable")
    fake.on_request("echo_request", lambda ctx: ctx.reply({"echo": ctx.message.get("value")}))
    for agent_id in ("a1", "a2"):
        fake.agents.upsert(agent_id, cwd=f"/home/dev/{agent_id}", status="idle", title="start")
    client = make_client(fake, **options)
    client.connect()
    return fake, client


class Canary:
    """Subscriptions that behave, on agent ``a2``, beside the misbehaving ones: a timeline
    handler and a provider handler. :meth:`check` makes new events and expects every event,
    before and after, in order."""

    def __init__(self, fake: FakeDaemon, client: dc.Client) -> None:
        self.fake = fake
        self.timeline = RecordingHandler[dc.TimelineUpdate]("canary timeline")
        self.providers = RecordingHandler[Any]("canary providers")
        self.sub = client.agents.ref("a2").timeline.subscribe(self.timeline)
        self.provider_sub = client.providers.subscribe(self.providers)
        self.sub.ready.result(5)
        self.provider_sub.ready.result(5)
        self.appended: list[int] = []
        self.published = 0

    def feed(self, count: int = 1) -> None:
        for _ in range(count):
            self.appended.append(self.fake.timeline.append("a2", {"type": "assistant_message", "text": "ok"}))
        self.fake.providers.publish()
        self.published += 1

    def check(self) -> None:
        self.feed(3)
        rows = self.timeline.wait_for(len(self.appended), predicate=lambda u: u.seq is not None)
        assert [u.seq for u in rows] == self.appended
        assert not [u for u in self.timeline.items if u.type in ("error", "subscription_restored")]
        self.providers.wait_for(self.published)


@pytest.fixture
def errors() -> list[BaseException]:
    return []


# ---------------------------------------------------------------------------------------- raising


def test_raising_callbacks_of_every_kind_are_reported_and_delivery_goes_on(fakes, make_client, errors) -> None:
    where: list[str] = []

    def on_error(exc: BaseException) -> None:
        where.append(threading.current_thread().name)
        errors.append(exc)

    fake, client = _setup(fakes, make_client, strict=False, on_callback_error=on_error)
    canary = Canary(fake, client)
    counters: collections.Counter[str] = collections.Counter()

    def raiser(name: str, exc_type: type[BaseException] = Boom) -> Callable[..., None]:
        def callback(*_: object) -> None:
            counters[name] += 1
            if exc_type is Boom:
                raise Boom(name, counters[name])
            raise exc_type(f"{name} #{counters[name]}")

        return callback

    timeline = client.agents.ref("a1").timeline.subscribe(raiser("timeline"))
    timeline.ready.result(5)
    observation = client.agents.list(subscribe=True).subscription
    observation.subscribe(snapshot=raiser("snapshot"), update=raiser("update"))
    providers = client.providers.subscribe(raiser("providers"))
    providers.ready.result(5)
    client.on_state_change(raiser("state"))
    # The fake answers requests on its own thread: the reply may come after every push below.
    # A second done-callback, posted after the raising one, proves the raising one was reported.
    replied = threading.Event()
    echo = client.request_async({"type": "echo_request", "value": 1})
    echo.add_done_callback(raiser("done"))
    echo.add_done_callback(lambda _fut: replied.set())
    client.add_push_listener(raiser("exit", SystemExit), ["custom_exit"])
    client.add_push_listener(raiser("interrupt", KeyboardInterrupt), ["custom_interrupt"])

    rounds = 5
    for n in range(rounds):
        fake.timeline.append("a1", {"type": "assistant_message", "text": f"{n}"})
        fake.agents.upsert("a1", title=f"title {n}")
        canary.feed()
    fake.push("custom_exit", {})
    fake.push("custom_interrupt", {})
    canary.check()
    assert replied.wait(5)
    assert client.flush_callbacks()

    expected = {"timeline": rounds, "snapshot": 1, "update": rounds, "providers": rounds + 1, "state": 1,
                "done": 1, "exit": 1, "interrupt": 1}  # fmt: skip
    assert dict(counters) == expected
    assert len(errors) == sum(expected.values())
    assert all(name.endswith("-dispatch") for name in where)  # on the thread of the callback that raised
    by_kind: dict[str, list[int]] = collections.defaultdict(list)
    for exc in errors:
        if isinstance(exc, Boom):
            by_kind[exc.where].append(exc.n)
    assert all(numbers == sorted(numbers) for numbers in by_kind.values())  # each callback's errors in order
    assert {type(e) for e in errors if not isinstance(e, Boom)} == {SystemExit, KeyboardInterrupt}
    assert client.request({"type": "echo_request", "value": 2})["echo"] == 2
    assert client.state is dc.ConnectionState.CONNECTED


def test_an_on_callback_error_that_raises_does_not_stop_delivery(fakes, make_client, caplog) -> None:
    def broken_hook(exc: BaseException) -> None:
        raise RuntimeError("the error hook is broken too")

    fake, client = _setup(fakes, make_client, strict=False, on_callback_error=broken_hook)
    canary = Canary(fake, client)
    calls = RecordingHandler[dc.TimelineUpdate]("raising")

    def handler(update: dc.TimelineUpdate) -> None:
        calls(update)
        raise Boom("timeline", 1)

    client.agents.ref("a1").timeline.subscribe(handler).ready.result(5)
    for _ in range(3):
        fake.timeline.append("a1", {"type": "assistant_message", "text": "x"})
    calls.wait_for(3)
    canary.check()
    assert client.flush_callbacks()
    assert caplog.text.count("on_callback_error raised") == 3


def test_strict_mode_keeps_every_error_and_close_raises_the_rest(fakes, make_client, errors) -> None:
    fake, client = _setup(fakes, make_client, strict=True, on_callback_error=errors.append)
    canary = Canary(fake, client)
    seen = RecordingHandler[Any]("seen")

    def timeline_handler(update: dc.TimelineUpdate) -> None:
        seen(update)
        raise Boom("timeline", update.seq or 0)

    def update_handler(message: Any) -> None:
        seen(message)
        raise Boom("update", 0)

    client.agents.ref("a1").timeline.subscribe(timeline_handler).ready.result(5)
    client.agents.list(subscribe=True).subscription.subscribe(update=update_handler)
    first = fake.timeline.append("a1", {"type": "assistant_message", "text": "x"})
    fake.timeline.append("a1", {"type": "assistant_message", "text": "y"})
    fake.agents.upsert("a1", title="changed")
    seen.wait_for(3)
    assert client.flush_callbacks()
    with pytest.raises(dc.CallbackError, match=r"Boom: timeline #\d+ \(and 2 more\)") as info:
        client.raise_callback_errors()
    assert isinstance(info.value.__cause__, Boom)
    assert info.value.__cause__.n == first  # the first error, chained
    client.raise_callback_errors()  # each error is raised once
    canary.check()

    fake.timeline.append("a1", {"type": "assistant_message", "text": "z"})
    seen.wait_for(4)
    assert client.flush_callbacks()
    assert len(errors) == 4  # on_callback_error saw every one, strict or not
    with pytest.raises(dc.CallbackError, match="timeline"):
        client.close()
    assert client.state is dc.ConnectionState.DISPOSED
    assert wait_until(lambda: not client_threads(client)), client_threads(client)
    client.close()  # idempotent, and nothing left to raise


def test_in_strict_mode_close_from_a_callback_defers_the_errors_to_the_test_thread(fakes, make_client) -> None:
    fake, client = _setup(fakes, make_client, strict=True)
    outcome: queue.Queue[object] = queue.Queue()

    def handler(update: dc.TimelineUpdate) -> None:
        if update.seq == 1:
            raise Boom("timeline", 1)
        try:
            client.close()  # on the callback thread: does not raise the kept error here
            outcome.put("returned")
        except BaseException as exc:
            outcome.put(exc)

    client.agents.ref("a1").timeline.subscribe(handler).ready.result(5)
    fake.timeline.append("a1", {"type": "assistant_message", "text": "raise"})
    fake.timeline.append("a1", {"type": "assistant_message", "text": "close"})
    assert outcome.get(timeout=5) == "returned"
    assert wait_until(lambda: not client_threads(client)), client_threads(client)
    with pytest.raises(dc.CallbackError, match="timeline #1"):
        client.raise_callback_errors()


# ---------------------------------------------------------------------------------------- slow


def test_a_callback_sleeping_for_seconds_delays_other_callbacks_but_loses_nothing(fakes, make_client) -> None:
    fake, client = _setup(fakes, make_client)
    canary = Canary(fake, client)
    sleeping, wake = threading.Event(), threading.Event()
    slow_seen = RecordingHandler[int]("slow")

    def slow(update: dc.TimelineUpdate) -> None:
        if update.seq == 1:
            sleeping.set()
            wake.wait(10)  # asleep until the test has seen a reply get past it
        slow_seen(update.seq or 0)

    client.agents.ref("a1").timeline.subscribe(slow).ready.result(5)
    fake.timeline.append("a1", {"type": "assistant_message", "text": "sleep"})
    assert sleeping.wait(5)
    appended = [1]
    for n in range(100):  # queued behind the sleeping callback
        appended.append(fake.timeline.append("a1", {"type": "assistant_message", "text": f"{n}"}))
        canary.feed()
    assert client.request({"type": "echo_request", "value": 3})["echo"] == 3  # replies do not queue:
    assert not wake.is_set()  # it came back while the callback thread is still asleep
    assert client._dispatcher.pending > 0  # the others wait behind the sleeper
    wake.set()
    assert slow_seen.wait_for(len(appended), timeout=10) == appended
    canary.check()


def test_close_while_a_callback_sleeps_returns_within_its_timeout(fakes, make_client, caplog) -> None:
    fake, client = _setup(fakes, make_client)
    Canary(fake, client)  # live subscriptions for close() to release
    sleeping, wake = threading.Event(), threading.Event()
    after_close: queue.Queue[object] = queue.Queue()

    def sleeper(update: dc.TimelineUpdate) -> None:
        if update.seq != 1:
            return
        sleeping.set()
        wake.wait(10)  # a callback asleep for seconds; the test decides when it wakes
        try:
            client.request({"type": "echo_request", "value": 1})
            after_close.put("no error")
        except BaseException as exc:
            after_close.put(exc)

    client.agents.ref("a1").timeline.subscribe(sleeper).ready.result(5)
    fake.timeline.append("a1", {"type": "assistant_message", "text": "sleep"})
    assert sleeping.wait(5)
    dispatcher = client._dispatcher._worker_thread
    assert dispatcher is not None
    client.close(timeout=0.5)
    assert client.state is dc.ConnectionState.DISPOSED
    assert dispatcher.is_alive()  # the sleeper still runs: close() did not wait for it
    assert after_close.empty()  # and the callback has not got past its sleep
    assert "still running" in caplog.text
    wake.set()
    assert isinstance(after_close.get(timeout=5), dc.ClientClosed)
    dispatcher.join(5)
    assert not dispatcher.is_alive()
    assert wait_until(lambda: not client_threads(client)), client_threads(client)


# ---------------------------------------------------------------------------------------- blocking


def test_callbacks_of_every_kind_may_call_blocking_methods(fakes, make_client) -> None:
    fake, client = _setup(fakes, make_client)
    canary = Canary(fake, client)
    results = RecordingHandler[tuple]("results")
    agent = client.agents.ref("a1")
    fake.timeline.append("a1", {"type": "assistant_message", "text": "history"})

    def timeline_handler(update: dc.TimelineUpdate) -> None:
        if update.seq is None:
            return
        page = agent.timeline.refetch("tail", limit=10)
        results(("refetch", [entry.seq_end for entry in page.entries][-1:] == [update.seq]))
        walked = agent.timeline.pages("before", limit=1, projection="canonical")
        results(("pages", sum(len(p.entries) for p in walked) >= 2))
        results(("list", {e.agent.id for e in client.agents.list().entries} == {"a1", "a2"}))

    def update_handler(message: Any) -> None:
        with client.workspaces.list(subscribe=True).subscription as inner:  # observe and release, blocking
            results(("observe from a callback", inner.state.value))
        results(("snapshot", client.providers.snapshot().entries != ()))

    def provider_handler(update: Any) -> None:
        results(("ping", client.ping().round_trip >= 0))
        with client.agents.ref("a2").timeline.subscribe(lambda u: None) as inner:  # the reader acknowledges it
            results(("ready from a callback", inner.ready.result(5).agent_ids))

    def done(future: Any) -> None:
        results(("request from a done-callback", client.request({"type": "echo_request", "value": 7})["echo"]))

    sub = agent.timeline.subscribe(timeline_handler)
    sub.ready.result(5)
    observation = client.agents.list(subscribe=True).subscription
    observation.subscribe(update=update_handler)
    providers = client.providers.subscribe(provider_handler)
    providers.ready.result(5)

    fake.timeline.append("a1", {"type": "assistant_message", "text": "live"})
    fake.agents.upsert("a1", title="changed")
    fake.providers.publish()
    client.request_async({"type": "echo_request", "value": 1}).add_done_callback(done)
    got = dict(results.wait_for(8, timeout=10))
    assert got == {
        "refetch": True,
        "pages": True,
        "list": True,
        "observe from a callback": "live",
        "snapshot": True,
        "ping": True,
        "ready from a callback": ("a2",),
        "request from a done-callback": 7,
    }
    for releasable in (sub, observation, providers):
        releasable.release()
    assert len(results) == 8  # each ran once
    canary.check()
    assert wait_until(lambda: len(client.workspaces._manager._observations) == 0)  # the inner one is gone


def test_a_state_listener_may_wait_for_the_reconnect_and_ping(fakes, make_client) -> None:
    fake, client = _setup(fakes, make_client)
    canary = Canary(fake, client)
    pings = RecordingHandler[object]("pings")

    def listener(old: dc.ConnectionState, new: dc.ConnectionState, reason: str) -> None:
        if new is dc.ConnectionState.DISCONNECTED:
            pings(("connect() while disconnected", client.connect(timeout=5.0).server_id))
        if new is dc.ConnectionState.CONNECTED and reason == "reconnected":
            pings(("ping after the reconnect", client.ping().round_trip >= 0))

    client.on_state_change(listener)
    fake.drop_connections()
    assert pings.wait_for(2) == [("connect() while disconnected", "srv-fake"), ("ping after the reconnect", True)]
    restored = canary.timeline.wait_for(1, predicate=lambda u: u.type == "subscription_restored")
    assert restored
    canary.timeline.clear()
    canary.appended.clear()
    canary.check()


def test_handlers_may_release_their_own_and_other_subscriptions(fakes, make_client) -> None:
    fake, client = _setup(fakes, make_client)
    canary = Canary(fake, client)
    agent = client.agents.ref("a1")
    own = RecordingHandler[int]("own")
    other_seen = RecordingHandler[int]("other")
    witness = RecordingHandler[int]("witness")
    subs: dict[str, Any] = {}

    def own_handler(update: dc.TimelineUpdate) -> None:
        own(update.seq or 0)
        if len(own) == 2:
            subs["own"].release()  # its own subscription, waiting for the daemon
            subs["other"]()  # and another one, without waiting

    subs["own"] = agent.timeline.subscribe(own_handler)
    subs["other"] = agent.timeline.subscribe(lambda u: other_seen(u.seq or 0))
    witness_sub = agent.timeline.subscribe(lambda u: witness(u.seq or 0))
    for sub in (*subs.values(), witness_sub):
        sub.ready.result(5)
    seqs = [fake.timeline.append("a1", {"type": "assistant_message", "text": f"{n}"}) for n in range(6)]
    assert witness.wait_for(6) == seqs  # the third handle on the agent got everything
    assert client.flush_callbacks()
    assert own.items == seqs[:2]  # nothing after releasing itself
    # Released from the other handler while seq 2 was being delivered: its own copy of seq 2
    # came after the own handle's (capable hosts tag one copy per subscription) and was dropped.
    assert other_seen.items == seqs[:1]
    assert subs["own"].released
    assert subs["other"].released
    assert wait_until(lambda: len(fake.timeline.subscriptions()) == 2)  # the witness and the canary

    observation = client.agents.list(subscribe=True).subscription
    updates = RecordingHandler[Any]("updates")

    def update_handler(message: Any) -> None:
        updates(message)
        observation.release()  # a directory observation releasing itself from its callback

    observation.subscribe(update=update_handler)
    fake.agents.upsert("a1", title="one")
    fake.agents.upsert("a1", title="two")
    updates.wait_for(1)
    assert client.flush_callbacks()
    assert len(updates) == 1
    assert observation.released
    assert wait_until(lambda: not fake.directory_observations())

    provider_calls = RecordingHandler[Any]("provider calls")

    def provider_handler(update: Any) -> None:
        provider_calls(update)
        provider_sub.release()

    provider_sub = client.providers.subscribe(provider_handler)
    provider_sub.ready.result(5)
    fake.providers.publish()
    fake.providers.publish()
    provider_calls.wait_for(1)
    assert client.flush_callbacks()
    assert len(provider_calls) == 1
    assert wait_until(lambda: len(fake.events.subscriptions()) == 1)  # the canary's
    canary.check()


CLOSERS = ["timeline", "directory update", "directory snapshot", "providers", "done-callback", "ready done-callback"]


@pytest.mark.parametrize("where", CLOSERS)
def test_close_from_callbacks_of_every_kind_returns_and_stops_every_thread(fakes, make_client, where) -> None:
    fake, client = _setup(fakes, make_client)
    returned: queue.Queue[object] = queue.Queue()

    def close(*_: object) -> None:
        try:
            client.close()
            returned.put(threading.current_thread().name)
        except BaseException as exc:
            returned.put(exc)

    if where == "timeline":
        client.agents.ref("a1").timeline.subscribe(lambda u: close() if u.seq else None).ready.result(5)
        fake.timeline.append("a1", {"type": "assistant_message", "text": "close"})
    elif where == "directory update":
        client.agents.list(subscribe=True).subscription.subscribe(update=close)
        fake.agents.upsert("a1", title="close")
    elif where == "directory snapshot":
        client.agents.list(subscribe=True).subscription.subscribe(snapshot=close)
    elif where == "providers":
        client.providers.subscribe(close).ready.result(5)
        fake.providers.publish()
    elif where == "done-callback":
        client.request_async({"type": "echo_request", "value": 1}).add_done_callback(close)
    else:
        client.agents.ref("a2").timeline.subscribe(lambda u: None).ready.add_done_callback(close)
    assert str(returned.get(timeout=5)).endswith("-dispatch")
    assert client.state is dc.ConnectionState.DISPOSED
    assert wait_until(lambda: not client_threads(client)), client_threads(client)
    with pytest.raises(dc.ClientClosed):
        client.request({"type": "echo_request", "value": 2})


# ---------------------------------------------------------------------------------------- WouldDeadlock

WAITS = ["flush_callbacks", "RecordingHandler.wait_for", "timeline stream", "providers.wait_for_ready"]
CALLBACKS = ["timeline", "directory update", "providers", "done-callback"]


@pytest.mark.parametrize("callback", CALLBACKS)
def test_waits_for_the_callback_thread_raise_would_deadlock_at_once_inside_callbacks(
    fakes, make_client, callback
) -> None:
    fake, client = _setup(fakes, make_client)
    canary = Canary(fake, client)
    canary.check()  # its RecordingHandlers have now been called on the callback thread
    outcomes = RecordingHandler[tuple]("outcomes")

    def attempt(name: str, wait: Callable[[], object]) -> None:
        try:  # a wait that blocked would end in TimeoutError after its 5 s, not in WouldDeadlock
            wait()
            outcomes((name, "returned"))
        except dc.WouldDeadlock:
            outcomes((name, "WouldDeadlock"))
        except BaseException as exc:
            outcomes((name, f"{type(exc).__name__}: {exc}"))

    def stream_next() -> object:
        with client.agents.ref("a1").timeline.stream(timeout=5.0) as stream:
            return next(iter(stream))

    def every_wait(*_: object) -> None:
        if len(outcomes):
            return  # once
        attempt("flush_callbacks", lambda: client.flush_callbacks(5.0))
        attempt("RecordingHandler.wait_for", lambda: canary.timeline.wait_for(1000, timeout=5.0))
        attempt("timeline stream", stream_next)
        attempt("providers.wait_for_ready", lambda: client.providers.wait_for_ready(timeout=5.0))

    if callback == "timeline":
        client.agents.ref("a1").timeline.subscribe(lambda u: every_wait() if u.seq else None).ready.result(5)
        fake.timeline.append("a1", {"type": "assistant_message", "text": "go"})
    elif callback == "directory update":
        client.agents.list(subscribe=True).subscription.subscribe(update=every_wait)
        fake.agents.upsert("a1", title="go")
    elif callback == "providers":
        client.providers.subscribe(every_wait).ready.result(5)
        fake.providers.publish()
    else:
        client.request_async({"type": "echo_request", "value": 1}).add_done_callback(every_wait)
    assert dict(outcomes.wait_for(len(WAITS), timeout=10)) == dict.fromkeys(WAITS, "WouldDeadlock")
    canary.check()
    assert wait_until(lambda: len(fake.timeline.subscriptions()) == (2 if callback == "timeline" else 1))


def test_process_events_inside_a_manual_callback_raises_would_deadlock(fakes, make_client) -> None:
    fake, client = _setup(fakes, make_client, callback_executor="manual")
    outcomes: list[str] = []

    def handler(update: dc.TimelineUpdate) -> None:
        try:
            client.process_events(timeout=5.0)
            outcomes.append("returned")
        except dc.WouldDeadlock:
            outcomes.append("WouldDeadlock")
        try:
            client.flush_callbacks(5.0)
            outcomes.append("returned")
        except dc.WouldDeadlock:
            outcomes.append("WouldDeadlock")

    sub = client.agents.ref("a1").timeline.subscribe(handler)
    deadline = time.monotonic() + 5
    while not sub.ready.done() and time.monotonic() < deadline:
        client.process_events(timeout=0.05)
    fake.timeline.append("a1", {"type": "assistant_message", "text": "go"})
    while not outcomes and time.monotonic() < deadline:
        client.process_events(timeout=0.05)
    assert outcomes == ["WouldDeadlock", "WouldDeadlock"]  # a blocked wait would have returned instead


def test_would_deadlock_inside_a_callback_run_by_a_user_executor(fakes, make_client) -> None:
    gui: queue.Queue[Callable[[], None]] = queue.Queue()
    fake, client = _setup(fakes, make_client, callback_executor=gui.put)
    outcomes: list[str] = []

    def handler(update: dc.TimelineUpdate) -> None:
        for wait in (lambda: client.flush_callbacks(5.0), lambda: client.providers.wait_for_ready(timeout=5.0)):
            try:
                wait()
                outcomes.append("returned")
            except dc.WouldDeadlock:
                outcomes.append("WouldDeadlock")

    sub = client.agents.ref("a1").timeline.subscribe(lambda u: handler(u) if u.seq else None)

    def pump(until: Callable[[], bool]) -> None:  # the "GUI loop" runs what was posted, on this thread
        deadline = time.monotonic() + 5
        while not until() and time.monotonic() < deadline:
            with contextlib.suppress(queue.Empty):
                gui.get(timeout=0.05)()

    pump(sub.ready.done)
    fake.timeline.append("a1", {"type": "assistant_message", "text": "go"})
    pump(lambda: len(outcomes) == 2)
    assert outcomes == ["WouldDeadlock", "WouldDeadlock"]


@pytest.mark.xfail(
    strict=True,
    reason="LIMITATION: RecordingHandler.wait_for() learns the thread that delivers to it only from its "
    "first call; called inside a callback before the handler was ever called, it blocks the callback "
    "thread for its whole timeout and raises TimeoutError instead of WouldDeadlock",
)
def test_recording_handler_wait_for_inside_a_callback_before_its_first_call(fakes, make_client) -> None:
    fake, client = _setup(fakes, make_client)
    never_called = RecordingHandler[dc.TimelineUpdate]("never called yet")
    client.agents.ref("a2").timeline.subscribe(never_called).ready.result(5)  # delivered by this client
    outcome: queue.Queue[object] = queue.Queue()

    def handler(update: dc.TimelineUpdate) -> None:
        try:
            never_called.wait_for(1, timeout=1.0)
            outcome.put("returned")
        except BaseException as exc:  # blocked for its timeout: TimeoutError
            outcome.put(type(exc).__name__)

    client.agents.ref("a1").timeline.subscribe(lambda u: handler(u) if u.seq else None).ready.result(5)
    fake.timeline.append("a1", {"type": "assistant_message", "text": "go"})
    assert outcome.get(timeout=5) == "WouldDeadlock"
