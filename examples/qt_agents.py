"""A Qt window: the agents and their statuses, live, beside the selected agent's timeline, streamed.

Every client callback runs on the Qt thread: ``callback_executor=qt_executor(window)`` hands
each one to Qt's event loop through a queued signal, in order, so callbacks may touch
widgets. Selecting an agent reads its history (a short read, on the Qt thread) and then
appends what its timeline subscription streams. Needs PySide6 (``pip install -e ".[qt]"``)
or PyQt6.

    python examples/qt_agents.py
    QT_QPA_PLATFORM=offscreen python examples/qt_agents.py --duration 3 --screenshot agents.png
"""

from __future__ import annotations

import argparse
import importlib
import sys
from concurrent.futures import Future
from typing import Any

from _embedded import add_common_arguments, daemon

import daemon_client as dc
from daemon_client.gui import qt_executor


def qt_modules() -> tuple[Any, Any]:
    """``QtCore`` and ``QtWidgets`` of PySide6, else of PyQt6 (the bindings qt_executor supports)."""
    for binding in ("PySide6", "PyQt6"):
        try:
            return importlib.import_module(f"{binding}.QtCore"), importlib.import_module(f"{binding}.QtWidgets")
        except ImportError:
            continue
    raise SystemExit('this example needs PySide6 (pip install -e ".[qt]") or PyQt6')


QtCore, QtWidgets = qt_modules()
QWidget: Any = QtWidgets.QWidget


