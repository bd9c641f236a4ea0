"""bench/fidelity.py: its core runs on a small grid and returns what the tables print."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "fidelity.py"


@pytest.fixture(scope="module")
def fidelity():
    spec = importlib.util.spec_from_file_location("fidelity_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_spearman_with_ties_and_undefined_values(fidelity):
    assert fidelity.ranks([3.0, 1.0, 3.0, 2.0]) == [3.5, 1.0, 3.5, 2.0]
    assert fidelity.spearman([1, 2, 3, 4], [0.9, 0.5, None, 0.1]) == pytest.approx(-1.0)
    assert fidelity.spearman([1, 1, 2, 2], [0.1, 0.3, 0.2, 0.4]) == pytest.approx(0.4472135955)
    assert fidelity.spearman([1, 2, 3], [0.5, 0.5, 0.5]) is None
    assert fidelity.spearman([1, 2], [0.1, 0.2]) is None


def test_paper_trends_follow_its_narrative(fidelity):
    paper = fidelity.paper_trends()
    assert all(paper[m] is not None and paper[m] < 0 for m in fidelity.FALLING)


async def test_scenarios_one_seed_two_scenarios(fidelity, capsys):
    results = await fidelity.play_scenarios(["hospital", "demolition"], seeds=1)
    assert [(r.id, r.conflict, len(r.runs)) for r in results] == [
        ("hospital", 1, 1),
        ("demolition", 5, 1),
    ]
    for r in results:
        (run,) = r.runs
        assert set(run) == {*fidelity.METRICS, "repair"}
        assert 0.0 <= run["balance0"] <= 100.0 and 0.0 <= run["balance"] <= 100.0
        assert r.repaired <= r.deteriorated
        assert r.pooled_repair == (run["repair"] if r.deteriorated else None)
    trends = fidelity.trends(results)
    assert set(trends) == {*fidelity.METRICS, "repair"}
    assert trends["fav"][0] is None  # two runs: too few pairs for a rank correlation
    fidelity.print_scenarios(results, 1)
    fidelity.print_trends(results)
    out = capsys.readouterr().out
    assert "| hospital | 1 |" in out and "| demolition | 5 |" in out


async def test_tasks_full_and_ablation_cells(fidelity, capsys):
    (result,) = await fidelity.play_tasks(
        ["student-council"], seeds=1, recast_episodes=1, sessions=2
    )
    assert set(result.cells) == {
        (init, mode) for init in ("hetero", "random") for mode in ("full", "ablation")
    }
    for start, finals in result.cells.values():
        assert start in (0.0, 100.0) and len(finals) == 2
        assert all(final in (0.0, 100.0) for final in finals)
    for init in ("hetero", "random"):
        full, ablation = result.cells[(init, "full")][1], result.cells[(init, "ablation")][1]
        assert result.final(init, "full") == sum(full) / 2
        assert result.session_wins(init) == (
            sum(f > a for f, a in zip(full, ablation, strict=True)),
            2,
        )
    fidelity.print_tasks([result], 1, 1, 2)
    out = capsys.readouterr().out
    assert "| student-council | hetero |" in out and "mean over 2 session(s)" in out


async def test_tasks_without_recasting(fidelity, capsys):
    (result,) = await fidelity.play_tasks(["student-council"], seeds=1, recast_episodes=0)
    assert all(finals == [] for _, finals in result.cells.values())
    assert result.final("hetero", "full") is None
    fidelity.print_tasks([result], 1, 0)
    assert "| – | – |" in capsys.readouterr().out
