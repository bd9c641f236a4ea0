"""Long-horizon bench: whether the offline model stays believable past the papers' nine rounds.

Run from the repository root::

    .venv/bin/python bench/long_horizon.py                  # every library scenario, 5 seeds
    .venv/bin/python bench/long_horizon.py --seeds 2 --rounds 30 --fidelity-seeds 3
    .venv/bin/python bench/long_horizon.py --only bullying,hospital --no-fidelity
    .venv/bin/python bench/long_horizon.py --casts 32,100,300 --seeds 3 --no-fidelity
    .venv/bin/python bench/long_horizon.py --casts 100 --dynamics 3 --no-fidelity

Part 1 plays every library scenario (or, with ``--casts``, casts generated from seed 1 by
bench/casts.py, of the sizes given; ``--dynamics``: that version of the offline model, by
default the newest) for ``--rounds`` rounds (default 60) once per seed,
offline, and prints per scenario, beside issue 39's targets: the share of agent-rounds with
S < 0.02 or S > 0.98 in rounds 20 to the end (target <= 5%), the share of edges with
|fav| > 0.95 at the last round (<= 15%), and the spread of S across agents at the last round
(the mean over seeds of the standard deviation; >= 0.08 in every scenario). Then the
bullying semantics without intervention: rounds 10 to the end in which the targeted student
(the scenario's first agent, Alice) is below the class mean emotion, and in which the bully
(Jane) regards her negatively (target: every round).

Part 2 is the fidelity bench's nine-round table (bench/fidelity.py, part 1) and its
Spearman rho against conflict rank, target <= -0.9 for Fav, balance and repair (a metric
undefined in a run is left out of the rho over runs, and the table says how many runs
define it).

Output is Markdown, ready for docs/papers.md. The bench never fails on a missed target.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from casts import cast_data  # noqa: E402
from fidelity import (  # noqa: E402
    FALLING,
    SOCIAL,
    num,
    play_scenarios,
    print_scenarios,
    revision,
    trends,
)

from engine.core.needs import NEED_MAX  # noqa: E402
from engine.core.scenario import Scenario, library_ids, parse_scenario, resolve_scenario  # noqa: E402
from engine.minds.offline.mind import OfflineMind  # noqa: E402
from engine.minds.spec import DYNAMICS_VERSION  # noqa: E402
from engine.round.simulation import Simulation  # noqa: E402

#: Issue 39's targets: saturated agent-rounds, saturated edges, spread of S, Spearman's rho.
SATURATED_AT, MAX_SATURATED = 0.02, 5.0
EXTREME_FAV, MAX_EXTREME = 0.95, 15.0
MIN_SPREAD = 0.08
MAX_RHO = -0.9
#: A need this near 0 or 10 is at a bound (no target: issue 39 set none for needs).
NEED_NEAR = 0.2
#: Agent-rounds are counted from this round on.
SETTLED = 20
#: Bullying without intervention: the targeted student and the bully, from this round on.
TARGETED, BULLY, FROM_ROUND = "Alice", "Jane", 10


@dataclass
class Horizon:
    """One scenario's long runs: per seed, saturated and counted agent-rounds, extreme and
    counted edges at the end, the spread of S at the end."""

    id: str
    saturated: int = 0
    agent_rounds: int = 0
    extreme: int = 0
    edges: int = 0
    spreads: list[float] = field(default_factory=list)
    mean_s: list[float] = field(default_factory=list)
    mean_fav: list[float] = field(default_factory=list)
    #: Agents' needs within NEED_NEAR of a bound, and needs counted, from round SETTLED.
    needs_near: int = 0
    needs: int = 0
    #: Bullying only: (rounds the targeted student is below the mean, rounds the bully's
    #: regard for her is negative, rounds counted), summed over seeds.
    semantics: list[int] = field(default_factory=lambda: [0, 0, 0])

    @property
    def saturated_pct(self) -> float:
        return 100.0 * self.saturated / max(self.agent_rounds, 1)

    @property
    def needs_pct(self) -> float:
        return 100.0 * self.needs_near / max(self.needs, 1)

    @property
    def extreme_pct(self) -> float:
        return 100.0 * self.extreme / max(self.edges, 1)

    @property
    def spread(self) -> float:
        return statistics.fmean(self.spreads)


async def play_long(
    scenarios: Sequence[tuple[str, Scenario]], seeds: int, rounds: int, dynamics: int
) -> list[Horizon]:
    """Play every scenario ``rounds`` rounds once per seed with version ``dynamics`` of the
    offline model and collect its figures (from the states' columns: no state model built,
    so a 300-agent cast plays in seconds)."""
    import numpy as np

    out = []
    for scenario_id, scenario in scenarios:
        h = Horizon(scenario_id)
        for seed in range(seeds):
            mind = OfflineMind(seed, dynamics)
            sim = Simulation.new(scenario, seed=seed, rounds=rounds, mind=mind)
            await sim.run()
            states = [values for _, values, _ in sim.history.values()]
            for values in states[SETTLED:]:
                s = np.array(values.emotion)
                h.agent_rounds += len(s)
                h.saturated += int(((s < SATURATED_AT) | (s > 1 - SATURATED_AT)).sum())
                levels = [need.current for needs in values.needs for need in needs.values()]
                h.needs += len(levels)
                h.needs_near += sum(not NEED_NEAR < c < NEED_MAX - NEED_NEAR for c in levels)
            last = states[-1]
            favs = last.fav[~np.eye(len(last.names), dtype=bool)]
            h.edges += len(favs)
            h.extreme += int((np.abs(favs) > EXTREME_FAV).sum())
            h.spreads.append(statistics.pstdev(last.emotion))
            h.mean_s.append(statistics.fmean(last.emotion))
            h.mean_fav.append(float(favs.mean()) if len(favs) else 0.0)
            if scenario_id == "bullying":
                for values in states[FROM_ROUND:]:
                    i, j = values.names.index(TARGETED), values.names.index(BULLY)
                    h.semantics[0] += values.emotion[i] < statistics.fmean(values.emotion)
                    h.semantics[1] += values.fav[j, i] < 0
                    h.semantics[2] += 1
        out.append(h)
    return out


def _ok(good: bool) -> str:
    return " ✓" if good else " ✗"


def print_long(results: Sequence[Horizon], seeds: int, rounds: int, what: str) -> None:
    print(f"### {what} x {seeds} seeds x {rounds} rounds\n")
    print(
        f"| scenario | S saturated, rounds {SETTLED}-{rounds} (≤ {MAX_SATURATED:g}%) "
        f"| \\|fav\\| > {EXTREME_FAV} at {rounds} (≤ {MAX_EXTREME:g}%) "
        f"| std of S at {rounds} (≥ {MIN_SPREAD}) | mean S at {rounds} | mean fav at {rounds} "
        f"| needs within {NEED_NEAR} of a bound, rounds {SETTLED}-{rounds} |"
    )
    print("|---|---|---|---|---|---|---|")
    for h in results:
        print(
            f"| {h.id} | {h.saturated_pct:.1f}%{_ok(h.saturated_pct <= MAX_SATURATED)} "
            f"| {h.extreme_pct:.1f}%{_ok(h.extreme_pct <= MAX_EXTREME)} "
            f"| {h.spread:.3f}{_ok(h.spread >= MIN_SPREAD)} "
            f"| {statistics.fmean(h.mean_s):.2f} | {statistics.fmean(h.mean_fav):+.2f} "
            f"| {h.needs_pct:.2f}% |"
        )
    saturated = sum(h.saturated for h in results) / max(sum(h.agent_rounds for h in results), 1)
    extreme = sum(h.extreme for h in results) / max(sum(h.edges for h in results), 1)
    low = [h.id for h in results if h.spread < MIN_SPREAD]
    near = sum(h.needs_near for h in results) / max(sum(h.needs for h in results), 1)
    print(
        f"\nAll scenarios: S saturated {100 * saturated:.1f}% (≤ {MAX_SATURATED:g}%), "
        f"\\|fav\\| > {EXTREME_FAV} {100 * extreme:.1f}% (≤ {MAX_EXTREME:g}%), "
        f"std of S below {MIN_SPREAD} in {len(low)} of {len(results)} scenarios"
        + (f" ({', '.join(low)})" if low else "")
        + f"; needs within {NEED_NEAR} of a bound {100 * near:.2f}%."
    )
    bullying = next((h for h in results if h.id == "bullying"), None)
    if bullying and bullying.semantics[2]:
        below, negative, counted = bullying.semantics
        print(
            f"\nBullying without intervention, rounds {FROM_ROUND}-{rounds} over {seeds} seeds: "
            f"{TARGETED} below the class mean emotion in {below} of {counted} rounds"
            f"{_ok(below == counted)}, {BULLY}'s regard for her negative in {negative} of "
            f"{counted}{_ok(negative == counted)} (target: all)."
        )


def print_rho(results: Sequence, seeds: int) -> None:
    ours = trends(results)
    print(f"\n### Spearman rho against conflict rank at nine rounds, {seeds} seeds\n")
    print("| metric | over runs | over scenario means | runs defining it | target |")
    print("|---|---|---|---|---|")
    for metric in FALLING:
        runs, means = ours[metric]
        defined = sum(run[metric] is not None for r in results for run in r.runs)
        total = sum(len(r.runs) for r in results)
        marks = ["" if rho is None else _ok(rho <= MAX_RHO) for rho in (runs, means)]
        print(
            f"| {metric} | {num(runs)}{marks[0]} | {num(means)}{marks[1]} "
            f"| {defined}/{total} | ≤ {MAX_RHO} |"
        )
    undefined = [
        f"{r.id} ({sum(run['repair'] is None for run in r.runs)}/{len(r.runs)})"
        for r in results
        if any(run["repair"] is None for run in r.runs)
    ]
    print(
        "\nRepair is undefined in a run with no edge that ever turned hostile; such runs are "
        "left out of the rho over runs"
        + (f": {', '.join(undefined)}" if undefined else " (none here)")
        + ". Over scenario means repair is pooled per scenario (App. D)."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per scenario (long runs)")
    parser.add_argument("--rounds", type=int, default=60, help="rounds of each long run")
    parser.add_argument("--only", help="comma-separated scenario ids (default: the library)")
    parser.add_argument(
        "--casts", help="comma-separated sizes of generated casts (bench/casts.py) to play instead"
    )
    parser.add_argument(
        "--dynamics", type=int, default=DYNAMICS_VERSION, help="the offline dynamics' version"
    )
    parser.add_argument("--fidelity-seeds", type=int, default=10, help="seeds at nine rounds")
    parser.add_argument("--no-fidelity", action="store_true", help="skip the nine-round part")
    args = parser.parse_args()
    if args.casts:
        rounds = args.rounds
        sizes = [int(n) for n in args.casts.split(",")]
        what = "Generated casts (bench/casts.py, cast seed 1)"
        scenarios = [(f"cast-{n}", parse_scenario(cast_data(n, 1, rounds), "cast")) for n in sizes]
    else:
        ids = args.only.split(",") if args.only else library_ids()
        what = "Every library scenario" if not args.only else "Library scenarios"
        scenarios = [(scenario_id, resolve_scenario(scenario_id)) for scenario_id in ids]
    wall, cpu = time.perf_counter(), time.process_time()
    long_runs = asyncio.run(play_long(scenarios, args.seeds, args.rounds, args.dynamics))
    nine = (
        None
        if args.no_fidelity
        else asyncio.run(play_scenarios(SOCIAL, args.fidelity_seeds, args.dynamics))
    )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"Offline model, dynamics version {args.dynamics}, revision {revision()}\n")
    print_long(long_runs, args.seeds, args.rounds, what)
    if nine is not None:
        print()
        print_scenarios(nine, args.fidelity_seeds)
        print_rho(nine, args.fidelity_seeds)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n{wall:.1f} s wall, {cpu:.1f} s CPU, load average {load}")


if __name__ == "__main__":
    main()
