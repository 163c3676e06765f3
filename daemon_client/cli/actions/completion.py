"""``completion SHELL``: print the completion script of bash, zsh or fish (no daemon needed)."""

from __future__ import annotations

import argparse

from daemon_client.cli.completion import GENERATORS, spec_of
from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK
from daemon_client.cli.parser import CliParser

_INSTALL = """install:
  bash  echo 'eval "$(daemon-client completion bash)"' >> ~/.bashrc
  zsh   daemon-client completion zsh > "${fpath[1]}/_daemon-client"   (or: source <(daemon-client completion zsh))
  fish  daemon-client completion fish > ~/.config/fish/completions/daemon-client.fish"""


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    top: CliParser = args.top_parser
    ctx.out.write(GENERATORS[args.shell](spec_of(top)))
    return OK
