"""Dual-track measurement (EduMirror): the Surveyor (RSES, SVO slider, scenario Likert
questionnaires) and the Rater, through the API and the ``survey`` / ``rate`` commands.

Scores are computed by hand from Fig. 27 (RSES; items 3, 5, 8, 9, 10 reversed) and Fig. 28
(the six primary SVO slider items); a measurement must never touch the run it reads.
"""

from __future__ import annotations

import asyncio
import csv
import itertools
import json
import math
from pathlib import Path

import pytest
from conftest import CliResult
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import SaveStore, ScenarioError, Simulation, SocialsimError, load_library
from engine.core.needs import NEEDS
from engine.core.scenario import parse_scenario
from engine.core.state import AgentState, NeedState
from engine.saves.store import MEASURE_FILE
from engine.studies.surveys import (
    RSES,
    SVO_SLIDER,
    likert_score,
    offline_likert,
    offline_slider,
    questionnaire,
    rate,
    slider_angle,
    survey,
)

PROPS = settings(max_examples=60, deadline=None, database=None)
ERROR = "socialsim: error: "

#: Fig. 28 of EduMirror, copied from the paper: (self, other) for options A..I.
FIG28 = [
    "85,85 85,76 85,68 85,59 85,50 85,41 85,33 85,24 85,15",
    "85,15 87,19 89,24 91,28 93,33 94,37 96,41 98,46 100,50",
    "50,100 54,98 59,96 63,94 68,93 72,91 76,89 81,87 85,85",
    "50,100 54,89 59,79 63,68 68,58 72,47 76,36 81,26 85,15",
    "100,50 94,56 88,63 81,69 75,75 69,81 63,88 56,94 50,100",
    "100,50 98,54 96,59 94,63 93,68 91,72 89,76 87,81 85,85",
]
SLIDER = [[tuple(int(x) for x in o.split(",")) for o in row.split()] for row in FIG28]
REVERSED = {3, 5, 8, 9, 10}  # Fig. 27 items scored in reverse (1-based)
CATEGORY = {  # Murphy et al. (2011) bands
    "altruistic": (57.15, 90.0),
    "prosocial": (22.45, 57.15),
    "individualistic": (-12.04, 22.45),
    "competitive": (-90.0, -12.04),
}


def angle_by_hand(letters: str) -> float:
    picks = [SLIDER[k]["ABCDEFGHI".index(c)] for k, c in enumerate(letters)]
    mean_self = sum(s for s, _ in picks) / 6
    mean_other = sum(o for _, o in picks) / 6
    return math.degrees(math.atan((mean_other - 50) / (mean_self - 50)))


def rses_by_hand(answers: list[int]) -> int:
    return sum((5 - a) if k + 1 in REVERSED else a for k, a in enumerate(answers))


def agent_state(self_worth: float, respect: float, rest: float = 7.0) -> AgentState:
    needs = {n: NeedState(current=rest, expected=8.0) for n in NEEDS}
    needs["self_worth"] = NeedState(current=self_worth, expected=8.0)
    needs["sense_of_respect"] = NeedState(current=respect, expected=8.0)
    return AgentState(emotion=0.5, needs=needs, relations={})


# -- RSES --------------------------------------------------------------------------------


def test_rses_is_fig27_with_items_3_5_8_9_10_reversed():
    assert len(RSES.items) == 10
    assert (RSES.scale_min, RSES.scale_max) == (1, 4)
    assert RSES.labels == ["Strongly Disagree", "Disagree", "Agree", "Strongly Agree"]
    assert {k + 1 for k, item in enumerate(RSES.items) if item.reverse} == REVERSED
    assert RSES.items[2].text == "All in all, I am inclined to feel that I am a failure."
    assert RSES.items[9].text == "At times I think I am no good at all."


