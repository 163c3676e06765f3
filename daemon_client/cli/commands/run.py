"""``run``, ``send`` and ``wait``: start or continue an agent's turn and report how it ended.

``run`` creates an agent (in the current directory unless ``--cwd``) and prompts it;
``send`` prompts an existing agent; ``wait`` waits for the end of an agent's current turn.
The turn itself is followed by :func:`daemon_client.cli.turns.follow_turn` on the main
thread. The new agent's ID is noted on standard error (``-q`` hides it; ``--json`` has it).
"""

from __future__ import annotations

import argparse
import os

from daemon_client.agent_create import AgentConfig
from daemon_client.cli.argtypes import seconds
from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK
from daemon_client.cli.lookup import AGENT_HELP, find_agent
from daemon_client.cli.parser import CliParser, Registry
from daemon_client.cli.prompts import read_prompt
from daemon_client.cli.turns import follow_turn

DEFAULT_RUN_TIMEOUT = 600.0
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
    agent = client.agents.create(config, cwd=cwd, title=title, timeout=ctx.timeout)
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


def _turn_args(parser: CliParser, *, prompt: bool) -> None:
    if prompt:
        parser.add_argument("prompt", nargs="?", help="the prompt; - reads it from standard input (no size limit)")
        parser.add_argument("--prompt-file", metavar="PATH", help="read the prompt from this file (- : standard input)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "--stream", action=argparse.BooleanOptionalAction, default=None,
        help="print the assistant's text as it arrives (default: on a terminal)",
    )  # fmt: skip
    output.add_argument(
        "--json", action="store_true",
        help="print the result as JSON: agentId, outcome, status, error, lastMessage, final",
    )  # fmt: skip
    parser.add_argument(
        "--run-timeout", type=seconds, default=DEFAULT_RUN_TIMEOUT, metavar="SECONDS",
        help=f"stop waiting after this many seconds; the agent goes on (default {DEFAULT_RUN_TIMEOUT:g})",
    )  # fmt: skip


_OUTCOMES = (
    "The answer is printed on standard output; a turn that failed, was canceled, waits for a\n"
    "permission or outlasts --run-timeout exits with status 1 and one line on standard error.\n"
    "Ctrl-C cancels the turn (a second Ctrl-C exits at once), then exits with status 130."
)


def register(registry: Registry) -> None:
    parser = registry.add(
        "run", "create an agent, run a prompt, print the answer", run,
        epilog=_OUTCOMES + "\n\nexamples:\n  daemon-client run --provider claude/sonnet 'Summarise the diff'\n"
               "  git diff | daemon-client run --provider claude/sonnet -\n"
               "  daemon-client run --provider codex/gpt-5 --prompt-file task.md --json | jq -r .lastMessage",
    )  # fmt: skip
    _turn_args(parser, prompt=True)
    parser.add_argument("--provider", required=True, help="provider/model, e.g. claude/sonnet")
    parser.add_argument("--cwd", metavar="DIR", help="the agent's working directory (default: the current one)")
    parser.add_argument("--mode", metavar="MODE", help="the provider's mode to start in, e.g. plan")
    parser.add_argument("--title", help="the agent's title (default: the first line of the prompt)")

    parser = registry.add(
        "send", "send a prompt to an existing agent and print the answer", send,
        epilog=_OUTCOMES + "\n\nexamples:\n  daemon-client send my-agent 'Now add tests'\n"
               "  daemon-client send 3f2a --no-wait 'Keep going'",
    )  # fmt: skip
    parser.add_argument("agent", help=AGENT_HELP)
    _turn_args(parser, prompt=True)
    parser.add_argument("--no-wait", action="store_true", help="return once the daemon accepted the prompt")

    parser = registry.add(
        "wait", "wait for the end of an agent's current turn and print its answer", wait,
        epilog="Exits like run; Ctrl-C stops waiting and leaves the turn running.\n\n"
               "example:\n  daemon-client permissions my-agent approve && daemon-client wait my-agent",
    )  # fmt: skip
    parser.add_argument("agent", help=AGENT_HELP)
    _turn_args(parser, prompt=False)
