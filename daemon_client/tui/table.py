"""The agent table: one Textual ``DataTable`` row per agent, changed in place, at most 10 times a second.

The application's loop thread owns everything here. Fleet events change :class:`AgentRow`
values and mark their keys dirty (:meth:`AgentTable.mark`); :meth:`AgentTable.flush`, run by a
timer, then adds, removes or updates only the cells that changed, so a burst of events costs one
redraw. A new filter or sort order is applied at the next flush too. Cells are :class:`Cell`
values: plain text (never read as markup) that remembers its row, which the sort needs.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from rich.text import Text
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from daemon_client.tui.rows import SORTS, AgentRow, RowFilter, age_text

COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    ("host", "HOST", None),
    ("title", "TITLE", 28),
    ("model", "PROVIDER/MODEL", 22),
    ("status", "STATUS", 14),
    ("perms", "PERMS", 5),
    ("last", "LAST LINE", 44),
    ("labels", "LABELS", 22),
)
"""Column key, heading and width (``None``: as wide as its widest cell)."""


class Cell:
    """One cell: its text, shown as is (no markup), and the key of its row."""

    __slots__ = ("key", "text")

    def __init__(self, text: str, key: str) -> None:
        self.text = text
        self.key = key

    def __rich__(self) -> Text:
        return Text(self.text, no_wrap=True, overflow="ellipsis")

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cell) and other.text == self.text and other.key == self.key

    def __hash__(self) -> int:
        return hash((self.text, self.key))

    def __repr__(self) -> str:
        return f"Cell({self.text!r})"


def cells_of(row: AgentRow, now: float) -> tuple[str, ...]:
    """The texts of a row, in :data:`COLUMNS` order."""
    status = f"{row.shown_status()} {age_text(now - row.since)}"
    perms = str(row.permissions) if row.permissions else ""
    return (row.host, row.title, row.model, status, perms, row.last_line, row.labels_text())


class AgentTable(DataTable[Cell]):
    """See the module docstring."""

    def __init__(self, **options: Any) -> None:
        super().__init__(cursor_type="row", **options)
        self.agents: dict[str, AgentRow] = {}
        """Every known agent, shown or filtered out, by row key."""
        self.row_filter = RowFilter()
        self.sort_index = 0
        self.reverse = False
        self._shown: dict[str, tuple[str, ...]] = {}
        self._dirty: set[str] = set()
        self._rebuild = True
        self._resort = False
        self.flushes = 0
        """How many flushes changed the table."""
        self.rebuilds = 0
        """How many times the table was cleared and refilled (a new filter): updates never do."""

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    # ------------------------------------------------------------------ changes (loop thread)
    def mark(self, keys: Iterable[str] | str) -> None:
        if isinstance(keys, str):
            self._dirty.add(keys)
        else:
            self._dirty.update(keys)

    def set_filter(self, text: str) -> None:
        if text != self.row_filter.text:
            self.row_filter = RowFilter(text)
            self._rebuild = True

    def cycle_sort(self, reverse: bool = False) -> str:
        """Next sort column (``reverse``: same column, other direction); returns its name."""
        if reverse:
            self.reverse = not self.reverse
        else:
            self.sort_index = (self.sort_index + 1) % len(SORTS)
            self.reverse = False
        self._resort = True
        return SORTS[self.sort_index][0]

    @property
    def sort_name(self) -> str:
        return SORTS[self.sort_index][0] + (" (reversed)" if self.reverse else "")

    def refresh_ages(self) -> None:
        """Once a second: ages change."""
        self._dirty.update(self._shown)

    @property
    def shown_keys(self) -> list[str]:
        """The keys of the rows shown, top to bottom."""
        return [str(self.coordinate_to_cell_key(Coordinate(index, 0)).row_key.value) for index in range(self.row_count)]

    @property
    def selected_key(self) -> str | None:
        if self.row_count == 0:
            return None
        try:
            return str(self.coordinate_to_cell_key(Coordinate(self.cursor_row, 0)).row_key.value)
        except Exception:  # noqa: BLE001 - the cursor is off the rows
            return None

    # ------------------------------------------------------------------ flush (timer, loop thread)
    def flush(self) -> bool:
        """Apply what changed since the last flush; True if the table changed."""
        if self._rebuild:
            self._rebuild_all()
            return True
        if not self._dirty and not self._resort:
            return False
        now = time.monotonic()
        dirty, self._dirty = self._dirty, set()
        resort, self._resort = self._resort, False
        changed = resort
        sort_field = SORTS[self.sort_index][0]
        for key in dirty:
            row = self.agents.get(key)
            old = self._shown.get(key)
            if row is None or not self.row_filter.matches(row):
                if old is not None:
                    self.remove_row(key)
                    del self._shown[key]
                    changed = True
                continue
            cells = cells_of(row, now)
            if old is None:
                self.add_row(*(Cell(text, key) for text in cells), key=key)
                resort = changed = True
            elif old != cells:
                for (column, _, width), before, after in zip(COLUMNS, old, cells, strict=True):
                    if before != after:
                        self.update_cell(key, column, Cell(after, key), update_width=width is None)
                        if column == sort_field or (sort_field == "age" and column == "status"):
                            resort = True
                changed = True
            self._shown[key] = cells
        if resort:
            self._sort()
        if changed:
            self.flushes += 1
        return changed

    def _rebuild_all(self) -> None:
        selected = self.selected_key
        self._rebuild = self._resort = False
        self.rebuilds += 1
        self._dirty.clear()
        self.clear()
        self._shown.clear()
        now = time.monotonic()
        for key, row in self.agents.items():
            if self.row_filter.matches(row):
                cells = cells_of(row, now)
                self.add_row(*(Cell(text, key) for text in cells), key=key)
                self._shown[key] = cells
        self._sort()
        self.flushes += 1
        if selected is not None and selected in self._shown:
            self.move_cursor(row=self.get_row_index(selected))

    def _sort(self) -> None:
        if not self._shown:
            return
        selected = self.selected_key
        _, sort_key = SORTS[self.sort_index]
        agents = self.agents

        def key(cells: Any) -> Any:
            cell = cells[0] if isinstance(cells, tuple) else cells
            row = agents.get(cell.key)
            return sort_key(row) if row is not None else ()

        self.sort("host", key=key, reverse=self.reverse)
        if selected is not None and selected in self._shown:
            self.move_cursor(row=self.get_row_index(selected), animate=False)
