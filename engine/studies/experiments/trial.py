"""Randomised trials from a fork: for each seed the common prefix is played to round
``fork_at`` once and saved, then branched once per arm (engine/studies/experiments/arms.py) and each
branch played to the end. Arms share their prefix and their seed, so contrasts are paired.

A trial's spec is saved first (``<saves>/.trials/<trial-id>.json``), and its runs have
ids that follow from it (``<trial>-s<seed>-prefix``, ``<trial>-s<seed>-<arm>``) and carry
a :class:`~engine.saves.runmeta.TrialLink`; so :func:`run_trial` on a trial already begun plays
only the runs that are missing or unfinished (an unfinished run goes on where its save
stops). Prefixes are one batch of jobs, arms the next, on the executor given; each run's
LLM calls are relayed under its id (engine/studies/experiments/relay.py).
"""

from __future__ import annotations

import os
import re
import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError

from ...core.limits import check_rounds
from ...core.scenario import Scenario
from ...core.state import ScenarioEvent
from ...errors import SaveError, SocialsimError
from ...llm.settings import LLMSettings
from ...minds.spec import OFFLINE, Offline
from ...saves.atomic import atomic_write_text
from ...saves.runmeta import RunMeta, ScheduledEvent, TrialLink, now_iso
from ...saves.saferead import read_regular
from ...saves.store import SaveStore, check_run_id
from ..tasks import REF_PREFIX
from .arms import Arm, check_arms
from .executor import Executor, Interrupted, Job, in_worker
from .outcomes import run_outcomes
from .relay import Listener, follow
from .stats import Estimate, mean_intervals, paired_differences

TRIALS_DIR = ".trials"
RESAMPLES = 10_000


class TrialSpec(BaseModel):
    """What a trial is: saved before its first run, re-used by a resumption."""

    model_config = ConfigDict(extra="forbid")
    trial_id: str
    created: str
    scenario_ref: str
    scenario: Scenario
    fork_at: int
    rounds: int
    seeds: list[int]
    arms: list[Arm]
    mind: Offline | LLMSettings = OFFLINE
    resamples: int = RESAMPLES

    def prefix_id(self, seed: int) -> str:
        return f"{self.trial_id}-s{seed}-prefix"

    def arm_id(self, seed: int, arm: Arm) -> str:
        return f"{self.trial_id}-s{seed}-{arm.name}"

    @property
    def control(self) -> Arm:
        """The first arm: every other is compared with it."""
        return self.arms[0]

    @property
    def runs(self) -> int:
        """Runs a finished trial holds: a prefix and an arm run per arm for each seed."""
        return len(self.seeds) * (1 + len(self.arms))


def new_trial_id(store: SaveStore, scenario_id: str) -> str:
    """A fresh id such as ``bullying-trial-20261201-134512-3fa2``."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    base = re.sub(r"[^A-Za-z0-9_-]", "-", scenario_id or "run")[:30] or "run"
    while True:
        trial_id = f"{base}-trial-{stamp}-{secrets.token_hex(2)}"
        if not spec_path(store, trial_id).exists():
            return trial_id


def plan(
    store: SaveStore,
    scenario: Scenario,
    scenario_ref: str,
    *,
    fork_at: int,
    arms: Sequence[Arm],
    seeds: Sequence[int],
    rounds: int | None = None,
    mind: Offline | LLMSettings = OFFLINE,
    trial_id: str | None = None,
    resamples: int = RESAMPLES,
) -> TrialSpec:
    """A checked spec (not yet saved): the fork inside the run, two arms or more, seeds."""
    total = check_rounds(rounds or scenario.rounds)
    if not 0 <= fork_at < total:
        raise SocialsimError(f"--fork-at {fork_at}: must be a round from 0 to {total - 1}")
    check_arms(arms)
    if not seeds:
        raise SocialsimError("--seeds: give at least one seed")
    if len(set(seeds)) != len(seeds):
        raise SocialsimError("--seeds: a seed is given twice")
    trial_id = check_run_id(trial_id) if trial_id else new_trial_id(store, scenario.id)
    if spec_path(store, trial_id).exists():
        raise SaveError(
            f"trial {trial_id!r} exists in {store.root}; socialsim trial {trial_id} --resume "
            "finishes it"
        )
    spec = TrialSpec(
        trial_id=trial_id,
        created=now_iso(),
        scenario_ref=scenario_ref,
        scenario=scenario,
        fork_at=fork_at,
        rounds=total,
        seeds=list(seeds),
        arms=list(arms),
        mind=mind,
        resamples=resamples,
    )
    for seed in spec.seeds:  # every run id a plain name of at most 80 characters
        for run_id in (spec.prefix_id(seed), *(spec.arm_id(seed, a) for a in spec.arms)):
            check_run_id(run_id)
    return spec


# -- the spec on disk ---------------------------------------------------------------------------


def spec_path(store: SaveStore, trial_id: str) -> Path:
    return store.root / TRIALS_DIR / f"{check_run_id(trial_id)}.json"


def save_spec(store: SaveStore, spec: TrialSpec) -> None:
    """Write the spec (refused if a trial with that id exists)."""
    path = spec_path(store, spec.trial_id)
    if path.exists():
        raise SaveError(f"{path}: a trial with id {spec.trial_id!r} already exists")
    try:
        atomic_write_text(path, spec.model_dump_json(indent=1))
    except OSError as err:
        raise SaveError(f"{path}: cannot write the trial ({err.strerror})") from None


def load_spec(store: SaveStore, trial_id: str) -> TrialSpec:
    """A saved trial's spec."""
    path = spec_path(store, trial_id)
    if not os.path.lexists(path):
        raise SaveError(f"no trial {trial_id!r} in {store.root}")
    text = read_regular(path, "trial")
    try:
        return TrialSpec.model_validate_json(text)
    except ValidationError as err:
        raise SaveError(f"{path}: not a socialsim trial ({err.errors()[0]['msg']})") from None


