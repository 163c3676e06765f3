"""Screenshots of the built documentation site, taken as a reader sees it, in headless Chromium.

Serves a built site (``mkdocs build -d DIR``) on a loopback port from a thread of this process,
and saves one PNG per page and window width: the home page, the guide, the API index, the
Client page (down to the ``Client`` entry's parameters table, the widest) and the Timelines
page, at 1,280 and 1,920 px. Look at them before calling a change to the site's look done::

    NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet -d /tmp/site
    python docs/_tooling/screenshots.py /tmp/site --out /tmp/site-shots

Needs Chromium (Debian: ``apt-get install chromium``; ``--browser`` names another binary).
Not part of CI: a person looks at the images. Runs on the main thread; the HTTP server runs on
one daemon thread, stopped before the script returns.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PAGES = {
    "home": ("", 1),
    "guide": ("guide/", 1),
    "api-index": ("api/", 1),
    "client": ("api/client/", 3),
    "timelines": ("api/timeline/", 2),
}
"""Screenshot name -> (the page's address under the site's root, window heights to capture).
The window is made taller rather than scrolled to an entry: a headless screenshot of a page
scrolled to an anchor leaves the part above the sticky header blank. The Client page's
``Client`` entry, with its parameters table (the widest), needs three heights."""
WIDTHS = (1280, 1920)
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
SHOT_TIMEOUT = 60.0
"""Seconds one screenshot may take before the script gives up on it."""


def find_browser(named: str | None) -> str:
    """The Chromium binary: ``named``, or the first of :data:`BROWSERS` on ``PATH``."""
    candidates = (named,) if named else BROWSERS
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return found
    raise SystemExit(f"no Chromium found (tried {', '.join(candidates)}): apt-get install chromium")


def screenshot(browser: str, url: str, width: int, height: int, path: Path) -> None:
    """One PNG of ``url`` in a ``width`` x ``height`` window."""
    with tempfile.TemporaryDirectory(prefix="site-shots-profile-") as profile:
        command = [
            browser,
            "--headless",
            "--no-sandbox",  # root in a container has no user namespace for the sandbox
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "--virtual-time-budget=3000",  # lets the page's scripts and fonts settle
            f"--screenshot={path}",
            url,
        ]
        subprocess.run(command, check=True, capture_output=True, timeout=SHOT_TIMEOUT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Screenshots of the built documentation site.")
    parser.add_argument("site", type=Path, help="the built site (mkdocs build -d SITE)")
    parser.add_argument("--out", type=Path, default=Path("site-shots"), help="where the PNGs go (default site-shots)")
    parser.add_argument("--height", type=int, default=1400, help="window height in px (default 1400)")
    parser.add_argument("--browser", help="the Chromium binary (default: chromium or chrome on PATH)")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        parser.error(f"{args.site} is not a built site (no index.html): run mkdocs build -d {args.site}")
    browser = find_browser(args.browser)
    args.out.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(QuietHandler, directory=str(args.site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="site-shots-http", daemon=True)
    thread.start()
    try:
        root = f"http://127.0.0.1:{server.server_address[1]}/"
        for name, (page, heights) in PAGES.items():
            for width in WIDTHS:
                path = args.out / f"{name}-{width}.png"
                screenshot(browser, root + page, width, args.height * heights, path)
                print(path)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    return 0


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    sys.exit(main())
