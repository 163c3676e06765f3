"""``python -m bench.instructions [--python PATH] [--events N]``: instructions per event, counted.

Wall-clock ratios on a shared machine move by 2x between runs minutes apart; instruction counts
do not. This runs each workload under valgrind's callgrind twice, with ``N`` and ``3N`` events,
and divides the difference of the two totals by ``2N``: start-up, imports and the handshake
cancel out, and what is left is the cost of one event, in instructions, every thread of the
process included. The frames are encoded beforehand and read from a file, so the in-process
server only writes them. The workloads are the ones ``python -m bench`` times:

* ``stream``: ``agent_stream`` frames to a typed timeline callback (the client) and to the bare
  loop (the client's own frame reader and the JSON decoder on one thread);
* ``terminal``: 1 KiB Output frames to ``on_output`` (the client, keeping its default output to
  pull, and with ``buffer_limit=0``) and to the bare loop;
* ``request``: ``echo_request`` round trips, by the client and by a raw websocket-client loop.

Instruction counts leave out what the counts cannot see (waiting for the other thread, cache
misses, the kernel's work): they say what the code costs, the timed figures what it gives.
``--python`` measures another interpreter's install (the compiled build), from a copy of the
``bench`` package outside the source tree. Needs ``valgrind``. ``--run KIND MODE N`` runs one
workload once, without valgrind (what the counted runs execute). Runs on the main thread.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from bench.builds import BENCH_DATA, ROOT

WORKLOADS = {"stream": ("client", "bare"), "terminal": ("client", "unkept", "bare"), "request": ("client", "raw")}


def _encoded_stream(count: int, cache: Path) -> dict[str, bytes]:
    """The stream's frames for one subscription (``sub-0``) and untagged, encoded into ``cache``
    once (by the driver, before the counted runs read them)."""
    from bench.servers import stream_frame

    tagged, raw = cache / f"stream-sub-{count}.bin", cache / f"stream-raw-{count}.bin"
    if not tagged.exists():
        tagged.write_bytes(b"".join(stream_frame(i, "sub-0", "agent-0") for i in range(1, count + 1)))
        raw.write_bytes(b"".join(stream_frame(i, None) for i in range(1, count + 1)))
    return {"sub-0": tagged.read_bytes(), "raw": raw.read_bytes()}


def run_workload(kind: str, mode: str, count: int, cache: Path) -> None:
    """One workload once (``--run``): ``count`` events of ``kind`` through ``mode``."""
    from bench import measures

    if kind == "stream":
        server = measures._timeline_server(count, encoded=_encoded_stream(count, cache))
        try:
            if mode == "client":
                measures._client_run(server.url, count, 1)
            else:
                measures._bare_stream(server.url, count)
        finally:
            server.close()
    elif kind == "terminal":
        import logging

        from bench import measures_terminal as terminal
        from daemon_client.testing.fake.terminals.shell import ScriptedShell

        logging.getLogger("daemon_client.subscriptions.terminal_output").setLevel(logging.ERROR)
        server = terminal._terminal_server(count, ScriptedShell().snapshot())
        try:
            if mode == "bare":
                terminal._bare_output(server.url, count)
            else:
                terminal._client_output(server.url, count, **({"buffer_limit": 0} if mode == "unkept" else {}))
        finally:
            server.close()
    else:
        _run_requests(mode, count)


def _run_requests(mode: str, count: int) -> None:
    import websocket

    import daemon_client as dc
    from bench import measures

    server = measures._timeline_server(0)
    try:
        if mode == "raw":
            ws = websocket.create_connection(server.url, skip_utf8_validation=True)
            ws.send('{"type":"hello"}')
            ws.recv()
            for n in range(count):
                ws.send(json.dumps({"type": "session", "message": {"type": "echo_request", "requestId": f"r{n}"}}))
                json.loads(ws.recv())
            ws.close()
        else:
            with dc.connect(server.url, heartbeat=dc.Heartbeat(enabled=False)) as client:
                for _ in range(count):
                    client.request({"type": "echo_request"})
    finally:
        server.close()


class Install(NamedTuple):
    """Where the counted runs happen: the interpreter, the directory it runs ``bench`` from, and
    the folder of encoded frames."""

    python: str
    cwd: Path
    cache: Path


def _counted(install: Install, kind: str, mode: str, count: int) -> int:
    """Instructions of one run under callgrind, every thread included."""
    python, cwd, cache = install
    with tempfile.TemporaryDirectory(prefix="bench-callgrind-") as work:
        out = Path(work) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python, "-m",
                   "bench.instructions", "--run", kind, mode, str(count), "--cache", str(cache)]  # fmt: skip
        subprocess.run(command, cwd=cwd, env=_env(cwd), check=True, capture_output=True, timeout=3600)
        for line in out.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in the callgrind output of {kind} {mode}")


def _env(cwd: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(cwd)}


def per_event(install: Install, kind: str, mode: str, events: int) -> float:
    """Instructions per event of ``mode`` (the difference of a run of ``events`` and of ``3 * events``)."""
    if kind == "stream":  # encoded here, outside the counted runs
        _encoded_stream(events, install.cache)
        _encoded_stream(3 * events, install.cache)
    small = _counted(install, kind, mode, events)
    large = _counted(install, kind, mode, 3 * events)
    return (large - small) / (2 * events)


def measure(python: str, events: int, kinds: Sequence[str]) -> dict[str, dict[str, float]]:
    """Instructions per event of every mode of ``kinds``, for the install of ``python``."""
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as work:
        cwd, cache = ROOT, Path(work) / "frames"
        cache.mkdir()
        if os.path.abspath(python) != os.path.abspath(sys.executable):  # another install: not this tree
            cwd = Path(work) / "tree"
            shutil.copytree(ROOT / "bench", cwd / "bench", ignore=shutil.ignore_patterns("results", "__pycache__"))
            for data in BENCH_DATA:
                shutil.copytree(ROOT / data, cwd / data)
        install = Install(python, cwd, cache)
        return {kind: {mode: per_event(install, kind, mode, events) for mode in WORKLOADS[kind]} for kind in kinds}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose install is measured")
    parser.add_argument("--events", type=int, default=10_000, help="events of the smaller run (default 10000)")
    parser.add_argument("--kind", action="append", choices=sorted(WORKLOADS), help="workloads (default: all)")
    parser.add_argument("--run", nargs=3, metavar=("KIND", "MODE", "N"), help="run one workload once")
    parser.add_argument("--cache", default=None, help="where --run keeps encoded frames")
    args = parser.parse_args(argv)
    if args.run is not None:
        kind, mode, count = args.run
        if kind not in WORKLOADS or mode not in WORKLOADS[kind]:
            parser.error(f"--run: no workload {kind} {mode}")
        with tempfile.TemporaryDirectory(prefix="bench-frames-") as scratch:
            run_workload(kind, mode, int(count), Path(args.cache or scratch))
        return 0
    if shutil.which("valgrind") is None:
        print("python -m bench.instructions needs valgrind (apt install valgrind)", file=sys.stderr)
        return 2
    counts = measure(args.python, args.events, args.kind or sorted(WORKLOADS))
    for kind, modes in counts.items():
        name = "raw" if "raw" in modes else "bare"
        baseline = modes[name]
        for mode, instructions in modes.items():
            # a rate ratio as python -m bench reports it (mode/baseline), were time proportional to instructions
            ratio = "" if mode == name else f"   {mode}/{name} as rates {baseline / instructions:.3f}"
            print(f"{kind:<9} {mode:<7} {instructions:>10,.0f} instructions per event{ratio}")
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
