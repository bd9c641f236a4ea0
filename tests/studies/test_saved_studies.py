"""GovSim and debate episodes are saved runs: each month or debate turn is saved as it
ends, a killed episode goes on from its last finished turn to the same end as one never
stopped, and the CLI prints each turn (a fisher's request beside its catch, the rationing
and the clamps) and leaves a run that list, show, export, report and card read."""

from __future__ import annotations

import csv
import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import json
from pathlib import Path

import pytest
from llm_stub import StubLLM

from engine import SaveStore, Simulation
from engine.core.priors import no_prior, signed_priors
from engine.errors import SaveError
from engine.round.study import StudyRun
from engine.studies.debate import sample_questions
from engine.studies.debate.prompts import ANSWER_CHARS
from engine.studies.debate.saved import debate_run, play_debate
from engine.studies.govsim import (
    NAMES,
    GovSimLog,
    GovSimMonth,
    govsim_run,
    play_govsim,
    run_govsim,
)
from engine.studies.studyfile import read_study, write_study


class Killed(Exception):
    """Stands for a kill after a number of finished turns."""


def _kill_after(turns: int):
    seen: list[object] = []

    def told(turn: object) -> None:
        seen.append(turn)
        if len(seen) == turns:
            raise Killed

    return told


async def test_a_killed_govsim_goes_on_to_the_end_of_one_never_stopped(tmp_path: Path) -> None:
    prior = signed_priors(list(NAMES[:3]), "attitude", "complete", 1.0)[0]
    whole = await run_govsim(prior, seed=3)
    assert len(whole.months) > 4
    store = SaveStore(tmp_path / "saves")
    with pytest.raises(Killed):
        await play_govsim(govsim_run(prior, seed=3, store=store, run_id="g"), _kill_after(4))
    assert store.round_numbers("g")[-1] == 4
    log = read_study(store, "g", GovSimLog)
    assert log is not None and len(log.months) == 4
    resumed = await play_govsim(Simulation.resume("g", store))
    assert resumed.months == whole.months and resumed.metrics == whole.metrics
    assert len(store.round_numbers("g")) - 1 == len(whole.months)


async def test_a_month_whose_round_was_not_saved_plays_its_discussion_again(
    tmp_path: Path,
) -> None:
    whole = await run_govsim(no_prior(), seed=5, months=4)
    store = SaveStore(tmp_path / "saves")
    sim = govsim_run(no_prior(), seed=5, months=4, store=store, run_id="g")
    advance = sim.advance
    calls = 0

    async def dies_in_month_3() -> None:
        nonlocal calls
        calls += 1
        if calls == 3:  # killed during month 3's discussion: its harvest is in the study file
            raise Killed
        await advance()

    sim.advance = dies_in_month_3  # type: ignore[method-assign]
    with pytest.raises(Killed):
        await play_govsim(sim)
    log = read_study(store, "g", GovSimLog)
    assert log is not None and len(log.months) == 3 and store.round_numbers("g")[-1] == 2
    resumed = await play_govsim(Simulation.resume("g", store))
    assert resumed.months == whole.months
    month3 = store.read_round("g", 3)
    assert [e.text for e in month3.events if e.source == "injected"] == [
        e.text for e in month3.events if e.text.startswith("Month 3 harvest:")
    ]  # the disclosure once, not twice


async def test_a_study_file_that_disagrees_with_the_rounds_is_refused(tmp_path: Path) -> None:
    store = SaveStore(tmp_path / "saves")
    await run_govsim(no_prior(), seed=1, months=3, store=store, run_id="g")
    write_study(store, "g", GovSimLog(months=[]))
    with pytest.raises(SaveError, match="study file has 0 months for 3 saved rounds"):
        await play_govsim(Simulation.resume("g", store))


def test_a_rationed_month_shows_each_request_beside_its_catch_and_the_clamps() -> None:
    month = GovSimMonth(
        month=1,
        stock_before=100,
        harvests={"John": 50.0, "Kate": 50.0, "Jack": 0.0},
        stock_after=0,
        collapsed=True,
        requested={"John": 100.0, "Kate": 100.0, "Jack": 0.0},
        answered={"John": 100, "Kate": 365, "Jack": -1},
    )
    assert month.line() == (
        "month  1: stock  100.0 →    0.0  John asked 100 got 50, Kate asked 100 got 50, "
        "Jack asked 0 got 0; 200 asked of 100: rationed pro rata; clamped to 0..100: "
        "Kate answered 365 → 100, Jack answered nothing usable → 0  [collapse]"
    )