class AgentsWindow(QWidget):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.client: dc.Client | None = None
        self.failed = False
        self.timeline: dc.TimelineSubscription | None = None
        self.shown_seq = -1  # the last timeline row shown, for the selected agent
        self.setWindowTitle("Paseo agents")
        self.resize(820, 360)
        self.agents = QtWidgets.QTreeWidget()
        self.agents.setHeaderLabels(["Agent", "Status"])
        self.agents.setRootIsDecorated(False)
        self.agents.setColumnWidth(0, 220)
        self.agents.currentItemChanged.connect(lambda item, _previous: self.follow(item))
        self.view = QtWidgets.QPlainTextEdit()
        self.view.setReadOnly(True)
        split = QtWidgets.QSplitter()
        split.addWidget(self.agents)
        split.addWidget(self.view)
        split.setSizes([300, 520])
        self.footer = QtWidgets.QLabel("connecting")
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(split, 1)
        layout.addWidget(self.footer)

    def start(self, client: dc.Client) -> None:
        """Connect and observe the agent directory (runs on the Qt thread)."""
        self.client = client
        try:
            client.connect()
            directory = client.agents.list(subscribe=True)
        except dc.DaemonClientError as exc:
            self.failed = True
            self.footer.setText(f"cannot connect: {exc}")
            return
        client.on_state_change(lambda _old, _new, _reason: self.summarise())
        directory.subscription.subscribe(snapshot=self.fill, update=self.apply)

    # ------------------------------------------------------------------ the agent list
    def row(self, agent_id: str) -> Any:
        for index in range(self.agents.topLevelItemCount()):
            item = self.agents.topLevelItem(index)
            if item.data(0, QtCore.Qt.ItemDataRole.UserRole) == agent_id:
                return item
        return None

    def fill(self, result: dc.AgentListResult) -> None:  # first, and after every reconnect
        self.agents.clear()
        for entry in result.entries:
            self.show_agent(entry.agent)
        if self.agents.currentItem() is None and self.agents.topLevelItemCount():
            self.agents.setCurrentItem(self.agents.topLevelItem(0))
        self.summarise()

    def apply(self, message: dc.DirectoryMessage[dc.AgentUpdate]) -> None:
        update = message.payload
        if update.agent is not None:
            self.show_agent(update.agent)
        elif (item := self.row(update.agent_id)) is not None:
            self.agents.takeTopLevelItem(self.agents.indexOfTopLevelItem(item))
        self.summarise()

    def show_agent(self, agent: dc.AgentSnapshot) -> None:
        item = self.row(agent.id)
        if item is None:
            item = QtWidgets.QTreeWidgetItem(self.agents)
            item.setData(0, QtCore.Qt.ItemDataRole.UserRole, agent.id)
        item.setText(0, agent.title or agent.id)
        item.setText(1, agent.status)
        print(f"{agent.title}: {agent.status}", flush=True)

    def summarise(self) -> None:
        if self.client is None:
            return
        statuses = [self.agents.topLevelItem(i).text(1) for i in range(self.agents.topLevelItemCount())]
        self.footer.setText(f"{self.client.state.value} · {len(statuses)} agents, {statuses.count('running')} running")

    # ------------------------------------------------------------------ the timeline view
    def follow(self, item: Any) -> None:
        """Stream the selected agent's timeline into the view (replacing the previous one)."""
        if self.timeline is not None:
            self.timeline.release()
            self.timeline = None
        self.view.clear()
        self.shown_seq = -1
        if item is None or self.client is None:
            return
        timeline = self.client.agents.ref(item.data(0, QtCore.Qt.ItemDataRole.UserRole)).timeline
        subscription = self.timeline = timeline.subscribe(lambda update: self.on_update(subscription, update))

        def load(ready: Future[dc.TimelineAck]) -> None:  # on the Qt thread, in order with the updates
            if ready.exception() is not None or subscription is not self.timeline:
                return
            page = timeline.refetch("tail", limit=0, projection="canonical")
            for entry in page.entries:
                self.write(entry.item)
                self.shown_seq = entry.seq_end
            print(f"timeline: {len(page.entries)} rows of history", flush=True)

        subscription.ready.add_done_callback(load)

    def on_update(self, subscription: dc.TimelineSubscription, update: dc.TimelineUpdate) -> None:
        if subscription is not self.timeline or self.shown_seq < 0:
            return  # another agent's, or history not read yet (that read includes this row)
        event = update.event
        if isinstance(event, dc.TimelineEvent) and update.seq is not None and update.seq > self.shown_seq:
            self.write(event.item)
            self.shown_seq = update.seq
        elif isinstance(event, dc.TurnCompleted):
            self.view.appendPlainText("— turn completed —")

    def write(self, item: object) -> None:
        cursor = self.view.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        if isinstance(item, dc.AssistantMessage):
            cursor.insertText(item.text)  # chunks of one message join
        elif isinstance(item, dc.UserMessage):
            self.view.appendPlainText(f"\n> {item.text}\n")
        elif isinstance(item, dc.ToolCall):
            self.view.appendPlainText(f"[{item.name or 'tool'}: {item.status}]\n")
        self.view.ensureCursorVisible()

    # ------------------------------------------------------------------ ending
    def screenshot(self, path: str) -> None:
        """Save the window as a PNG (also on the offscreen platform)."""
        if self.grab().save(path):
            print(f"screenshot saved to {path}", flush=True)

    def closeEvent(self, event: Any) -> None:  # Qt's name
        """Close the client on the Qt thread, then the window (later callbacks are dropped)."""
        if self.client is not None:
            self.client.close()
        super().closeEvent(event)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--screenshot", metavar="PATH", help="save a PNG of the window shortly before it closes")
    args = parser.parse_args(argv)

    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    with daemon(args) as url:
        window = AgentsWindow()
        client = dc.Client(url, password=args.password, callback_executor=qt_executor(window))
        try:
            window.show()
            QtCore.QTimer.singleShot(0, lambda: window.start(client))
            if args.duration is not None:
                QtCore.QTimer.singleShot(int(args.duration * 1000), window.close)
            if args.screenshot:
                delay = max(0.5, args.duration - 0.5) if args.duration is not None else 3.0
                QtCore.QTimer.singleShot(int(delay * 1000), lambda: window.screenshot(args.screenshot))
            app.exec()
        finally:
            client.close()  # already closed by the window, unless the event loop ended otherwise
    return 1 if window.failed else 0


if __name__ == "__main__":
    sys.exit(main())
