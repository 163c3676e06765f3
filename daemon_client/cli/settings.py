"""``daemon-client config get/set`` and ``daemon-client agent set-mode/set-model/commands``.

Options and help are in :mod:`daemon_client.cli.commands.settings`; the actions of
:mod:`daemon_client.cli.actions.settings` call these functions with the invocation's
connection (``args.connect``). They run on the main thread, print their result and return an
exit code; errors are raised as :class:`~daemon_client.errors.DaemonClientError`.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from typing import Any, TextIO

from daemon_client import _nesting as nesting
from daemon_client.api.agents.create import AgentConfig
from daemon_client.api.agents.handle import AgentHandle
from daemon_client.cli.exit_codes import USAGE, CliError
from daemon_client.cli.render import table
from daemon_client.client import Client
from daemon_client.errors import DaemonClientError, UnknownConfigKeys

ClientFactory = Callable[[argparse.Namespace], Client]


def _value(text: str) -> Any:
    """A command-line value: JSON when it parses (``true``, ``3``, ``{"a":1}``), else the text."""
    try:
        return nesting.loads(text, "the value")  # nested too deep: the text, as any non-JSON
    except ValueError:
        return text


def _patch(path: str, value: Any) -> dict[str, Any]:
    """``mcp.injectIntoAgents`` + value → ``{"mcp": {"injectIntoAgents": value}}``."""
    parts = path.split(".")
    if not all(parts):
        raise CliError(f"bad config key {path!r}: use dotted wire names such as mcp.injectIntoAgents", USAGE)
    patch: dict[str, Any] = {parts[-1]: value}
    for part in reversed(parts[:-1]):
        patch = {part: patch}
    return patch


def cmd_config_get(args: argparse.Namespace, out: TextIO) -> int:
    with args.connect(args) as client:
        config = client.config.get()
        if args.key is None:
            out.write(json.dumps(config.to_wire(), indent=2, sort_keys=True) + "\n")
            return 0
        missing = object()
        value = config.value(args.key, missing)
        if value is missing:
            raise DaemonClientError(f"the daemon's configuration has no {args.key!r}")
        out.write(json.dumps(value, indent=2, sort_keys=True) + "\n")
    return 0


def cmd_config_set(args: argparse.Namespace, out: TextIO) -> int:
    with args.connect(args) as client:
        try:
            result = client.config.patch(_patch(args.key, _value(args.value)), allow_unknown_keys=args.allow_unknown)
        except UnknownConfigKeys as exc:
            raise DaemonClientError(
                f"this daemon does not know {', '.join(exc.keys)} (a typo, or a key of a newer daemon: an older one "
                "would echo it without saving it); --allow-unknown sends it anyway"
            ) from None
        out.write(f"{args.key} = {json.dumps(result.value(args.key), sort_keys=True)}\n")
    return 0


def _agent(client: Client, wanted: str) -> AgentHandle:
    """The handle of an agent named by ID, unique ID prefix or exact title (settings need its exact ID)."""
    snapshot = client.agents.fetch(wanted)
    if snapshot is None:
        raise DaemonClientError(f"no agent {wanted!r}")
    return client.agents.ref(snapshot)


def _notice(result: Any, out: TextIO) -> None:
    if result.notice is not None:
        out.write(f"note ({result.notice.type}): {result.notice.message}\n")


def cmd_agent_set_mode(args: argparse.Namespace, out: TextIO) -> int:
    with args.connect(args) as client:
        agent = _agent(client, args.agent)
        result = agent.set_mode(args.mode)
        out.write(f"{agent.title or agent.id}: mode {args.mode}\n")
        _notice(result, out)
    return 0


def cmd_agent_set_model(args: argparse.Namespace, out: TextIO) -> int:
    with args.connect(args) as client:
        agent = _agent(client, args.agent)
        model = None if args.model == "default" else args.model
        result = agent.set_model(model)
        out.write(f"{agent.title or agent.id}: model {model or 'the provider default'}\n")
        _notice(result, out)
    return 0


def _commands_target(args: argparse.Namespace) -> AgentConfig | None:
    """The draft configuration ``--provider`` names (``None``: an agent's commands); a usage
    error for both or neither."""
    if (args.agent is None) == (args.provider is None):
        raise CliError("name an agent, or --provider for the commands a new agent would have (not both)", USAGE)
    if args.provider is None:
        if args.cwd is not None or args.mode is not None:
            raise CliError("--cwd and --mode go with --provider", USAGE)
        return None
    return AgentConfig(provider=args.provider, mode_id=args.mode, cwd=args.cwd or os.getcwd())


def cmd_agent_commands(args: argparse.Namespace, out: TextIO) -> int:
    draft = _commands_target(args)
    with args.connect(args) as client:
        commands = _agent(client, args.agent).commands() if draft is None else client.providers.commands(draft)
        if args.json:
            out.write(json.dumps([{"name": c.name, "description": c.description, "argumentHint": c.argument_hint,
                                   "kind": c.kind} for c in commands], indent=2) + "\n")  # fmt: skip
            return 0
        rows = ([f"/{c.name}", c.argument_hint, c.kind or "", c.description] for c in commands)
        out.write(table(rows, ["COMMAND", "ARGUMENTS", "KIND", "DESCRIPTION"]) + "\n")
    return 0
