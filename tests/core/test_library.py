"""The scenario library (20 EduMirror scenarios + 5 social ones + a 32-agent village), the
game master's narration and rule enforcement, and ready-made interventions scheduled by
``branch``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import CliResult

from engine import (
    ForcedAction,
    Mode,
    SaveError,
    SaveStore,
    Simulation,
    library_ids,
    load_library,
    load_scenario_file,
)
from engine.core.scenario import parse_scenario
from engine.round.gamemaster import scripted_narration, violations
from engine.studies.surveys import likert_score, questionnaire, rate, survey

ROOT = Path(__file__).resolve().parents[2]
ERROR = "socialsim: error: "

EDUMIRROR = {
    "bullying",
    "celebrity-worship",
    "cheating-dilemma",
    "class-election",
    "discipline-policy",
    "discrimination",
    "extracurricular-choices",
    "family-pressure",
    "friendship",
    "gossip",
    "helicopter-parent",
    "iep-meeting",
    "materialism",
    "parent-teacher-conflict",
    "peer-pressure",
    "romantic-rejection",
    "school-event",
    "school-refusal",
    "sociometric-status",
    "transfer-student",
}
SOCIAL = {"hospital", "tavern", "quest", "solar-farm", "demolition"}
LARGE = {"village-assembly"}  # 32 agents in factions, with interventions (the app at 30+)
FILES = sorted((ROOT / "scenarios").glob("*.toml"))


# -- the library ------------------------------------------------------------------------------


def test_library_holds_the_20_edumirror_5_social_and_1_large_scenarios():
    assert len(EDUMIRROR) == 20
    assert set(library_ids()) == EDUMIRROR | SOCIAL | LARGE
    assert {p.stem for p in FILES} == EDUMIRROR | SOCIAL | LARGE


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_scenario_loads_and_runs_three_offline_rounds(path: Path):
    scenario = load_scenario_file(path)
    assert scenario.id == path.stem
    sim = Simulation.new(scenario, seed=7)
    asyncio.run(sim.run(3))
    assert [r.round for r in sim.records] == [0, 1, 2, 3]
    for record in sim.records[1:]:
        assert {a.speaker for a in record.actions} == set(scenario.names)
        for agent in record.state.agents.values():
            assert 0.0 <= agent.emotion <= 1.0
            assert all(0.0 <= v.current <= 10.0 for v in agent.needs.values())
            assert agent.theta is None or 0.0 <= agent.theta <= 90.0
        narrated = [e for e in record.events if e.source == "narrator"]
        assert len(narrated) == (1 if scenario.schedule or scenario.rules else 0)


@pytest.mark.parametrize("sid", sorted(EDUMIRROR))
def test_edumirror_scenarios_are_complete(sid: str):
    s = load_library(sid)
    assert any(a.kind == "value-driven" for a in s.agents)
    assert s.theory and s.measurements and s.rules and s.criteria
    assert len(s.schedule) >= s.rounds  # the game master has a time and place every round
    assert len(s.interventions) >= 2
    for a in s.agents:
        if a.kind == "value-driven":
            assert a.traits  # Tab. 9 traits set the expected needs
    # every questionnaire of the scenario can be administered offline at round 0
    sim = Simulation.new(s, seed=0)
    agent = next(a.name for a in s.agents if a.kind == "value-driven")
    for name in ["rses", "svo", *s.questionnaires]:
        (res,) = asyncio.run(survey(s, sim.records, name, agent, [0]))
        q = questionnaire(s, name)
        if q is None:
            assert res.category is not None
        else:
            assert res.score == likert_score(q, res.answers)
            assert len(q.items) * q.scale_min <= res.score <= len(q.items) * q.scale_max
    assert len(asyncio.run(rate(s, sim.records))) == len(s.criteria) * len(s.agents)


@pytest.mark.parametrize("sid", sorted(SOCIAL))
def test_social_scenarios_have_no_value_driven_agents(sid: str):
    s = load_library(sid)
    assert all(a.kind == "social" for a in s.agents)
    assert not s.schedule and not s.interventions


def test_bullying_has_the_four_teacher_interventions_and_an_rses():
    s = load_library("bullying")
    assert list(s.interventions) == [
        "neglect",
        "authoritative-punitive",
        "supportive-individual",
        "supportive-cooperative",
    ]
    assert all(plan.description and plan.events for plan in s.interventions.values())
    rses = s.questionnaires["rses"]
    assert len(rses.items) == 10 and (rses.scale_min, rses.scale_max) == (1, 4)
    assert [k + 1 for k, item in enumerate(rses.items) if item.reverse] == [3, 5, 8, 9, 10]
    assert all(item.needs == ["self_worth", "sense_of_respect"] for item in rses.items)
    assert "RSES" in s.measurements


@pytest.mark.parametrize("sid", ["bullying", "celebrity-worship", "family-pressure"])
def test_library_rses_questionnaires_are_fig27(sid: str):
    from engine.studies.surveys import RSES

    rses = load_library(sid).questionnaires["rses"]
    assert [(i.text, i.reverse) for i in rses.items] == [(i.text, i.reverse) for i in RSES.items]


def test_class_election_has_the_four_svo_profiles():
    s = load_library("class-election")
    profiles = [a.svo for a in s.agents if a.kind == "value-driven"]
    assert sorted(profiles) == ["altruistic", "competitive", "individualistic", "prosocial"]
    assert "SVO Slider" in s.measurements


# -- the game master ----------------------------------------------------------------------------


def school(**extra) -> dict:
    return {
        "title": "School day",
        "rounds": 4,
        "agents": [
            {"name": "Ann", "role": "student", "talking_points": ["we should vote"]},
            {"name": "Bob", "role": "student", "talking_points": ["the roof leaks"]},
            {"name": "Cy", "role": "teacher", "talking_points": ["settle down"]},
        ],
        "schedule": [
            {"time": "08:00", "location": "classroom"},
            {"time": "08:20", "location": "classroom"},
            {"time": "08:40", "location": "corridor"},
        ],
        "rules": [
            {"text": "no insults", "cues": ["Liar", "idiot"]},
            "stay in the scheduled area",
        ],
        **extra,
    }


def test_game_master_narrates_time_place_and_rules_each_round():
    scenario = parse_scenario(school(), "school")
    sim = Simulation.new(scenario, seed=3)
    sim.force(ForcedAction(agent="Ann", mode=Mode.PUBLIC, target="Bob", utterance="Bob, you LIAR."))
    asyncio.run(sim.run())
    narration = {}
    for record in sim.records[1:]:
        (event,) = [e for e in record.events if e.source == "narrator"]
        assert event.private_to is None
        narration[record.round] = event.text
    rules = "no insults; stay in the scheduled area"
    assert narration[1].startswith(f"08:00, classroom. Rules here: {rules}.")
    assert narration[2].startswith("08:20, classroom.") and "Rules" not in narration[2]
    assert narration[3].startswith(f"08:40, corridor. Rules here: {rules}.")  # the scene moved
    # beyond the schedule the last step holds, and the rules are not repeated
    assert narration[4].startswith("08:40, corridor.") and "Rules" not in narration[4]
    # Ann's forced insult in round 1 is announced at the start of round 2
    assert "The game master notes that Ann broke a rule (no insults)." in narration[2]
    assert "broke a rule" not in narration[1]
    assert violations(scenario, sim.records[1]) == ["Ann broke a rule (no insults)"]
    for record in sim.records[2:]:
        said = [a for a in record.actions if a.mode is not Mode.SILENT]
        if not any("liar" in a.utterance.lower() or "idiot" in a.utterance.lower() for a in said):
            assert violations(scenario, record) == []


def test_silent_agents_break_no_rules_and_no_schedule_no_narrator():
    scenario = parse_scenario(school(), "school")
    sim = Simulation.new(scenario, seed=3)
    sim.force(ForcedAction(agent="Ann", mode=Mode.SILENT))
    asyncio.run(sim.run(1))
    assert "Ann" not in " ".join(violations(scenario, sim.records[1]))
    plain = parse_scenario(school(schedule=[], rules=[]), "plain")
    assert scripted_narration(plain, 1, Simulation.new(plain).records[-1]) is None
    rules_only = parse_scenario(school(schedule=[]), "rules-only")
    first = scripted_narration(rules_only, 1, Simulation.new(rules_only).records[-1])
    assert first == "Rules: no insults; stay in the scheduled area."


def test_bullying_narration_follows_its_schedule():
    scenario = load_library("bullying")
    sim = Simulation.new(scenario, seed=0)
    asyncio.run(sim.run())
    for record, step in zip(sim.records[1:], scenario.schedule, strict=True):
        (event,) = [e for e in record.events if e.source == "narrator"]
        assert event.text.startswith(f"{step.time}, {step.location}.")
    moved = [r.round for r in sim.records[1:] if "Rules here:" in r.events[0].text]
    assert moved == [1, 3, 4, 7]  # classroom, corridor, playground, dormitory


# -- interventions ---------------------------------------------------------------------------


Result = CliResult


@pytest.fixture
def saves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "saves"
    monkeypatch.setenv("SOCIALSIM_SAVES", str(folder))
    monkeypatch.setenv("COLUMNS", "250")
    return folder


@pytest.fixture
def socialsim(run_cli, saves: Path):
    """The console-script entry point, in-process: ``socialsim(*args) -> Result``."""
    return run_cli


def test_branch_with_an_intervention_injects_its_events_after_the_fork(socialsim, saves: Path):
    assert socialsim("run", "bullying", "--rounds", "4", "--run-id", "b", "-q").code == 0
    made = socialsim(
        "branch", "b", "--at", "2", "--intervention", "supportive-cooperative", "--run-id", "c"
    )
    assert made.code == 0, made.err
    assert "c: branched from b at round 2" in made.out
    resumed = socialsim("resume", "c", "--rounds", "3", "-q")
    assert resumed.code == 0, resumed.err

    store = SaveStore(saves)
    meta = store.read_meta("c")
    assert meta.intervention == "supportive-cooperative"
    assert meta.parent is not None and (meta.parent.run_id, meta.parent.round) == ("b", 2)
    plan = load_library("bullying").interventions["supportive-cooperative"].events
    assert [(s.round, s.event.text) for s in meta.scheduled] == [
        (2 + e.round, e.text) for e in plan
    ]
    records = store.read_rounds("c")
    assert [r.round for r in records] == [0, 1, 2, 3, 4, 5]
    for record in records[3:]:
        injected = [e for e in record.events if e.source == "injected"]
        want = [e.text for e in plan if 2 + e.round == record.round]
        assert [e.text for e in injected] == want and want
    # before the fork, and in the parent, nothing was injected
    assert not any(e.source == "injected" for r in records[:3] for e in r.events)
    parent = store.read_rounds("b")
    assert not any(e.source == "injected" for r in parent for e in r.events)
    assert records[:3] == parent[:3]
    # the plan's round 4 is still pending for round 6
    assert any(s.round == 6 for s in meta.scheduled)


def test_private_intervention_events_stay_private(saves: Path):
    store = SaveStore(saves)
    with Simulation.new(load_library("bullying"), seed=1, store=store, run_id="b", rounds=2) as s:
        asyncio.run(s.run())
    child = store.branch("b", 1, new_id="c", intervention="supportive-individual")
    assert child.intervention == "supportive-individual"
    with Simulation.resume("c", store) as sim:
        sim.extend(3)
        asyncio.run(sim.run())
    (event,) = [e for e in sim.records[2].events if e.source == "injected"]
    assert event.private_to == ["Alice"]
    (event,) = [e for e in sim.records[3].events if e.source == "injected"]
    assert event.private_to == ["Jane"]


def test_branch_with_an_unknown_intervention_is_one_line_and_writes_nothing(socialsim, saves: Path):
    assert socialsim("run", "bullying", "--rounds", "2", "--run-id", "b", "-q").code == 0
    before = sorted(p.name for p in saves.iterdir())
    result = socialsim("branch", "b", "--at", "1", "--intervention", "nope", "--run-id", "c")
    assert result.code == 2, (result.out, result.err)
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR)
    assert "--intervention 'nope': unknown" in lines[0]
    assert "supportive-cooperative" in lines[0]  # names the known ones
    runs = sorted(p.name for p in saves.iterdir() if p.name != ".verified")  # a read cache
    assert runs == [name for name in before if name != ".verified"]
    assert not (saves / "c").exists()
    with pytest.raises(SaveError, match="'nope': unknown"):
        SaveStore(saves).branch("b", 1, intervention="nope")
    # a scenario without interventions says so
    assert socialsim("run", "tavern", "--rounds", "1", "--run-id", "t", "-q").code == 0
    none = socialsim("branch", "t", "--at", "0", "--intervention", "x")
    assert none.code == 2 and "none in this scenario" in none.err


def test_bullying_run_json_snapshot_keeps_the_scenario(saves: Path):
    store = SaveStore(saves)
    with Simulation.new(load_library("bullying"), store=store, run_id="b", rounds=1):
        pass
    meta = json.loads((saves / "b" / "run.json").read_text())["run"]["1"]
    assert set(meta["scenario"]["interventions"]) == set(load_library("bullying").interventions)