# -- the runs -----------------------------------------------------------------------------------


async def _prefix(store: SaveStore, spec: TrialSpec, seed: int) -> None:
    from ...round.simulation import Simulation

    run_id = spec.prefix_id(seed)
    if store.exists(run_id):
        sim = Simulation.resume(run_id, store)
    else:
        sim = Simulation.new(
            spec.scenario,
            seed=seed,
            mind=spec.mind,
            store=store,
            run_id=run_id,
            name=f"{spec.trial_id} seed {seed}: prefix to round {spec.fork_at}",
            rounds=spec.rounds,
            scenario_ref=spec.scenario_ref,
        )
    try:
        if sim.meta.trial is None:
            sim.meta = sim.meta.model_copy(
                update={"trial": TrialLink(trial=spec.trial_id, seed=seed)}
            )
            store.write_meta(sim.meta)
        await sim.run(spec.fork_at - sim.round)
        if sim.round < spec.fork_at:
            raise SocialsimError(
                f"prefix {run_id} stopped at round {sim.round} of {spec.fork_at}: "
                f"{sim.mind.stop_reason() or 'paused'}"
            )
    finally:
        await sim.aclose()


def _arm_meta(meta: RunMeta, spec: TrialSpec, seed: int, arm: Arm) -> RunMeta:
    """A fresh branch's metadata made the arm's: its trial link, prior and injections."""
    injected = [
        ScheduledEvent(round=i.round, event=ScenarioEvent(text=i.text, source="injected"))
        for i in arm.inject
    ]
    return meta.model_copy(
        update={
            "trial": TrialLink(trial=spec.trial_id, seed=seed, arm=arm.name),
            "prior": arm.prior or meta.prior,
            "scheduled": [*meta.scheduled, *injected],
        }
    )


async def _arm(store: SaveStore, spec: TrialSpec, seed: int, arm: Arm) -> None:
    from ...round.simulation import Simulation
    from ..surveys import survey
    from ..tasks.episode import finish_task_run

    run_id = spec.arm_id(seed, arm)
    if not store.exists(run_id):
        store.branch(
            spec.prefix_id(seed),
            spec.fork_at,
            new_id=run_id,
            name=f"{spec.trial_id} seed {seed}: {arm.name}",
            intervention=arm.intervention,
        )
    meta = store.read_meta(run_id)
    if meta.trial is None:  # made the arm's once, right after the branch
        store.write_meta(_arm_meta(meta, spec, seed, arm))
    sim = Simulation.resume(run_id, store)
    try:
        while not sim.finished:
            for forcing in arm.force:
                if forcing.round == sim.round + 1:
                    sim.force(forcing.action)
            await sim.advance()
        await finish_task_run(sim)
        done = {(s["questionnaire"], s["agent"]) for s in _final_surveys(store, run_id)}
        results = [
            result
            for name in sim.scenario.questionnaires
            for agent in sim.scenario.names
            if (name, agent) not in done
            for result in await survey(
                sim.scenario, sim.history, name, agent, [sim.round], sim.mind
            )
        ]
        if results:
            store.add_measurements(run_id, "surveys", list(results))
    finally:
        await sim.aclose()


