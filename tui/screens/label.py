"""``socialsim label rate``: one rater labels a study's items, one at a time, from the
evidence the judge had (the observer's persona, its value before the round, the events and
actions it saw), never the judge's answer. i / u / d label the item increase / unchanged /
decrease and move on, s skips, b goes back; each label is saved at once, so quitting at any
point and starting again resumes at the first item this rater has not labelled."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from engine.core.textsafe import one_line
from engine.errors import SocialsimError
from engine.studies.labels.study import Direction, Item, Study, add_labels

SCALE = {"emotion": "0 to 1", "relation": "-1 to 1", "need": "0 to 10"}


def question(item: Item) -> str:
    """What the rater is asked about ``item``."""
    ev = item.evidence
    before = f"{ev.prior:.2f} ({SCALE[item.kind]})"
    if item.kind == "emotion":
        subject = f"{ev.observer}'s emotion"
    elif item.kind == "relation":
        subject = f"How much {ev.observer} likes {ev.about}"
    else:
        subject = f"{ev.observer}'s need {ev.about!r}"
    return (
        f"{subject} was {before} before this round. After what {ev.observer} saw, "
        "did it increase, stay unchanged or decrease?"
    )


def evidence_text(item: Item) -> Text:
    """The item's evidence as plain text (no markup is read from it); the question is
    shown below it, always in view."""
    ev = item.evidence
    lines = [f"Round {item.round} of run {item.run_id} — {item.kind}", ""]
    lines.append(f"{ev.observer}: {ev.role}" + (f" ({ev.archetype})" if ev.archetype else ""))
    if ev.traits:
        lines.append("Traits: " + ", ".join(ev.traits))
    if ev.goal:
        lines.append("Goal: " + ev.goal)
    lines += ["", f"What {ev.observer} saw this round:"]
    lines += [f"  • {e}" for e in ev.events] or ["  (no events)"]
    lines += [f"  ▸ {a}" for a in ev.actions] or ["  (no one spoke to or before them)"]
    return Text("\n".join(lines))


class LabelScreen(Screen[None]):
    """The items of one study, one at a time, for one rater."""

    DEFAULT_CSS = """
    LabelScreen #progress { height: 1; background: $primary; color: $text; padding: 0 1; }
    LabelScreen #evidence { padding: 1 2; }
    LabelScreen #question { height: auto; padding: 0 2; text-style: bold;
        border-top: solid $primary; }
    LabelScreen #mine { height: 1; padding: 0 2; color: $text-muted; }
    """
    BINDINGS = [
        Binding("i", "label('increase')", "Increase"),
        Binding("u", "label('unchanged')", "Unchanged"),
        Binding("d", "label('decrease')", "Decrease"),
        Binding("s", "move(1)", "Skip"),
        Binding("b", "move(-1)", "Back"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, saves: Path, study: Study, rater: str) -> None:
        super().__init__()
        self.saves = saves
        self.study = study
        self.rater = rater
        mine = study.labels.get(rater, {})
        self.position = next((k for k, item in enumerate(study.items) if item.id not in mine), 0)

    def compose(self) -> ComposeResult:
        yield Static(id="progress")
        with VerticalScroll():
            yield Static(id="evidence")
        yield Static(id="question")
        yield Static(id="mine")
        yield Footer()

    def on_mount(self) -> None:
        self.show()

    @property
    def mine(self) -> dict[str, Direction]:
        return self.study.labels.get(self.rater, {})

    def show(self) -> None:
        items = self.study.items
        item = items[self.position]
        done = sum(1 for i in items if i.id in self.mine)
        self.query_one("#progress", Static).update(
            Text(
                f"{self.study.name} · {self.rater} · item {self.position + 1} of {len(items)}"
                f" · {done} labelled" + (" · all done (q quits)" if done == len(items) else "")
            )
        )
        self.query_one("#evidence", Static).update(evidence_text(item))
        self.query_one("#question", Static).update(Text(question(item)))
        label = self.mine.get(item.id)
        self.query_one("#mine", Static).update(
            Text(f"your label: {label}" if label else "not labelled yet")
        )
        self.query_one(VerticalScroll).scroll_home(animate=False)

    def action_label(self, direction: Direction) -> None:
        item = self.study.items[self.position]
        try:
            self.study = add_labels(self.saves, self.study.name, self.rater, {item.id: direction})
        except (SocialsimError, OSError) as err:  # the study removed or unwritable meanwhile
            self.notify(one_line(f"not saved: {err}"), severity="error", markup=False)
            return
        self.action_move(1)

    def action_move(self, step: int) -> None:
        self.position = min(max(self.position + step, 0), len(self.study.items) - 1)
        self.show()


class LabelApp(App[None]):
    """The labelling screen on its own (``socialsim label rate``)."""

    TITLE = "socialsim label"

    def __init__(self, saves: Path, study: Study, rater: str) -> None:
        super().__init__()
        self.screen_args = (saves, study, rater)

    def on_mount(self) -> None:
        self.push_screen(LabelScreen(*self.screen_args))
