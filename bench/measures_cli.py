"""The command line's wall time: ``daemon-client agents --json`` against the fake daemon on
loopback, over ``python -c "import daemon_client"``.

Both run as fresh processes, taking turns, ``processes`` times each; the medians are divided.
The fake daemon (three agents) serves in the bench's process. Target ≤ 1.5: a command costs
little more than importing the package. Runs on the bench's own thread.
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import daemon_client as dc
from bench.measures import Figure

FIGURE = "CLI agents --json wall time / import daemon_client"


def cli_wall_time(processes: int = 15) -> Figure:
    """See the module docstring."""
    from daemon_client.testing import FakeDaemon

    compileall.compile_dir(Path(dc.__file__).parent, quiet=1)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PASEO_", "DAEMON_CLIENT_"))}
    with FakeDaemon() as fake:
        for title in ("one", "two", "three"):
            fake.agents.upsert(title=title)
        url = fake.serve()
        commands = {
            "import": [sys.executable, "-c", "import daemon_client"],
            "cli": [sys.executable, "-m", "daemon_client", "agents", "--json", "--host", url],
        }
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(processes):
            for name, command in commands.items():
                started = time.perf_counter()
                subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, timeout=60)
                samples[name].append(time.perf_counter() - started)
    cli, imported = statistics.median(samples["cli"]), statistics.median(samples["import"])
    ratio = cli / imported
    return Figure(FIGURE, ratio, "x", "<= 1.5", ratio <= 1.5,
                  {"cli_ms": round(cli * 1000, 1), "import_ms": round(imported * 1000, 1),
                   "processes": processes})  # fmt: skip
