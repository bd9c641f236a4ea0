"""A person playing an agent, engine side: HumanMind answered by a scripted responder, the
checks on a person's answers, a withdrawn turn, the record (save, CSV), branches and replay
of runs with human turns."""

from __future__ import annotations

import asyncio
import csv
import threading
from pathlib import Path

import pytest

from engine import InterventionError, Mode, SaveStore, Simulation, SocialsimError
from engine.core.scenario import Scenario, resolve_scenario
from engine.core.state import Action, RoundRecord
from engine.minds.human import MAX_UTTERANCE, Turn, human_decision, human_utterance
from engine.reports.export import export_run
from engine.round.replay import replay_run


def bullying() -> Scenario:
    return resolve_scenario("bullying")


class Script:
    """A responder: answers each turn at once, remembering what it was shown."""

    def __init__(self, utterance: str = "That is enough: nobody is left out here.") -> None:
        self.utterance = utterance
        self.turns: list[Turn] = []

    def __call__(self, turn: Turn) -> None:
        self.turns.append(turn)
        if turn.phase == "decide":
            turn.decide(9, "public", None, "stop the exclusion and support Alice")
        else:
            turn.say(f"{self.utterance} (round {turn.ctx.round})")


def played(record: RoundRecord, agent: str) -> Action:
    return next(a for a in record.actions if a.speaker == agent)


async def test_a_scripted_person_plays_helen_and_is_judged_like_any_agent() -> None:
    sim = Simulation.new(bullying(), seed=1)
    script = Script()
    sim.play({"Helen": "Ms. Lee"})
    sim.seat(script)
    await sim.run(2)
    assert [(t.phase, t.agent, t.player, t.ctx.round) for t in script.turns] == [
        ("decide", "Helen", "Ms. Lee", 1),
        ("speak", "Helen", "Ms. Lee", 1),
        ("decide", "Helen", "Ms. Lee", 2),
        ("speak", "Helen", "Ms. Lee", 2),
    ]
    speak = script.turns[1]
    assert speak.decision is not None and speak.decision.intent.startswith("stop the exclusion")
    assert all(a.speaker != "Helen" for a in speak.ctx.heard)  # what was said before her turn
    first = sim.records[1]
    helen = played(first, "Helen")
    assert (helen.actor, helen.player, helen.urgency, helen.stance) == (
        "human",
        "Ms. Lee",
        9.0,
        "support",
    )
    assert helen.utterance == "That is enough: nobody is left out here. (round 1)"
    assert {a.actor for a in first.actions if a.speaker != "Helen"} == {"model"}
    assert any(c.agent == "Helen" for c in first.emotion_changes)  # judged
    # Her words reach the others: Alice's regard for her moved in the round she spoke.
    assert any(c.source == "Alice" and c.target == "Helen" for c in first.relation_changes)


async def test_the_agents_view_is_its_own() -> None:
    sim = Simulation.new(bullying(), seed=1)
    script = Script()
    sim.play({"Alice": "pupil"})
    sim.seat(script)
    for _ in range(8):
        await sim.step()
    views = {t.ctx.round: t.ctx for t in script.turns if t.phase == "decide"}
    assert not any("group chat" in e.text for e in views[5].events)  # private to Lily
    assert any("folded note" in e.text for e in views[8].events)  # private to Alice
    assert views[8].persona.private_info[0].startswith("She changed schools")
    assert set(views[8].state.relations) == {"Jane", "Megan", "Lily", "Helen"}


@pytest.mark.parametrize(
    ("urgency", "mode", "target", "message"),
    [
        (11, "public", None, "urgency must be from 0 to 10"),
        ("soon", "public", None, "urgency must be a number"),
        (5, "loud", None, "mode must be public, private or silent"),
        (5, "private", None, "needs a target"),
        (5, "private", "all", "one recipient"),
        (5, "public", "Helen", "cannot address itself"),
        (5, "public", "Zed", "unknown target"),
    ],
)
async def test_a_bad_decision_is_one_line_and_the_turn_stays_open(
    urgency: object, mode: str, target: str | None, message: str
) -> None:
    sim = Simulation.new(bullying(), seed=1)
    ctx = sim.contexts(1, [])["Helen"]
    with pytest.raises(InterventionError, match=message):
        human_decision(ctx, urgency, mode, target, "")  # type: ignore[arg-type]
    turn = Turn("decide", "Ms. Lee", ctx)
    with pytest.raises(InterventionError):
        turn.decide(urgency, mode, target)  # type: ignore[arg-type]
    turn.decide(5, "silent")
    decision = await turn.answer()
    assert decision.mode is Mode.SILENT and decision.target is None  # type: ignore[union-attr]


def test_a_persons_text_is_made_safe() -> None:
    sim = Simulation.new(bullying(), seed=1)
    ctx = sim.contexts(1, [])["Helen"]
    decision = human_decision(ctx, "7.5", "public", None, "calm\nthe\x1b[31m room \u202e")
    assert decision.intent == "calm the[31m room"
    assert decision.target == "all"
    assert human_utterance("Helen", "  Stop.\x07\r\nNow.  ") == "Stop.\nNow."
    with pytest.raises(InterventionError, match="type what to say"):
        human_utterance("Helen", " \x1b ")
    with pytest.raises(InterventionError, match=f"longer than {MAX_UTTERANCE}"):
        human_utterance("Helen", "a" * (MAX_UTTERANCE + 1))


