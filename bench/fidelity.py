"""Fidelity bench: Sociodrama Tab. 1 on the five social scenarios and Tab. 3's ablation, offline.

Run from the repository root::

    .venv/bin/python bench/fidelity.py              # 10 seeds; 3 recasting sessions of 10
    .venv/bin/python bench/fidelity.py --seeds 5
    .venv/bin/python bench/fidelity.py --quick      # 3 seeds, 1 recasting session

Part 1 plays each social scenario (hospital ... demolition, in rising conflict rank) for its
T rounds once per seed and prints the final metrics (engine/core/metrics.py) as mean [min, max]
over seeds beside the paper's Tab. 1(a): Fav^T, S^T, reciprocity, the E-I index (the paper's
(E - I) / (E + I), heavy-tailed, so also its median and the bounded contrast E - I), balance
at round 0 and at T, and repair pooled over seeds from edge counts as App. D does. Then the
Spearman rho of every metric against the conflict rank, over runs and over scenario means,
beside the rho of the paper's own Tab. 1 means (target: rho < 0 for Fav, balance, repair).

Part 2 plays the four tasks with the full model and with the ablation (frozen role cards,
fixed speaking order, no state updates): Init is the mean utility of single episodes on the
initial casting, Final the mean utility of the last casting of a recasting session
(engine/studies/tasks), averaged over ``--sessions`` sessions started at seeds 0, 1000, 2000, ...,
both beside the paper's Tab. 3 model averages (target: the ablation below the full model
after recasting in most cells, as in the paper's 8 of 8). Utilities are shown in the paper's
units: accuracy and Pareto rate in %, L1.

Output is Markdown, ready for docs/papers.md. The bench never fails on a missed target.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine.core.metrics import compute_metrics, ei_contrast, repair_counts  # noqa: E402
from engine.core.scenario import Archetype, resolve_scenario  # noqa: E402
from engine.minds.offline.mind import OfflineMind  # noqa: E402
from engine.minds.spec import DYNAMICS_VERSION  # noqa: E402
from engine.round.simulation import Simulation  # noqa: E402
from engine.studies.tasks.controller import recast  # noqa: E402
from engine.studies.tasks.episode import run_episode  # noqa: E402
from engine.studies.tasks.spec import Task, load_task  # noqa: E402

SOCIAL = ("hospital", "tavern", "quest", "solar-farm", "demolition")
TASKS = ("student-council", "solar-negotiation", "nasa-moon", "lost-at-sea")
#: Final-state metrics of one run, in print order.
METRICS = ("fav", "emotion", "reciprocity", "ei_index", "ei_contrast", "balance0", "balance")
HEADERS = {
    "fav": "Fav^T",
    "emotion": "S^T",
    "reciprocity": "recip.",
    "ei_index": "E-I",
    "ei_contrast": "E - I",
    "balance0": "balance^0 %",
    "balance": "balance^T %",
    "repair": "repair %",
}
#: Sociodrama Tab. 1(a): scenario averages over six models, five episodes each.
PAPER_TAB1 = {
    "hospital": {"fav": 0.75, "emotion": 0.11, "reciprocity": 0.35, "ei_index": -0.10,
                 "balance": 100.0, "repair": 58.5},
    "tavern": {"fav": 0.55, "emotion": 0.30, "reciprocity": 0.74, "ei_index": -0.55,
               "balance": 95.7, "repair": 51.5},
    "quest": {"fav": 0.49, "emotion": 0.25, "reciprocity": 0.78, "ei_index": -0.63,
              "balance": 78.7, "repair": 39.2},
    "solar-farm": {"fav": 0.43, "emotion": 0.15, "reciprocity": 0.91, "ei_index": -0.79,
                   "balance": 78.7, "repair": 18.1},
    "demolition": {"fav": 0.23, "emotion": 0.23, "reciprocity": 0.68, "ei_index": -2.25,
                   "balance": 71.7, "repair": 18.9},
}  # fmt: skip
#: Metrics whose rank correlation with conflict the paper's narrative expects below 0.
FALLING = ("fav", "balance", "repair")
#: Sociodrama Tab. 3 model averages, (Init, Final) per initialisation, full and w/o social
#: dynamics, in the paper's units.
PAPER_TAB3 = {
    "student-council": {"hetero": ((16.7, 54.2), (37.5, 45.8)),
                        "random": ((27.8, 58.3), (38.9, 47.2))},
    "solar-negotiation": {"hetero": ((38.9, 48.6), (29.2, 27.8)),
                          "random": ((40.3, 44.4), (26.4, 36.1))},
    "nasa-moon": {"hetero": ((13.94, 12.03), (13.44, 12.72)),
                  "random": ((15.11, 12.92), (14.22, 14.61))},
    "lost-at-sea": {"hetero": ((23.78, 17.22), (23.97, 21.00)),
                    "random": ((23.64, 18.19), (23.67, 21.00))},
}  # fmt: skip


# -- statistics --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spread:
    """Mean, median, min and max of the defined values, and how many there were."""

    n: int
    mean: float = math.nan
    median: float = math.nan
    lo: float = math.nan
    hi: float = math.nan

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread:
        xs = [v for v in values if v is not None]
        if not xs:
            return cls(0)
        return cls(len(xs), statistics.fmean(xs), statistics.median(xs), min(xs), max(xs))


def ranks(xs: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(xs)), key=xs.__getitem__)
    out = [0.0] * len(xs)
    k = 0
    while k < len(order):
        end = k
        while end + 1 < len(order) and xs[order[end + 1]] == xs[order[k]]:
            end += 1
        for m in range(k, end + 1):
            out[order[m]] = (k + end) / 2 + 1
        k = end + 1
    return out


def spearman(xs: Sequence[float], ys: Sequence[float | None]) -> float | None:
    """Spearman's rho over the pairs whose y is defined; None below 3 pairs or without
    variation."""
    pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    if len(pairs) < 3:
        return None
    rx, ry = ranks([x for x, _ in pairs]), ranks([y for _, y in pairs])
    if len(set(rx)) < 2 or len(set(ry)) < 2:
        return None
    return statistics.correlation(rx, ry)


# -- part 1: the social scenarios --------------------------------------------------------------


@dataclass
class ScenarioFidelity:
    """Final metrics of every seed of one scenario, and its pooled repair counts."""

    id: str
    conflict: int
    rounds: int
    runs: list[dict[str, float | None]] = field(default_factory=list)
    repaired: int = 0
    deteriorated: int = 0

    def spread(self, metric: str) -> Spread:
        return Spread.of(run[metric] for run in self.runs)

    @property
    def pooled_repair(self) -> float | None:
        return 100.0 * self.repaired / self.deteriorated if self.deteriorated else None


async def play_scenarios(
    ids: Sequence[str], seeds: int, dynamics: int = DYNAMICS_VERSION
) -> list[ScenarioFidelity]:
    """Play every scenario for its T rounds once per seed (offline, version ``dynamics`` of
    its dynamics) and collect its metrics."""
    results = []
    for scenario_id in ids:
        scenario = resolve_scenario(scenario_id)
        result = ScenarioFidelity(scenario_id, scenario.conflict, scenario.rounds)
        for seed in range(seeds):
            sim = Simulation.new(scenario, seed=seed, mind=OfflineMind(seed, dynamics))
            await sim.run()
            states = [r.state for r in sim.records]
            final = compute_metrics(scenario, states)
            repaired, deteriorated = repair_counts(states)
            result.repaired += repaired
            result.deteriorated += deteriorated
            result.runs.append(
                {
                    "fav": final.mean_fav,
                    "emotion": final.mean_emotion,
                    "reciprocity": final.reciprocity,
                    "ei_index": final.ei_index,
                    "ei_contrast": ei_contrast(states[-1], scenario.faction_of()),
                    "balance0": compute_metrics(scenario, states[:1]).balance,
                    "balance": final.balance,
                    "repair": final.repair,
                }
            )
        results.append(result)
    return results


def trends(results: Sequence[ScenarioFidelity]) -> dict[str, tuple[float | None, float | None]]:
    """Per metric, Spearman's rho against the conflict rank over runs and over scenario means
    (repair: pooled per scenario)."""
    out = {}
    for metric in (*METRICS, "repair"):
        ranks_ = [r.conflict for r in results for _ in r.runs]
        values = [run[metric] for r in results for run in r.runs]
        means = [
            r.pooled_repair if metric == "repair" else _finite(r.spread(metric).mean)
            for r in results
        ]
        out[metric] = (
            spearman(ranks_, values),
            spearman([r.conflict for r in results], means),
        )
    return out


def paper_trends() -> dict[str, float | None]:
    """Spearman's rho against conflict rank of the paper's own Tab. 1(a) means."""
    order = [1, 2, 3, 4, 5]
    return {m: spearman(order, [PAPER_TAB1[s][m] for s in SOCIAL]) for m in PAPER_TAB1["hospital"]}


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else x


# -- part 2: the tasks, full model and ablation ------------------------------------------------


@dataclass
class TaskFidelity:
    """Mean utility (paper units) per initialisation: Init and Final, full and ablation."""

    id: str
    lower_is_better: bool
    #: (initialisation, "full"/"ablation") -> (Init, Final of each recasting session)
    cells: dict[tuple[str, str], tuple[float, list[float]]] = field(default_factory=dict)

    def final(self, init: str, mode: str) -> float | None:
        """The mean Final over the sessions (None without recasting)."""
        finals = self.cells[(init, mode)][1]
        return statistics.fmean(finals) if finals else None

    def session_wins(self, init: str) -> tuple[int, int]:
        """Sessions (paired by seed) in which the full model ended better, and how many."""
        full, ablation = self.cells[(init, "full")][1], self.cells[(init, "ablation")][1]
        return sum(map(self.better, full, ablation)), len(full)

    def better(self, full: float, ablation: float) -> bool:
        return full < ablation if self.lower_is_better else full > ablation


def paper_units(task: Task, utility: float) -> float:
    """Accuracy and Pareto rate in %, the ranking tasks' L1 distance (utility is -L1)."""
    return -utility if task.utility == "neg-l1" else 100.0 * utility