@pytest.mark.parametrize(
    ("answers", "score"),
    [
        ([4] * 10, 25),  # 5 * 4 on the positive items + 5 * 1 on the reversed ones
        ([1] * 10, 25),
        ([4, 4, 1, 4, 1, 4, 4, 1, 1, 1], 40),  # the best self-esteem
        ([1, 1, 4, 1, 4, 1, 1, 4, 4, 4], 10),  # the worst
        ([3, 3, 2, 3, 2, 3, 3, 2, 2, 2], 30),
        ([2, 3, 4, 1, 2, 3, 4, 1, 2, 3], 2 + 3 + 1 + 1 + 3 + 3 + 4 + 4 + 3 + 2),
    ],
)
def test_rses_score_by_hand(answers: list[int], score: int):
    assert likert_score(RSES, answers) == score == rses_by_hand(answers)


@PROPS
@given(st.lists(st.integers(1, 4), min_size=10, max_size=10))
def test_rses_total_is_always_between_10_and_40(answers: list[int]):
    assert 10 <= likert_score(RSES, answers) <= 40
    assert likert_score(RSES, answers) == rses_by_hand(answers)


@pytest.mark.parametrize("answers", [[4] * 9, [4] * 11, [0] + [4] * 9, [5] * 10])
def test_rses_rejects_wrong_answer_counts_and_values(answers: list[int]):
    with pytest.raises(ValueError, match="Rosenberg"):
        likert_score(RSES, answers)


level = st.floats(0.0, 10.0, allow_nan=False)


@PROPS
@given(level, level, level, level, level)
def test_offline_rses_is_monotone_in_self_worth_and_respect(a, b, c, d, rest):
    low, high = sorted([(a + b) / 2, (c + d) / 2])
    low_state = agent_state(low, low, rest)
    high_state = agent_state(high, high, rest)
    low_score = likert_score(RSES, offline_likert(RSES, low_state))
    high_score = likert_score(RSES, offline_likert(RSES, high_state))
    assert 10 <= low_score <= high_score <= 40


def test_offline_rses_separates_high_and_low_self_esteem():
    high = likert_score(RSES, offline_likert(RSES, agent_state(9.0, 9.5)))
    low = likert_score(RSES, offline_likert(RSES, agent_state(2.0, 1.5)))
    assert high > low
    assert high >= 35 and low <= 15  # the answers follow the state toward the scale's ends
    # other needs do not move RSES: it reads self-worth and sense of respect only
    assert offline_likert(RSES, agent_state(5, 5, rest=0)) == offline_likert(
        RSES, agent_state(5, 5, rest=10)
    )


def test_bullying_victim_rses_over_an_offline_run():
    """Honest direction of the offline dynamics: Alice's RSES does not rise.

    Jane's circle attacks her and the anonymous note arrives at round 8; Lily and Ms. Hale
    sometimes back her, so single seeds go either way. Averaged over ten seeds the score
    at round 8 is not above the start (see the report for the numbers).
    """
    scenario = load_library("bullying")
    start, late = [], []
    for seed in range(10):
        sim = Simulation.new(scenario, seed=seed)
        asyncio.run(sim.run())
        results = asyncio.run(survey(scenario, sim.records, "rses", "Alice", list(range(10))))
        scores = [r.score for r in results]
        start.append(scores[0])
        late.append(scores[8])
        esteem = []
        for r, res in zip(sim.records, results, strict=True):
            state = r.state.agents["Alice"]
            assert res.round == r.round and res.answers == offline_likert(RSES, state)
            assert res.respondent == "offline rule-based model"
            esteem.append(
                state.needs["self_worth"].current + state.needs["sense_of_respect"].current
            )
        for i, j in itertools.product(range(10), repeat=2):  # the survey tracks the state
            if esteem[i] <= esteem[j]:
                assert scores[i] <= scores[j]
    assert set(start) == {start[0]} and 15 <= start[0] <= 25  # self-worth 3, respect 3.5
    assert sum(late) / len(late) <= start[0], (start[0], late)


# -- the SVO slider ------------------------------------------------------------------------


