"""A Tkinter window listing the agents and their statuses, live.

Every client callback runs on the Tk thread: ``callback_executor=tk_executor(root)`` queues
each one without touching Tk and runs it from Tk's own loop, in order, so callbacks may
touch widgets, and the window can close the client from the Tk thread and go.

    python examples/tk_agents.py
    python examples/tk_agents.py --duration 5 --screenshot agents.png   # needs ImageMagick
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tkinter as tk
from tkinter import ttk

from _embedded import add_common_arguments, daemon

import daemon_client as dc
from daemon_client.gui import tk_executor


class AgentsWindow:
    def __init__(self, root: tk.Tk, client: dc.Client) -> None:
        self.root, self.client = root, client
        self.failed = self.closed = False
        root.title("Paseo agents")
        ttk.Style(root).theme_use("clam")
        frame = ttk.Frame(root, padding=8)
        frame.pack(fill="both", expand=True)
        self.tree = ttk.Treeview(frame, columns=("title", "status", "cwd"), show="headings", height=6)
        for column, title, width in (("title", "Agent", 230), ("status", "Status", 90), ("cwd", "Directory", 250)):
            self.tree.heading(column, text=title, anchor="w")
            self.tree.column(column, width=width, anchor="w")
        self.tree.tag_configure("running", background="#d8f5d0")
        self.tree.pack(fill="both", expand=True)
        self.footer = tk.StringVar(value="connecting")
        ttk.Label(frame, textvariable=self.footer).pack(anchor="w", pady=(6, 0))
        root.protocol("WM_DELETE_WINDOW", self.close)

    def start(self) -> None:
        """Connect and observe the agent directory (runs inside the Tk main loop)."""
        try:
            self.client.connect()
            directory = self.client.agents.list(subscribe=True)
        except dc.DaemonClientError as exc:
            self.failed = True
            self.footer.set(f"cannot connect: {exc}")
            return
        self.client.on_state_change(lambda _old, _new, _reason: self.summarise())
        directory.subscription.subscribe(snapshot=self.fill, update=self.apply)

    def summarise(self) -> None:
        statuses = [self.tree.set(row, "status") for row in self.tree.get_children()]
        self.footer.set(f"{self.client.state.value} · {len(statuses)} agents, {statuses.count('running')} running")

    def fill(self, result: dc.AgentListResult) -> None:  # first, and after every reconnect
        self.tree.delete(*self.tree.get_children())
        for entry in result.entries:
            self.show(entry.agent)
        self.summarise()

    def apply(self, message: dc.DirectoryMessage[dc.AgentUpdate]) -> None:
        update = message.payload
        if update.agent is not None:
            self.show(update.agent)
        elif self.tree.exists(update.agent_id):
            self.tree.delete(update.agent_id)
        self.summarise()

    def show(self, agent: dc.AgentSnapshot) -> None:
        if not self.tree.exists(agent.id):
            self.tree.insert("", "end", iid=agent.id)
        self.tree.item(agent.id, values=(agent.title or agent.id, agent.status, agent.cwd), tags=(agent.status,))
        print(f"{agent.title}: {agent.status}", flush=True)

    def screenshot(self, path: str) -> None:
        """Save the window's area of the screen with ImageMagick's ``import`` (e.g. on Xvfb)."""
        root = self.root
        area = f"{root.winfo_width()}x{root.winfo_height()}+{root.winfo_rootx()}+{root.winfo_rooty()}"
        command = ["import", "-silent", "-window", "root", "-crop", area, "+repage", path]
        if shutil.which("import") is None:
            print(f"ImageMagick is not installed; the command would be: {' '.join(command)}")
        elif subprocess.run(command, check=False).returncode == 0:
            print(f"screenshot saved to {path}", flush=True)

    def close(self) -> None:
        """Close the client, then the window (the executor drops what arrives after that)."""
        if self.closed:
            return
        self.closed = True
        self.client.close()
        self.root.destroy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--screenshot", metavar="PATH", help="save a PNG of the window shortly before it closes")
    args = parser.parse_args(argv)

    with daemon(args) as url:
        root = tk.Tk()
        client = dc.Client(url, password=args.password, callback_executor=tk_executor(root))
        try:
            window = AgentsWindow(root, client)
            root.after_idle(window.start)
            if args.duration is not None:
                root.after(int(args.duration * 1000), window.close)
            if args.screenshot:
                delay = max(0.5, args.duration - 0.5) if args.duration is not None else 3.0
                root.after(int(delay * 1000), window.screenshot, args.screenshot)
            root.mainloop()
        finally:
            client.close()  # already closed by the window, unless the main loop ended otherwise
    return 1 if window.failed else 0


if __name__ == "__main__":
    sys.exit(main())
