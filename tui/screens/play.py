"""Playing an agent: the forms that ask a person for the turn of an agent they play.

The engine's :class:`~engine.minds.human.HumanMind` hands each turn to a
:class:`~tui.seat.Seat` (on whichever thread plays the round); the seat posts it to the main
screen as a :class:`~tui.seat.TurnAsked` message, and the screen shows :class:`DecideForm`
(phase 1: urgency, mode, target, intent) or :class:`SpeakForm` (phase 2: the utterance, with
the round's earlier utterances the agent heard in view). Both show the agent's own view:
persona, private information, relations, what it has seen. Esc puts a form aside (the round
keeps waiting, the app stays live); the main screen's ``t`` brings it back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Input, Label, Select, Static

from engine import ALL, Mode, SocialsimError
from engine.minds.human import Turn, check_players

from ..widgets.style import signed
from .forms import Form, FormSelect, target_choices

#: Earlier rounds whose utterances the view repeats.
RECALLED_ROUNDS = 2


def agent_view(turn: Turn) -> Text:
    """What the played agent knows now, the round first (at 80x24 the view shows ~9 lines):
    this round's earlier utterances in phase 2, what happens this round, then who it is,
    what only it knows, how it regards the others, how it feels, what it heard before."""
    ctx, spec = turn.ctx, turn.ctx.persona
    view = Text()

    def section(title: str, lines: list[str]) -> None:
        if lines:
            view.append(f"{title}\n", style="bold")
            for line in lines:
                view.append(f"  {line}\n")

    if turn.phase == "speak":
        section(
            "said before you this round",
            [f"{a.speaker} → {a.target or ALL}: {a.utterance}" for a in ctx.heard] or ["(nobody)"],
        )
    section(f"round {ctx.round}: what happens", [e.text for e in ctx.events])
    section(
        f"{spec.name}: {spec.role}",
        [f"goal: {spec.goal}"] * bool(spec.goal)
        + [f"never: {spec.boundary}"] * bool(spec.boundary),
    )
    section("only you know", list(spec.private_info))
    section(
        "you regard",
        [
            f"{other}: {signed(rel.fav)} {rel.status.value}"
            for other, rel in ctx.state.relations.items()
        ],
    )
    view.append(f"you feel: emotion {ctx.state.emotion:.2f} (0 low, 1 high)\n", style="bold")
    heard = [
        f"R{past.round} {a.speaker}{' (to you)' if a.mode is Mode.PRIVATE else ''}: {a.utterance}"
        for past in ctx.history[-RECALLED_ROUNDS:]
        for a in past.actions
        if a.utterance and a.speaker != spec.name
    ]
    section("earlier rounds", heard)
    return view


class _TurnForm(Form):
    """A turn's dialog: the agent's view above the fields; Esc puts it aside."""

    DEFAULT_CSS = """
    _TurnForm #view { height: auto; max-height: 40vh; margin-bottom: 1; }
    _TurnForm .row { align-horizontal: left; margin-bottom: 1; }
    _TurnForm .row Input, _TurnForm .row Select { margin-bottom: 0; }
    _TurnForm #urgency { width: 5; }
    _TurnForm #mode { width: 12; }
    _TurnForm #target, _TurnForm #intent, _TurnForm #utterance { width: 1fr; }
    """
    keys_text = "Enter answer · Tab next · Space opens a list · Esc later (t: back)"

    def __init__(self, turn: Turn) -> None:
        super().__init__(self._answer)
        self.turn = turn
        self.title_text = (
            f"Round {turn.ctx.round} · {turn.player}, you play {turn.agent} · "
            f"{'phase 1: decide' if turn.phase == 'decide' else 'phase 2: speak'}"
        )

    def view(self) -> ComposeResult:
        with VerticalScroll(id="view"):
            yield Static(agent_view(self.turn))

    def _answer(self, *values: object) -> str | None:
        try:
            self.give(*values)
        except SocialsimError as err:
            return str(err)
        return None

    def give(self, *values: object) -> None:
        """Hand the answer to the engine (raises on a bad one)."""
        raise NotImplementedError


class DecideForm(_TurnForm):
    """Phase 1: whether, how and to whom the played agent speaks, and why."""

    def fields(self) -> ComposeResult:
        yield from self.view()
        names, me = self.turn.ctx.scenario.names, self.turn.agent
        with Horizontal(classes="row"):  # compact: a person answers every round
            yield Label("urgency 0-10 ")
            yield Input("5", id="urgency", compact=True)
            yield Label("  mode ")
            yield FormSelect(
                [(m.value, m.value) for m in Mode],
                value=Mode.PUBLIC.value,
                allow_blank=False,
                id="mode",
                compact=True,
            )
            yield Label("  to ")
            yield FormSelect(
                target_choices(names, me, Mode.PUBLIC),
                value=ALL,
                allow_blank=False,
                id="target",
                compact=True,
            )
        with Horizontal(classes="row"):
            yield Label("intent ")
            yield Input(placeholder="one sentence: what you want", id="intent", compact=True)

    def on_mount(self) -> None:
        self.query_one("#urgency", Input).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "mode":
            return
        mode = Mode(str(event.value))
        target = self.query_one("#target", Select)
        choices = target_choices(self.turn.ctx.scenario.names, self.turn.agent, mode)
        allowed = [value for _, value in choices]
        current = target.value
        target.set_options(choices)
        target.value = current if current in allowed else allowed[0]
        target.disabled = mode is Mode.SILENT

    def values(self) -> tuple:
        mode = Mode(str(self.query_one("#mode", Select).value))
        target = self.query_one("#target", Select).value
        return (
            self.query_one("#urgency", Input).value.strip(),
            mode,
            None if mode is Mode.SILENT else str(target),
            self.query_one("#intent", Input).value,
        )

    def give(self, *values: object) -> None:
        urgency, mode, target, intent = values
        try:
            aim = None if target is None else str(target)
            self.turn.decide(str(urgency), Mode(str(mode)), aim, str(intent))
        except ValueError as err:  # pydantic's, should a value slip past the checks
            raise SocialsimError(str(err).splitlines()[0]) from None


class SpeakForm(_TurnForm):
    """Phase 2: the played agent's utterance, the round's earlier utterances in view."""

    def fields(self) -> ComposeResult:
        yield from self.view()
        decision = self.turn.decision
        aim = ""
        if decision is not None:
            aim = f" ({decision.mode.value} to {decision.target or ALL}: {decision.intent})"
        yield Label(f"what {self.turn.agent} says{aim}")
        with Horizontal(classes="row"):  # a bare Input made the dialog's auto height too tall
            yield Input(placeholder="type the utterance", id="utterance", compact=True)

    def on_mount(self) -> None:
        self.query_one("#utterance", Input).focus()

    def values(self) -> tuple:
        return (self.query_one("#utterance", Input).value,)

    def give(self, *values: object) -> None:
        self.turn.say(str(values[0]))


def turn_form(turn: Turn) -> _TurnForm:
    """The dialog for ``turn``'s phase."""
    return DecideForm(turn) if turn.phase == "decide" else SpeakForm(turn)


_CLAUSE = re.compile(r"\s+(play|ai)\s+")


def take_over(
    text: str, names: list[str], players: Mapping[str, str]
) -> tuple[str, dict[str, str]]:
    """The branch dialog's ``play NAME[=PLAYER]`` and ``ai NAME`` clauses: the text without
    them, and who plays whom in the branch (``players`` kept unless a clause changes it)."""
    head, *rest = _CLAUSE.split(f" {text.strip()} ".rstrip())
    seats = dict(players)
    for verb, arg in zip(rest[::2], rest[1::2], strict=True):
        agent, _, player = arg.strip().partition("=")
        if agent not in names:
            raise ValueError(f"{verb} {agent}: no such agent; agents: {', '.join(names)}")
        if verb == "ai":
            seats.pop(agent, None)
        else:
            seats[agent] = player.strip() or players.get(agent, agent)
    try:
        return head.strip(), check_players(seats, names)
    except SocialsimError as err:
        raise ValueError(str(err)) from None
