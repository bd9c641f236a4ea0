"""Updating a Static only when what it shows changes."""

from __future__ import annotations

from rich.text import Text
from textual.visual import VisualType
from textual.widgets import Static


def show_content(static: Static, content: VisualType) -> None:
    """``static.update(content)`` unless it already shows ``content``: an update lays the
    screen out again, and a redraw of a large cast's screen is what a round's keys wait on."""
    if not _same(static.content, content):
        static.update(content)


def _same(shown: VisualType, content: VisualType) -> bool:
    """Whether ``content`` draws as ``shown`` does: equal strings, or texts alike in their
    words, spans and base style (rich's ``==`` leaves the base style out)."""
    if isinstance(shown, str) and isinstance(content, str):
        return shown == content
    if isinstance(shown, Text) and isinstance(content, Text):
        return (
            shown == content
            and shown.style == content.style
            and (shown.justify, shown.overflow, shown.no_wrap, shown.end)
            == (content.justify, content.overflow, content.no_wrap, content.end)
        )
    return False
