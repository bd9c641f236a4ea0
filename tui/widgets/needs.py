"""Need bars: the 13 EduMirror needs under their 5 categories, current against expected.

Three levels of detail, so a small pane keeps room for its transcript: ``summary`` (one line
per category: the category's mean, the neediest need named), ``compact`` (two needs a line)
and ``full`` (one need a line under category headers, with the numbers). Each need's gap is
a colour and a glyph (``✓`` met, ``!`` small gap, ``✗`` large gap), so it reads without
colour too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from rich.text import Text
from textual.geometry import Size
from textual.reactive import reactive
from textual.widget import Widget

from engine.core.needs import NEED_CATEGORIES
from engine.core.state import NeedState

from .style import GAP_GLYPH, GAP_STYLE, bar, gap_level

Detail = Literal["summary", "compact", "full"]
#: Lines each level of detail takes.
HEIGHT: dict[Detail, int] = {
    "summary": len(NEED_CATEGORIES),
    "compact": sum(-(-len(names) // 2) for names in NEED_CATEGORIES.values()),
    "full": len(NEED_CATEGORIES) + sum(len(names) for names in NEED_CATEGORIES.values()),
}

SHORT = {
    "psychological_safety": "psych safe",
    "emotional_safety": "emo safety",
    "group_acceptance": "acceptance",
    "support_system": "support",
    "sense_of_superiority": "superior",
    "self_worth": "self-worth",
    "sense_of_respect": "respect",
    "sense_of_meaning": "meaning",
    "sense_of_control": "control",
    "passion_and_motivation": "passion",
    "emotional_stability": "stability",
    "emotional_wellbeing": "wellbeing",
    "psychological_resilience": "resilience",
}
TAG = {
    "Safety": "SAF",
    "Social Belonging": "BEL",
    "Esteem": "EST",
    "Meaning and Growth": "MNG",
    "Psychological Health": "HLT",
}
CATEGORY_STYLE = {
    "Safety": "cyan",
    "Social Belonging": "magenta",
    "Esteem": "yellow",
    "Meaning and Growth": "blue",
    "Psychological Health": "green",
}


def gauge(current: float, expected: float, width: int, glyph: bool = True) -> Text:
    """``██████│░`` with a tick at the expected value, then the gap glyph; gap-coloured."""
    cells = list(bar(current / 10.0, width))
    tick = min(width - 1, max(0, round(expected / 10.0 * width) - 1))
    cells[tick] = "│" if cells[tick] == "░" else "┃"
    level = gap_level(expected, current)
    return Text("".join(cells) + (GAP_GLYPH[level] if glyph else ""), style=GAP_STYLE[level])


def need_cell(name: str, value: NeedState, width: int) -> Text:
    """``label ██████│░✓``."""
    return Text(f"{SHORT[name]:<10} ") + gauge(value.current, value.expected, width)


def category_line(category: str, needs: Mapping[str, NeedState], width: int) -> Text:
    """``SAF ██████│░ 7.1/8.0 ! self-worth``: the category's mean, and the need with the
    largest gap and its glyph (``✓`` alone when every need is met)."""
    names = NEED_CATEGORIES[category]
    current = sum(needs[n].current for n in names) / len(names)
    expected = sum(needs[n].expected for n in names) / len(names)
    line = Text.assemble((f"{TAG[category]} ", CATEGORY_STYLE[category]))
    line.append_text(gauge(current, expected, max(5, min(14, width - 26)), glyph=False))
    line.append(f" {current:.1f}/{expected:.1f} ", style="dim")
    worst = max(names, key=lambda n: needs[n].expected - needs[n].current)
    level = gap_level(needs[worst].expected, needs[worst].current)
    label = GAP_GLYPH[level] + ("" if level == "met" else f" {SHORT[worst]}")
    line.append(label, style=GAP_STYLE[level])
    return line


class NeedBars(Widget):
    """The needs of one agent at the level of detail its pane has room for."""

    DEFAULT_CSS = "NeedBars { height: auto; }"
    detail: reactive[Detail] = reactive("summary", layout=True)

    def __init__(self, needs: Mapping[str, NeedState], **kwargs) -> None:
        super().__init__(**kwargs)
        self.needs = needs

    def update_needs(self, needs: Mapping[str, NeedState]) -> None:
        """Show a new need state."""
        self.needs = needs
        self.refresh()

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return HEIGHT[self.detail]  # known without rendering

    def render(self) -> Text:
        if self.detail == "summary":
            lines = [category_line(c, self.needs, self.size.width) for c in NEED_CATEGORIES]
        elif self.detail == "compact":
            lines = self._compact()
        else:
            lines = self._full()
        text = Text("\n").join(lines)
        text.no_wrap = True
        text.overflow = "ellipsis"
        return text

    def _compact(self) -> list[Text]:
        lines = []
        for category, names in NEED_CATEGORIES.items():
            for k in range(0, len(names), 2):
                tag = TAG[category] if k == 0 else ""
                line = Text.assemble((f"{tag:<4}", CATEGORY_STYLE[category]))
                cells = [need_cell(name, self.needs[name], 4) for name in names[k : k + 2]]
                line.append_text(Text(" ").join(cells))
                lines.append(line)
        return lines

    def _full(self) -> list[Text]:
        lines = []
        for category, names in NEED_CATEGORIES.items():
            lines.append(Text(category, style=f"bold {CATEGORY_STYLE[category]}"))
            for name in names:
                value = self.needs[name]
                level = gap_level(value.expected, value.current)
                line = Text(f"  {SHORT[name]:<10} ")
                line.append_text(gauge(value.current, value.expected, 14, glyph=False))
                line.append(f" {value.current:4.1f}/{value.expected:.1f} ", style="dim")
                line.append(GAP_GLYPH[level], style=GAP_STYLE[level])
                lines.append(line)
        return lines
