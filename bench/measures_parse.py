"""Typed parsing of an agent directory page against decoding its JSON.

A page of 10,000 entries (1,000 with ``--quick``), each the first entry of a real Paseo 0.1.65
``fetch_agents_response`` (tests/fixtures/paseo-0.1.65/02-fetch-agents-plain.jsonl, about 1.7 KB),
encoded once. The figure is the time of ``parse_agent_list`` over the decoded page (the typed
models, lenient reading included) divided by the time of ``orjson.loads`` (``json.loads`` without
the ``fast`` extra) of the same bytes; medians of 5 runs, taking turns. Target ≤ 1.0 for the pure
build (≤ 0.5 compiled). Runs on the bench's own thread.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench.builds import running_build
from bench.measures import Figure, loads
from daemon_client.protocol.directory import parse_agent_list

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "paseo-0.1.65" / "02-fetch-agents-plain.jsonl"
FIGURE = "typed directory page parse / JSON decode"


def _real_page() -> dict[str, Any]:
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        frame = record.get("frame") or {}
        message = frame.get("message") or {}
        if record.get("dir") == "in" and message.get("type") == "fetch_agents_response":
            return dict(message["payload"])
    raise RuntimeError(f"no fetch_agents_response in {FIXTURE}")


def directory_parse(entries: int) -> Figure:
    """See the module docstring."""
    page = _real_page()
    page["entries"] = [page["entries"][0]] * entries
    raw = json.dumps(page).encode("utf-8")
    decode_s: list[float] = []
    parse_s: list[float] = []
    for _ in range(5):
        started = time.perf_counter()
        decoded = loads(raw)
        decode_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        result = parse_agent_list(decoded)
        parse_s.append(time.perf_counter() - started)
        if len(result.entries) != entries:
            raise RuntimeError(f"{len(result.entries)} of {entries} entries parsed")
    decode, parse = statistics.median(decode_s), statistics.median(parse_s)
    ratio = parse / decode
    limit = 0.5 if running_build() == "compiled" else 1.0
    return Figure(FIGURE, ratio, "x", "<= 1.0 pure, <= 0.5 compiled", ratio <= limit,
                  {"entries": entries, "entry_bytes": len(json.dumps(page["entries"][0])),
                   "decode_us_per_entry": round(decode / entries * 1e6, 2),
                   "parse_us_per_entry": round(parse / entries * 1e6, 2)})  # fmt: skip
