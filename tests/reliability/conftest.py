"""Reliability tests: a per-test watchdog, slow variants off by default, and shared helpers.

Watchdog. Every test under ``tests/reliability`` runs with a wall-clock budget (60 s, or
``@pytest.mark.budget(seconds)``) covering its setup, call and teardown. A test that exceeds it
gets every thread's stack (names included) written to the real stderr at once, and fails with
the same dump in its report instead of hanging: a ``reliability-watchdog`` thread sends
``SIGUSR2`` to the main thread, whose handler raises ``pytest.fail`` inside the running phase
(blocking waits such as ``Event.wait`` or ``Thread.join`` are interrupted by signals). It keeps
interrupting, once a second and at most five times, while the phase still does not end (a hung
teardown too). Where signals cannot be sent (not POSIX), the dump is still written and
pytest-timeout (120 s, pyproject.toml) ends the run. A budget above that timeout raises the
test's pytest-timeout to match.

Slow variants. Tests marked ``slow`` here are skipped unless the ``-m`` expression names
``slow`` (``pytest -m slow tests/reliability``).

Helpers for the drop and restart tests: :class:`Gate` (hold chosen requests unanswered),
:class:`StateLog` (connection state changes), :class:`Observed` (one live observation of
every kind, with recorders and exact restore accounting) and :func:`client_threads`.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Generator, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.testing import FakeDaemon, RecordingHandler
from daemon_client.testing.fake.engine.handlers import RequestContext
from daemon_client.testing.threads import live_threads

HERE = Path(__file__).resolve().parent
DEFAULT_BUDGET = 60.0
_SIGNAL = getattr(signal, "SIGUSR2", None)
_MAX_INTERRUPTS = 5
_REPEAT = 1.0
_WATCHDOG = pytest.StashKey["Watchdog"]()
_RUNNER_FILES = re.compile(r"[/\\](_pytest|pluggy|pytest)[/\\]|^<frozen runpy>$")


# --------------------------------------------------------------------------------- collection
def _ours(item: pytest.Item) -> bool:
    """Only items of this directory: hooks called through ``config.hook`` see every item."""
    return HERE in Path(str(item.path)).resolve().parents


def _budget(item: pytest.Item) -> float:
    marker = item.get_closest_marker("budget")
    if marker is None:
        return DEFAULT_BUDGET
    seconds = marker.args[0] if marker.args else marker.kwargs.get("seconds")
    if not isinstance(seconds, int | float) or seconds <= 0:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.budget(seconds) needs a positive number")
    return float(seconds)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "budget(seconds): wall-clock budget of a tests/reliability test (default 60 s); past it the "
        "watchdog dumps every thread's stack and fails the test",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow_selected = re.search(r"\bslow\b", config.getoption("markexpr", "") or "") is not None
    skip_slow = pytest.mark.skip(reason="slow variant: select it with -m slow")
    try:
        global_timeout = float(config.getini("timeout") or 0)  # pytest-timeout's ini option
    except ValueError:
        global_timeout = 0.0
    for item in items:
        if not _ours(item):
            continue
        if item.get_closest_marker("slow") is not None and not slow_selected:
            item.add_marker(skip_slow)
        budget = _budget(item)
        if global_timeout and budget >= global_timeout and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(budget + 30))


# --------------------------------------------------------------------------------- watchdog
def format_all_stacks() -> str:
    """Every live thread's stack, named, the main thread first."""
    names = {thread.ident: thread for thread in threading.enumerate()}
    main = threading.main_thread().ident
    frames = sys._current_frames()
    parts = [f"{len(frames)} threads"]
    for ident in sorted(frames, key=lambda i: (i != main, names[i].name if i in names else "")):
        thread = names.get(ident)
        label = f"{thread.name!r} (daemon={thread.daemon})" if thread is not None else "<unknown thread>"
        summary = traceback.extract_stack(frames[ident])
        kept = traceback.StackSummary.from_list([f for f in summary if not _RUNNER_FILES.search(f.filename)])
        hidden = len(summary) - len(kept)
        note = f" ({hidden} pytest frames hidden)" if hidden else ""
        parts.append(f"--- thread {label} ident={ident}{note}\n{''.join(kept.format())}")
    return "\n".join(parts)


