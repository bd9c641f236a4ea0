"""The agent deck: as many agent panes side by side as fit, paged with [ and ]."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Static

from .agent_pane import AgentPane
from .style import emotion_style

PANE_WIDTH = 42


class AgentStrip(Static):
    """One line naming every agent; the ones on screen are highlighted."""

    DEFAULT_CSS = "AgentStrip { height: 1; padding: 0 1; }"


class AgentDeck(Vertical):
    """Pages of agent panes."""

    DEFAULT_CSS = """
    AgentDeck { width: 1fr; }
    AgentDeck > Horizontal { height: 1fr; }
    AgentDeck AgentPane { width: 1fr; }
    AgentDeck.no-needs NeedBars { display: none; }
    """
    page: reactive[int] = reactive(0)

    def __init__(self, panes: list[AgentPane], **kwargs) -> None:
        super().__init__(**kwargs)
        self.panes = panes

    def compose(self) -> ComposeResult:
        yield AgentStrip()
        with Horizontal():
            yield from self.panes

    @property
    def per_page(self) -> int:
        return max(1, self.size.width // PANE_WIDTH)

    @property
    def pages(self) -> int:
        return -(-len(self.panes) // self.per_page)

    def on_resize(self) -> None:
        self._apply()

    def watch_page(self) -> None:
        self._apply()

    def turn(self, step: int) -> None:
        """Go ``step`` pages forward (wrapping around)."""
        self.page = (self.page + step) % self.pages

    def show_agent(self, name: str) -> None:
        """Turn to the page holding ``name``."""
        for k, pane in enumerate(self.panes):
            if pane.spec.name == name:
                self.page = k // self.per_page

    def shown_agents(self) -> list[str]:
        """Names of the agents on screen."""
        return [p.spec.name for p in self.panes if p.display]

    def _apply(self) -> None:
        if not self.is_mounted or not self.panes:
            return
        n = self.per_page
        page = min(self.page, self.pages - 1)
        for k, pane in enumerate(self.panes):
            pane.display = page * n <= k < (page + 1) * n
        strip = Text()
        if self.pages > 1:
            strip.append(f"{page + 1}/{self.pages} ", style="bold")
        for pane in self.panes:
            style = emotion_style(pane.state.emotion)
            if pane.display:
                strip.append(f"[{pane.spec.name}]", style=f"bold reverse {style}")
            else:
                strip.append(pane.spec.name, style=style)
            strip.append(" ")
        if self.pages > 1:
            strip.append(" [ ] page", style="dim")
        self.query_one(AgentStrip).update(strip)

    def refresh_strip(self) -> None:
        """Recolour the strip after emotions changed."""
        self._apply()
