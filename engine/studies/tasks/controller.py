"""Trajectory-Guided Persona Recasting (Sociodrama Sec. 4, Algorithm 1).

Each iteration evaluates a casting over r episodes (concurrently), diagnoses every run,
and takes a per-agent majority vote of the proposed changes. The loop stops when the task
target is reached, when no change is proposed, or after three recasts.
"""

from __future__ import annotations

import asyncio
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ...core.scenario import Archetype
from ...errors import SocialsimError
from ...minds import Mind, make_mind
from ...minds.spec import OFFLINE, MindSpec
from ...saves.runmeta import ExperimentLink
from ...saves.store import SaveStore
from .diagnosis import Proposal, diagnose
from .episode import run_episode
from .spec import AGENTS, Task, target

MAX_RECASTS = 3
StopReason = Literal["target reached", "no change proposed", "three recasts"]


class Vote(BaseModel):
    """The majority decision for one agent, with the rationale of a winning proposal."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    current: Archetype
    archetype: Archetype | None
    votes: int
    of: int
    rationale: str


class Iteration(BaseModel):
    """One evaluated casting."""

    model_config = ConfigDict(extra="forbid")

    iteration: int
    casting: list[Archetype]
    utilities: list[float]
    run_ids: list[str]
    decisions: list[Vote]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.utilities)

    @property
    def sd(self) -> float:
        return statistics.stdev(self.utilities) if len(self.utilities) > 1 else 0.0


class Session(BaseModel):
    """A whole recasting session."""

    model_config = ConfigDict(extra="forbid")

    session: str
    task: str
    episodes: int
    ablation: bool
    iterations: list[Iteration] = []
    stop: StopReason | None = None


def majority(proposals: Sequence[Sequence[Proposal]]) -> list[Vote]:
    """Per agent, the most proposed archetype across runs (keep = ``None``)."""
    votes = []
    for k, agent in enumerate(AGENTS):
        column = [run[k] for run in proposals]
        counts = Counter(p.archetype for p in column)
        top = max(counts.values())
        leaders = [a for a, c in counts.items() if c == top]
        changes = [a for a in leaders if a is not None]
        # A tie between keeping and one recast goes to the recast (the failing runs carry
        # the signal); a tie between different recasts keeps the current archetype.
        best = changes[0] if len(changes) == 1 else None
        n = counts[best]
        reason = next((p.rationale for p in column if p.archetype == best), None)
        if reason is None:  # no run proposed keeping: the runs split between recasts
            split = " and ".join(sorted(a.value for a in changes))
            reason = f"The runs split between {split}; keep {agent} {column[0].current.value}."
        votes.append(
            Vote(
                agent=agent,
                current=column[0].current,
                archetype=best,
                votes=n,
                of=len(column),
                rationale=reason,
            )
        )
    return votes


async def recast(
    task: Task,
    casting: Sequence[Archetype],
    episodes: int,
    *,
    seed: int = 0,
    mind: MindSpec = OFFLINE,
    store: SaveStore | None = None,
    ablation: bool = False,
    on_iteration: Callable[[Iteration], None] | None = None,
) -> Session:
    """Run the controller from ``casting``; every episode is saved as a run when a store
    is given, linked to its session and iteration. ``mind`` plays every episode (each its
    own mind) and its judge diagnoses them."""
    if episodes < 1:
        raise SocialsimError(f"--episodes {episodes}: must be at least 1")
    if len(casting) != len(AGENTS):
        raise SocialsimError(f"casting: give {len(AGENTS)} archetypes, one per agent")
    session_id = store.new_run_id(f"recast-{task.id}") if store else f"recast-{task.id}"
    session = Session(session=session_id, task=task.id, episodes=episodes, ablation=ablation)
    judge = make_mind(mind, seed)
    try:
        await _iterate(
            task,
            list(casting),
            episodes,
            session,
            judge,
            seed=seed,
            mind=mind,
            store=store,
            ablation=ablation,
            on_iteration=on_iteration,
        )
    finally:
        await judge.aclose()
    return session


async def _iterate(
    task: Task,
    current: list[Archetype],
    episodes: int,
    session: Session,
    judge: Mind,
    *,
    seed: int,
    mind: MindSpec,
    store: SaveStore | None,
    ablation: bool,
    on_iteration: Callable[[Iteration], None] | None,
) -> None:
    session_id = session.session
    for k in range(MAX_RECASTS + 1):
        results = await asyncio.gather(
            *(
                run_episode(
                    task,
                    current,
                    seed=seed + e,
                    mind=mind,
                    store=store,
                    name=f"{session_id} it{k} ep{e}",
                    ablation=ablation,
                    experiment=ExperimentLink(
                        session=session_id, task=task.id, iteration=k, episode=e
                    ),
                )
                for e in range(episodes)
            )
        )
        mean = statistics.fmean(o.utility for _, o in results)
        reached = mean >= target(task)
        proposals = [
            await diagnose(
                judge,
                sim.scenario,
                sim.records,
                outcome,
                reached,
                key=f"diagnose:{session_id}:{k}:{e}",
            )
            for e, (sim, outcome) in enumerate(results)
        ]
        it = Iteration(
            iteration=k,
            casting=current,
            utilities=[o.utility for _, o in results],
            run_ids=[sim.run_id for sim, _ in results],
            decisions=majority(proposals),
        )
        session.iterations.append(it)
        if on_iteration:
            on_iteration(it)
        if it.mean >= target(task):
            session.stop = "target reached"
            break
        changes = {v.agent: v.archetype for v in it.decisions if v.archetype is not None}
        if not changes:
            session.stop = "no change proposed"
            break
        if k == MAX_RECASTS:
            session.stop = "three recasts"
            break
        current = [changes.get(a, c) for a, c in zip(AGENTS, current, strict=True)]