class Watchdog:
    """Fails one test that outlives its budget; see the module docstring."""

    def __init__(self, nodeid: str, budget: float) -> None:
        self.nodeid = nodeid
        self.budget = budget
        self.phase: str | None = None  # set by the phase hooks while setup/call/teardown runs
        self.message: tuple[str, str] | None = None  # (headline, main thread's stack), once expired
        self.interrupts = 0
        self._done = threading.Event()
        self._main = threading.main_thread().ident
        self._thread = threading.Thread(target=self._run, name="reliability-watchdog", daemon=True)
        self._previous: Any = None

    def start(self) -> None:
        if _SIGNAL is not None and threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(_SIGNAL, self._on_signal)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join(5.0)
        if self._previous is not None:
            signal.signal(_SIGNAL, self._previous)  # type: ignore[arg-type]

    def _run(self) -> None:
        started = time.monotonic()
        if self._done.wait(self.budget):
            return
        elapsed = time.monotonic() - started
        headline = f"watchdog: {self.nodeid} exceeded its budget of {self.budget:g} s ({elapsed:.1f} s"
        dump = format_all_stacks()
        stream = sys.__stderr__  # the captured stderr of the phase, or the terminal with -s
        if stream is not None:
            stream.write(f"\n{'=' * 20} {headline}); all thread stacks:\n{dump}\n{'=' * 20}\n")
            stream.flush()
        main = dump.split("\n--- thread ", 2)[1] if "\n--- thread " in dump else ""
        self.message = (headline, f"every thread's stack is on stderr. Main thread:\n--- thread {main}")
        if _SIGNAL is None or not hasattr(signal, "pthread_kill") or self._main is None:
            return
        while self.interrupts < _MAX_INTERRUPTS:
            signal.pthread_kill(self._main, _SIGNAL)
            if self._done.wait(_REPEAT):
                return

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.message is None or self.phase is None or self.interrupts >= _MAX_INTERRUPTS:
            return  # between phases: the next signal lands in the next phase
        self.interrupts += 1
        headline, stacks = self.message
        pytest.fail(f"{headline}, phase {self.phase}); {stacks}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    if not _ours(item):
        return (yield)
    watchdog = Watchdog(item.nodeid, _budget(item))
    item.stash[_WATCHDOG] = watchdog
    watchdog.start()
    try:
        return (yield)
    finally:
        watchdog.stop()


def _phase(item: pytest.Item, name: str) -> Generator[None, object, object]:
    watchdog = item.stash.get(_WATCHDOG, None)
    if watchdog is None:
        return (yield)
    watchdog.phase = name
    try:
        return (yield)
    finally:
        watchdog.phase = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _phase(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _phase(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    return (yield from _phase(item, "teardown"))


# --------------------------------------------------------------------------------- helpers
def client_threads() -> list[str]:
    """Names of live threads started by clients (reader, timer, dispatcher)."""
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("daemon-client-"))


def wait_until(condition: Callable[[], bool], timeout: float, what: str | Callable[[], str]) -> None:
    """Poll a condition nothing signals (threads ending, the fake's bookkeeping, the state of a
    manual-mode client); bounded. ``what`` (or what it returns) explains a timeout."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what() if callable(what) else what} (after {timeout:g} s)")
        time.sleep(0.01)


class Gate:
    """Holds requests of the given types unanswered while armed and ``holds(ctx)`` says so;
    every other request goes to the handler the fake had. Types without a handler on this
    host kind are left alone (the fake keeps answering them as unknown)."""

    def __init__(
        self,
        fake: FakeDaemon,
        types: Iterable[str],
        holds: Callable[[RequestContext], bool] = lambda _ctx: True,
    ) -> None:
        self._holds = holds
        self._cond = threading.Condition()
        self._armed = True
        self.held: list[dict[str, Any]] = []
        self._originals: dict[str, Callable[[RequestContext], None]] = {}
        for request_type in types:
            original = fake.registry.handler_for(request_type)
            if original is not None:
                self._originals[request_type] = original
                fake.on_request(request_type, self._handle)

    def _handle(self, ctx: RequestContext) -> None:
        with self._cond:
            if self._armed and self._holds(ctx):
                self.held.append(dict(ctx.message))
                self._cond.notify_all()
                return
        self._originals[ctx.request_type](ctx)

    def disarm(self) -> None:
        with self._cond:
            self._armed = False

    def held_types(self) -> list[str]:
        with self._cond:
            return sorted(str(message["type"]) for message in self.held)

    def wait_held(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.held) >= count, timeout):
                raise TimeoutError(f"gate held {len(self.held)} of {count} requests: {self.held!r}")
            return list(self.held)


Transition = tuple[dc.ConnectionState, dc.ConnectionState, str]


class StateLog(RecordingHandler[Transition]):
    """An ``on_state_change`` recorder with the queries the tests need."""

    def __init__(self) -> None:
        super().__init__("states")

    def reconnects(self) -> int:
        return sum(
            1 for _old, new, reason in self.items if new is dc.ConnectionState.CONNECTED and reason == "reconnected"
        )

    def wait_reconnects(self, count: int, timeout: float = 10.0) -> None:
        self.wait_for(
            count,
            predicate=lambda c: c[1] is dc.ConnectionState.CONNECTED and c[2] == "reconnected",
            timeout=timeout,
        )

    def attempts(self) -> list[int]:
        """The attempt numbers of every CONNECTING transition, in order."""
        return [
            int(reason.split()[1])
            for old, new, reason in self.items
            if new is dc.ConnectionState.CONNECTING and old is not new and reason.startswith("attempt ")
        ]

    def delays(self) -> list[float]:
        """The backoff delays announced by DISCONNECTED transitions (``reconnecting in X s``)."""
        found = []
        for _old, new, reason in self.items:
            match = re.search(r"reconnecting in (\d+\.\d+) s$", reason)
            if new is dc.ConnectionState.DISCONNECTED and match:
                found.append(float(match.group(1)))
        return found


def is_restored(update: dc.TimelineUpdate) -> bool:
    return update.type == "subscription_restored"


def rows_of(updates: Iterable[dc.TimelineUpdate]) -> list[int]:
    return [u.seq for u in updates if u.type == "timeline" and u.seq is not None]


class Observed:
    """One client's live observations of every kind, each with recorders.

    Two agent directory observations (``agents.list(subscribe=True)``), timeline
    subscriptions on ``a1`` (two handles) and ``a2``, and one provider event subscription.
    ``expect(...)`` asserts the exact restore accounting: each directory observation got its
    first snapshot plus one per re-establishment, each timeline handle one
    ``subscription_restored`` per successful reconnect, the provider subscription one
    ``on_restored`` per successful reconnect, nothing more.
    """

    AGENTS = ("a1", "a2")

    def __init__(self, client: dc.Client, timeline_agents: Iterable[str] = ("a1", "a1", "a2")) -> None:
        self.client = client
        self.directories: list[tuple[dc.DirectoryObservation[Any], RecordingHandler[Any], RecordingHandler[Any]]] = []
        for n in range(2):
            result = client.agents.list(subscribe=True)
            snapshots: RecordingHandler[Any] = RecordingHandler(f"dir{n}.snapshots")
            updates: RecordingHandler[Any] = RecordingHandler(f"dir{n}.updates")
            assert result.subscription is not None
            result.subscription.subscribe(snapshot=snapshots, update=updates)
            self.directories.append((result.subscription, snapshots, updates))
        self.timelines: list[tuple[dc.TimelineSubscription, RecordingHandler[dc.TimelineUpdate]]] = []
        for n, agent_id in enumerate(timeline_agents):
            seen: RecordingHandler[dc.TimelineUpdate] = RecordingHandler(f"timeline{n}.{agent_id}")
            sub = client.agents.ref(agent_id).timeline.subscribe(seen)
            self.timelines.append((sub, seen))
        self.provider_updates: RecordingHandler[Any] = RecordingHandler("providers.updates")
        self.provider_restored: RecordingHandler[Any] = RecordingHandler("providers.restored")
        self.provider_errors: RecordingHandler[Any] = RecordingHandler("providers.errors")
        self.provider = client.providers.subscribe(
            self.provider_updates, on_restored=self.provider_restored, on_error=self.provider_errors
        )
        for sub, _seen in self.timelines:
            sub.ready.result(5)
        self.provider.ready.result(5)
        for _obs, snapshots, _updates in self.directories:
            snapshots.wait_for(1)
        self.first_ids = {
            "directories": [obs.subscription_id for obs, _s, _u in self.directories],
            "timelines": [sub.subscription_id for sub, _seen in self.timelines],
        }

    def wait_restored(self, directories: int, timelines: int, events: int, timeout: float = 10.0) -> None:
        """Wait until every observation has been re-established that many times (at least)."""
        for _obs, snapshots, _updates in self.directories:
            snapshots.wait_for(1 + directories, timeout=timeout)
        for _sub, seen in self.timelines:
            seen.wait_for(timelines, predicate=is_restored, timeout=timeout)
        self.provider_restored.wait_for(events, timeout=timeout)

    def expect(self, directories: int, timelines: int, events: int) -> None:
        """Exactly that many re-establishments, nothing duplicated (after a callback barrier)."""
        assert self.client.flush_callbacks(5.0)
        for obs, snapshots, _updates in self.directories:
            assert len(snapshots) == 1 + directories, (obs, snapshots.items)
            assert not obs.released
        for sub, seen in self.timelines:
            restored = [u for u in seen.items if is_restored(u)]
            assert len(restored) == timelines, (sub, [u.type for u in seen.items])
            assert all(u.subscription_id == sub.subscription_id for u in restored[-1:])
            assert not [u for u in seen.items if u.type == "error"], seen.items
        assert len(self.provider_restored) == events
        assert self.provider_errors.items == []
        if directories:
            for (obs, _s, _u), first in zip(self.directories, self.first_ids["directories"], strict=True):
                assert obs.subscription_id != first  # every re-establishment gets a new ID
        if timelines:
            for (sub, _seen), first in zip(self.timelines, self.first_ids["timelines"], strict=True):
                assert sub.subscription_id != first

    def check_live(self, fake: FakeDaemon, tag: str) -> None:
        """Every observation still receives: a timeline row per agent, an agent update, a
        provider catalog; each timeline handle's rows stay strictly increasing."""
        seqs = {agent_id: fake.timeline.append(agent_id, {"type": "assistant_message", "text": tag}) for agent_id in
                {sub.agent_id for sub, _seen in self.timelines}}  # fmt: skip
        for sub, seen in self.timelines:
            seen.wait_for(1, predicate=lambda u, s=seqs[sub.agent_id]: u.type == "timeline" and u.seq == s)
            rows = rows_of(seen.items)
            assert rows == sorted(set(rows)), f"{sub}: rows duplicated or out of order: {rows}"
        fake.agents.upsert("a1", title=tag)
        for _obs, _snapshots, updates in self.directories:
            updates.wait_for(1, predicate=lambda m: m.payload.agent is not None and m.payload.agent.title == tag)
        before = len(self.provider_updates)
        fake.providers.publish()
        self.provider_updates.wait_for(before + 1)

    def released_receive_nothing(self, fake: FakeDaemon, handlers: Mapping[str, RecordingHandler[Any]]) -> None:
        """Released timeline handles (by agent) get nothing more, even when their agent streams."""
        counts = {agent_id: len(seen) for agent_id, seen in handlers.items()}
        for agent_id in handlers:
            fake.timeline.append(agent_id, {"type": "assistant_message", "text": "after release"})
        self.check_live(fake, "barrier")  # frames sent after those have arrived
        assert self.client.flush_callbacks(5.0)
        for agent_id, seen in handlers.items():
            assert len(seen) == counts[agent_id], seen.items


def close_and_check_threads(client: dc.Client, baseline: set[threading.Thread], *, except_prefix: str = "\0") -> None:
    """Close the client; every thread started since ``baseline`` (client and fake connection
    threads alike) must end, except those named ``except_prefix…`` (a restarted fake's new
    listener), and no client thread may be left."""
    client.close()

    def new_threads() -> list[str]:
        return sorted(t.name for t in live_threads() - baseline if not t.name.startswith(except_prefix))

    wait_until(lambda: not new_threads(), 5.0, lambda: f"threads outlived close(): {new_threads()}")
    assert client_threads() == []
