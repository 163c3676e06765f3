"""Follow the provider catalog, and wait until no provider is loading any more.

Right after a daemon starts its providers are ``loading`` while it probes them.
``providers.subscribe`` gets the whole catalog on every change; ``wait_for_ready`` observes
first and reads second, so it cannot miss the update that ends the loading.

    python examples/follow_providers.py
    python examples/follow_providers.py --url ws://127.0.0.1:6767/ws --duration 30
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

from _embedded import add_common_arguments, daemon, run_for

import daemon_client as dc


def describe(entries: Iterable[dc.ProviderEntry]) -> str:
    return ", ".join(f"{entry.provider}={entry.status}" for entry in entries)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--timeout", type=float, default=60.0, help="how long to wait for the catalog")
    args = parser.parse_args(argv)

    with daemon(args) as url, dc.Client(url, password=args.password) as client:
        updates = client.providers.subscribe(
            lambda update: print(f"update: {describe(update.entries)}", flush=True),
            on_restored=lambda: print("reconnected: updates sent meanwhile are lost", flush=True),
        )
        with updates:
            try:
                catalog = client.providers.wait_for_ready(timeout=args.timeout)
            except dc.ProvidersNotReady as exc:
                print(f"not ready: {exc}")
                return 1
            print(f"ready: {describe(catalog.entries)}", flush=True)
            usable = [entry.provider for entry in catalog.entries if entry.status == "ready"]
            print(f"usable providers: {', '.join(usable) or 'none'}", flush=True)
            run_for(args)  # keep following changes
    return 0


if __name__ == "__main__":
    sys.exit(main())
