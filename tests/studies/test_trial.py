"""Trials from a fork: arms share a byte-identical prefix, the bootstrap against hand-worked
cases, cancellation keeps what finished, a killed trial resumes with only the missing runs,
bad input is one line."""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine import SaveStore, SocialsimError, load_library
from engine.studies.experiments.arms import named_arms
from engine.studies.experiments.executor import Interrupted, LocalExecutor
from engine.studies.experiments.stats import mean_intervals, paired_differences
from engine.studies.experiments.trial import (
    arm_done,
    load_spec,
    plan,
    prefix_done,
    run_trial,
    summarize,
)

ROOT = Path(__file__).resolve().parents[2]


def small_trial(store: SaveStore, seeds=(1, 2), arms="none,neglect,supportive-cooperative"):
    scenario = load_library("bullying")
    return plan(
        store,
        scenario,
        "bullying",
        fork_at=3,
        rounds=5,
        arms=named_arms(arms, scenario),
        seeds=list(seeds),
        trial_id="t",
        resamples=2000,
    )


# -- statistics ------------------------------------------------------------------------------


def test_the_mean_interval_of_a_hand_worked_case():
    # Resampled means of (0, 0, 3) are 0, 1, 2, 3 with chances 8, 12, 6, 1 in 27: the 2.5th
    # percentile falls in the mass at 0 and the 97.5th in the 1/27 at 3.
    (e,) = mean_intervals(np.array([[0.0, 0.0, 3.0]]), resamples=9999)
    assert (e.n, e.mean, e.low, e.high) == (3, 1.0, 0.0, 3.0)
    # one seed: a mean, no interval; a missing value: the other seeds
    lone, gappy = mean_intervals(np.array([[5.0, np.nan, np.nan], [1.0, np.nan, 3.0]]))
    assert (lone.n, lone.mean, lone.low, lone.high) == (1, 5.0, None, None)
    assert (gappy.n, gappy.mean) == (2, 2.0) and gappy.low == 1.0 and gappy.high == 3.0


def test_numbers_have_three_significant_digits_and_whole_thousands():
    from engine.studies.experiments.stats import Estimate, estimate_text, number

    assert [number(0.05263), number(16.94), number(2, signed=True)] == ["0.0526", "16.9", "+2.00"]
    assert number(12345.6) == "12,346" and number(-1234.4, signed=True) == "-1,234"
    assert estimate_text(Estimate(3, 2.345, 1.9, 2.8)) == "2.35 [1.90, 2.80]"
    assert estimate_text(Estimate(1, 1500.0, None, None), signed=True) == "+1,500"
    assert estimate_text(None) == ""


def test_the_paired_difference_cancels_what_the_seeds_share():
    control = np.array([[1.0, 5.0, 9.0]])
    arm = control + 2.0
    (own,) = mean_intervals(control)
    (diff,) = paired_differences(arm, control)
    assert own.high - own.low > 4  # the seeds differ a lot
    assert diff.mean == pytest.approx(2.0)
    assert diff.low == pytest.approx(2.0) and diff.high == pytest.approx(2.0)  # paired: none
    # the same random state gives the same interval
    again = paired_differences(arm + np.array([[0.0, 1.0, -1.0]]), control, seed=4)
    assert again == paired_differences(arm + np.array([[0.0, 1.0, -1.0]]), control, seed=4)


# -- pairing ---------------------------------------------------------------------------------


