"""Sweeps over relational priors (the Relational priors paper, Sec. 4): relation types,
topologies, positivity λ (every sign assignment consistent with it), the No-Prior and
Explicit-Neutral controls, models and repeated runs; a local asyncio executor or Ray;
paired bootstrap intervals."""

from __future__ import annotations

import asyncio
import random
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from .errors import SocialsimError
from .mind_spec import OFFLINE, MindSpec, mind_spec

Task = Literal["govsim", "debate"]
#: The metric each task's contrasts are computed on.
PRIMARY = {"govsim": "score", "debate": "acc"}
GOVSIM_AGENTS = 3
DEBATE_AGENTS = 3


class Condition(BaseModel):
    """One cell of a sweep: a prior (or a control), a model (a ``--model`` value) and a
    repetition."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: Task
    control: Literal["signed", "no-prior", "explicit-neutral"]
    relation: str | None = None
    topology: str | None = None
    positivity: float | None = None
    signs: tuple[int, ...] = ()
    model: str = "offline"
    run: int = 0

    def label(self) -> str:
        """Short human label."""
        if self.control == "no-prior":
            return "no-prior"
        if self.control == "explicit-neutral":
            return f"neutral {self.relation}/{self.topology}"
        signs = "".join("+" if s > 0 else "-" for s in self.signs)
        return f"{self.relation}/{self.topology} λ={self.positivity:g} [{signs}]"


class Outcome(BaseModel):
    """A condition's metrics; ``units`` are the paired-bootstrap units (per question for
    debate: 1 if the final majority is correct, for GovSim the run's score)."""

    model_config = ConfigDict(extra="forbid")

    condition: Condition
    metrics: dict[str, float | None]
    units: dict[str, float] = {}


def agent_names(task: Task) -> list[str]:
    """The fixed agent names of each task family."""
    return ["John", "Kate", "Jack"] if task == "govsim" else ["Agent1", "Agent2", "Agent3"]


def conditions(
    task: Task,
    relations: Sequence[str],
    topologies: Sequence[str],
    lambdas: Sequence[float],
    runs: int,
    models: Sequence[str],
    controls: bool = True,
) -> list[Condition]:
    """Every cell: each signed prior for each sign assignment, plus the two controls."""
    from .priors import sign_assignments, topology_edges

    if runs < 1:
        raise SocialsimError(f"--runs {runs}: must be at least 1")
    names = agent_names(task)
    cells: list[Condition] = []
    for model in models:
        for run in range(runs):
            if controls:
                cells.append(Condition(task=task, control="no-prior", model=model, run=run))
            for relation in relations:
                for topology in topologies:
                    edges = topology_edges(names, topology)  # type: ignore[arg-type]
                    if controls:
                        cells.append(
                            Condition(
                                task=task,
                                control="explicit-neutral",
                                relation=relation,
                                topology=topology,
                                model=model,
                                run=run,
                            )
                        )
                    for lam in lambdas:
                        for signs in sign_assignments(len(edges), lam):
                            cells.append(
                                Condition(
                                    task=task,
                                    control="signed",
                                    relation=relation,
                                    topology=topology,
                                    positivity=lam,
                                    signs=tuple(signs),
                                    model=model,
                                    run=run,
                                )
                            )
    return cells


def prior_of(cond: Condition) -> Any:
    """The Prior a condition stands for."""
    from .priors import Prior, explicit_neutral, no_prior, topology_edges

    names = agent_names(cond.task)
    if cond.control == "no-prior":
        return no_prior()
    if cond.control == "explicit-neutral":
        return explicit_neutral(names, cond.relation, cond.topology)  # type: ignore[arg-type]
    edges = topology_edges(names, cond.topology)  # type: ignore[arg-type]
    return Prior(
        control="signed",
        relation=cond.relation,
        topology=cond.topology,
        positivity=cond.positivity,
        edges=[(i, j, s) for (i, j), s in zip(edges, cond.signs, strict=True)],
    )


def cell_mind(cond: Condition, settings: MindSpec = OFFLINE) -> MindSpec:
    """The mind a cell plays: its model, with the sweep's other LLM settings (if any)."""
    shared = {} if settings.offline else settings.model_dump(exclude={"model"})
    return mind_spec(cond.model, **shared)


async def run_condition(
    cond: Condition, questions: Sequence[Any] = (), seed: int = 0, mind: MindSpec = OFFLINE
) -> Outcome:
    """Play one cell; the episode seed depends only on the run index, so conditions are
    paired across priors (the same seeds for λ=0, λ=1 and the controls). ``mind`` holds the
    LLM settings every cell shares; the cell's model replaces its model."""
    prior = prior_of(cond)
    spec = cell_mind(cond, mind)
    if cond.task == "govsim":
        from .govsim import run_govsim

        result = await run_govsim(prior, n_agents=GOVSIM_AGENTS, seed=seed + cond.run, mind=spec)
        metrics = dict(result.metrics)
        return Outcome(
            condition=cond,
            metrics=metrics,
            units={f"run{cond.run}": float(metrics.get("score") or 0.0)},
        )
    from .debate import run_debate

    debate = await run_debate(prior, questions, k=DEBATE_AGENTS, seed=seed + cond.run, mind=spec)
    return Outcome(
        condition=cond,
        metrics=dict(debate.metrics),
        units=_question_units(debate.traces, questions),
    )