def test_slider_items_are_fig28():
    assert [list(row) for row in SVO_SLIDER] == SLIDER


@pytest.mark.parametrize(
    ("letters", "angle", "category"),
    [
        ("AAAAAA", 30.47, "prosocial"),  # self 78.33, other 66.67
        ("IIIIII", 14.74, "individualistic"),  # self 81.67, other 58.33
        ("AIAAII", 61.39, "altruistic"),  # Murphy's ideal altruist
        ("IAIIAA", -16.26, "competitive"),  # Murphy's ideal competitor
        ("IIIIAA", -7.82, "individualistic"),  # Murphy's ideal individualist
    ],
)
def test_slider_angle_by_hand(letters: str, angle: float, category: str):
    choices = ["ABCDEFGHI".index(c) for c in letters]
    assert slider_angle(choices) == pytest.approx(angle_by_hand(letters))
    assert slider_angle(choices) == pytest.approx(angle, abs=0.01)
    lo, hi = CATEGORY[category]
    assert lo < slider_angle(choices) < hi


def _reachable_angles() -> list[float]:
    """Every SVO angle the six items can produce (meet in the middle over sums)."""
    half = lambda rows: {  # noqa: E731
        (sum(o[0] for o in picks), sum(o[1] for o in picks)) for picks in itertools.product(*rows)
    }
    first, second = half(SLIDER[:3]), half(SLIDER[3:])
    sums = {(a + c, b + d) for a, b in first for c, d in second}
    return [math.degrees(math.atan((t / 6 - 50) / (s / 6 - 50))) for s, t in sums]


@pytest.mark.parametrize("svo", list(CATEGORY))
def test_offline_slider_answers_fall_in_the_agents_category(svo: str):
    choices = offline_slider(svo)
    assert len(choices) == 6 and all(0 <= c <= 8 for c in choices)
    lo, hi = CATEGORY[svo]
    assert lo < slider_angle(choices) < hi


def test_offline_slider_answers_are_the_closest_reachable_to_the_target():
    from engine.core.values import SVO_ANGLE

    reachable = _reachable_angles()
    for svo in CATEGORY:
        best = min(abs(a - SVO_ANGLE[svo]) for a in reachable)
        assert abs(slider_angle(offline_slider(svo)) - SVO_ANGLE[svo]) == pytest.approx(best)


def test_svo_survey_of_class_election_candidates():
    scenario = load_library("class-election")
    sim = Simulation.new(scenario, seed=0)
    for spec in scenario.agents:
        (res,) = asyncio.run(survey(scenario, sim.records, "svo", spec.name, [0]))
        assert res.category == spec.svo
        assert res.angle == res.score == pytest.approx(slider_angle(res.answers))


# -- the Rater ---------------------------------------------------------------------------------


def test_offline_rater_counts_cue_words_per_agent():
    scenario = load_library("bullying")
    sim = Simulation.new(scenario, seed=1)
    asyncio.run(sim.run(4))
    ratings = asyncio.run(rate(scenario, sim.records))
    assert len(ratings) == len(scenario.criteria) * len(scenario.agents)
    for c in scenario.criteria:
        for name in scenario.names:
            lines = [
                a.utterance.lower()
                for r in sim.records[1:]
                for a in r.actions
                if a.speaker == name and a.mode.value != "silent"
            ]
            hits = sum(any(cue in line for cue in c.cues) for line in lines)
            (got,) = [x for x in ratings if x.criterion == c.name and x.agent == name]
            assert got.score == min(c.scale_max, c.scale_min + hits)
            assert (got.evidence == "no matching turn") == (hits == 0)


def test_rater_needs_criteria():
    scenario = load_library("tavern")
    with pytest.raises(SocialsimError, match="no rater criteria"):
        asyncio.run(rate(scenario, Simulation.new(scenario).records))


# -- the run is untouched (API) ---------------------------------------------------------------