#: Seed offset between recasting sessions (each session's episodes use seed + e).
SESSION_SEED = 1000


async def play_tasks(
    ids: Sequence[str], seeds: int, recast_episodes: int, sessions: int = 1
) -> list[TaskFidelity]:
    """Init: ``seeds`` episodes of the initial casting; Final: the last casting's mean of
    each of ``sessions`` recasting sessions of ``recast_episodes`` episodes an iteration
    (skipped at 0)."""
    results = []
    for task_id in ids:
        task = load_task(task_id)
        result = TaskFidelity(task_id, task.utility == "neg-l1")
        castings: dict[str, list[Archetype]] = {
            "hetero": task.casting.hetero,
            "random": task.casting.random,
        }
        for (init, casting), ablation in itertools.product(castings.items(), (False, True)):
            outcomes = [
                (await run_episode(task, casting, seed=seed, ablation=ablation))[1]
                for seed in range(seeds)
            ]
            start = statistics.fmean(paper_units(task, o.utility) for o in outcomes)
            finals = []
            for k in range(sessions if recast_episodes else 0):
                session = await recast(
                    task, casting, recast_episodes, seed=k * SESSION_SEED, ablation=ablation
                )
                finals.append(paper_units(task, session.iterations[-1].mean))
            result.cells[(init, "ablation" if ablation else "full")] = (start, finals)
        results.append(result)
    return results