async def test_a_killed_debate_goes_on_to_the_same_traces(tmp_path: Path) -> None:
    questions = sample_questions()[:3]
    prior = signed_priors(["Agent1", "Agent2", "Agent3"], "trust", "complete", 1.0)[0]
    whole = await play_debate(debate_run(prior, questions, seed=2), questions)
    store = SaveStore(tmp_path / "saves")
    with pytest.raises(Killed):
        await play_debate(
            debate_run(prior, questions, seed=2, store=store, run_id="d"),
            questions,
            _kill_after(5),
        )
    assert store.round_numbers("d")[-1] == 5
    told: list[tuple] = []
    resumed = await play_debate(StudyRun.resume("d", store), questions, told.append)
    assert [(q, t) for q, t, _ in told] == [(questions[1].id, 2)] + [
        (q.id, t) for q in questions[2:] for t in range(3)
    ]
    assert resumed.traces == whole.traces and resumed.metrics == whole.metrics
    saved = store.read_round("d", 1)
    assert saved.events[0].text.startswith(f"Question {questions[0].id}. Question: ")
    assert [a.intent for a in saved.actions] == [
        f"answer ({whole.traces[0].answers[0][a.speaker]})" for a in saved.actions
    ]


# -- the CLI ------------------------------------------------------------------------------


@pytest.fixture
def socialsim(run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SOCIALSIM_SAVES", str(tmp_path / "saves"))
    return run_cli


def _reads_as_a_run(socialsim, run_id: str, tmp_path: Path) -> Path:
    """list, show, report and card read the run; its export's folder."""
    listed = socialsim("list")
    assert listed.code == 0 and run_id in listed.out
    for command in ("show", "card"):
        result = socialsim(command, run_id)
        assert result.code == 0, (command, result.err)
    assert socialsim("report", run_id, "--out", str(tmp_path / "report.html")).code == 0
    folder = tmp_path / "export"
    assert socialsim("export", run_id, "--out", str(folder)).code == 0
    return folder


class Greedy(StubLLM):
    """Every fisher asks for 1,000 tons, more than the lake ever holds."""

    def answer(self, body: dict) -> str | None:
        return json.dumps({"tons": 1000}) if '"tons"' in json.dumps(body) else None


def test_run_govsim_where_every_fisher_asks_for_the_whole_lake_shows_it(
    socialsim, tmp_path: Path
) -> None:
    with Greedy(seed=3) as stub:
        model = ["--model", "openai/stub", "--api-base", stub.url, "--retries", "0"]
        result = socialsim("run", "govsim", "--run-id", "g", *model)
    assert result.code == 0, result.err
    assert sum(line.startswith("month") for line in result.out.splitlines()) == 1
    assert (
        "month 1: stock 100.0 → 0.0 John asked 100 got 33.3, Kate asked 100 got 33.3, Jack "
        "asked 100 got 33.3; 300 asked of 100: rationed pro rata; clamped to 0..100: John "
        "answered 1000 → 100, Kate answered 1000 → 100, Jack answered 1000 → 100 [collapse]"
    ) in " ".join(result.out.split())
    store = SaveStore(tmp_path / "saves")
    log = read_study(store, "g", GovSimLog)
    assert log is not None and len(log.months) == 1 and store.round_numbers("g") == [0, 1]
    assert "g: round 1/12 saved" in " ".join(result.out.split())
    folder = _reads_as_a_run(socialsim, "g", tmp_path)
    with (folder / "events.csv").open() as f:
        (told,) = [r["text"] for r in csv.DictReader(f) if r["source"] == "injected"]
    assert "shared out (asked: John 100 tons, Kate 100 tons, Jack 100 tons)" in told
    assert "Kate gave an answer of 1000 tons, counted as 100 tons." in told
    with (folder / "llm_calls.csv").open() as f:
        assert sum(r["purpose"] == "harvest" for r in csv.DictReader(f)) >= 3


def test_run_debate_saves_a_run_resume_says_it_is_finished_and_answers_are_capped(
    socialsim, tmp_path: Path
) -> None:
    with StubLLM(seed=3) as stub:
        model = ["--model", "openai/stub", "--api-base", stub.url, "--retries", "0"]
        result = socialsim("run", "debate", "--run-id", "d", *model)
        schemas = [b.get("response_format") for b in stub.requests]
    assert result.code == 0, result.err
    turns = [line for line in result.out.splitlines() if " round " in line and "Agent1" in line]
    assert len(turns) == 3 * len(sample_questions())
    explanation = json.dumps(schemas[-1])
    assert f'"maxLength": {ANSWER_CHARS}' in explanation
    _reads_as_a_run(socialsim, "d", tmp_path)
    again = socialsim("resume", "d")
    assert again.code == 2 and "already finished" in again.err
    assert socialsim("resume", "d", "--rounds", "2").code == 2