def test_arms_share_a_byte_identical_prefix_and_seed(store: SaveStore):
    spec = small_trial(store)
    result = run_trial(spec, store, LocalExecutor(2))
    assert load_spec(store, "t") == spec
    assert result.played == spec.runs and result.complete_seeds == [1, 2]
    for seed in spec.seeds:
        prefix = store.files(spec.prefix_id(seed))
        before = store.history(spec.prefix_id(seed))
        finals = {}
        for arm in spec.arms:
            run_id = spec.arm_id(seed, arm)
            meta = store.read_meta(run_id)
            assert (meta.seed, meta.trial.trial, meta.trial.seed, meta.trial.arm) == (
                seed, "t", seed, arm.name,
            )  # fmt: skip
            assert meta.parent.run_id == spec.prefix_id(seed) and meta.parent.round == 3
            files = store.files(run_id)
            for n in range(3):  # the rounds before the fork: the very same bytes
                assert files.existing_path(n).read_bytes() == prefix.existing_path(n).read_bytes()
            history = store.history(run_id)
            assert history[3].state == before[3].state  # the fork round's state
            finals[arm.name] = history[-1].state
        assert finals["neglect"] != finals["none"] != finals["supportive-cooperative"]
    # the outcome rows: metrics of every round, each agent's needs, emotion and RSES score
    rows = result.rows[1, "none"]
    assert {r["round_no"] for r in rows if r["metric"] == "mean_fav"} == set(range(6))
    alice = {r["metric"] for r in rows if r["agent"] == "Alice"}
    assert {"emotion", "need.self_worth", "survey.rses"} <= alice
    summaries = summarize(result, lambda m, a: m == "survey.rses" and a == "Alice")
    assert [s.arm for s in summaries] == ["none", "neglect", "supportive-cooperative"]
    assert summaries[0].difference is None and summaries[1].estimate.n == 2


# -- cancellation ----------------------------------------------------------------------------


class StopAfter(LocalExecutor):
    """A local executor whose caller is interrupted (Ctrl+C) after ``n`` arm runs."""

    def __init__(self, n: int) -> None:
        super().__init__(1)
        self.n = n
        self.batches = 0

    def run(self, jobs, done, stop=None, calls=None):
        self.batches += 1
        seen = []

        def counting(index, result):
            done(index, result)
            seen.append(index)
            if self.batches == 2 and len(seen) == self.n:
                raise KeyboardInterrupt

        super().run(jobs, counting, stop, calls)


def test_ctrl_c_keeps_the_finished_runs_and_writes_their_csv(monkeypatch, run_cli, tmp_path: Path):
    saves, out = tmp_path / "saves", tmp_path / "trial.csv"
    monkeypatch.setattr("tui.cli.trial.make_executor", lambda *a: StopAfter(2))
    args = ["trial", "bullying", "--trial-id", "t", "--fork-at", "3", "--rounds", "5"]
    args += ["--seeds", "1-3", "--arms", "none,neglect", "--saves", str(saves), "--out", str(out)]
    result = run_cli(*args)
    assert result.code == 130
    assert result.err.strip().splitlines()[-1] == "socialsim: interrupted"
    assert "socialsim trial t --resume plays the rest" in result.err
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    finished = {(r["seed"], r["arm"]) for r in rows}
    # the two arm runs reported before Ctrl+C, and those already running then (not the rest)
    assert 2 <= len(finished) < 6
    assert f"{3 + len(finished)} of 9 runs finished and saved" in result.err
    store = SaveStore(saves)
    spec = load_spec(store, "t")
    done = {(str(s), a.name) for s in spec.seeds for a in spec.arms if arm_done(store, spec, s, a)}
    assert done == finished
    assert all(prefix_done(store, spec, s) for s in spec.seeds)


def test_an_interrupted_trial_reports_its_partial_result(store: SaveStore):
    spec = small_trial(store, seeds=(1, 2, 3), arms="none,neglect")
    with pytest.raises(Interrupted) as stopped:
        run_trial(spec, store, StopAfter(1))
    partial = stopped.value.partial
    assert 1 <= len(partial.rows) < 6 and stopped.value.total == spec.runs
    assert partial.played == 3 + len(partial.rows)
    rows = partial.rows
    pairs = [s for s in spec.seeds if (s, "none") in rows and (s, "neglect") in rows]
    assert partial.complete_seeds == pairs
    assert {s.estimate.n for s in summarize(partial)} <= {len(pairs)}