# -- printing ----------------------------------------------------------------------------------


def num(x: float | None, fmt: str = "+.2f") -> str:
    return "–" if x is None else format(x, fmt)


def print_scenarios(results: Sequence[ScenarioFidelity], seeds: int) -> None:
    print(f"### Social scenarios: mean [min, max] over {seeds} seeds (paper Tab. 1(a))\n")
    print("| scenario | conflict | Fav^T | S^T | recip. | repair % (repaired/deteriorated) |")
    print("|---|---|---|---|---|---|")
    for r in results:
        paper = PAPER_TAB1.get(r.id, {})
        cells = [_cell(r.spread(m), ".2f", paper.get(m)) for m in ("fav", "emotion", "reciprocity")]
        cells.append(
            f"{num(r.pooled_repair, '.1f')} ({r.repaired}/{r.deteriorated})"
            + (f" ({paper['repair']})" if "repair" in paper else "")
        )
        print(f"| {r.id} | {r.conflict} | " + " | ".join(cells) + " |")
    print(
        "\n| scenario | conflict | E-I | E-I median (defined runs) | E - I | balance^0 % "
        "| balance^T % |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in results:
        paper = PAPER_TAB1.get(r.id, {})
        ei = r.spread("ei_index")
        cells = [
            _cell(ei, ".2f", paper.get("ei_index")),
            f"{ei.median:.2f} ({ei.n}/{len(r.runs)})" if ei.n else f"– (0/{len(r.runs)})",
            _cell(r.spread("ei_contrast"), ".2f", None),
            _cell(r.spread("balance0"), ".1f", None),
            _cell(r.spread("balance"), ".1f", paper.get("balance")),
        ]
        print(f"| {r.id} | {r.conflict} | " + " | ".join(cells) + " |")
    print(
        "\nE-I = (E - I) / (E + I) of the mean cross- (E) and within-faction (I) favorability,"
        " undefined where E + I <= 0; E - I is the bounded contrast. Repair is pooled over"
        " seeds from edge counts (App. D)."
    )


def _cell(s: Spread, fmt: str, paper: float | None) -> str:
    text = f"{s.mean:{fmt}} [{s.lo:{fmt}}, {s.hi:{fmt}}]" if s.n else "–"
    return text if paper is None else f"{text} ({paper:{fmt}})"


def print_trends(results: Sequence[ScenarioFidelity]) -> None:
    ours, paper = trends(results), paper_trends()
    print("\n### Spearman rho against conflict rank\n")
    print("| metric | over runs | over scenario means | paper Tab. 1(a) | target |")
    print("|---|---|---|---|---|")
    for m, (runs, means) in ours.items():
        target = "< 0" if m in FALLING else ""
        marks = [_mark(rho) if target else "" for rho in (runs, means)]
        print(
            f"| {HEADERS[m]} | {num(runs)}{marks[0]} | {num(means)}{marks[1]} "
            f"| {num(paper.get(m))} | {target} |"
        )
    print(
        "\nThe paper's rho is over its five scenario means (repair pooled per scenario, App. D);"
        " over runs, ties in the conflict rank cap |rho| below 1."
    )


def _mark(rho: float | None) -> str:
    return "" if rho is None else (" ✓" if rho < 0 else " ✗")


def print_tasks(
    results: Sequence[TaskFidelity], seeds: int, episodes: int, sessions: int = 1
) -> None:
    print(
        f"\n### Tasks: mean utility, full vs ablation (paper Tab. 3 model averages)\n\n"
        f"Init: {seeds} episodes of the initial casting; Final: last casting of a recasting "
        f"session, {episodes} episodes an iteration, mean over {sessions} session(s) started "
        f"at seeds 0, {SESSION_SEED}, ... Student council: top-1 accuracy %, negotiation: "
        "Pareto rate %, NASA and Lost at Sea: L1 (lower is better).\n"
    )
    print(
        "| task | init | full Init | abl. Init | full Final | abl. Final "
        "| full better (Final) | sessions full better |"
    )
    print("|---|---|---|---|---|---|---|---|")
    wins = total = session_wins = session_total = 0
    for r in results:
        fmt = ".2f" if r.lower_is_better else ".1f"
        for init in ("hetero", "random"):
            fi, ai = r.cells[(init, "full")][0], r.cells[(init, "ablation")][0]
            ff, af = r.final(init, "full"), r.final(init, "ablation")
            (p_fi, p_ff), (p_ai, p_af) = PAPER_TAB3[r.id][init]
            mark = sessions_mark = "–"
            if ff is not None and af is not None:
                better = r.better(ff, af)
                wins += better
                total += 1
                mark = "yes" if better else ("tie" if ff == af else "no")
                won, of = r.session_wins(init)
                session_wins += won
                session_total += of
                sessions_mark = f"{won}/{of}"
            cells = [(fi, p_fi), (ai, p_ai), (ff, p_ff), (af, p_af)]
            text = " | ".join(f"{num(ours, fmt)} ({paper:{fmt}})" for ours, paper in cells)
            print(f"| {r.id} | {init} | {text} | {mark} | {sessions_mark} |")
    if total:
        print(
            f"\nFull model better after recasting in {wins} of {total} cells (target: most; "
            f"paper 8/8), in {session_wins} of {session_total} sessions."
        )


def revision() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return f"{head}{' + uncommitted changes' if dirty else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per scenario and task")
    parser.add_argument("--quick", action="store_true", help="3 seeds")
    parser.add_argument(
        "--episodes", type=int, help="recasting episodes an iteration (default: seeds; 0 skips)"
    )
    parser.add_argument(
        "--sessions", type=int, help="recasting sessions per cell (default 3; --quick: 1)"
    )
    args = parser.parse_args()
    seeds = 3 if args.quick else args.seeds
    episodes = seeds if args.episodes is None else args.episodes
    sessions = args.sessions or (1 if args.quick else 3)
    wall, cpu = time.perf_counter(), time.process_time()
    scenarios = asyncio.run(play_scenarios(SOCIAL, seeds))
    tasks = asyncio.run(play_tasks(TASKS, seeds, episodes, sessions))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"Offline model, revision {revision()}\n")
    print_scenarios(scenarios, seeds)
    print_trends(scenarios)
    print_tasks(tasks, seeds, episodes, sessions)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n{wall:.1f} s wall, {cpu:.1f} s CPU, load average {load}")


if __name__ == "__main__":
    main()