def _final_surveys(store: SaveStore, run_id: str) -> list[dict[str, Any]]:
    meta = store.read_meta(run_id)
    return [
        s for s in store.read_measurements(run_id)["surveys"] if s["round"] == meta.total_rounds
    ]


def play_prefix(root: str, spec: TrialSpec, seed: int) -> int:
    """Job: a seed's prefix, played (or finished) to the fork; returns the seed."""
    with follow(spec.prefix_id(seed), spec.fork_at):
        in_worker(_prefix(SaveStore(root), spec, seed))
    return seed


def play_arm(root: str, spec: TrialSpec, seed: int, arm: int) -> list[dict[str, Any]]:
    """Job: one arm of one seed, played (or finished) to the end and surveyed; returns its
    outcome rows."""
    store = SaveStore(root)
    with follow(spec.arm_id(seed, spec.arms[arm]), spec.rounds):
        in_worker(_arm(store, spec, seed, spec.arms[arm]))
    return run_outcomes(store, spec.arm_id(seed, spec.arms[arm]))


def prefix_done(store: SaveStore, spec: TrialSpec, seed: int) -> bool:
    """Whether the seed's prefix is saved up to the fork."""
    run_id = spec.prefix_id(seed)
    if not store.exists(run_id):
        return False
    meta = store.read_meta(run_id)
    return meta.trial is not None and len(store.history(run_id, meta)) > spec.fork_at


def arm_done(store: SaveStore, spec: TrialSpec, seed: int, arm: Arm) -> bool:
    """Whether the arm's run is played to the end, scored (a task) and surveyed."""
    run_id = spec.arm_id(seed, arm)
    if not store.exists(run_id):
        return False
    meta = store.read_meta(run_id)
    if meta.trial is None or len(store.history(run_id, meta)) <= meta.total_rounds:
        return False
    if meta.scenario_ref.startswith(REF_PREFIX) and meta.outcome is None:
        return False
    surveyed = {(s["questionnaire"], s["agent"]) for s in _final_surveys(store, run_id)}
    return all(
        (q, a) in surveyed for q in spec.scenario.questionnaires for a in spec.scenario.names
    )


# -- a trial, played ----------------------------------------------------------------------------


@dataclass
class TrialResult:
    """The outcome rows of every arm run that finished, by (seed, arm name)."""

    spec: TrialSpec
    rows: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)
    #: Runs found finished already (a resumption) and runs played now.
    reused: int = 0
    played: int = 0

    def tidy(self) -> list[dict[str, Any]]:
        """Every outcome row, seeds and arms in the spec's order."""
        order = [(s, a.name) for s in self.spec.seeds for a in self.spec.arms]
        return [row for key in order for row in self.rows.get(key, [])]

    @property
    def complete_seeds(self) -> list[int]:
        """Seeds whose every arm finished: the ones summaries use (paired)."""
        return [s for s in self.spec.seeds if all((s, a.name) in self.rows for a in self.spec.arms)]


Progress = Callable[[str], None]


def collect(
    store: SaveStore, spec: TrialSpec
) -> tuple[TrialResult, list[int], list[tuple[int, int]]]:
    """What the saves hold of a trial: the result of its finished arm runs, and what is
    left to play: the seeds whose prefix is unfinished, the (seed, arm index) pairs."""
    result = TrialResult(spec)
    prefixes = [s for s in spec.seeds if not prefix_done(store, spec, s)]
    arms: list[tuple[int, int]] = []
    for seed in spec.seeds:
        for k, arm in enumerate(spec.arms):
            if arm_done(store, spec, seed, arm):
                result.rows[seed, arm.name] = run_outcomes(store, spec.arm_id(seed, arm))
                result.reused += 1
            else:
                arms.append((seed, k))
    result.reused += len(spec.seeds) - len(prefixes)
    return result, prefixes, arms


def run_trial(
    spec: TrialSpec,
    store: SaveStore,
    executor: Executor,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    begun: Callable[[int], None] | None = None,
    calls: Listener | None = None,
) -> TrialResult:
    """Play the runs of ``spec`` that are not finished (the spec is saved first if new).

    ``begun(n)`` hears how many runs are to be played; ``progress(run_id)`` hears each as it
    finishes; ``calls(report)`` each report of their LLM calls. Ctrl+C (or ``stop``) raises
    :class:`Interrupted` with the result so far."""
    with _played_here(store, spec.trial_id):
        if not spec_path(store, spec.trial_id).exists():
            save_spec(store, spec)
        return _play_missing(spec, store, executor, progress, stop, begun, calls)