def test_ctrl_c_twice_mid_round_leaves_only_whole_llm_runs_that_resume(run_cli, tmp_path: Path):
    """A terminal's Ctrl+C (SIGINT to the whole process group) while the prefixes' first
    round is under way lets them go on, their calls still shown; a second one stops them
    mid-round. Every save reads back whole, and the trial resumes to the end."""
    from llm_stub import StubLLM

    saves = tmp_path / "saves"
    with StubLLM(seed=3, latency=0.2) as stub:
        args = ["trial", "tavern", "--model", "openai/stub", "--api-base", stub.url]
        args += ["--rounds", "2", "--fork-at", "1", "--seeds", "1-2", "--arms", "none"]
        args += ["--inject", "A storm.@2", "--trial-id", "c", "--yes", "--saves", str(saves)]
        child = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", *args, "--workers", "2"],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        seen: list[str] = []
        try:
            assert child.stderr is not None
            for wanted in (" round 1/1 decide: ", " round 1/1 speak: "):
                for text in child.stderr:
                    seen.append(text)
                    if wanted in text:  # a prefix is mid-round
                        os.killpg(child.pid, signal.SIGINT)
                        break
            rest = child.stderr.read()
            code = child.wait(timeout=120)
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
        assert code == 130, "".join(seen) + rest
        assert rest.strip().splitlines()[-1] == "socialsim: interrupted", rest
        store = SaveStore(saves)
        spec = load_spec(store, "c")
        assert not all(prefix_done(store, spec, s) for s in spec.seeds)  # stopped mid-round
        store.clean_leftovers()  # what every open of the saves does
        for row in store.list_runs():
            assert row.ok, row.reason
            history = store.history(row.run_id, whole=True)
            assert [r.round for r in history] == list(range(len(history)))
        resumed = run_cli("trial", "c", "--resume", "--yes", "--saves", str(saves))
        assert resumed.code == 0, resumed.err
    assert all(arm_done(store, spec, s, a) for s in spec.seeds for a in spec.arms)


# -- resumption after a kill -----------------------------------------------------------------