def run_files(run_dir: Path) -> dict[str, bytes]:
    """run.json and every round file, byte for byte."""
    files = {"run.json": (run_dir / "run.json").read_bytes()}
    files.update({p.name: p.read_bytes() for p in sorted((run_dir / "rounds").iterdir())})
    return files


def test_api_survey_and_rate_leave_the_run_untouched(tmp_path: Path):
    store = SaveStore(tmp_path / "saves")
    with Simulation.new(load_library("bullying"), seed=3, store=store, run_id="b", rounds=3) as s:
        asyncio.run(s.run())
    before = run_files(store.run_dir("b"))
    meta, records = store.read_meta("b"), store.read_rounds("b")
    surveys = asyncio.run(survey(meta.scenario, records, "rses", "Alice", [0, 3]))
    surveys += asyncio.run(survey(meta.scenario, records, "svo", "Jane", [2]))
    ratings = asyncio.run(rate(meta.scenario, records))
    store.add_measurements("b", "surveys", surveys)
    store.add_measurements("b", "ratings", ratings)
    assert run_files(store.run_dir("b")) == before
    saved = store.read_measurements("b")
    assert saved["surveys"] == [r.model_dump(mode="json") for r in surveys]
    assert saved["ratings"] == [r.model_dump(mode="json") for r in ratings]
    assert [(r["agent"], r["round"]) for r in saved["surveys"]] == [
        ("Alice", 0),
        ("Alice", 3),
        ("Jane", 2),
    ]
    assert saved["surveys"][2]["category"] == "competitive"
    assert Simulation.resume("b", store).records == records  # still resumable, same state


def test_api_survey_rejects_bad_requests():
    scenario = load_library("bullying")
    records = Simulation.new(scenario).records
    cases = [
        (("rses", "Bob", [0]), "--agent 'Bob': no such agent"),
        (("rses", "Alice", [1]), "--rounds: round 1 is outside the run (0..0)"),
        (("rses", "Alice", [-1]), "outside the run"),
        (("nope", "Alice", [0]), "--questionnaire 'nope': unknown"),
    ]
    for (name, agent, rounds), fragment in cases:
        with pytest.raises(SocialsimError) as err:
            asyncio.run(survey(scenario, records, name, agent, rounds))
        assert fragment in str(err.value) and "\n" not in str(err.value)


def test_unknown_questionnaire_lists_each_known_one_once():
    with pytest.raises(SocialsimError) as err:
        questionnaire(load_library("bullying"), "nope")
    assert str(err.value).endswith("known: rses, svo")  # bullying's own rses, listed once


# -- an LLM respondent and rater (the local stub) -----------------------------------------------


@pytest.fixture
def stub_mind(monkeypatch: pytest.MonkeyPatch):
    """An LLM mind whose model is the local OpenAI-compatible stub."""
    from llm_stub import StubLLM

    from engine.llm.settings import LLMSettings
    from engine.minds.llm import LLMMind

    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with StubLLM(seed=5) as stub:
        settings = LLMSettings(
            model="openai/stub", judge_model="openai/judge", api_base=stub.url, timeout=5
        )
        yield LLMMind(settings)


