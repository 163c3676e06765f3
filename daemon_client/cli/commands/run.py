"""``run``, ``send``, ``wait``: options and help (work: :mod:`daemon_client.cli.actions.run`)."""

from __future__ import annotations

import argparse

from daemon_client.cli.argtypes import seconds
from daemon_client.cli.parser import AGENT_HELP, CliParser, Registry, reconnect_args

DEFAULT_RUN_TIMEOUT = 600.0


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
    reconnect_args(parser)


_OUTCOMES = (
    "The answer is printed on standard output; a turn that failed, was canceled, waits for a\n"
    "permission or outlasts --run-timeout exits with status 1 and one line on standard error.\n"
    "A connection lost while waiting is regained (within --reconnect-timeout) and the same turn\n"
    "waited for; the prompt is never sent twice.\n"
    "Ctrl-C cancels the turn (a second Ctrl-C exits at once), then exits with status 130."
)


def register(registry: Registry) -> None:
    parser = registry.add(
        "run", "create an agent, run a prompt, print the answer", "run:run",
        epilog=_OUTCOMES + "\n\nexamples:\n  daemon-client run --provider claude/sonnet 'Summarise the diff'\n"
               "  git diff | daemon-client run --provider claude/sonnet -\n"
               "  daemon-client run --provider codex/gpt-5 --prompt-file task.md --json | jq -r .lastMessage\n"
               "  daemon-client run --provider claude/sonnet --parent lead 'Write the tests for the parser'",
    )  # fmt: skip
    _turn_args(parser, prompt=True)
    parser.add_argument("--provider", required=True, help="provider/model, e.g. claude/sonnet")
    parser.add_argument("--cwd", metavar="DIR", help="the agent's working directory (default: the current one)")
    parser.add_argument("--mode", metavar="MODE", help="the provider's mode to start in, e.g. plan")
    parser.add_argument("--title", help="the agent's title (default: the first line of the prompt)")
    parser.add_argument(
        "--parent", metavar="AGENT",
        help=f"the agent that starts this one ({AGENT_HELP}): archiving it archives this one too "
             "(needs a daemon with parent links, Paseo 0.1.98 or newer)",
    )  # fmt: skip

    parser = registry.add(
        "send", "send a prompt to an existing agent and print the answer", "run:send",
        epilog=_OUTCOMES + "\n\nexamples:\n  daemon-client send my-agent 'Now add tests'\n"
               "  daemon-client send 3f2a --no-wait 'Keep going'",
    )  # fmt: skip
    parser.add_argument("agent", help=AGENT_HELP)
    _turn_args(parser, prompt=True)
    parser.add_argument("--no-wait", action="store_true", help="return once the daemon accepted the prompt")

    parser = registry.add(
        "wait", "wait for the end of an agent's current turn and print its answer", "run:wait",
        epilog="Exits like run; Ctrl-C stops waiting and leaves the turn running. An agent already idle\n"
               "exits with status 1 (outcome null): how its last turn ended was not seen.\n\n"
               "example:\n  daemon-client permissions my-agent approve && daemon-client wait my-agent",
    )  # fmt: skip
    parser.add_argument("agent", help=AGENT_HELP)
    _turn_args(parser, prompt=False)
