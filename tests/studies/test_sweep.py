"""Sweeps: cells for three- and five-agent teams, bootstrap contrasts, local processes vs
Ray, the sweep CLI."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import pytest

from engine.core.priors import TOPOLOGIES
from engine.errors import SocialsimError
from engine.studies.experiments.executor import LocalExecutor
from engine.studies.govsim import NAMES
from engine.studies.sweep import (
    agent_names,
    conditions,
    contrasts,
    prior_of,
    sweep,
    tidy_rows,
    topology_aliases,
)

ROOT = Path(__file__).resolve().parents[2]


def test_cells_enumerate_every_sign_assignment_and_the_controls():
    cells = conditions("govsim", ["attitude"], ["complete"], [1 / 3], 2, ["offline"])
    signed = [c for c in cells if c.control == "signed"]
    assert len(signed) == 3 * 2  # three placements of the one positive edge, two runs
    assert {c.signs for c in signed} == {(1, -1, -1), (-1, 1, -1), (-1, -1, 1)}
    assert sum(c.control == "no-prior" for c in cells) == 2
    assert sum(c.control == "explicit-neutral" for c in cells) == 2
    prior = prior_of(signed[0])
    assert [s for *_, s in prior.edges] == list(signed[0].signs)


def test_unreachable_positivity_and_bad_runs_are_clear_errors():
    with pytest.raises(SocialsimError, match="not reachable"):
        conditions("govsim", ["trust"], ["complete"], [0.5], 1, ["offline"])
    with pytest.raises(SocialsimError, match="--runs"):
        conditions("govsim", ["trust"], ["complete"], [1.0], 0, ["offline"])


def test_three_agent_star_and_tree_coincide_and_run_once():
    assert topology_aliases(agent_names("govsim", 3), TOPOLOGIES) == {"tree": "star"}
    assert topology_aliases(agent_names("govsim", 5), TOPOLOGIES) == {}
    cells = conditions("govsim", ["trust"], TOPOLOGIES, [0.0, 1.0], 1, ["offline"], agents=(3, 5))
    by_size = {n: [c for c in cells if c.agents == n] for n in (3, 5)}
    # per topology: explicit-neutral and one sign assignment at each endpoint; one no-prior
    assert {c.topology for c in by_size[3]} == {None, "complete", "chain", "star"}
    assert len(by_size[3]) == 1 + 3 * 3
    assert {c.topology for c in by_size[5]} == {None, *TOPOLOGIES}
    assert len(by_size[5]) == 1 + 4 * 3
    five = next(c for c in by_size[5] if c.topology == "star" and c.positivity == 1.0)
    prior = prior_of(five)
    assert prior.names == list(NAMES) and len(prior.edges) == 4
    assert {i for i, *_ in prior.edges} == {"John"}  # the hub


def test_an_unreachable_lambda_names_the_team_and_topology():
    with pytest.raises(SocialsimError, match=r"5 agents, complete: λ=0\.333333 not reachable"):
        conditions("govsim", ["trust"], ["complete"], [1 / 3], 1, ["offline"], agents=(5,))


def test_local_sweep_contrasts_govsim_runs_endpoint_by_endpoint():
    cells = conditions("govsim", ["attitude"], ["complete"], [0.0, 1.0], 3, ["offline"])
    result = sweep("govsim", cells, LocalExecutor(4), seed=5, resamples=2000)
    again = sweep("govsim", cells, LocalExecutor(1), seed=5, resamples=2000)
    assert [o.metrics for o in result.outcomes] == [o.metrics for o in again.outcomes]
    rows = {r["contrast"]: r for r in result.contrasts}
    assert {r["metric"] for r in result.contrasts} == {"score"}
    top = rows["λ=1 − λ=0"]
    assert (top["units"], top["agents"], top["model"]) == (3, 3, "offline")
    scores = {
        lam: [o.metrics["score"] for o in result.outcomes if o.condition.positivity == lam]
        for lam in (0.0, 1.0)
    }
    assert top["estimate"] == pytest.approx(sum(scores[1.0]) / 3 - sum(scores[0.0]) / 3)
    # Positive attitude keeps the commons alive longer than negative attitude, offline.
    assert top["estimate"] > 0
    assert top["ci_low"] <= top["estimate"] <= top["ci_high"]
    tidy = tidy_rows(result)
    assert {r["metric"] for r in tidy} >= {"score", "over_usage", "over_usage_group"}
    assert {r["agents"] for r in tidy} == {3}
    assert contrasts(result.outcomes, seed=5, resamples=2000) == result.contrasts


def test_a_five_agent_sweep_plays_five_fishers_per_topology():
    cells = conditions(
        "govsim", ["influence"], ["chain", "tree"], [0.0, 1.0], 1, ["offline"], agents=(5,)
    )
    result = sweep("govsim", cells, LocalExecutor(2), seed=1, resamples=500)
    assert {o.condition.agents for o in result.outcomes} == {5}
    keys = {(r["agents"], r["topology"], r["contrast"]) for r in result.contrasts}
    assert keys == {(5, t, c) for t in ("chain", "tree") for c in ("λ=1 − λ=0", "λ=1 − no-prior")}


def test_debate_sweep_contrasts_are_paired_by_question_on_four_metrics():
    from engine.studies.debate import sample_questions

    questions = sample_questions()
    cells = conditions("debate", ["influence"], ["complete"], [0.0, 1.0], 2, ["offline"])
    result = sweep("debate", cells, LocalExecutor(2), questions=questions, resamples=3000)
    rows = [r for r in result.contrasts if r["contrast"] == "λ=1 − λ=0"]
    assert [r["metric"] for r in rows] == ["acc", "cr", "ccr", "wcf"]
    # a question's two runs stay one unit: 12 questions, each resampled whole
    assert {r["units"] for r in rows} == {len(questions)}
    ones = [o for o in result.outcomes if o.condition.positivity == 1.0]
    zeros = [o for o in result.outcomes if o.condition.positivity == 0.0]
    cr = next(r for r in rows if r["metric"] == "cr")
    pooled = [
        sum(o.metrics["n_consensus"] for o in g) / sum(o.metrics["n_disagree"] for o in g)
        for g in (ones, zeros)
    ]
    assert cr["estimate"] == pytest.approx(pooled[0] - pooled[1])


@pytest.mark.skipif(sys.platform != "linux", reason="the Ray test runs on Linux CI")
def test_ray_executor_matches_the_local_executor():
    ray = pytest.importorskip("ray")
    from engine.studies.experiments.ray_executor import RayExecutor

    cells = conditions("govsim", ["trust"], ["complete"], [0.0, 1.0], 1, ["offline"])
    cells += conditions("govsim", ["trust"], ["star"], [1.0], 1, ["offline"], False, agents=(5,))
    local = sweep("govsim", cells, LocalExecutor(2), seed=3, resamples=1000)
    reports = []
    try:
        remote = sweep(
            "govsim",
            cells,
            RayExecutor(num_cpus=2, calls_per_second=50),
            seed=3,
            resamples=1000,
            calls=reports.append,
        )
    finally:
        ray.shutdown()
    # every cell's rounds relayed through the Ray queue, its job's end last
    runs = {c.run_label() for c in cells}
    assert {r.run for r in reports} == runs
    last = {r.run: r for r in reports}
    assert all(r.progress is None for r in last.values())
    assert {r.progress.round for r in reports if r.progress is not None} >= {1, 2}
    assert [o.model_dump() for o in remote.outcomes] == [o.model_dump() for o in local.outcomes]
    assert {o.condition.agents for o in remote.outcomes} == {3, 5}
    assert remote.contrasts == local.contrasts


def test_sweep_cli_prints_tables_and_writes_tidy_csv(monkeypatch, run_cli, tmp_path: Path):
    out = tmp_path / "sweep.csv"
    monkeypatch.setenv("COLUMNS", "200")
    result = run_cli(
        "sweep",
        "debate",
        "--relations",
        "attitude",
        "--lambdas",
        "0,1",
        "--runs",
        "2",
        "--out",
        str(out),
    )
    assert result.code == 0, result.err
    stdout = result.out
    assert "paired 95% bootstrap intervals, question-level (100,000 resamples)" in stdout
    assert "λ=1 − λ=0" in stdout and "no-prior" in stdout
    assert all(metric in stdout for metric in (" acc ", " cr ", " ccr ", " wcf "))
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["metric"] for r in rows} >= {"cr", "acc"}
    assert {r["control"] for r in rows} == {"signed", "no-prior", "explicit-neutral"}


def test_an_llm_sweep_prints_each_cells_finished_phases(run_cli, tmp_path: Path):
    from llm_stub import StubLLM

    questions = tmp_path / "one.jsonl"
    sample = (ROOT / "scenarios" / "debate" / "sample.jsonl").read_text().splitlines()
    questions.write_text(sample[0] + "\n")
    with StubLLM(seed=3) as stub:
        args = ["sweep", "debate", "--relations", "attitude", "--lambdas", "1", "--runs", "1"]
        args += ["--models", "openai/stub", "--api-base", stub.url, "--questions", str(questions)]
        result = run_cli(*args, "--resamples", "100", "--workers", "2", "--yes")
        assert result.code == 0, result.err
    line = re.compile(
        r"^openai/stub 3 agents (.+) run 0 round 1 debate: (\d+) calls in [\d.]+ s "
        r"\(round: (\d+) of ~9 calls\)$"
    )
    rows = [m.groups() for m in map(line.match, result.err.splitlines()) if m]
    # one line per cell: its only phase, every agent asked once a debate round, three rounds
    assert sorted(r[0] for r in rows) == [
        "attitude/complete λ=1 [+++]",
        "neutral attitude/complete",
        "no-prior",
    ]
    assert all(r[1] == r[2] for r in rows)
    assert sum(int(r[1]) for r in rows) == stub.calls >= 27


def test_an_llm_govsim_sweep_shows_each_months_harvest_calls_too(run_cli):
    from llm_stub import StubLLM

    with StubLLM(seed=3) as stub:
        args = ["sweep", "govsim", "--relations", "trust", "--lambdas", "1", "--runs", "1"]
        args += ["--models", "openai/stub", "--api-base", stub.url, "--resamples", "100"]
        result = run_cli(*args, "--workers", "2", "--yes")
        assert result.code == 0, result.err
    line = re.compile(r"^openai/stub 3 agents (.+) run 0 round (\d+) (\w+): (\d+) calls in ")
    rows = [m.groups() for m in map(line.match, result.err.splitlines()) if m]
    harvests = [r for r in rows if r[2] == "harvest"]
    assert {r[0] for r in harvests} == {
        "no-prior",
        "neutral trust/complete",
        "trust/complete λ=1 [+++]",
    }
    assert all(r[3] == "3" for r in harvests)  # one question per fisher a month
    assert {r[2] for r in rows} >= {"harvest", "decide", "judge"}
    assert sum(int(r[3]) for r in rows) == stub.calls  # every call shown


def test_govsim_sweep_cli_runs_both_team_sizes_and_says_tree_is_star(
    monkeypatch, run_cli, tmp_path: Path
):
    out = tmp_path / "govsim.csv"
    monkeypatch.setenv("COLUMNS", "220")
    result = run_cli(
        "sweep",
        "govsim",
        "--agents",
        "3,5",
        "--relations",
        "trust",
        "--topologies",
        "complete,star,tree",
        "--lambdas",
        "0,1",
        "--runs",
        "1",
        "--resamples",
        "500",
        "--out",
        str(out),
    )
    assert result.code == 0, result.err
    assert "3 agents: tree states the same edges as star" in result.out
    assert "5 agents: tree" not in result.out
    assert "over h/2n" in result.out and "over h/2 " in result.out
    assert "run-level, endpoints resampled independently (500 resamples)" in result.out
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    cells = {(r["agents"], r["topology"]) for r in rows if r["control"] == "signed"}
    assert cells == {("3", "complete"), ("3", "star")} | {
        ("5", t) for t in ("complete", "star", "tree")
    }
    assert {r["metric"] for r in rows} >= {"over_usage", "over_usage_group", "score"}


def test_run_govsim_plays_five_fishers_and_run_debate_prints_intervals(
    monkeypatch, run_cli, tmp_path
):
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("SOCIALSIM_SAVES", str(tmp_path / "saves"))
    five = run_cli("run", "govsim", "--agents", "5", "--prior", "attitude:star:1")
    assert five.code == 0, five.err
    first = next(line for line in five.out.splitlines() if line.startswith("month"))
    assert all(f"{name} asked " in first for name in NAMES)
    assert "over_usage_group" in five.out
    debate = run_cli("run", "debate", "--prior", "influence:complete:0")
    assert debate.code == 0, debate.err
    assert "95% bootstrap intervals, question-level (100,000 resamples, 12 questions)" in debate.out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sweep", "govsim", "--lambdas", "0.5"], "not reachable"),
        (["sweep", "govsim", "--relations", "love"], "--relations"),
        (["sweep", "debate", "--topologies", "chain"], "--topologies"),
        (["sweep", "chess"], "govsim or debate"),
        (["sweep", "govsim", "--lambdas", "x"], "--lambdas"),
        (["sweep", "govsim", "--executor", "mpi"], "--executor"),
        (["sweep", "govsim", "--agents", "4"], "--agents"),
        (["sweep", "debate", "--agents", "5"], "--agents"),
        (["sweep", "govsim", "--agents", "5", "--lambdas", "1/3"], "5 agents, complete"),
        (["run", "govsim", "--agents", "3,5"], "one team size"),
    ],
)
def test_sweep_cli_bad_input_is_one_line(run_cli, args, needle):
    result = run_cli(*args)
    assert result.code == 2
    stderr = result.err
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("socialsim: error:") and needle in lines[0]


# -- the executor layer ----------------------------------------------------------------------


def test_the_shared_rate_limit_hands_out_slots_one_interval_apart(monkeypatch):
    from engine.studies.experiments import ratelimit

    now = [100.0]
    monkeypatch.setattr(ratelimit.time, "monotonic", lambda: now[0])
    limit = ratelimit.RateLimit(4.0)  # a slot every 0.25 s
    assert [limit.reserve() for _ in range(3)] == [0.0, 0.25, 0.5]
    now[0] = 101.0  # idle for a while: the next call goes at once
    assert limit.reserve() == 0.0


def limited() -> bool:
    """A job: whether this worker's LLM calls wait for the shared limit."""
    from engine.llm import stack

    return stack.rate_limit() is not None