async def test_llm_survey_and_rating_are_questions_to_the_mind(stub_mind):
    from engine.llm.transport import close_clients

    scenario = load_library("bullying")
    sim = Simulation.new(scenario, seed=1)
    await sim.run(2)
    try:
        rses = await survey(scenario, sim.records, "rses", "Alice", [0, 2], stub_mind)
        (svo,) = await survey(scenario, sim.records, "svo", "Jane", [1], stub_mind)
        ratings = await rate(scenario, sim.records, stub_mind)
    finally:
        await close_clients()
    calls = [c for c in stub_mind.take_calls() if not c.key.endswith(":reask")]
    survey_calls = [c for c in calls if c.purpose == "survey"]
    assert sorted(c.key for c in survey_calls) == [
        "survey:rses:Alice:0",
        "survey:rses:Alice:2",
        "survey:svo:Jane:1",
    ]
    assert {(c.agent, c.model) for c in survey_calls} == {
        ("Alice", "openai/stub"),
        ("Jane", "openai/stub"),
    }
    assert all(c.outcome in ("ok", "repaired") for c in survey_calls)
    assert all(c.purpose == "survey" for c in survey_calls)
    assert [r.respondent for r in [*rses, svo]] == ["LLM openai/stub"] * 3
    for r in rses:
        assert len(r.answers) == 10 and all(1 <= a <= 4 for a in r.answers)
        assert r.score == rses_by_hand(r.answers)
    assert svo.angle == pytest.approx(angle_by_hand("".join("ABCDEFGHI"[a] for a in svo.answers)))
    rate_calls = [c for c in calls if c.purpose == "rate"]
    assert sorted(c.key for c in rate_calls) == sorted(f"rate:{c.name}" for c in scenario.criteria)
    assert {(c.agent, c.model) for c in rate_calls} == {("rater", "openai/judge")}
    assert len(ratings) == len(scenario.criteria) * len(scenario.agents)
    assert {r.rater for r in ratings} == {"LLM openai/judge"}


# -- the CLI -------------------------------------------------------------------------------


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


def assert_one_error(result: Result, *fragments: str) -> None:
    assert result.code == 2, (result.out, result.err)
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR), result.err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert "Traceback" not in result.out + result.err


@pytest.fixture
def bullying_run(socialsim, saves: Path) -> Path:
    """A saved three-round offline bullying run ``b``."""
    result = socialsim("run", "bullying", "--rounds", "3", "--seed", "5", "--run-id", "b", "-q")
    assert result.code == 0, result.err
    return saves / "b"


def test_cli_survey_and_rate_leave_the_run_untouched_and_export(
    socialsim, bullying_run: Path, tmp_path: Path
):
    before = run_files(bullying_run)
    sv = socialsim("survey", "b", "--questionnaire", "rses", "--agent", "Alice", "--rounds", "0,3")
    assert sv.code == 0, sv.err
    lines = sv.out.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("Alice round 0 rses: score ")
    slider = socialsim("survey", "b", "--questionnaire", "svo", "--agent", "Megan", "--rounds", "1")
    assert slider.code == 0, slider.err
    assert "(individualistic)" in slider.out
    rated = socialsim("rate", "b")
    assert rated.code == 0, rated.err
    assert run_files(bullying_run) == before

    records = SaveStore(bullying_run.parent).read_rounds("b")
    saved = json.loads((bullying_run / MEASURE_FILE).read_text())
    surveys = [saved["surveys"][k] for k in sorted(saved["surveys"], key=int)]
    assert [(s["questionnaire"], s["agent"], s["round"]) for s in surveys] == [
        ("rses", "Alice", 0),
        ("rses", "Alice", 3),
        ("svo", "Megan", 1),
    ]
    for s in surveys[:2]:
        answers = offline_likert(RSES, records[s["round"]].state.agents["Alice"])
        assert s["answers"] == answers and s["score"] == rses_by_hand(answers)
        assert f"score {s['score']:g}" in sv.out
    assert len(saved["ratings"]) == 4 * 5  # four criteria, five agents

    out = tmp_path / "csv"
    exported = socialsim("export", "b", "--out", str(out))
    assert exported.code == 0, exported.err
    rows = list(csv.DictReader((out / "surveys.csv").open()))
    assert [(r["questionnaire"], r["agent"], r["round_no"]) for r in rows] == [
        ("rses", "Alice", "0"),
        ("rses", "Alice", "3"),
        ("svo", "Megan", "1"),
    ]
    assert rows[0]["answers"] == " ".join(map(str, surveys[0]["answers"]))
    assert rows[2]["category"] == "individualistic" and rows[0]["angle"] == ""
    assert float(rows[2]["angle"]) == pytest.approx(surveys[2]["angle"])
    ratings = list(csv.DictReader((out / "ratings.csv").open()))
    assert len(ratings) == 20 and {r["run_id"] for r in ratings} == {"b"}
    assert {r["criterion"] for r in ratings} == {c.name for c in load_library("bullying").criteria}
    assert run_files(bullying_run) == before


