"""``run``, ``send`` and ``wait``: start or continue an agent's turn and report how it ended.

``run`` creates an agent (in the current directory unless ``--cwd``, under the ``--parent``
agent if given) and prompts it;
``send`` prompts an existing agent; ``wait`` waits for the end of an agent's current turn.
The turn itself is followed by :func:`daemon_client.cli.turns.follow_turn` on the main
thread. The new agent's ID is noted on standard error (``-q`` hides it; ``--json`` has it).
"""

from __future__ import annotations

import argparse
import os

from daemon_client.api.agents.create import AgentConfig
from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK
from daemon_client.cli.lookup import find_agent
from daemon_client.cli.prompts import read_prompt
from daemon_client.cli.turns import follow_turn

TITLE_LENGTH = 60


def default_title(prompt: str) -> str:
    """The first line of the prompt, shortened: the title of an agent ``run`` creates."""
    line = prompt.strip().splitlines()[0].strip()
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    prompt = read_prompt(args.prompt, args.prompt_file)
    config = AgentConfig(provider=args.provider, mode_id=args.mode)
    client = ctx.connect()
    cwd = args.cwd if args.cwd is not None else os.getcwd()
    title = args.title if args.title is not None else default_title(prompt)
    parent = None
    if args.parent is not None:
        client.agents.parent_id(args.parent)  # a host without parent links is refused before the lookup
        parent = find_agent(client, args.parent, ctx.timeout)
    agent = client.agents.create(config, cwd=cwd, title=title, parent=parent, timeout=ctx.timeout)
    ctx.notes.note(f"agent {agent.id} created")
    return follow_turn(ctx, client, agent, prompt, cancel_on_interrupt=True)


def send(args: argparse.Namespace, ctx: CommandContext) -> int:
    prompt = read_prompt(args.prompt, args.prompt_file)
    client = ctx.connect()
    agent = find_agent(client, args.agent, ctx.timeout)
    if args.no_wait:
        message_id = agent.send(prompt, timeout=ctx.timeout)
        if ctx.json:
            ctx.out.json_document({"agentId": agent.id, "messageId": message_id})
        return OK
    return follow_turn(ctx, client, agent, prompt, cancel_on_interrupt=True)


def wait(args: argparse.Namespace, ctx: CommandContext) -> int:
    client = ctx.connect()
    agent = find_agent(client, args.agent, ctx.timeout)
    return follow_turn(ctx, client, agent, None, cancel_on_interrupt=False)