def test_local_workers_share_one_rate_limit():
    from engine.studies.experiments.executor import Job

    results: dict[int, bool] = {}
    LocalExecutor(2, calls_per_second=5).run([Job(limited)] * 3, results.__setitem__)
    assert results == {0: True, 1: True, 2: True}
    LocalExecutor(2).run([Job(limited)] * 2, results.__setitem__)
    assert results[0] is False


class InterruptAfter(LocalExecutor):
    """Ctrl+C reaches the caller after ``n`` results."""

    def __init__(self, n: int) -> None:
        super().__init__(1)
        self.n = n

    def run(self, jobs, done, stop=None, calls=None):
        seen = []

        def counting(index, result):
            done(index, result)
            seen.append(index)
            if len(seen) == self.n:
                raise KeyboardInterrupt

        super().run(jobs, counting, stop, calls)


def test_ctrl_c_in_a_sweep_prints_and_writes_what_finished(monkeypatch, run_cli, tmp_path):
    out = tmp_path / "sweep.csv"
    monkeypatch.setattr("tui.cli.studies.make_executor", lambda *a: InterruptAfter(2))
    args = ["sweep", "govsim", "--relations", "trust", "--lambdas", "0,1", "--runs", "3"]
    result = run_cli(*args, "--resamples", "200", "--out", str(out))
    assert result.code == 130
    with out.open(newline="") as handle:
        runs = {(r["control"], r["positivity"], r["run"]) for r in csv.DictReader(handle)}
    assert 2 <= len(runs) < 12  # the cells reported, and those running at Ctrl+C
    assert f"{len(runs)} of 12 episodes finished, written to {out}" in result.err