def test_cli_survey_appends_to_earlier_measurements(socialsim, bullying_run: Path):
    for rounds in ("0", "2"):
        result = socialsim(
            "survey", "b", "--questionnaire", "rses", "--agent", "Lily", "--rounds", rounds
        )
        assert result.code == 0, result.err
    rows = SaveStore(bullying_run.parent).read_measurements("b")["surveys"]
    assert [r["round"] for r in rows] == [0, 2]


MOOD = {
    "title": "Mood check",
    "scale_min": 1,
    "scale_max": 5,
    "labels": ["never", "rarely", "sometimes", "often", "always"],
    "items": [
        {"text": "I feel safe here.", "needs": ["psychological_safety"]},
        {"text": "I feel left out.", "reverse": True, "needs": ["group_acceptance"]},
        {"text": "I feel fine overall."},
    ],
}


def write_toml(path: Path, data: dict) -> Path:
    """Scenario data as TOML (JSON strings, numbers and inline tables are valid TOML)."""

    def value(v: object) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        return json.dumps(v)

    path.write_text("".join(f"{json.dumps(k)} = {value(v)}\n" for k, v in data.items()))
    return path


def classroom(**extra) -> dict:
    return {
        "title": "Classroom",
        "rounds": 2,
        "agents": [
            {
                "name": "Ava",
                "role": "student",
                "kind": "value-driven",
                "traits": ["quite timid", "moderately sociable"],
                "needs": {
                    "psychological_safety": {"current": 9},
                    "group_acceptance": {"current": 2},
                },
                "talking_points": ["can we start again"],
            },
            {"name": "Ben", "role": "student", "talking_points": ["fine by me"]},
        ],
        **extra,
    }


def test_cli_custom_likert_questionnaire(socialsim, saves: Path, tmp_path: Path):
    path = write_toml(tmp_path / "class.toml", classroom(questionnaires={"mood": MOOD}))
    assert socialsim("run", str(path), "--run-id", "c", "-q").code == 0
    result = socialsim("survey", "c", "--questionnaire", "mood", "--agent", "Ava", "--rounds", "0")
    assert result.code == 0, result.err
    (row,) = SaveStore(saves).read_measurements("c")["surveys"]
    state = SaveStore(saves).read_round("c", 0).state.agents["Ava"]
    mood = parse_scenario(classroom(questionnaires={"mood": MOOD}), "c").questionnaires["mood"]
    assert row["answers"] == offline_likert(mood, state)
    safe, left_out, overall = row["answers"]
    assert safe >= 4  # psychological safety 9/10: agrees that she feels safe
    assert left_out >= 4  # group acceptance 2/10: agrees that she feels left out
    assert row["score"] == safe + (6 - left_out) + overall  # item 2 reversed on 1..5
    assert f"Ava round 0 mood: score {row['score']:g} answers {safe} {left_out} {overall}" in (
        result.out
    )
    unknown = socialsim(
        "survey", "c", "--questionnaire", "rses2", "--agent", "Ava", "--rounds", "0"
    )
    assert_one_error(unknown, "--questionnaire 'rses2': unknown", "rses, svo, mood")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--questionnaire", "rses", "--agent", "Alice", "--rounds", "0,4"), ["round 4", "0..3"]),
        (("--questionnaire", "nope", "--agent", "Alice", "--rounds", "0"), ["'nope': unknown"]),
        (("--questionnaire", "rses", "--agent", "Zed", "--rounds", "0"), ["'Zed': no such agent"]),
        (("--questionnaire", "rses", "--agent", "Alice", "--rounds", "x"), ["--rounds 'x'"]),
        (("--questionnaire", "rses", "--agent", "Alice", "--rounds", ","), ["at least one"]),
    ],
)
def test_cli_survey_bad_input_is_one_line_and_writes_nothing(
    socialsim, bullying_run: Path, args, fragments
):
    before = run_files(bullying_run)
    assert_one_error(socialsim("survey", "b", *args), *fragments)
    assert not (bullying_run / MEASURE_FILE).exists()
    assert run_files(bullying_run) == before


