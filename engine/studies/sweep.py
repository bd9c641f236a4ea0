"""Sweeps over relational priors (the Relational priors paper, Sec. 4): team sizes, relation
types, topologies, positivity λ (every sign assignment consistent with it), the No-Prior and
Explicit-Neutral controls, models and repeated runs, each cell a job of the shared executor
layer (engine/studies/experiments/executor.py: local processes or Ray); bootstrap intervals of the
endpoint contrasts (App. A.3 for GovSim, App. B.3 for debate)."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from ..errors import SocialsimError
from ..minds.spec import OFFLINE, MindSpec, mind_spec
from .bootstrap import RESAMPLES, Interval, ratio_contrasts
from .experiments.executor import Executor, Interrupted, Job, in_worker
from .experiments.relay import Listener, follow
from .families import family

#: A study family's name (:data:`~engine.studies.families.FAMILIES`).
Task = str


class Condition(BaseModel):
    """One cell of a sweep: a team size, a prior (or a control), a model (a ``--model``
    value) and a repetition."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: Task
    control: Literal["signed", "no-prior", "explicit-neutral"]
    relation: str | None = None
    topology: str | None = None
    positivity: float | None = None
    signs: tuple[int, ...] = ()
    model: str = "offline"
    run: int = 0
    agents: int = 3

    @field_validator("task")
    @classmethod
    def _a_family(cls, task: str) -> str:
        family(task)
        return task

    def label(self) -> str:
        """Short human label."""
        if self.control == "no-prior":
            return "no-prior"
        if self.control == "explicit-neutral":
            return f"neutral {self.relation}/{self.topology}"
        signs = "".join("+" if s > 0 else "-" for s in self.signs)
        return f"{self.relation}/{self.topology} λ={self.positivity:g} [{signs}]"

    def run_label(self) -> str:
        """The label of this run of the cell: its model, team, prior and repetition."""
        return f"{self.model} {self.agents} agents {self.label()} run {self.run}"


class Outcome(BaseModel):
    """A condition's metrics and its bootstrap units: unit name -> counts of the parts of
    the contrasted statistics (per question for debate, its App. B flags; per run for
    GovSim, ``score`` over ``runs`` = 1)."""

    model_config = ConfigDict(extra="forbid")

    condition: Condition
    metrics: dict[str, float | None]
    units: dict[str, dict[str, float]] = {}


def agent_names(task: Task, agents: int | None = None) -> list[str]:
    """The fixed agent names of each task family, for a team of ``agents``."""
    return family(task).agent_names(agents)


def topology_aliases(names: Sequence[str], topologies: Sequence[str]) -> dict[str, str]:
    """Topologies that state the same edges as an earlier one over ``names`` (three agents:
    tree is star), mapped to that one: a sweep runs their cells once, under the first."""
    from ..core.priors import topology_edges

    seen: dict[frozenset[frozenset[str]], str] = {}
    aliases = {}
    for topology in topologies:
        edges = frozenset(map(frozenset, topology_edges(names, topology)))  # type: ignore[arg-type]
        if edges in seen:
            aliases[topology] = seen[edges]
        else:
            seen[edges] = topology
    return aliases


def conditions(
    task: Task,
    relations: Sequence[str],
    topologies: Sequence[str],
    lambdas: Sequence[float],
    runs: int,
    models: Sequence[str],
    controls: bool = True,
    agents: Sequence[int] = (3,),
) -> list[Condition]:
    """Every cell: for each team size, each signed prior for each sign assignment, plus the
    two controls. A topology with the same edges as an earlier one for a team size
    (:func:`topology_aliases`) is not run twice."""
    from ..core.priors import sign_assignments, topology_edges

    if runs < 1:
        raise SocialsimError(f"--runs {runs}: must be at least 1")
    cells: list[Condition] = []
    for n in agents:
        names = agent_names(task, n)
        aliases = topology_aliases(names, topologies)
        distinct = [t for t in topologies if t not in aliases]
        signings: dict[tuple[str, float], list[tuple[int, ...]]] = {}
        for topology in distinct:
            edges = topology_edges(names, topology)  # type: ignore[arg-type]
            for lam in lambdas:
                try:
                    signings[topology, lam] = sign_assignments(len(edges), lam)
                except SocialsimError as err:
                    raise SocialsimError(f"{n} agents, {topology}: {err}") from None
        for model in models:
            for run in range(runs):
                common = {"task": task, "model": model, "run": run, "agents": n}
                if controls:
                    cells.append(Condition(control="no-prior", **common))
                for relation in relations:
                    for topology in distinct:
                        where = {"relation": relation, "topology": topology, **common}
                        if controls:
                            cells.append(Condition(control="explicit-neutral", **where))
                        cells += [
                            Condition(control="signed", positivity=lam, signs=signs, **where)
                            for lam in lambdas
                            for signs in signings[topology, lam]
                        ]
    return cells


def prior_of(cond: Condition) -> Any:
    """The Prior a condition stands for."""
    from ..core.priors import Prior, explicit_neutral, no_prior, topology_edges

    names = agent_names(cond.task, cond.agents)
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
    prior, spec = prior_of(cond), cell_mind(cond, mind)
    played = family(cond.task).play(prior, cond.agents, seed + cond.run, spec, questions, cond.run)
    metrics, units = await played
    return Outcome(condition=cond, metrics=metrics, units=units)


