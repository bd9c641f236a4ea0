"""The directed favorability matrix: row = from, column = to; and its relational-prior
overlay, the fixed signs a prior states for each pair (Relational priors Sec. 3)."""

from __future__ import annotations

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from engine import WorldState
from engine.priors import Prior, sign_index

from .style import STATUS_GLYPH, fav_style

COMPACT_ABOVE = 8
LEGEND = "+ ally · neutral ~ rival x enemy"
PRIOR_LEGEND = "prior: + positive 0 neutral - negative"
#: How a stated sign is drawn: compact glyph, full cell, colour.
SIGN_CELL = {1: ("+", "+1", "bold green"), 0: ("0", "0", "default"), -1: ("-", "-1", "bold red")}
UNSTATED = ("·", "·", "dim")


def prior_title(prior: Prior | None) -> str:
    """The overlay's heading: the prior's relation type, topology and λ, or none."""
    if prior is None or prior.relation is None:
        return "relational prior: none (no block)"
    what = f"{prior.relation}/{prior.topology}"
    if prior.control == "explicit-neutral":
        return f"relational prior: {what}, all neutral"
    return f"relational prior: {what} λ={prior.positivity:.2g}"


def short_fav(fav: float) -> str:
    """Four characters: ``+.55``, ``-.05``, ``+1.0``."""
    return f"{fav:+.1f}" if abs(fav) >= 0.995 else f"{fav:+.2f}".replace("0.", ".", 1)


class FavMatrix(Widget):
    """Colour = fav, glyph = status; cells changed in the last round are reversed. With the
    prior overlay on, each cell shows instead the sign the run's relational prior states for
    the pair (the same both ways, the same every round)."""

    DEFAULT_CSS = "FavMatrix { width: auto; height: auto; text-wrap: nowrap; }"

    def __init__(self, state: WorldState, prior: Prior | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.state = state
        self.changed: set[tuple[str, str]] = set()
        self.prior = prior
        self._signs = sign_index(prior)
        self.overlay = False

    def show(
        self, state: WorldState, changed: set[tuple[str, str]], prior: Prior | None = None
    ) -> None:
        """Draw a new state (and the run's prior), highlighting the edges in ``changed``."""
        self.state = state
        self.changed = changed
        if prior is not self.prior:
            self.prior, self._signs = prior, sign_index(prior)
        self.refresh(layout=True)

    def toggle_overlay(self) -> bool:
        """Switch between favorability and the prior overlay; True when the overlay is on."""
        self.overlay = not self.overlay
        self.refresh()
        return self.overlay

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
        lines.append(Text(PRIOR_LEGEND if self.overlay else LEGEND, style="dim"))
        text = Text("\n").join(lines)
        text.no_wrap = True
        return text

    def _prior_cell(self, i: str, j: str) -> tuple[str, str, str]:
        """(compact glyph, full text, style) of the sign stated for the pair i-j."""
        sign = self._signs.get(i, {}).get(j)
        return UNSTATED if sign is None else SIGN_CELL[sign]

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
                if self.overlay:
                    _, cell, style = self._prior_cell(i, j)
                    line.append(cell.center(5), style=style)
                else:
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
                if self.overlay:
                    glyph, _, style = self._prior_cell(i, j)
                else:
                    glyph, style = self._cell_style(i, j)
                line.append(glyph, style=style)
            lines.append(line)
        return lines