def test_cli_survey_and_rate_of_a_missing_run(socialsim, saves: Path):
    args = ("--questionnaire", "rses", "--agent", "Alice", "--rounds", "0")
    assert_one_error(socialsim("survey", "ghost", *args), "no run 'ghost'")
    assert_one_error(socialsim("rate", "ghost"), "no run 'ghost'")
    assert not saves.exists() or not any(saves.iterdir())


def test_cli_rate_without_criteria_writes_nothing(socialsim, saves: Path, tmp_path: Path):
    path = write_toml(tmp_path / "class.toml", classroom())
    assert socialsim("run", str(path), "--run-id", "c", "-q").code == 0
    assert_one_error(socialsim("rate", "c"), "defines no rater criteria")
    assert not (saves / "c" / MEASURE_FILE).exists()


# -- invalid questionnaires in scenario files ---------------------------------------------------


BAD_QUESTIONNAIRES = {
    "unknown need": (
        {**MOOD, "items": [{"text": "I matter.", "needs": ["self_worth", "joy"]}]},
        "questionnaires.mood",
        "items.0.needs: unknown need 'joy'",
    ),
    "labels count": (
        {**MOOD, "labels": ["no", "yes"]},
        "questionnaires.mood",
        "labels: give one label per scale point",
    ),
    "flat scale": (
        {**MOOD, "scale_min": 4, "scale_max": 4, "labels": []},
        "questionnaires.mood",
        "scale_max must be greater than scale_min",
    ),
    "inverted scale": (
        {**MOOD, "scale_min": 6, "scale_max": 3, "labels": []},
        "questionnaires.mood",
        "scale_max must be greater than scale_min",
    ),
}


@pytest.mark.parametrize("case", BAD_QUESTIONNAIRES)
def test_invalid_questionnaire_is_one_scenario_error(case: str):
    q, where, fragment = BAD_QUESTIONNAIRES[case]
    with pytest.raises(ScenarioError) as err:
        parse_scenario(classroom(questionnaires={"mood": q}), "class.toml")
    message = str(err.value)
    assert "\n" not in message and message.startswith("class.toml: ")
    assert where in message and fragment in message


@pytest.mark.parametrize("case", BAD_QUESTIONNAIRES)
def test_cli_refuses_a_scenario_with_an_invalid_questionnaire(
    socialsim, saves: Path, tmp_path: Path, case: str
):
    q, where, fragment = BAD_QUESTIONNAIRES[case]
    path = write_toml(tmp_path / "bad.toml", classroom(questionnaires={"mood": q}))
    assert_one_error(socialsim("run", str(path), "--run-id", "x", "-q"), where, fragment)
    assert_one_error(socialsim("validate", str(path)), fragment)
    assert not saves.exists() or not any(saves.iterdir())


@pytest.mark.parametrize(
    ("agent", "fragment"),
    [
        ({"needs": {"happiness": {"current": 3}}}, "agents.1.needs: unknown need 'happiness'"),
        ({"kind": "value-driven", "traits": ["quite grumpy"]}, "unknown trait 'grumpy'"),
        ({"kind": "value-driven", "traits": ["quite timid", "timid"]}, "start with a degree"),
    ],
)
def test_cli_refuses_bad_needs_and_traits(socialsim, saves: Path, tmp_path: Path, agent, fragment):
    data = classroom()
    data["agents"][1].update(agent)
    path = write_toml(tmp_path / "bad.toml", data)
    assert_one_error(socialsim("run", str(path), "--run-id", "x", "-q"), "agents.1", fragment)
    assert not saves.exists() or not any(saves.iterdir())