@contextmanager
def _played_here(store: SaveStore, trial_id: str) -> Iterator[None]:
    """Hold trial ``trial_id``'s lock (``.trials/<id>.json.lock``) while this process plays
    it; a second process playing or resuming it fails at once, saying so."""
    from filelock import FileLock, Timeout

    path = spec_path(store, trial_id)
    lock = FileLock(f"{path}.lock", timeout=0)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except Timeout:
        raise SaveError(
            f"trial {trial_id!r} is being played or resumed in another socialsim process; "
            "let it finish (or stop it) first"
        ) from None
    except OSError as err:
        raise SaveError(f"{path.parent}: cannot lock the trial ({err.strerror})") from None
    try:
        yield
    finally:
        lock.release()


def _play_missing(
    spec: TrialSpec,
    store: SaveStore,
    executor: Executor,
    progress: Progress | None,
    stop: threading.Event | None,
    begun: Callable[[int], None] | None,
    calls: Listener | None,
) -> TrialResult:
    """What :func:`run_trial` does with the trial's lock held."""
    result, prefixes, arms = collect(store, spec)
    if begun is not None:
        begun(len(prefixes) + len(arms))
    root = str(store.root.resolve())  # workers (Ray's) may start in another folder

    def prefix_finished(index: int, seed: int) -> None:
        result.played += 1
        if progress is not None:
            progress(spec.prefix_id(seed))

    def arm_finished(index: int, rows: list[dict[str, Any]]) -> None:
        seed, k = arms[index]
        result.rows[seed, spec.arms[k].name] = rows
        result.played += 1
        if progress is not None:
            progress(spec.arm_id(seed, spec.arms[k]))

    try:
        jobs = [Job(play_prefix, (root, spec, s)) for s in prefixes]
        executor.run(jobs, prefix_finished, stop, calls)
        jobs = [Job(play_arm, (root, spec, seed, k)) for seed, k in arms]
        executor.run(jobs, arm_finished, stop, calls)
    except KeyboardInterrupt:
        raise Interrupted(result, len(prefixes) + len(arms)) from None
    return result


# -- summaries ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArmSummary:
    """One outcome in one arm: its mean over the complete seeds, and (not for the control)
    the paired difference from the control."""

    metric: str
    agent: str
    arm: str
    estimate: Estimate
    difference: Estimate | None


def final_values(result: TrialResult) -> dict[tuple[str, str], dict[str, list[float]]]:
    """(metric, agent) -> arm -> the value after the last round for each complete seed."""
    seeds = result.complete_seeds
    table: dict[tuple[str, str], dict[str, list[float]]] = {}
    for arm in result.spec.arms:
        for i, seed in enumerate(seeds):
            for row in result.rows[seed, arm.name]:
                if row["round_no"] != result.spec.rounds:
                    continue
                key = (row["metric"], row["agent"])
                values = table.setdefault(key, {}).setdefault(arm.name, [np.nan] * len(seeds))
                values[i] = np.nan if row["value"] is None else float(row["value"])
    return table


def summarize(
    result: TrialResult,
    outcomes: Callable[[str, str], bool] | None = None,
    seed: int = 0,
) -> list[ArmSummary]:
    """The final outcomes (those ``outcomes(metric, agent)`` accepts, default all): per arm
    the mean and 95% interval over the complete seeds, and each arm's paired bootstrap
    difference from the control (seed-level resampling, ``result.spec.resamples``
    resamples, random state ``seed``)."""
    spec = result.spec
    table = final_values(result)
    keys = sorted(k for k in table if outcomes is None or outcomes(*k))
    width = len(result.complete_seeds)
    if not keys or not width:
        return []

    def matrix(arm: str) -> np.ndarray:
        return np.array([table[k].get(arm, [np.nan] * width) for k in keys], dtype=float)

    control = matrix(spec.control.name)
    by_arm = []
    for arm in spec.arms:
        values = matrix(arm.name)
        means = mean_intervals(values, spec.resamples, seed)
        diffs: Sequence[Estimate | None] = (
            [None] * len(keys)
            if arm is spec.control
            else paired_differences(values, control, spec.resamples, seed)
        )
        by_arm.append(
            [
                ArmSummary(metric, agent, arm.name, m, d)
                for (metric, agent), m, d in zip(keys, means, diffs, strict=True)
            ]
        )
    return [row[k] for k in range(len(keys)) for row in by_arm]
