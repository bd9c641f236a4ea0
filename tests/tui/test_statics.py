"""A Static shown what it already shows is left alone (no new layout of the screen)."""

from __future__ import annotations

from cast import record_layouts
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Static

from tui.widgets.statics import show_content


class _One(App[None]):
    def compose(self) -> ComposeResult:
        yield Static(Text("R1 · rows 1-20 of 300", style="bold"))


async def test_the_same_content_asks_for_no_layout() -> None:
    app = _One()
    async with app.run_test() as pilot:
        static = app.query_one(Static)
        layouts = record_layouts(static)
        show_content(static, Text("R1 · rows 1-20 of 300", style="bold"))
        assert layouts == []
        show_content(static, Text("R1 · rows 1-20 of 300"))  # the same words, unstyled
        show_content(static, Text("R1 · rows 21-40 of 300"))
        assert layouts == [True, True]
        await pilot.pause()
        assert "21-40" in str(static.render())
