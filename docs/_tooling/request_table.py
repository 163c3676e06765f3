"""The request table of ``docs/requests.md``, made from the request declarations.

``python docs/_tooling/request_table.py`` rewrites the table between the two markers of the
page from :func:`daemon_client.protocol.requests.request_table`; ``tests/meta/test_docs.py``
fails when the page and the declarations disagree. Runs in the calling process only.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "requests.md"
START = "<!-- request-table:start (made by docs/_tooling/request_table.py) -->\n"
END = "<!-- request-table:end -->\n"


def render(page: str) -> str:
    """``page`` with its request table replaced by the one the declarations make."""
    sys.path.insert(0, str(ROOT))
    from daemon_client.protocol.requests import request_table

    head, found, rest = page.partition(START)
    if not found or END not in rest:
        raise ValueError(f"{PAGE.name} lacks the request-table markers")
    return head + START + request_table() + END + rest.partition(END)[2]


def main() -> None:
    PAGE.write_text(render(PAGE.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
