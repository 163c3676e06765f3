"""``Simulation``: a lively fake daemon for the demo, the examples and manual tries.

It fills a :class:`FakeDaemon` with a few agents on the mock provider, their workspaces
and projects, moves the provider catalog from ``loading`` to ``ready``, and keeps agents
busy: every few seconds an idle agent gets a prompt and streams reasoning, a tool call
and an answer in small chunks, with turn events and status updates.

By default there are the three agents of :data:`AGENTS`, each answering. With ``varied=True``
(``daemon-client demo`` and ``serve``) the agents of :data:`SCENARIOS` join them, so that every
state shows within a minute: one asks a permission and waits until it is allowed or denied, one
fails its turn, one starts a long turn that is canceled after a while (unless someone cancels it
first). The driver runs on one daemon thread (``fake-daemon-sim``) that ``stop()`` joins.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from daemon_client.testing.fake.runs.scripts import TurnScript

if TYPE_CHECKING:
    from daemon_client.testing.fake.daemon import FakeDaemon

PROJECT_ROOT = "/home/dev/projects"
AGENTS: Sequence[tuple[str, str]] = (
    ("Fix flaky sync test", "webapp"),
    ("Write the release notes", "docs-site"),
    ("Speed up the CSV import", "webapp"),
)
PROMPTS = (
    "Find out why tests/test_sync.py fails one run in ten.",
    "Summarise the changes since the last release.",
    "Profile the CSV import and make it faster.",
)
ANSWERS = (
    "The test raced on a shared temporary directory. It now uses a directory per test, "
    "and two hundred runs in a row pass.",
    "This release adds live timelines, project caches and a quicker importer; "
    "nothing was removed and no setting changed its default.",
    "Parsing dominated the import. Reading rows in batches of a thousand cut the time "
    "from 41 seconds to 9, and memory stayed flat.",
)


@attrs.frozen
class Scenario:
    """One more agent of a varied simulation: what it is asked and how its turns go."""

    title: str
    folder: str
    prompt: str
    answer: str
    kind: str
    """``permission`` (waits for an answer), ``fail`` (the turn fails) or ``cancel`` (a long
    turn, canceled after :attr:`Simulation.cancel_after` seconds)."""
    command: str
    labels: tuple[tuple[str, str], ...] = ()


SCENARIOS: Sequence[Scenario] = (
    Scenario(
        "Publish the 2.4 release",
        "webapp",
        "Tag v2.4.0 and push the release branch.",
        "Pushed release/2.4 and the v2.4.0 tag; the release pipeline is running.",
        "permission",
        "git tag v2.4.0",
        (("team", "release"),),
    ),
    Scenario(
        "Migrate the billing schema",
        "billing",
        "Run the pending billing migrations on staging.",
        "",
        "fail",
        "alembic upgrade head",
        (("team", "payments"),),
    ),
    Scenario(
        "Refactor the session cache",
        "webapp",
        "Replace the session cache with the shared LRU.",
        "Half of the call sites now use the shared cache; the rest still need",
        "cancel",
        "rg -n SessionCache",
        (("team", "platform"),),
    ),
)
"""The agents a varied simulation adds to :data:`AGENTS`, in order."""


def _chunks(text: str, rng: random.Random) -> list[str]:
    """Split like the daemon does: pieces of a few characters, cutting words."""
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + rng.randint(4, 12))
        pieces.append(text[start:end])
        start = end
    return pieces


class Simulation:
    """Populate ``fake`` and keep its agents working until :meth:`stop`."""

    def __init__(
        self,
        fake: FakeDaemon,
        *,
        chunk_delay: float = 0.06,
        pause: float = 2.0,
        seed: int | None = None,
        varied: bool = False,
        cancel_after: float = 8.0,
    ) -> None:
        self._fake = fake
        self._pause = pause
        self.cancel_after = cancel_after
        """Seconds a ``cancel`` scenario's turn runs before the simulation cancels it."""
        self.scenarios: tuple[Scenario | None, ...] = (None,) * len(AGENTS) + (tuple(SCENARIOS) if varied else ())
        """Per agent: ``None`` for a plain answering agent, else its :class:`Scenario`."""
        self._holding: dict[str, float] = {}
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.agent_ids: list[str] = []
        fake.runs.chunk_delay = chunk_delay
        self._populate()

    def _populate(self) -> None:
        fake = self._fake
        cast: list[tuple[str, str, tuple[tuple[str, str], ...]]] = [(title, folder, ()) for title, folder in AGENTS]
        cast += [(scenario.title, scenario.folder, scenario.labels) for scenario in self.scenarios if scenario]
        for title, folder, labels in cast:
            cwd = f"{PROJECT_ROOT}/{folder}"
            agent = fake.agents.upsert(title=title, cwd=cwd, labels={"demo": "yes", **dict(labels)}, status="idle")
            self.agent_ids.append(str(agent["id"]))
        folders = sorted({folder for _, folder, _ in cast})
        for folder in folders:
            fake.workspaces.open(f"{PROJECT_ROOT}/{folder}")
        projects = getattr(fake, "projects", None)
        if projects is not None:
            for folder in folders:
                path = f"{PROJECT_ROOT}/{folder}"
                projects.upsert(path, projectDisplayName=folder, projectRootPath=path, projectKind="non_git")

    def start(self) -> Simulation:
        """Start the driver thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._drive, name="fake-daemon-sim", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the driver thread; running turns finish on the fake's own threads."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> Simulation:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def script_for(self, index: int) -> list[dict[str, Any]]:
        """The rows of one simulated turn: reasoning, a tool call, the answer in chunks."""
        rng = self._rng
        call_id = f"sim-call-{rng.randrange(10**6)}"
        detail = {"type": "shell", "command": "pytest -q", "output": "214 passed"}
        rows: list[dict[str, Any]] = [{"type": "reasoning", "text": chunk} for chunk in _chunks("Let me look.", rng)]
        rows.append({"type": "tool_call", "callId": call_id, "name": "bash", "detail": detail, "status": "running",
                     "error": None})  # fmt: skip
        rows.append({"type": "tool_call", "callId": call_id, "name": "bash", "detail": detail, "status": "completed",
                     "error": None})  # fmt: skip
        answer = ANSWERS[index % len(ANSWERS)]
        rows += [{"type": "assistant_message", "text": chunk} for chunk in _chunks(answer, rng)]
        return rows

    def scenario_script(self, scenario: Scenario) -> TurnScript:
        """The turn of a scenario agent: reasoning and a tool call, then its pause or end."""
        rng = self._rng
        call_id = f"sim-call-{rng.randrange(10**6)}"
        detail = {"type": "shell", "command": scenario.command}
        before: list[dict[str, Any]] = [{"type": "reasoning", "text": chunk} for chunk in _chunks("Let me check.", rng)]
        before.append({"type": "tool_call", "callId": call_id, "name": "bash", "detail": detail,
                       "status": "running", "error": None})  # fmt: skip
        done = "failed" if scenario.kind == "fail" else "completed"
        before.append({"type": "tool_call", "callId": call_id, "name": "bash", "detail": detail, "status": done,
                       "error": "relation billing.invoices is locked" if done == "failed" else None})  # fmt: skip
        answer = [{"type": "assistant_message", "text": chunk} for chunk in _chunks(scenario.answer, rng)]
        usage = {"inputTokens": 20, "outputTokens": 12}
        if scenario.kind == "permission":
            return TurnScript(before=tuple(before), pause="permission", after=tuple(answer), usage=usage)
        if scenario.kind == "fail":
            return TurnScript(before=tuple(before), fail=True, usage=usage)
        return TurnScript(before=tuple(before + answer), pause="hold", usage=usage)

    def run_turn(self, index: int) -> None:
        """Make agent ``index`` (modulo the agents) work on its prompt now."""
        position = index % len(self.agent_ids)
        agent_id = self.agent_ids[position]
        if self._fake.runs.is_running(agent_id):
            return
        scenario = self.scenarios[position] if position < len(self.scenarios) else None
        if scenario is None:
            self._fake.runs.script(agent_id, self.script_for(index))
            self._fake.runs.send(agent_id, PROMPTS[index % len(PROMPTS)])
            return
        self._fake.runs.plan(agent_id, self.scenario_script(scenario))
        if scenario.kind == "cancel":
            self._holding[agent_id] = time.monotonic()
        self._fake.runs.send(agent_id, scenario.prompt)

    def _cancel_held(self) -> None:
        """Cancel the long turns that ran :attr:`cancel_after` seconds (driver thread)."""
        now = time.monotonic()
        for agent_id, started in list(self._holding.items()):
            if now - started >= self.cancel_after:
                del self._holding[agent_id]
                self._fake.runs.cancel(agent_id, "Canceled: taking too long")

    def _drive(self) -> None:
        providers = getattr(self._fake, "providers", None)
        if providers is not None and hasattr(providers, "start_loading"):
            self._warm_up_providers(providers)
        for index in itertools.count():
            if self._stop.wait(self._pause if index else min(self._pause, 1.0)) or self._fake.closed:
                return
            try:
                self._cancel_held()
                self.run_turn(index)
            except Exception:  # noqa: BLE001 - the fake may be closing under us
                return

    def _warm_up_providers(self, providers: Any) -> None:
        providers.auto_resolve = False
        providers.start_loading()
        for entry in list(providers.entries()):
            if self._stop.wait(0.3):
                return
            provider = entry["provider"]
            providers.resolve(provider, status="ready" if provider in ("mock", "claude") else "unavailable")
