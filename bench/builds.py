"""``python -m bench --build pure|compiled|both``: the same figures for each build, side by side.

Each build runs in its own interpreter process, so each imports only its own modules: the pure
build from this source tree, the compiled one from an interpreter where the compiled wheel is
installed (``--compiled-python``, or ``$DAEMON_CLIENT_COMPILED_PYTHON``), with a copy of the
``bench`` package beside it so the source tree does not shadow the installed package. Every
child checks that it runs the build it was asked for before measuring anything.

Runs on the main thread of the ``python -m bench`` process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
COMPILED_PYTHON = "DAEMON_CLIENT_COMPILED_PYTHON"
BENCH_DATA = ("tests/fixtures/paseo-0.1.65",)
"""Folders of the source tree the measures read (the typed parse's real directory page), copied
beside the ``bench`` package for a build measured outside the tree."""


def running_build() -> str:
    """``"compiled"`` or ``"pure"``: the build of ``daemon_client`` this interpreter imports."""
    import daemon_client

    return "compiled" if daemon_client.COMPILED else "pure"


def check_build(expected: str) -> None:
    """Exit with a clear message when this interpreter runs another build than ``expected``."""
    actual = running_build()
    if actual != expected:
        hint = (
            "install the compiled build: DAEMON_CLIENT_COMPILE=1 pip install . (see docs/benchmarks.md)"
            if expected == "compiled"
            else "run from the source tree without the compiled modules built in place"
        )
        sys.exit(f"python -m bench: asked for the {expected} build, but this interpreter runs the {actual} one; {hint}")


def run_builds(builds: Sequence[str], size_flags: list[str], compiled_python: str | None) -> dict[str, Any]:
    """Run the bench once per build in a child process; their reports, by build."""
    reports: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-builds-") as work:
        for build in builds:
            out = Path(work) / f"{build}.json"
            if build == "pure":
                python, cwd, path = sys.executable, ROOT, str(ROOT)
            else:
                python = compiled_python or os.environ.get(COMPILED_PYTHON) or ""
                if not python:
                    sys.exit(f"python -m bench --build {build}: give --compiled-python (or ${COMPILED_PYTHON})")
                cwd = Path(work) / "compiled"
                shutil.copytree(ROOT / "bench", cwd / "bench", ignore=shutil.ignore_patterns("results", "__pycache__"))
                for data in BENCH_DATA:  # what the measures read from the source tree
                    shutil.copytree(ROOT / data, cwd / data)
                path = str(cwd)
            env = {**os.environ, "PYTHONPATH": path}
            command = [python, "-m", "bench", *size_flags, "--expect-build", build, "--json", str(out)]
            print(f"== {build} build: {python}", flush=True)
            subprocess.run(command, cwd=cwd, env=env, check=True)
            reports[build] = json.loads(out.read_text())
    return reports


def side_by_side(reports: dict[str, Any]) -> list[str]:
    """One line per figure: its value in each build."""
    builds = list(reports)
    names = [figure["name"] for figure in reports[builds[0]]["figures"]]
    lines = [f"{'figure':<42} " + " ".join(f"{build:>12}" for build in builds)]
    for name in names:
        cells = []
        for build in builds:
            figure = next((f for f in reports[build]["figures"] if f["name"] == name), None)
            cells.append("—" if figure is None else f"{figure['value']:.2f}{'!' if figure['ok'] is False else ''}")
        lines.append(f"{name:<42} " + " ".join(f"{cell:>12}" for cell in cells))
    return lines
