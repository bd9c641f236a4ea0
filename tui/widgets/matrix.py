"""The directed favorability matrix: row = from, column = to."""

from __future__ import annotations

from rich.text import Text
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

    DEFAULT_CSS = "FavMatrix { width: auto; height: auto; }"

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
            return max(7 + 2 * len(names), len(LEGEND))
        label_w = min(8, max(len(n) for n in names))
        return max(label_w + 1 + 6 * len(names), len(LEGEND))

    def render(self) -> Text:
        names = list(self.state.agents)
        compact = len(names) > COMPACT_ABOVE
        label_w = 6 if compact else min(8, max(len(n) for n in names))
        cell_w = 2 if compact else 6
        head = Text(" " * (label_w + 1))
        for k, name in enumerate(names):
            title = f"{k + 1:>2}" if compact else name[:5].rjust(5) + " "
            head.append(title[:cell_w].rjust(cell_w), style="bold")
        lines = [head]
        for k, i in enumerate(names):
            label = f"{k + 1:>2} {i[:3]}" if compact else i[:label_w]
            line = Text(label.ljust(label_w) + " ", style="bold")
            for j in names:
                if i == j:
                    line.append("·".rjust(cell_w) if compact else "  —   ", style="dim")
                    continue
                rel = self.state.agents[i].relations[j]
                style = fav_style(rel.fav)
                if (i, j) in self.changed:
                    style += " reverse"
                glyph = STATUS_GLYPH[rel.status]
                text = f" {glyph}" if compact else short_fav(rel.fav) + glyph
                line.append(text.rjust(cell_w - (0 if compact else 1)), style=style)
                if not compact:
                    line.append(" ")
            lines.append(line)
        lines.append(Text(LEGEND, style="dim"))
        return Text("\n").join(lines)