def test_a_killed_trial_resumes_and_plays_only_the_missing_runs(run_cli, tmp_path: Path):
    saves, out = tmp_path / "saves", tmp_path / "trial.csv"
    args = ["trial", "bullying", "--trial-id", "k", "--fork-at", "4", "--seeds", "1-8"]
    args += ["--arms", "none,neglect", "--workers", "1", "--saves", str(saves)]
    child = subprocess.Popen(
        [sys.executable, "-m", "tui.cli", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    store = SaveStore(saves)
    deadline = time.monotonic() + 600  # left as soon as one arm is done
    try:
        while time.monotonic() < deadline and child.poll() is None:
            spec = load_spec(store, "k") if (saves / ".trials" / "k.json").exists() else None
            if spec and sum(arm_done(store, spec, s, a) for s in spec.seeds for a in spec.arms):
                break
            time.sleep(0.02)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL, "the trial ended before it was killed"
    spec = load_spec(store, "k")
    finished = [spec.prefix_id(s) for s in spec.seeds if prefix_done(store, spec, s)]
    finished += [
        spec.arm_id(s, a) for s in spec.seeds for a in spec.arms if arm_done(store, spec, s, a)
    ]
    assert 0 < len(finished) < spec.runs
    stamps = {r: (store.run_dir(r) / "index.jsonl").stat().st_mtime_ns for r in finished}
    result = run_cli("trial", "k", "--resume", "--saves", str(saves), "--out", str(out))
    assert result.code == 0, result.err
    missing = spec.runs - len(finished)
    assert f"{len(finished)} of {spec.runs} runs were finished already; {missing} played now" in (
        result.out
    )
    assert stamps == {r: (store.run_dir(r) / "index.jsonl").stat().st_mtime_ns for r in finished}
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {(r["seed"], r["arm"]) for r in rows} == {
        (str(s), a) for s in range(1, 9) for a in ("none", "neglect")
    }
    assert all(arm_done(store, spec, s, a) for s in spec.seeds for a in spec.arms)


# -- the command line ------------------------------------------------------------------------


def test_trial_cli_prints_the_arms_and_writes_a_tidy_csv(monkeypatch, run_cli, tmp_path: Path):
    monkeypatch.setenv("COLUMNS", "160")
    out = tmp_path / "t.csv"
    args = ["trial", "bullying", "--fork-at", "3", "--rounds", "5", "--seeds", "1-3"]
    args += ["--arms", "none,neglect", "--inject", "Ms. Hale praises Alice's essay again@4"]
    args += ["--force", "Lily:public:Jane:Stop it, Jane, that is not true.@4"]
    args += ["--outcome", "survey.rses:Alice", "--saves", str(tmp_path / "s"), "--out", str(out)]
    result = run_cli(*args)
    assert result.code == 0, result.err
    assert "3 seeds × 4 arms, fork at round 3 of 5" in result.out
    for arm in ("none", "neglect", "inject-1", "force-1"):
        assert arm in result.out
    assert "survey.rses:Alice" in result.out and "Δ vs none" in result.out
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["trial", "scenario", "seed", "arm", "run_id", "round_no", "metric",
                             "agent", "value"]  # fmt: skip
    assert {r["arm"] for r in rows} == {"none", "neglect", "inject-1", "force-1"}
    store = SaveStore(tmp_path / "s")
    forced = store.history(rows[0]["trial"] + "-s1-force-1")[4]
    lily = next(a for a in forced.actions if a.speaker == "Lily")
    assert lily.forced and lily.target == "Jane"
    injected = store.history(rows[0]["trial"] + "-s1-inject-1")[4]
    assert any(e.text.startswith("Ms. Hale praises") for e in injected.events)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--arms", "none,teleport"], "unknown arm 'teleport'"),
        (["--arms", "none"], "at least two arms"),
        (["--arms", "none,none"], "given twice"),
        (["--fork-at", "9"], "--fork-at 9"),
        (["--inject", "hello@2", "--fork-at", "4"], "not after the fork"),
        (["--inject", "hello"], "TEXT@ROUND"),
        (["--force", "Zed:public:all:hi@6"], "no agent 'Zed'"),
        (["--force", "Alice:shout:all:hi@6"], "mode must be"),
        (["--seeds", "a-b"], "--seeds"),
        (["--executor", "mpi"], "--executor"),
        (["--outcome", "emotion:Zed"], "no agent 'Zed'"),
        (["--out", "/dev/full"], "--out '/dev/full': not a regular file"),
        (["--seeds", "1-100000000"], "at most 10,000 seeds"),
        (["--seeds", "1-99999999999999999999999"], "at most 10,000 seeds"),
        (["--outcome", "nosuch"], "no outcome 'nosuch'; outcomes: mean_fav, mean_emotion"),
    ],
)
def test_trial_cli_bad_input_is_one_line_before_any_run_plays(
    run_cli, tmp_path: Path, args, needle
):
    result = run_cli("trial", "bullying", "--yes", "--saves", str(tmp_path), *args)
    assert result.code == 2, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("socialsim: error:") and needle in lines[0]
    assert not (tmp_path / ".trials").exists()


def test_an_unwritable_out_is_one_line_and_the_runs_stay_saved(run_cli, tmp_path: Path):
    args = ["trial", "bullying", "--trial-id", "w", "--fork-at", "1", "--rounds", "2"]
    args += ["--seeds", "1", "--arms", "none,neglect", "--saves", str(tmp_path)]
    result = run_cli(*args, "--out", "/proc/x.csv")
    assert result.code == 2, result.err
    line = result.err.strip()
    assert "\n" not in line and "Traceback" not in result.out + result.err
    assert line.startswith("socialsim: error: --out /proc/x.csv: cannot write the CSV")
    assert "the runs are saved" in line
    store = SaveStore(tmp_path)
    spec = load_spec(store, "w")
    assert all(arm_done(store, spec, 1, a) for a in spec.arms)


