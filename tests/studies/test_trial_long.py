"""Scenario semantics over long runs (issue 39), offline dynamics 4 (as under 3): EduMirror's
intervention ordering in the bullying trial holds whether the arms fork early or late."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

ARMS = "none,neglect,authoritative-punitive,supportive-individual,supportive-cooperative"


@pytest.mark.slow  # 20 seeds x 5 arms, twice: about half a minute when the machine is idle
@pytest.mark.parametrize(("fork_at", "rounds"), [(4, 9), (20, 30)])
def test_the_intervention_ordering_holds_forked_early_or_late(
    run_cli, tmp_path: Path, fork_at: int, rounds: int
) -> None:
    """Alice's final RSES over 20 seeds: neglect < none ≈ punitive (which protects her, not
    her esteem) < individual support < cooperative support, as EduMirror reports."""
    out = tmp_path / "t.csv"
    args = ["trial", "bullying", "--arms", ARMS, "--seeds", "1-20", "--outcome"]
    args += ["survey.rses:Alice", "--fork-at", str(fork_at), "--rounds", str(rounds)]
    result = run_cli(*args, "--saves", str(tmp_path / "s"), "--out", str(out))
    assert result.code == 0, result.err
    with out.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if r["metric"] == "survey.rses"]
    rses: dict[str, list[float]] = {}
    for r in rows:
        if r["agent"] == "Alice" and int(r["round_no"]) == rounds:
            rses.setdefault(r["arm"], []).append(float(r["value"]))
    mean = {arm: statistics.fmean(values) for arm, values in rses.items()}
    assert all(len(values) == 20 for values in rses.values()), rses
    assert mean["neglect"] < mean["none"] - 1 < mean["supportive-individual"] - 2
    assert abs(mean["authoritative-punitive"] - mean["none"]) < 0.5
    assert mean["supportive-individual"] < mean["supportive-cooperative"] - 1
