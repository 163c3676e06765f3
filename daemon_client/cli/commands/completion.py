"""``completion SHELL``: options and help (work: :mod:`daemon_client.cli.actions.completion`)."""

from __future__ import annotations

from daemon_client.cli.completion import GENERATORS
from daemon_client.cli.parser import Registry

_INSTALL = """install:
  bash  echo 'eval "$(daemon-client completion bash)"' >> ~/.bashrc
  zsh   daemon-client completion zsh > "${fpath[1]}/_daemon-client"   (or: source <(daemon-client completion zsh))
  fish  daemon-client completion fish > ~/.config/fish/completions/daemon-client.fish"""


def register(registry: Registry) -> None:
    parser = registry.add(
        "completion", "print the shell completion script", "completion:run", connects=False, epilog=_INSTALL
    )
    parser.add_argument("shell", choices=sorted(GENERATORS), help="the shell: bash, fish or zsh")