def test_an_outcome_the_runs_lack_is_one_line_naming_those_they_have(run_cli, tmp_path: Path):
    args = ["trial", "bullying", "--trial-id", "o", "--fork-at", "1", "--rounds", "2"]
    args += ["--seeds", "1-2", "--arms", "none,neglect", "--saves", str(tmp_path)]
    result = run_cli(*args, "--outcome", "survey.nosuch")
    assert result.code == 2, result.err
    line = result.err.strip()
    assert line.startswith("socialsim: error: --outcome: the trial's runs have none of these")
    assert "mean_fav" in line and "survey.rses" in line and "\n" not in line


def test_the_csv_gets_the_mode_the_umask_gives(run_cli, tmp_path: Path):
    before = os.umask(0o027)
    try:
        args = ["trial", "bullying", "--fork-at", "1", "--rounds", "2", "--seeds", "1"]
        args += ["--arms", "none,neglect", "--saves", str(tmp_path / "s")]
        result = run_cli(*args, "--out", str(tmp_path / "t.csv"))
    finally:
        os.umask(before)
    assert result.code == 0, result.err
    assert (tmp_path / "t.csv").stat().st_mode & 0o777 == 0o640


def test_resume_honours_resamples_and_refuses_seeds(monkeypatch, run_cli, tmp_path: Path):
    monkeypatch.setenv("COLUMNS", "200")
    args = ["trial", "bullying", "--trial-id", "r", "--fork-at", "1", "--rounds", "2"]
    args += ["--seeds", "1-2", "--arms", "none,neglect", "--saves", str(tmp_path)]
    assert run_cli(*args).code == 0
    again = run_cli("trial", "r", "--resume", "--resamples", "500", "--saves", str(tmp_path))
    assert again.code == 0, again.err
    assert "500 resamples" in again.out
    for seeds in ("1-20", "1-2"):
        respec = run_cli("trial", "r", "--resume", "--seeds", seeds, "--saves", str(tmp_path))
        assert respec.code == 2 and "re-uses the trial's saved spec" in respec.err


def test_a_new_trial_under_a_taken_id_is_refused(store: SaveStore):
    spec = small_trial(store, seeds=(1,), arms="none,neglect")
    run_trial(spec, store, LocalExecutor(1))
    with pytest.raises(SocialsimError, match=r"trial 't' exists.*--resume finishes it"):
        small_trial(store, seeds=(2,), arms="none,neglect")


def test_resume_of_an_unknown_trial_or_with_a_new_spec_is_one_line(run_cli, tmp_path: Path):
    unknown = run_cli("trial", "nope", "--resume", "--saves", str(tmp_path))
    assert unknown.code == 2 and "no trial 'nope'" in unknown.err
    respec = run_cli("trial", "nope", "--resume", "--fork-at", "2", "--saves", str(tmp_path))
    assert respec.code == 2 and "re-uses the trial's saved spec" in respec.err


# -- an LLM trial ----------------------------------------------------------------------------


