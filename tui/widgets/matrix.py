"""The directed favorability matrix: row = from, column = to."""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from engine import WorldState

from .style import STATUS_GLYPH, fav_style

COMPACT_ABOVE = 8
LEGEND = "+ ally · neutral ~ rival x enemy"


def short_fav(fav: float) -> str:
    """Four characters: ``+.55``, ``-.05``, ``+1.0``."""
    return f"{fav:+.1f}" if abs(fav) >= 0.995 else f"{fav:+.2f}".replace("0.", ".", 1)


class FavMatrix(Widget):
    """Colour = fav, glyph = status; cells changed in the last round are reversed."""

    DEFAULT_CSS = "FavMatrix { width: auto; height: auto; text-wrap: nowrap; }"

    def __init__(self, state: WorldState, **kwargs) -> None:
        super().__init__(**kwargs)
        self.state = state
        self.changed: set[tuple[str, str]] = set()

    def show(self, state: WorldState, changed: set[tuple[str, str]]) -> None:
        """Draw a new state, highlighting the edges in ``changed``."""
        self.state = state
        self.changed = changed
        self.refresh(layout=True)

    def natural_width(self) -> int:
        """Columns the matrix needs."""
        names = list(self.state.agents)
        if len(names) > COMPACT_ABOVE:
            return max(7 + len(names), len(LEGEND))
        return max(self._label_width(names) + 1 + 6 * len(names), len(LEGEND))

    @staticmethod
    def _label_width(names: list[str]) -> int:
        return min(8, max(len(n) for n in names))

    def get_content_width(self, container: Size, viewport: Size) -> int:
        # Never wrap rows: a matrix wider than the side panel scrolls sideways instead.
        return self.natural_width()

    def render(self) -> Text:
        names = list(self.state.agents)
        lines = self._compact(names) if len(names) > COMPACT_ABOVE else self._full(names)
        lines.append(Text(LEGEND, style="dim"))
        text = Text("\n").join(lines)
        text.no_wrap = True
        return text

    def _cell_style(self, i: str, j: str) -> tuple[str, str]:
        rel = self.state.agents[i].relations[j]
        style = fav_style(rel.fav)
        if (i, j) in self.changed:
            style += " reverse"
        return STATUS_GLYPH[rel.status], style

    def _full(self, names: list[str]) -> list[Text]:
        """Up to 8 agents: the fav value and a status glyph per cell."""
        label_w = self._label_width(names)
        head = Text(" " * (label_w + 1))
        for name in names:
            head.append(name[:5].rjust(5) + " ", style="bold")
        lines = [head]
        for i in names:
            line = Text(i[:label_w].ljust(label_w) + " ", style="bold")
            for j in names:
                if i == j:
                    line.append("  —   ", style="dim")
                    continue
                glyph, style = self._cell_style(i, j)
                fav = self.state.agents[i].relations[j].fav
                line.append((short_fav(fav) + glyph).rjust(5), style=style)
                line.append(" ")
            lines.append(line)
        return lines

    def _compact(self, names: list[str]) -> list[Text]:
        """Many agents: one coloured status glyph per cell, columns numbered (tens over units)."""
        pad = " " * 7
        tens = Text(
            pad + "".join(str((k + 1) // 10 % 10) if k >= 9 else " " for k in range(len(names))),
            style="dim",
        )
        units = Text(pad + "".join(str((k + 1) % 10) for k in range(len(names))), style="bold")
        lines = [tens, units]
        for k, i in enumerate(names):
            line = Text(f"{k + 1:>2} {i[:3]:<3} ", style="bold")
            for j in names:
                if i == j:
                    line.append("\\", style="dim")
                    continue
                glyph, style = self._cell_style(i, j)
                line.append(glyph, style=style)
            lines.append(line)
        return lines
