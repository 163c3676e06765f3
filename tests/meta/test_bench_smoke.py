"""The benchmark suite still runs (tiny sizes, figures not judged: no timing assertions)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.instructions import WORKLOADS

ROOT = Path(__file__).resolve().parents[2]
NEW_FIGURES = (
    "stream throughput client/raw, client/bare",
    "fan-out 100 agents / 1",
    "fan-out 10 handlers of one agent / 1",
    "terminal output client/bare",
    "terminal snapshot sent twice: parses",
    "import time vs its dependencies",
)


def test_bench_runs_and_reports_every_figure(tmp_path: Path) -> None:
    output = tmp_path / "figures.json"
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--tiny", "--json", str(output)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(output.read_text())
    names = [figure["name"] for figure in report["figures"]]
    assert len(names) == 18
    assert all(name in names for name in NEW_FIGURES), names
    assert all(isinstance(figure["value"], float | int) for figure in report["figures"])
    stream = next(figure for figure in report["figures"] if figure["name"] == NEW_FIGURES[0])
    for rate in ("client", "bare", "raw"):  # the rates, each with the CPU time per event beside it
        assert f"{rate}_events_per_s" in stream["detail"]
        assert f"{rate}_cpu_us_per_event" in stream["detail"]
    assert "targets hold" in result.stdout


@pytest.mark.parametrize(("kind", "mode"), [(kind, mode) for kind, modes in WORKLOADS.items() for mode in modes])
def test_every_counted_workload_runs(kind: str, mode: str, tmp_path: Path) -> None:
    """What ``python -m bench.instructions`` runs under callgrind, run once without it."""
    result = subprocess.run(
        [sys.executable, "-m", "bench.instructions", "--run", kind, mode, "60", "--cache", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="counting instructions needs valgrind")
def test_instructions_are_counted_per_event() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench.instructions", "--kind", "request", "--events", "20"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    counts = json.loads(result.stdout.splitlines()[-1])
    assert set(counts) == {"request"}
    assert set(counts["request"]) == {"client", "raw"}
    assert all(value > 1000 for value in counts["request"].values())  # a round trip is thousands of instructions
    assert "client/raw as rates" in result.stdout