async def test_a_turn_is_answered_from_another_thread() -> None:
    sim = Simulation.new(bullying(), seed=1)
    sim.play({"Helen": "Ms. Lee"})

    def ask(turn: Turn) -> None:  # as the app's thread does
        threading.Thread(target=Script(), args=(turn,)).start()

    sim.seat(ask)
    record = await sim.step()
    assert played(record, "Helen").utterance.startswith("That is enough")


async def test_a_withdrawn_turn_cancels_the_round_and_it_is_asked_again(store: SaveStore) -> None:
    sim = Simulation.new(bullying(), seed=1, store=store, run_id="wait")
    sim.play({"Helen": "Ms. Lee"})
    asked: list[Turn] = []
    sim.seat(lambda turn: (asked.append(turn), turn.withdraw()))
    with pytest.raises(asyncio.CancelledError):
        await sim.step()
    assert sim.round == 0 and len(sim.history) == 1
    sim.close()
    again = Simulation.resume("wait", store)
    assert again.meta.players == {"Helen": "Ms. Lee"}
    script = Script()
    again.seat(script)
    await again.step()
    assert script.turns[0].ctx.round == 1
    assert script.turns[0].ctx.events == asked[0].ctx.events  # the same round, from its start
    again.close()


def test_a_run_with_players_and_nobody_seated_is_one_clear_error(store: SaveStore) -> None:
    sim = Simulation.new(bullying(), seed=1)
    sim.play({"Helen": "Ms. Lee"})
    with pytest.raises(SocialsimError, match=r"Helen \(Ms. Lee\) played by people.*socialsim tui"):
        asyncio.run(sim.step())
    assert sim.round == 0


def test_resume_on_the_command_line_points_to_the_app(run_cli, saves: Path) -> None:
    with Simulation.new(bullying(), seed=1, store=SaveStore(saves), run_id="class") as sim:
        sim.play({"Helen": "Ms. Lee"})
    result = run_cli("resume", "class", "--saves", str(saves))
    assert result.code == 2
    assert result.err.startswith("socialsim: error: ") and "socialsim tui class" in result.err
    assert len(result.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("players", "message"),
    [
        ({"Zed": "x"}, "no such agent"),
        ({"Helen": "Ms.\nLee"}, "one line"),
        ({"Helen": "x" * 41}, "one line"),
    ],
)
def test_bad_players_are_refused(players: dict[str, str], message: str) -> None:
    sim = Simulation.new(bullying(), seed=1)
    with pytest.raises(InterventionError, match=message):
        sim.play(players)
    assert sim.meta.players == {}


def test_a_players_name_defaults_to_the_agents() -> None:
    sim = Simulation.new(bullying(), seed=1)
    sim.play({"Helen": " "})
    assert sim.meta.players == {"Helen": "Helen"}


async def test_a_branch_keeps_its_players_unless_told_otherwise(store: SaveStore) -> None:
    sim = Simulation.new(bullying(), seed=1, store=store, run_id="root")
    sim.play({"Helen": "Ms. Lee"})
    sim.seat(Script())
    await sim.run(2)
    child = sim.branch(1, run_id="kept")
    assert child.meta.players == {"Helen": "Ms. Lee"}
    child.close()
    handed_back = sim.branch(1, run_id="ai")
    handed_back.play({})
    handed_back.close()
    assert store.read_meta("ai").players == {}
    assert store.read_meta("kept").players == {"Helen": "Ms. Lee"}
    sim.close()


async def test_replay_reuses_the_recorded_human_turns(store: SaveStore) -> None:
    """A run where a person takes Helen over from round 2 in a branch replays identically,
    nobody asked: the model's Helen in round 1, the person's after."""
    with Simulation.new(bullying(), seed=3, store=store, run_id="ai-run") as sim:
        await sim.run(1)
        child = sim.branch(1, run_id="taken")
    child.play({"Helen": "Ms. Lee"})
    child.seat(Script("Alice, come and sit by me."))
    await child.run(2)
    child.close()
    result = await replay_run(store, "taken", "taken-replay")
    result.sim.close()
    assert result.identical, result.diverged
    actors = [played(r, "Helen").actor for r in result.sim.records[1:]]
    assert actors == ["model", "human", "human"]
    assert played(result.sim.records[3], "Helen").utterance == (
        "Alice, come and sit by me. (round 3)"
    )


async def test_the_transcript_csv_marks_human_turns(store: SaveStore, tmp_path: Path) -> None:
    with Simulation.new(bullying(), seed=1, store=store, run_id="csv") as sim:
        sim.play({"Helen": "=Ms. Lee"})  # a player's name a spreadsheet would run
        sim.seat(Script())
        await sim.run(1)
        export_run(sim.meta, sim.records, tmp_path / "out")
    with (tmp_path / "out" / "transcript.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0][-2:] == ["actor", "player"]
    by_speaker = {row[3]: row for row in rows[1:]}
    assert by_speaker["Helen"][-2:] == ["human", "'=Ms. Lee"]
    assert by_speaker["Jane"][-2:] == ["model", ""]


def test_saves_without_the_new_fields_read_as_model_turns() -> None:
    action = Action.model_validate({"speaker": "Ann", "urgency": 3.0, "mode": "silent"})
    assert (action.actor, action.player) == ("model", "")


def test_show_marks_the_persons_turn(run_cli, saves: Path) -> None:
    with Simulation.new(bullying(), seed=1, store=SaveStore(saves), run_id="shown") as sim:
        sim.play({"Helen": "Ms. Lee"})
        sim.seat(Script())
        asyncio.run(sim.step())
    result = run_cli("show", "shown", "--round", "1", "--saves", str(saves))
    assert result.code == 0, result.err
    assert "Helen (human: Ms. Lee)" in result.out
    assert "Jane (human" not in result.out
