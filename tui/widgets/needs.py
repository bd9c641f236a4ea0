"""Need bars: the 13 EduMirror needs under their 5 categories, current against expected."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from engine.needs import NEED_CATEGORIES
from engine.state import NeedState

from .style import bar

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


def gap_style(value: NeedState) -> str:
    """Green when the need is met, yellow for a small gap, red for a large one."""
    gap = value.expected - value.current
    return "green" if gap <= 0.5 else "yellow" if gap <= 2.0 else "red"


def need_cell(name: str, value: NeedState, width: int) -> Text:
    """``label ██████│░ `` with a tick at the expected value."""
    cells = list(bar(value.current / 10.0, width))
    tick = min(width - 1, max(0, round(value.expected / 10.0 * width) - 1))
    cells[tick] = "│" if cells[tick] == "░" else "┃"
    return Text.assemble(
        (f"{SHORT[name]:<10}", "default"), (" ", ""), ("".join(cells), gap_style(value))
    )


class NeedBars(Widget):
    """Renders compactly (two needs a line, category tags) or in full (one a line, headers)."""

    DEFAULT_CSS = "NeedBars { height: auto; }"
    compact: reactive[bool] = reactive(True, layout=True)

    def __init__(self, needs: dict[str, NeedState], **kwargs) -> None:
        super().__init__(**kwargs)
        self.needs = needs

    def update_needs(self, needs: dict[str, NeedState]) -> None:
        """Show a new need state."""
        self.needs = needs
        self.refresh(layout=True)

    def render(self) -> Text:
        return self._compact() if self.compact else self._full()

    def _compact(self) -> Text:
        lines = []
        for category, names in NEED_CATEGORIES.items():
            for k in range(0, len(names), 2):
                tag = TAG[category] if k == 0 else ""
                line = Text(f"{tag:<4}", style=CATEGORY_STYLE[category])
                for name in names[k : k + 2]:
                    line.append_text(need_cell(name, self.needs[name], 5))
                    line.append(" ")
                lines.append(line)
        return Text("\n").join(lines)

    def _full(self) -> Text:
        lines = []
        for category, names in NEED_CATEGORIES.items():
            lines.append(Text(category, style=f"bold {CATEGORY_STYLE[category]}"))
            for name in names:
                value = self.needs[name]
                line = Text("  ")
                line.append_text(need_cell(name, value, 14))
                line.append(f" {value.current:4.1f}/{value.expected:.1f}", style="dim")
                lines.append(line)
        return Text("\n").join(lines)
