"""``info``: how the daemon was found, its ``server_info``, and a ping. Main thread only.

Everything goes to standard output once the daemon answered; when it does not, where it was
looked for is noted on standard error before the error line, and standard output stays empty.
"""

from __future__ import annotations

import argparse

import daemon_client
from daemon_client._compiled import COMPILED_MODULES, compiled_modules
from daemon_client.cli.context import CommandContext
from daemon_client.cli.exit_codes import OK
from daemon_client.cli.json_render import model_json
from daemon_client.cli.render import describe_features


def client_build() -> str:
    """This client's version and build: pure Python, or compiled (how many modules)."""
    compiled = compiled_modules()
    if not compiled:
        build = "pure Python"
    elif len(compiled) == len(COMPILED_MODULES):
        build = f"compiled ({len(compiled)} modules, mypyc)"
    else:
        build = f"partly compiled ({len(compiled)} of {len(COMPILED_MODULES)} modules)"
    return f"daemon_client {daemon_client.__version__}, {build}"


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    found: list[str] = []
    try:
        client = ctx.connect(announce=lambda client: found.append(client.resolution.describe()))
        info = client.server_info
        if info is None:  # the connection dropped right after the handshake
            info = client.connect(ctx.timeout)
        kind = client.host_kind.value if client.host_kind else "unknown"
        ping = (client.ping(timeout=ctx.timeout).round_trip or 0) * 1000
    except Exception:  # where the daemon was looked for explains the failure: on standard error
        for line in "\n".join(found).splitlines():
            ctx.notes.note(line)
        raise
    if ctx.json:
        resolution = client.resolution
        ctx.out.json_document(
            {
                "url": client.url,
                "found": {"source": resolution.source, "reason": resolution.reason},
                "reached": resolution.target.describe(),
                "hostKind": kind,
                "serverInfo": model_json(info),
                "pingMs": round(ping, 3),
                "client": {"version": daemon_client.__version__, "compiled": list(compiled_modules())},
            }
        )
        return OK
    ctx.out.write(
        "".join(line + "\n" for line in found) + f"connected to {client.url}\n"
        f"reached  {client.resolution.target.describe()}\n"
        f"version  {info.version or 'unknown version'} on {info.hostname or 'unknown host'} ({info.server_id})\n"
        f"host     {kind}\nfeatures {describe_features(info.features)}\n"
        f"ping     {ping:.2f} ms\n" + (f"client   {client_build()}\n" if getattr(args, "verbose", 0) else "")
    )
    return OK
