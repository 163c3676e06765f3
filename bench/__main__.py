"""``python -m bench [--quick] [--build pure|compiled|both] [--json PATH]``: every figure side by
side with its baseline.

Prints a table (figure, value, target, whether it holds) and writes the figures as JSON, with
the build that ran them; ``--build both`` runs the pure and the compiled build one after the
other (see :mod:`bench.builds`) and prints their figures side by side.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from bench.builds import COMPILED_PYTHON, check_build, run_builds, running_build, side_by_side
from bench.measures import (
    Figure,
    import_time,
    memory_per_subscription,
    request_latency,
    routing_scale,
    stream_throughput,
    timed,
)
from bench.measures_cli import cli_wall_time
from bench.measures_fanout import agents_fan_out, handlers_fan_out
from bench.measures_fleet import fleet_per_host
from bench.measures_listeners import local_listeners
from bench.measures_load import flow_controlled_consumer, reconnect_restore, rss_growth, slow_consumer
from bench.measures_parse import directory_parse
from bench.measures_relay import relay_stream_throughput
from bench.measures_terminal import terminal_output_throughput, terminal_snapshot_parses

SIZES = {
    "quick": {
        "stream": 20_000,
        "latency": 300,
        "subs": 1000,
        "rss": 100_000,
        "slow": 2_000,
        "restore": 100,
        "flow": 20_000,
        "flow_max": 2_000,
        "handlers": 2_000,
        "terminal": 20_000,
        "imports": 15,
        "parse": 1_000,
    },
    "full": {
        "stream": 200_000,
        "latency": 3000,
        "subs": 1000,
        "rss": 1_000_000,
        "slow": 50_000,
        "restore": 100,
        "flow": 200_000,
        "flow_max": 10_000,
        "handlers": 20_000,
        "terminal": 200_000,
        "imports": 15,
        "parse": 10_000,
    },
    "tiny": {
        "stream": 500,
        "latency": 20,
        "subs": 20,
        "rss": 50_000,
        "slow": 100,
        "restore": 5,
        "flow": 1_000,
        "flow_max": 50,
        "handlers": 100,
        "terminal": 500,
        "imports": 3,
        "parse": 100,
    },
}


def plan(size: dict[str, int]) -> list[Callable[[], Figure]]:
    return [
        lambda: stream_throughput(size["stream"]),
        lambda: relay_stream_throughput(size["stream"]),
        lambda: request_latency(size["latency"]),
        lambda: routing_scale(size["stream"]),
        lambda: agents_fan_out(size["stream"]),
        lambda: fleet_per_host(size["stream"]),
        lambda: handlers_fan_out(size["handlers"]),
        lambda: local_listeners(size["handlers"]),
        lambda: terminal_output_throughput(size["terminal"]),
        terminal_snapshot_parses,
        lambda: directory_parse(size["parse"]),
        lambda: reconnect_restore(size["restore"]),
        lambda: rss_growth(size["rss"]),
        lambda: memory_per_subscription(size["subs"]),
        lambda: slow_consumer(size["slow"]),
        lambda: flow_controlled_consumer(size["flow"], size["flow_max"]),
        lambda: import_time(size["imports"]),
        lambda: cli_wall_time(size["imports"]),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a few minutes")
    parser.add_argument("--tiny", action="store_true", help="smallest sizes (the test suite's smoke run)")
    parser.add_argument("--json", default="bench/results/latest.json", help="where to write the figures")
    parser.add_argument(
        "--build", choices=["current", "pure", "compiled", "both"], default="current",
        help="which build to measure: the one this interpreter runs (default), one of them, or both side by side",
    )  # fmt: skip
    parser.add_argument(
        "--compiled-python", metavar="PATH",
        help=f"an interpreter with the compiled build installed (default: ${COMPILED_PYTHON})",
    )  # fmt: skip
    parser.add_argument("--expect-build", choices=["pure", "compiled"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    if args.build != "current" and args.expect_build is None:
        builds = ["pure", "compiled"] if args.build == "both" else [args.build]
        reports = run_builds(builds, [] if mode == "full" else [f"--{mode}"], args.compiled_python)
        for line in side_by_side(reports):
            print(line)
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"mode": mode, "builds": reports}, indent=2) + "\n")
        print(f"figures of {', '.join(builds)} in {path} ('!': the target is missed)")
        return 0
    if args.expect_build is not None:
        check_build(args.expect_build)
    build = running_build()
    print(f"daemon_client build: {build}", flush=True)
    figures = []
    started = time.perf_counter()
    for measure in plan(SIZES[mode]):
        figure = timed(measure)
        figures.append(figure)
        mark = "info" if figure.ok is None else "ok  " if figure.ok else "MISS"
        print(f"{mark} {figure.name:<42} {figure.value:>10.2f} {figure.unit:<4} target {figure.target}", flush=True)
        print(f"     {json.dumps(figure.detail, sort_keys=True)}", flush=True)
    report = {
        "mode": mode,
        "build": build,
        "python": sys.version.split()[0],
        "machine": platform.platform(),
        "seconds": round(time.perf_counter() - started, 1),
        "figures": [attrs.asdict(figure) for figure in figures],
    }
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    judged = [figure for figure in figures if figure.ok is not None]
    print(f"{sum(bool(f.ok) for f in judged)} of {len(judged)} targets hold ({report['seconds']} s); figures in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
