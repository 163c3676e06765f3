"""The confirmation asked before an irreversible action (archiving an agent).

A Textual modal screen, on the application's loop thread: ``y`` or Enter confirms, ``n`` or
Escape declines; the answer goes to the callback given to ``push_screen``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmScreen(ModalScreen[bool]):
    """Asks ``question``; dismissed with True (``y``, Enter) or False (``n``, Escape)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "answer(True)", "yes"),
        Binding("n,escape", "answer(False)", "no"),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 64; height: auto; border: thick $warning; padding: 1 2; background: $surface; }
    """

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> Any:
        with Vertical():
            yield Static(f"{self.question}\n\ny: yes   n: no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
