"""qt_executor under QT_QPA_PLATFORM=offscreen: order under a burst, close from a callback, the
parent destroyed while events still arrive, and WouldDeadlock on the Qt thread."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import daemon_client as dc
from daemon_client.gui import QtExecutor, qt_executor

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
widgets = pytest.importorskip(
    "PySide6.QtWidgets", reason="PySide6 is not installed (pip install -e '.[qt]'); the Qt executor is untested here"
)
core = pytest.importorskip("PySide6.QtCore")


@pytest.fixture(scope="module")
def app() -> Any:
    return widgets.QApplication.instance() or widgets.QApplication([])


@pytest.fixture
def window(app: Any) -> Iterator[Any]:
    made = widgets.QWidget()
    yield made
    if not made_deleted(made):
        made.deleteLater()
    app.sendPostedEvents(None, core.QEvent.Type.DeferredDelete)


def made_deleted(widget: Any) -> bool:
    import shiboken6

    return not shiboken6.isValid(widget)


def pump(app: Any, until: Callable[[], bool], timeout: float = 10.0) -> None:
    """Run the Qt event loop on this thread until ``until()`` holds (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "the Qt loop did not get there in time"
        app.processEvents(core.QEventLoop.ProcessEventsFlag.AllEvents, 20)
        time.sleep(0.002)


def _connected(fakes, make_client, executor: QtExecutor) -> tuple[Any, dc.Client]:
    fake = fakes("selective")
    client = make_client(fake, callback_executor=executor)
    client.connect()
    return fake, client


def test_a_burst_runs_in_order_on_the_qt_thread(app, window, fakes, make_client) -> None:
    fake, client = _connected(fakes, make_client, qt_executor(window))
    seen: list[tuple[int, str]] = []
    client.add_push_listener(lambda m: seen.append((m.payload["n"], threading.current_thread().name)), ["numbered"])
    for n in range(3000):
        fake.push("numbered", {"n": n})
    pump(app, lambda: len(seen) == 3000)
    assert [n for n, _ in seen] == list(range(3000))
    assert {name for _, name in seen} == {threading.current_thread().name}


def test_close_from_a_qt_callback(app, window, fakes, make_client) -> None:
    fake, client = _connected(fakes, make_client, qt_executor(window))
    states: list[dc.ConnectionState] = []
    client.on_state_change(lambda _old, new, _reason: states.append(new))
    client.add_push_listener(lambda _m: client.close(), ["numbered"])
    fake.push("numbered", {"n": 1})
    pump(app, lambda: dc.ConnectionState.DISPOSED in states)
    assert client.state is dc.ConnectionState.DISPOSED


def test_the_parent_destroyed_while_events_still_arrive(app, window, fakes, make_client, caplog) -> None:
    executor = qt_executor(window)
    fake, client = _connected(fakes, make_client, executor)
    seen: list[int] = []

    def on_push(message: dc.SessionMessage) -> None:
        seen.append(message.payload["n"])
        if message.payload["n"] == 10:
            window.deleteLater()

    client.add_push_listener(on_push, ["numbered"])
    for n in range(50):
        fake.push("numbered", {"n": n})
    pump(app, lambda: executor.stopped)
    for n in range(50, 100):
        fake.push("numbered", {"n": n})
    flushed: list[bool] = []
    worker = threading.Thread(target=lambda: flushed.append(client.flush_callbacks(0.2)))
    worker.start()
    worker.join(10)
    assert flushed == [False]  # nothing runs them any more: the wait ends, False
    app.processEvents()
    client.close()
    assert len(seen) >= 11
    assert seen == list(range(len(seen)))  # in order, up to the destruction
    assert all(n < 50 for n in seen)  # nothing posted after it ran
    assert "dropping" in caplog.text


@pytest.mark.parametrize("case", ["providers.wait_for_ready()", "timeline.stream()", "flush_callbacks()"])
def test_waiting_on_the_qt_thread_raises_would_deadlock(app, window, fakes, make_client, case: str) -> None:
    fake, client = _connected(fakes, make_client, qt_executor(window))
    agent_id = fake.agents.upsert(title="qt")["id"]
    waits: dict[str, Callable[[], object]] = {
        "providers.wait_for_ready()": lambda: client.providers.wait_for_ready(timeout=5),
        "timeline.stream()": lambda: next(iter(client.agents.ref(agent_id).timeline.stream(timeout=5))),
        "flush_callbacks()": lambda: client.flush_callbacks(5),
    }
    with pytest.raises(dc.WouldDeadlock, match="worker thread"):
        waits[case]()
    done = threading.Event()
    worker = threading.Thread(target=lambda: (client.flush_callbacks(5), done.set()))
    worker.start()  # from a worker thread the same wait works while Qt runs
    pump(app, done.is_set)
    worker.join(5)


def test_a_parent_owned_by_another_thread_is_refused(app) -> None:
    elsewhere = core.QThread()
    obj = core.QObject()
    obj.moveToThread(elsewhere)
    with pytest.raises(ValueError, match="owns parent"):
        qt_executor(obj)


def test_a_raising_callable_is_logged_and_the_next_still_runs(app, window, caplog) -> None:
    executor = qt_executor(window)
    ran: list[str] = []
    executor(lambda: 1 / 0)
    executor(lambda: ran.append("after"))
    pump(app, lambda: ran == ["after"])
    assert "a callable handed to qt_executor raised" in caplog.text
    assert "ZeroDivisionError" in caplog.text


def test_a_relay_deleted_behind_the_executors_back_drops_callables(app, caplog) -> None:
    import shiboken6

    executor = qt_executor()
    executor.relay.destroyed.disconnect(executor._on_destroyed)  # so only the emit can tell
    shiboken6.delete(executor.relay)
    assert not executor.stopped
    executor(lambda: None)  # the emit on the deleted object fails: stopped, dropped
    assert executor.stopped
    executor(lambda: None)
    assert caplog.text.count("the Qt relay is destroyed: dropping callbacks") == 1


def test_without_a_qt_binding_the_executor_says_what_to_install(monkeypatch) -> None:
    from daemon_client.gui import qt_loop

    def missing(name: str) -> Any:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(qt_loop.importlib, "import_module", missing)
    with pytest.raises(ImportError, match=r"qt_executor needs PySide6 or PyQt6 \(pip install 'daemon-client\[qt\]'\)"):
        qt_executor()
