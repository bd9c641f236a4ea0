"""Sweeps: cells, paired bootstrap, local vs Ray executors, the sweep CLI."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

from engine.errors import SocialsimError
from engine.sweep import (
    LocalExecutor,
    bootstrap,
    conditions,
    contrasts,
    prior_of,
    sweep,
    tidy_rows,
)


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


def test_bootstrap_is_reproducible_and_brackets_the_mean():
    diffs = [0.1, 0.3, -0.2, 0.5, 0.4, 0.0, 0.2]
    first = bootstrap(diffs, seed=7)
    assert first == bootstrap(diffs, seed=7)
    mean, lo, hi = first
    assert lo <= mean <= hi
    assert mean == pytest.approx(sum(diffs) / len(diffs))
    assert bootstrap([0.25] * 5, seed=1) == (0.25, 0.25, 0.25)
    with pytest.raises(SocialsimError):
        bootstrap([])


async def test_local_sweep_pairs_lambda_contrasts_by_run():
    cells = conditions("govsim", ["attitude"], ["complete"], [0.0, 1.0], 3, ["offline"])
    result = await sweep("govsim", cells, LocalExecutor(4), seed=5)
    again = await sweep("govsim", cells, LocalExecutor(1), seed=5)
    assert [o.metrics for o in result.outcomes] == [o.metrics for o in again.outcomes]
    rows = {(r["contrast"]): r for r in result.contrasts}
    assert rows["λ=1 − λ=0"]["units"] == 3
    # Positive attitude keeps the commons alive longer than negative attitude, offline.
    assert rows["λ=1 − λ=0"]["mean"] > 0
    assert rows["λ=1 − λ=0"]["ci_low"] <= rows["λ=1 − λ=0"]["mean"]
    tidy = tidy_rows(result)
    assert {r["metric"] for r in tidy} >= {"score", "survival_time", "over_usage"}
    assert contrasts(result.outcomes, seed=5) == result.contrasts


@pytest.mark.skipif(sys.platform != "linux", reason="the Ray test runs on Linux CI")
async def test_ray_executor_matches_the_local_executor():
    ray = pytest.importorskip("ray")
    from engine.sweep_ray import RayExecutor

    cells = conditions("govsim", ["trust"], ["complete"], [0.0, 1.0], 1, ["offline"])
    local = await sweep("govsim", cells, LocalExecutor(2), seed=3)
    try:
        remote = await sweep("govsim", cells, RayExecutor(num_cpus=2, calls_per_second=50), seed=3)
    finally:
        ray.shutdown()
    assert [o.model_dump() for o in remote.outcomes] == [o.model_dump() for o in local.outcomes]
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
    assert "paired 95% bootstrap intervals" in stdout
    assert "λ=1 − λ=0" in stdout and "no-prior" in stdout
    with out.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["metric"] for r in rows} >= {"cr", "acc"}
    assert {r["control"] for r in rows} == {"signed", "no-prior", "explicit-neutral"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["sweep", "govsim", "--lambdas", "0.5"], "not reachable"),
        (["sweep", "govsim", "--relations", "love"], "--relations"),
        (["sweep", "debate", "--topologies", "chain"], "--topologies"),
        (["sweep", "chess"], "govsim or debate"),
        (["sweep", "govsim", "--lambdas", "x"], "--lambdas"),
        (["sweep", "govsim", "--executor", "mpi"], "--executor"),
    ],
)
def test_sweep_cli_bad_input_is_one_line(run_cli, args, needle):
    result = run_cli(*args)
    assert result.code == 2
    stderr = result.err
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("socialsim: error:") and needle in lines[0]
