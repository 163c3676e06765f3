"""``top``: options, help and the dashboard's keys (work: :mod:`daemon_client.cli.actions.top`).

The key table lives here so that ``top --help`` never imports Textual; the dashboard's
bindings (:mod:`daemon_client.tui.app`) are checked against it by the tests.
"""

from __future__ import annotations

from daemon_client.cli.argtypes import seconds
from daemon_client.cli.parser import Registry

KEYS = (
    ("q", "quit"),
    ("/", "filter: words match title, host, label or status; status:, host:, label: match one field"),
    ("Escape", "back to the table (drops a prompt being typed)"),
    ("s / S", "sort by the next column (host, title, status, age, perms) / reverse the sort"),
    ("Up / Down", "select an agent: the detail pane shows its timeline, live"),
    ("h / Home", "read an older page of the selected agent's timeline"),
    ("a / d", "allow / deny the selected agent's pending permission"),
    ("p", "type a prompt for the selected agent (Enter sends it)"),
    ("c", "cancel the selected agent's turn"),
    ("x", "archive the selected agent (asks first: y / n)"),
    ("t", "attach to the selected agent's terminal (Ctrl-] detaches and comes back)"),
)
"""Every key of the dashboard and what it does (``top --help``, docs/cli.md)."""


def keys_text() -> str:
    width = max(len(key) for key, _ in KEYS)
    return "\n".join(f"  {key:<{width}}  {what}" for key, what in KEYS)


def register(registry: Registry) -> None:
    parser = registry.add(
        "top", "a live dashboard of every agent, in the terminal (the 'tui' extra)", "top:top",
        epilog="Follows every stored host (see: daemon-client hosts), or with none stored the daemon\n"
        "found as usual; --host follows one. Needs: pip install 'daemon-client[tui]'.\n\n"
        "keys:\n" + keys_text() + "\n\nexample:\n  daemon-client top --host laptop",
    )  # fmt: skip
    parser.add_argument(
        "--all-hosts", action="store_true", help="every stored host (the default when hosts are stored)"
    )
    parser.add_argument("--duration", type=seconds, metavar="SECONDS", help="quit after this many seconds")
