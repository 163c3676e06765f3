"""What shell completion offers of a parser: hidden options and positionals chosen from a map are left out."""

from __future__ import annotations

import argparse

import pytest

from daemon_client.cli.completion import spec_of
from daemon_client.cli.main import main
from daemon_client.cli.parser import CliParser


def test_hidden_options_and_mapped_positionals_are_not_offered() -> None:
    parser = CliParser(prog="tool")
    parser.add_argument("--shown", help="an option")
    parser.add_argument("--hidden", help=argparse.SUPPRESS)
    parser.add_argument("mode", choices=("fast", "slow"), help="how")
    sub = CliParser(prog="tool cmd")
    sub.add_argument("--secret", help=argparse.SUPPRESS)
    sub.add_argument("target", help="what")
    sub.add_argument("kind", choices={"a": "first", "b": "second"}, help="a map of choices, as subcommands are")
    parser.subcommands["cmd"] = sub
    spec = spec_of(parser)
    assert [name for option in spec.options for name in option.names] == ["-h", "--help", "--shown"]
    (command,) = spec.commands
    assert [name for option in command.options for name in option.names] == ["-h", "--help"]
    assert [positional.name for positional in command.positionals] == ["target"]


def test_extra_words_after_a_double_dash_are_an_error_where_no_command_is_taken(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["agents", "--", "extra"])
    assert exited.value.code == 2
    assert "unrecognized arguments: -- extra" in capsys.readouterr().err