def test_an_llm_trial_asks_before_spending_then_plays_against_the_stub(
    monkeypatch, run_cli, tmp_path: Path
):
    import io

    from llm_stub import StubLLM

    saves, out = tmp_path / "saves", tmp_path / "llm.csv"
    with StubLLM(seed=3) as stub:
        args = ["trial", "tavern", "--model", "openai/stub", "--api-base", stub.url]
        args += ["--rounds", "2", "--fork-at", "1", "--seeds", "1", "--arms", "none"]
        args += ["--inject", "The bank calls in the tavern's loan today.@2", "--timeout", "5"]
        args += ["--saves", str(saves), "--out", str(out), "--trial-id", "llm"]
        monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
        declined = run_cli(*args)
        assert declined.code == 2, declined.err
        assert "Trial llm (3 runs): ~" in declined.err and "LLM calls" in declined.err
        assert "cancelled before any call" in declined.err
        assert stub.calls == 0 and not (saves / ".trials").exists()
        played = run_cli(*args, "--yes", "--workers", "2")
        assert played.code == 0, played.err
        assert stub.calls > 0
    # piped, every run played in the workers prints a line per finished phase that made
    # calls, with the calls its saved round records (judged needs, emotions and relations
    # are the judge phase's); who speaks is the stub's draw, so a round where every agent
    # stays silent has no speak line
    line = re.compile(
        r"^(llm-s1-\S+) round (\d)/(\d) (decide|speak|judge): (\d+) calls in [\d.]+ s "
        r"\(round: \d+( of ~\d+)? calls\)$"
    )
    rows = [m.groups() for m in map(line.match, played.err.splitlines()) if m]
    shown = {(run, f"{n}/{total}", phase): int(calls) for run, n, total, phase, calls, _ in rows}
    assert len(shown) == len(rows)
    assert sum(shown.values()) == stub.calls
    store = SaveStore(saves)
    spec = load_spec(store, "llm")
    assert spec.mind.model == "openai/stub"
    saved: dict[tuple[str, str, str], int] = {}
    runs = [(spec.prefix_id(1), 1)] + [(spec.arm_id(1, arm), 2) for arm in spec.arms]
    for run_id, last in runs:
        (played_round,) = [r for r in store.history(run_id) if r.round == last]
        for call in played_round.llm_calls:
            key = (
                run_id,
                f"{last}/{last}",
                call.purpose if call.purpose in ("decide", "speak") else "judge",
            )
            saved[key] = saved.get(key, 0) + 1
    assert shown == saved
    assert {(run, phase) for run, _, phase in shown if phase != "speak"} == {
        (run, p) for run in ("llm-s1-prefix", "llm-s1-inject-1", "llm-s1-none")
        for p in ("decide", "judge")
    }  # fmt: skip
    for arm in spec.arms:
        meta = store.read_meta(spec.arm_id(1, arm))
        assert meta.llm is not None and meta.llm.model == "openai/stub"
        calls = [c for r in store.history(meta.run_id) for c in r.llm_calls]
        assert calls and all(c.model == "openai/stub" for c in calls)
    with out.open(newline="") as handle:
        assert {r["arm"] for r in csv.DictReader(handle)} == {"none", "inject-1"}


def test_a_task_trial_scores_every_arm(run_cli, tmp_path: Path):
    out = tmp_path / "task.csv"
    args = ["trial", "student-council", "--fork-at", "1", "--seeds", "1-2", "--arms", "none"]
    args += ["--prior-arm", "trust:complete:1", "--saves", str(tmp_path / "s"), "--out", str(out)]
    result = run_cli(*args, "--outcome", "utility")
    assert result.code == 0, result.err
    assert "utility" in result.out and "prior-1" in result.out
    with out.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["metric"] == "utility"]
    assert {(r["seed"], r["arm"]) for r in rows} == {
        (s, a) for s in ("1", "2") for a in ("none", "prior-1")
    }
    assert {r["scenario"] for r in rows} == {"task:student-council"}
    store = SaveStore(tmp_path / "s")
    meta = store.read_meta(rows[-1]["run_id"])
    assert meta.prior is not None and meta.prior.relation == "trust" and meta.outcome is not None


def test_an_injected_event_moves_the_offline_outcomes(monkeypatch, run_cli, tmp_path: Path):
    """Issue 26: the bank's call moves every seed's final mood (the offline model reads the
    event's valence from its text), so the arm differs from none."""
    monkeypatch.setenv("COLUMNS", "160")
    out = tmp_path / "t.csv"
    args = ["trial", "tavern", "--seeds", "1-3", "--inject", '"The bank calls in the loan."@6']
    result = run_cli(*args, "--saves", str(tmp_path / "s"), "--out", str(out), "--workers", "1")
    assert result.code == 0, result.err
    with out.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["metric"] == "mean_emotion"]
    last = max(int(r["round_no"]) for r in rows)
    final = {(r["seed"], r["arm"]): float(r["value"]) for r in rows if int(r["round_no"]) == last}
    for seed in ("1", "2", "3"):
        assert final[seed, "inject-1"] < final[seed, "none"]
    assert "+0.00 [+0.00, +0.00]" not in result.out.split("mean_emotion")[1].split("\n")[1]
