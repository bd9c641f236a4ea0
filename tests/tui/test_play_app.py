"""Playing an agent in the app: the phase-1 form, the phase-2 utterance, checks shown
inline, the app live while a round waits for the person, and a mid-wait quit that resumes
with the same round asked again.

Pilot tests drive the real app (:func:`tui.app.build_app`); the person's inputs are typed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Label, Select, Static

from engine import Mode, SaveStore, SocialsimError
from engine.minds.human import Turn
from engine.minds.offline import OfflineMind
from tui import cli
from tui.app import SocialsimApp, build_app
from tui.screens.forms import TextForm
from tui.screens.play import DecideForm, SpeakForm, agent_view, take_over
from tui.widgets.agent_pane import AgentPane
from tui.widgets.deck import AgentDeck

SIZE = (100, 30)


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


async def until(pilot: Pilot, kind: type, tries: int = 400) -> None:
    """Let the app run until its screen is a ``kind`` (no clock involved: a bounded number
    of event-loop turns)."""
    for _ in range(tries):
        if isinstance(pilot.app.screen, kind):
            return
        await pilot.pause(0.01)
    raise AssertionError(f"no {kind.__name__}; the screen is {pilot.app.screen!r}")


async def type_into(pilot: Pilot, selector: str, text: str, typed: bool = True) -> None:
    """Fill a field key by key as a person does (``typed``), or set it (quicker)."""
    field = pilot.app.screen.query_one(selector, Input)
    field.value = ""
    field.focus()
    if typed:
        await pilot.press(*("space" if c == " " else c for c in text))
    else:
        field.value = text


async def decide(
    pilot: Pilot, urgency: str, intent: str, mode: Mode = Mode.PUBLIC, typed: bool = False
) -> None:
    """Fill the phase-1 form and press Enter (``typed``: key by key, as a person does)."""
    await until(pilot, DecideForm)
    await type_into(pilot, "#urgency", urgency, typed)
    if mode is not Mode.PUBLIC:
        pilot.app.screen.query_one("#mode", Select).value = mode.value
        await pilot.pause()
    await type_into(pilot, "#intent", intent, typed)
    await pilot.press("enter")


async def say(pilot: Pilot, text: str, typed: bool = False) -> None:
    await until(pilot, SpeakForm)
    await type_into(pilot, "#utterance", text, typed)
    await pilot.press("enter")


def error(pilot: Pilot) -> str:
    return str(pilot.app.screen.query_one(".error", Label).content)


async def test_a_played_round_asks_decide_then_speak_and_records_the_person(
    saves: Path,
) -> None:
    app = build_app("bullying", saves=saves, players={"Helen": "Ms. Lee"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await decide(pilot, "9", "stop the exclusion and back Alice", typed=True)
        await say(pilot, "That is enough: in this class nobody is left out.", typed=True)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.sim.round == 1
        helen = next(a for a in app.sim.records[1].actions if a.speaker == "Helen")
        assert (helen.actor, helen.player) == ("human", "Ms. Lee")
        assert helen.utterance == "That is enough: in this class nobody is left out."
        assert helen.intent == "stop the exclusion and back Alice"
        assert helen.urgency == 9.0
        others = [a for a in app.sim.records[1].actions if a.speaker != "Helen"]
        assert {a.actor for a in others} == {"model"}
        app.main.query_one(AgentDeck).show_agent("Helen")
        await pilot.pause()
        await pilot.pause()  # a pane first mounted now wraps its transcript once laid out
        pane = app.main.query_one("#pane-4", AgentPane)
        assert any("(human: Ms. Lee)" in line for line in pane.transcript.visible_lines())
    saved = SaveStore(saves).read_round(app.sim.run_id, 1)
    assert next(a for a in saved.actions if a.speaker == "Helen").player == "Ms. Lee"


async def test_the_forms_show_the_agents_own_view_and_reject_bad_answers(saves: Path) -> None:
    app = build_app("bullying", saves=saves, players={"Helen": "Ms. Lee"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await until(pilot, DecideForm)
        form = app.screen
        assert isinstance(form, DecideForm)
        view = str(agent_view(form.turn))
        assert "Alice's mother phoned in September" in view  # Helen's private information
        assert "Jane's parents" not in view and "night light" not in view  # others' secrets
        assert "Alice: +0.45 neutral" in view  # her relations
        assert "hands back the English essays" in view  # what she sees this round
        assert "Ms. Lee, you play Helen" in str(form.query_one(".title", Static).content)
        await decide(pilot, "12", "calm them down")
        assert isinstance(app.screen, DecideForm)
        assert "urgency must be from 0 to 10" in error(pilot)
        await decide(pilot, "soon", "calm them down")
        assert "urgency must be a number" in error(pilot)
        # A private turn is never offered 'everyone', nor Helen herself.
        app.screen.query_one("#mode", Select).value = Mode.PRIVATE.value
        await pilot.pause()
        target = app.screen.query_one("#target", Select)
        assert target.value == "Alice"
        await type_into(pilot, "#urgency", "8")
        await pilot.press("enter")
        await say(pilot, "   ")
        assert isinstance(app.screen, SpeakForm)
        assert "type what to say" in error(pilot)
        view = str(agent_view(app.screen.turn))
        assert "said before you this round" in view
        await say(pilot, "Alice, stay behind a moment, please.")
        await app.workers.wait_for_complete()
        helen = next(a for a in app.sim.records[1].actions if a.speaker == "Helen")
        assert (helen.mode, helen.target) == (Mode.PRIVATE, "Alice")


async def test_the_app_stays_live_while_a_round_waits_for_the_person(saves: Path) -> None:
    app = build_app("bullying", saves=saves, players={"Helen": "Ms. Lee"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await until(pilot, DecideForm)
        await pilot.press("escape")  # put the form aside: the round keeps waiting
        await pilot.pause()
        assert app.screen is app.main and app.main.running
        await pilot.press("m")  # another screen opens and closes meanwhile
        await pilot.pause()
        assert app.screen is not app.main
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("t")  # the turn comes back
        await until(pilot, DecideForm)
        await pilot.press("escape")
        await pilot.press("n")  # and with the step key too
        await decide(pilot, "6", "find out what is going on")
        await say(pilot, "Is everything all right over there?")
        await app.workers.wait_for_complete()
        assert app.sim.round == 1


async def test_quit_mid_wait_keeps_the_finished_rounds_and_asks_again_on_resume(
    saves: Path,
) -> None:
    app = build_app("bullying", saves=saves, players={"Helen": "Ms. Lee"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await decide(pilot, "9", "back Alice")
        await say(pilot, "Well done, Alice.")
        await app.workers.wait_for_complete()
        await pilot.press("n")
        await until(pilot, DecideForm)
        asked = app.screen.turn.ctx.round
        await pilot.press("escape")
        await pilot.press("q")
        await app.workers.wait_for_complete()
    assert asked == 2
    run_id = app.sim.run_id
    assert SaveStore(saves).read_meta(run_id).players == {"Helen": "Ms. Lee"}
    again = build_app(run_id, saves=saves)
    async with again.run_test(size=SIZE) as pilot:
        assert again.sim.round == 1  # round 2 was not saved
        await pilot.press("n")
        await until(pilot, DecideForm)
        assert again.screen.turn.ctx.round == 2
        await decide(pilot, "9", "back Alice again")
        await say(pilot, "Alice, sit with Lily.")
        await again.workers.wait_for_complete()
        assert again.sim.round == 2


async def test_pause_mid_wait_stops_the_round_and_going_on_asks_again(saves: Path) -> None:
    app = build_app("bullying", saves=saves, players={"Helen": "Ms. Lee"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")
        await until(pilot, DecideForm)
        await pilot.press("escape")
        await pilot.press("r")  # pause: the waiting round is stopped
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.main.running and app.sim.round == 0
        await pilot.press("n")
        await decide(pilot, "5", "watch the class")
        await say(pilot, "Back to your seats, everyone.")
        await app.workers.wait_for_complete()
        assert app.sim.round == 1


async def test_the_branch_dialog_takes_an_agent_over_and_hands_it_back(saves: Path) -> None:
    app = build_app("bullying", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await app.workers.wait_for_complete()
        parent = app.sim.run_id
        await pilot.press("b")
        await until(pilot, TextForm)
        await type_into(pilot, "#value", "1 play Helen=Ms. Lee")
        await pilot.press("enter")
        await pilot.pause()
        taken = app.sim
        assert taken.run_id != parent and taken.meta.parent.round == 1
        assert taken.meta.players == {"Helen": "Ms. Lee"}
        await pilot.press("n")  # the branch asks Ms. Lee for Helen's round 2
        await until(pilot, DecideForm)
        assert app.screen.turn.ctx.round == 2
        await decide(pilot, "0", "", Mode.SILENT)
        await app.workers.wait_for_complete()
        helen = next(a for a in app.sim.records[2].actions if a.speaker == "Helen")
        assert (helen.actor, helen.mode) == ("human", Mode.SILENT)
        await pilot.press("b")
        await until(pilot, TextForm)
        await type_into(pilot, "#value", "2 play Zed")
        await pilot.press("enter")
        await pilot.pause()
        assert "play Zed: no such agent" in error(pilot)
        await type_into(pilot, "#value", "2 ai Helen")
        await pilot.press("enter")
        await pilot.pause()
        assert app.sim.meta.players == {} and app.sim.meta.parent.run_id == taken.run_id
        await pilot.press("n")  # the model plays Helen again: nobody is asked
        await app.workers.wait_for_complete()
        assert app.sim.round == 3 and app.screen is app.main


def test_take_over_reads_play_and_ai_clauses() -> None:
    names = ["Alice", "Helen", "Jane"]
    assert take_over("3 supportive-individual play Helen=Ms. Lee", names, {}) == (
        "3 supportive-individual",
        {"Helen": "Ms. Lee"},
    )
    assert take_over("3 play Alice", names, {"Helen": "Ms. Lee"}) == (
        "3",
        {"Helen": "Ms. Lee", "Alice": "Alice"},
    )
    assert take_over("3 ai Helen", names, {"Helen": "Ms. Lee"}) == ("3", {})
    assert take_over("3", names, {"Helen": "Ms. Lee"}) == ("3", {"Helen": "Ms. Lee"})
    with pytest.raises(ValueError, match="ai Bob: no such agent"):
        take_over("3 ai Bob", names, {})


def test_cli_play_option_reaches_the_app(monkeypatch: pytest.MonkeyPatch, saves: Path) -> None:
    captured: list[SocialsimApp] = []
    monkeypatch.setattr(SocialsimApp, "run", lambda self, *a, **k: captured.append(self))
    argv = ["socialsim", "tui", "bullying", "--play", "Helen=Ms. Lee", "--play", "Alice"]
    monkeypatch.setattr(sys, "argv", [*argv, "--saves", str(saves)])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code in (0, None)
    (app,) = captured
    app.sim.close()
    assert app.sim.meta.players == {"Helen": "Ms. Lee", "Alice": "Alice"}
    assert SaveStore(saves).read_meta(app.sim.run_id).players == app.sim.meta.players


def test_cli_play_of_an_unknown_agent_is_one_line_and_no_run(run_cli, saves: Path) -> None:
    result = run_cli("tui", "bullying", "--play", "Zed", "--saves", str(saves))
    assert result.code == 2
    assert result.err.strip().splitlines() == [
        "socialsim: error: --play 'Zed': no such agent; agents: Alice, Jane, Megan, Lily, Helen"
    ]
    assert not saves.exists() or not [p for p in saves.iterdir() if not p.name.startswith(".")]


async def test_two_people_at_one_keyboard_are_asked_in_turn(saves: Path) -> None:
    app = build_app("bullying", saves=saves, players={"Helen": "Ms. Lee", "Alice": "Sam"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        asked = []
        for urgency in ("3", "8"):  # phase 1: both forms, one after the other
            await until(pilot, DecideForm)
            asked.append(app.screen.turn.player)
            await decide(pilot, urgency, "say how I see it")
            await pilot.pause()
        assert sorted(asked) == ["Ms. Lee", "Sam"]
        spoken = []
        for _ in asked:  # phase 2: the more urgent speaks first
            await until(pilot, SpeakForm)
            spoken.append(app.screen.turn.player)
            await say(pilot, f"I am {app.screen.turn.player}.")
        await app.workers.wait_for_complete()
        assert spoken == [asked[1], asked[0]]
        actions = {a.speaker: a for a in app.sim.records[1].actions}
        assert {(n, actions[n].player) for n in ("Alice", "Helen")} == {
            ("Alice", "Sam"),
            ("Helen", "Ms. Lee"),
        }
        assert actions["Alice"].utterance == "I am Sam."


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_both_forms_fit_the_smallest_terminal(saves: Path, size: tuple[int, int]) -> None:
    app = build_app("bullying", saves=saves, players={"Helen": "Ms. Lee"})
    async with app.run_test(size=size) as pilot:
        await pilot.press("n")
        await until(pilot, DecideForm)
        for field in ("#view", "#urgency", "#mode", "#target", "#intent", "#ok"):
            region = app.screen.query_one(field).region
            assert region.height and region.bottom <= size[1], field
        await decide(pilot, "7", "be heard")
        await until(pilot, SpeakForm)
        for field in ("#view", "#utterance", "#ok"):
            region = app.screen.query_one(field).region
            assert region.height and region.bottom <= size[1], field
        await say(pilot, "Listen, all of you.")
        await app.workers.wait_for_complete()


async def test_a_failed_round_drops_the_turn_it_was_waiting_for(
    saves: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decide_offline = OfflineMind.decide
    fail = [True]

    async def alice_fails_once(self, ctx):
        if ctx.name == "Alice" and fail:
            fail.clear()
            await asyncio.sleep(0)  # Helen's turn is asked meanwhile
            raise SocialsimError("Alice's mind is unreachable")
        return await decide_offline(self, ctx)

    withdrawn: list[str] = []
    withdraw = Turn.withdraw

    def noted_withdraw(turn: Turn) -> None:
        withdrawn.append(turn.agent)
        withdraw(turn)

    monkeypatch.setattr(OfflineMind, "decide", alice_fails_once)
    monkeypatch.setattr(Turn, "withdraw", noted_withdraw)
    app = build_app("bullying", saves=saves, players={"Helen": "Ms. Lee"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await app.workers.wait_for_complete()
        for _ in range(5):
            await pilot.pause()
        assert app.sim.round == 0 and not app.main.running
        assert withdrawn == ["Helen"]  # the failed round's turn, given up
        assert app.screen is app.main  # and its form is not left open
        await pilot.press("n")  # the next round asks Helen afresh, and keeps her answer
        await decide(pilot, "9", "back Alice")
        await say(pilot, "Well done, Alice.")
        await app.workers.wait_for_complete()
        assert app.sim.round == 1
        helen = next(a for a in app.sim.records[1].actions if a.speaker == "Helen")
        assert (helen.intent, helen.utterance) == ("back Alice", "Well done, Alice.")
