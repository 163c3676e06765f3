"""Where the prompt of ``run`` and ``send`` comes from: an argument, ``-`` (stdin), or a file.

A prompt read from stdin or a file has no argument-size limit. Exactly one source is allowed;
no prompt, an empty one (only white space) or text that is not UTF-8 is a usage error
(status 2) and nothing is sent. Runs on the main thread before anything connects.
"""

from __future__ import annotations

import sys
from typing import BinaryIO

from daemon_client.cli.exit_codes import USAGE, CliError

STDIN = "-"


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"the prompt in {where} is not UTF-8 text ({exc.reason} at byte {exc.start})", USAGE) from None


def _read_stdin(stdin: BinaryIO | None) -> str:
    stream = stdin if stdin is not None else sys.stdin.buffer
    return _decode(stream.read(), "standard input")


def read_prompt(argument: str | None, prompt_file: str | None, stdin: BinaryIO | None = None) -> str:
    """The prompt of ``PROMPT`` / ``-`` / ``--prompt-file PATH`` (``-`` reads stdin there too)."""
    if argument is not None and prompt_file is not None:
        raise CliError("give the prompt as an argument or with --prompt-file, not both", USAGE)
    if argument is None and prompt_file is None:
        raise CliError("no prompt: give it as an argument, - (standard input) or --prompt-file PATH", USAGE)
    if STDIN in (argument, prompt_file):
        text = _read_stdin(stdin)
    elif prompt_file is not None:
        try:
            with open(prompt_file, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise CliError(f"cannot read the prompt file: {exc}", USAGE) from None
        text = _decode(data, prompt_file)
    else:
        text = argument or ""
    if not text.strip():
        raise CliError("the prompt is empty", USAGE)
    return text