def play_cell(
    cond: Condition, questions: Sequence[Any], seed: int, mind: MindSpec = OFFLINE
) -> Outcome:
    """One cell in a worker process (a job of the executor), in its own event loop; its LLM
    calls relayed under its :meth:`~Condition.run_label`."""
    with follow(cond.run_label()):
        return in_worker(run_condition(cond, questions, seed, mind))


class SweepResult(BaseModel):
    """Every outcome of a sweep and the contrasts computed from them (``resamples`` each)."""

    task: Task
    outcomes: list[Outcome]
    contrasts: list[dict[str, Any]] = []
    resamples: int = RESAMPLES


def contrast_ratios(task: Task) -> dict[str, tuple[str, str]]:
    """The statistics a task's contrasts are computed on, as (numerator, denominator) parts
    of its units: GovSim's score S (mean over runs), debate's ACC, CR, CCR and WCF."""
    return family(task).contrast_ratios()


def _units(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float]]:
    """Sum each unit's counts over the outcomes of a group (e.g. every sign assignment, or a
    question's repeated runs), so a unit is resampled whole."""
    pooled: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        for unit, parts in o.units.items():
            pooled[unit].update(parts)
    return {u: dict(parts) for u, parts in pooled.items()}


def _row(key: tuple[str, int, str, str], name: str, metric: str, ci: Interval) -> dict[str, Any]:
    model, agents, relation, topology = key
    return {
        "model": model,
        "agents": agents,
        "relation": relation,
        "topology": topology,
        "contrast": name,
        "metric": metric,
        "units": ci.units,
        "estimate": ci.estimate,
        "ci_low": ci.low,
        "ci_high": ci.high,
        "dropped": ci.dropped,
    }


def contrasts(
    outcomes: Sequence[Outcome], *, seed: int = 0, resamples: int = RESAMPLES
) -> list[dict[str, Any]]:
    """λ=1 minus λ=0 and λ=1 minus No-Prior for each model, team size, relation type and
    topology, with 95% percentile bootstrap intervals over ``resamples`` resamples.

    Debate (App. B.3): question-level, paired (the same drawn questions weight both
    conditions), ACC, CR, CCR and WCF recomputed with their denominators in every resample.
    GovSim (App. A.3): run-level, each endpoint's runs resampled on their own, ΔS. A
    resample with a zero denominator is dropped from that metric (``dropped`` counts them).
    """
    rows = []
    groups: dict[tuple[str, int, str, str], dict[str, list[Outcome]]] = defaultdict(
        lambda: defaultdict(list)
    )
    none: dict[tuple[str, int], list[Outcome]] = defaultdict(list)
    for o in outcomes:
        c = o.condition
        if c.control == "no-prior":
            none[c.model, c.agents].append(o)
        elif c.control == "signed" and c.positivity in (0.0, 1.0):
            key = (c.model, c.agents, c.relation or "", c.topology or "")
            groups[key][f"{c.positivity:g}"].append(o)
    for key, by_lambda in sorted(groups.items()):
        task = next(iter(by_lambda.values()))[0].condition.task
        paired = family(task).paired
        ones = _units(by_lambda.get("1", []))
        for name, base in (
            ("λ=1 − λ=0", _units(by_lambda.get("0", []))),
            ("λ=1 − no-prior", _units(none[key[:2]])),
        ):
            if not ones or not base or (paired and not set(ones) & set(base)):
                continue
            intervals = ratio_contrasts(
                base,
                ones,
                contrast_ratios(task),
                paired=paired,
                resamples=resamples,
                seed=seed,
            )
            rows += [_row(key, name, metric, ci) for metric, ci in intervals.items()]
    return rows


def sweep(
    task: Task,
    cells: Sequence[Condition],
    executor: Executor,
    *,
    questions: Sequence[Any] = (),
    seed: int = 0,
    mind: MindSpec = OFFLINE,
    resamples: int = RESAMPLES,
    progress: Callable[[Outcome], None] | None = None,
    stop: threading.Event | None = None,
    calls: Listener | None = None,
) -> SweepResult:
    """Run every cell with ``executor`` and compute the contrasts; ``mind``: the LLM
    settings every cell shares (each cell's model replaces its model). ``progress`` hears
    each outcome as it comes, ``calls(report)`` each report of the cells' LLM calls. Ctrl+C
    (or ``stop``) raises :class:`Interrupted` holding the result of the cells that
    finished."""
    outcomes: dict[int, Outcome] = {}

    def done(index: int, outcome: Outcome) -> None:
        outcomes[index] = outcome
        if progress is not None:
            progress(outcome)

    jobs = [Job(play_cell, (cell, list(questions), seed, mind)) for cell in cells]
    try:
        executor.run(jobs, done, stop, calls)
    except KeyboardInterrupt:
        finished = [outcomes[i] for i in sorted(outcomes)]
        raise Interrupted(_result(task, finished, seed, resamples), len(cells)) from None
    return _result(task, [outcomes[i] for i in range(len(cells))], seed, resamples)


def _result(task: Task, outcomes: list[Outcome], seed: int, resamples: int) -> SweepResult:
    return SweepResult(
        task=task,
        outcomes=outcomes,
        contrasts=contrasts(outcomes, seed=seed, resamples=resamples),
        resamples=resamples,
    )


def tidy_rows(result: SweepResult) -> list[dict[str, Any]]:
    """Long-format rows: one per condition and metric."""
    rows = []
    for o in result.outcomes:
        c = o.condition
        for metric, value in o.metrics.items():
            rows.append(
                {
                    "task": c.task,
                    "agents": c.agents,
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