def _question_units(traces: Sequence[Any], questions: Sequence[Any]) -> dict[str, float]:
    """Per question: 1 if the final-round majority is the correct answer, else 0."""
    answer = {q.id: q.answer for q in questions}
    units = {}
    for t in traces:
        if answer.get(t.question_id) is None:
            continue
        votes = Counter(v for v in t.answers[-1].values() if v is not None)
        top = votes.most_common(2)
        majority = top[0][0] if top and (len(top) == 1 or top[0][1] > top[1][1]) else None
        units[t.question_id] = 1.0 if majority == answer[t.question_id] else 0.0
    return units


class Executor(Protocol):
    """Runs the cells of a sweep."""

    async def map(
        self, cells: Sequence[Condition], questions: Sequence[Any], seed: int, mind: MindSpec
    ) -> list[Outcome]: ...


class LocalExecutor:
    """asyncio in this process, at most ``concurrency`` episodes at once."""

    def __init__(self, concurrency: int = 4) -> None:
        self.concurrency = concurrency

    async def map(
        self, cells: Sequence[Condition], questions: Sequence[Any], seed: int, mind: MindSpec
    ) -> list[Outcome]:
        gate = asyncio.Semaphore(self.concurrency)

        async def one(cell: Condition) -> Outcome:
            async with gate:
                return await run_condition(cell, questions, seed, mind)

        return list(await asyncio.gather(*(one(c) for c in cells)))


class SweepResult(BaseModel):
    """Every outcome of a sweep and the contrasts computed from them."""

    task: Task
    outcomes: list[Outcome]
    contrasts: list[dict[str, Any]] = []


def bootstrap(
    diffs: Sequence[float], *, resamples: int = 10_000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """Mean of paired differences and its percentile bootstrap interval (reproducible)."""
    if not diffs:
        raise SocialsimError("bootstrap: no paired units")
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(statistics.fmean(rng.choices(diffs, k=n)) for _ in range(resamples))
    tail = (1.0 - level) / 2.0
    lo = means[int(tail * (resamples - 1))]
    hi = means[int((1.0 - tail) * (resamples - 1))]
    return statistics.fmean(diffs), lo, hi


def _units(outcomes: Sequence[Outcome]) -> dict[str, float]:
    """Average each unit over the outcomes of a group (e.g. all sign assignments)."""
    pooled: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        for unit, value in o.units.items():
            pooled[f"{o.condition.model}|{unit}"].append(value)
    return {u: statistics.fmean(v) for u, v in pooled.items()}


def contrasts(outcomes: Sequence[Outcome], *, seed: int = 0) -> list[dict[str, Any]]:
    """λ=1 minus λ=0 and λ=1 minus No-Prior, per relation type and topology, paired by unit
    (run for GovSim, question for debate), with 95% bootstrap intervals."""
    rows = []
    groups: dict[tuple[str, str], dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
    none = [o for o in outcomes if o.condition.control == "no-prior"]
    for o in outcomes:
        c = o.condition
        if c.control == "signed" and c.positivity in (0.0, 1.0):
            groups[(c.relation or "", c.topology or "")][f"{c.positivity:g}"].append(o)
    for (relation, topology), by_lambda in sorted(groups.items()):
        ones = _units(by_lambda.get("1", []))
        for name, base in (
            ("λ=1 − λ=0", _units(by_lambda.get("0", []))),
            ("λ=1 − no-prior", _units(none)),
        ):
            paired = sorted(set(ones) & set(base))
            if not paired:
                continue
            mean, lo, hi = bootstrap([ones[u] - base[u] for u in paired], seed=seed)
            rows.append(
                {
                    "relation": relation,
                    "topology": topology,
                    "contrast": name,
                    "units": len(paired),
                    "mean": mean,
                    "ci_low": lo,
                    "ci_high": hi,
                }
            )
    return rows


async def sweep(
    task: Task,
    cells: Sequence[Condition],
    executor: Executor,
    *,
    questions: Sequence[Any] = (),
    seed: int = 0,
    mind: MindSpec = OFFLINE,
) -> SweepResult:
    """Run every cell with ``executor`` and compute the contrasts; ``mind``: the LLM
    settings every cell shares (each cell's model replaces its model)."""
    outcomes = await executor.map(cells, questions, seed, mind)
    return SweepResult(task=task, outcomes=outcomes, contrasts=contrasts(outcomes, seed=seed))


def tidy_rows(result: SweepResult) -> list[dict[str, Any]]:
    """Long-format rows: one per condition and metric."""
    rows = []
    for o in result.outcomes:
        c = o.condition
        for metric, value in o.metrics.items():
            rows.append(
                {
                    "task": c.task,
                    "model": c.model,
                    "control": c.control,
                    "relation": c.relation or "",
                    "topology": c.topology or "",
                    "positivity": "" if c.positivity is None else c.positivity,
                    "signs": " ".join(str(s) for s in c.signs),
                    "run": c.run,
                    "metric": metric,
                    "value": "" if value is None else value,
                }
            )
    return rows
