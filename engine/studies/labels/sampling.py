"""Drawing a study: every judged update of the chosen runs (emotion and relation changes,
optionally need changes) is a candidate; a seeded, stratified sample of them becomes the
study's items, each with the evidence the judge had for it.

Strata are the combinations of the ``stratify`` fields (``kind``, ``direction``); the sample
is spread over them as evenly as they allow (round robin, a stratum that runs out leaves its
share to the others), so increases, decreases and no-change all appear even when one
direction dominates the runs. The same runs, sample size, strata and seed give the same
study.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np

from ...core.rules import can_observe
from ...core.scenario import Scenario
from ...core.state import Action, RoundRecord, WorldState
from ...saves.store import SaveStore
from .study import DEAD_ZONE, KINDS, Evidence, Item, Kind, LabelError, Study, direction

STRATA = ("kind", "direction")


class Candidate(NamedTuple):
    """One judged update, light enough to hold for every update of a run."""

    run_id: str
    round: int
    kind: Kind
    observer: str
    about: str
    prior: float
    delta: float


def candidates(
    run_id: str, before: WorldState, record: RoundRecord, kinds: Iterable[str]
) -> Iterator[Candidate]:
    """The updates ``record`` applied, each with its value in ``before`` (the state after
    the previous round)."""
    agents = before.agents
    if "emotion" in kinds:
        for e in record.emotion_changes:
            yield Candidate(
                run_id, record.round, "emotion", e.agent, "", agents[e.agent].emotion, e.delta
            )
    if "relation" in kinds:
        for r in record.relation_changes:
            old = agents[r.source].relations.get(r.target)
            yield Candidate(
                run_id,
                record.round,
                "relation",
                r.source,
                r.target,
                old.fav if old else 0.0,
                r.delta,
            )
    if "need" in kinds:
        for agent, deltas in record.need_deltas.items():
            needs = agents[agent].needs
            for need, delta in deltas.items():
                prior = needs[need].current if need in needs else 0.0
                yield Candidate(run_id, record.round, "need", agent, need, prior, delta)


def allocate(sizes: Sequence[int], total: int) -> list[int]:
    """Spread ``total`` over strata of ``sizes`` as evenly as they allow."""
    shares = [0] * len(sizes)
    left = min(total, sum(sizes))
    while left:
        for k, size in enumerate(sizes):
            if left and shares[k] < size:
                shares[k] += 1
                left -= 1
    return shares


def draw(
    pool: Sequence[Candidate],
    sample: int,
    stratify: Sequence[str],
    dead_zone: Mapping[str, float],
    seed: int,
) -> list[Candidate]:
    """A seeded stratified sample of ``pool``, in a shuffled presentation order."""

    def key(c: Candidate) -> tuple[str, ...]:
        parts = {"kind": c.kind, "direction": direction(c.delta, dead_zone[c.kind])}
        return tuple(parts[s] for s in stratify)

    strata: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for k, c in enumerate(pool):
        strata[key(c)].append(k)
    keys = sorted(strata)
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for stratum, share in zip(keys, allocate([len(strata[s]) for s in keys], sample), strict=True):
        chosen.extend(rng.choice(strata[stratum], size=share, replace=False).tolist())
    return [pool[k] for k in rng.permutation(chosen)]


def describe_action(action: Action) -> str:
    """An action as a rater reads it: speaker, visibility, target and what was said."""
    to = f", to {action.target}" if action.target else ""
    said = action.utterance or action.intent or "(no words)"
    return f"{action.speaker} ({action.mode.value}{to}): {said}"


def evidence(c: Candidate, scenario: Scenario, record: RoundRecord) -> Evidence:
    """What the judge had for ``c``: the observer's persona, the prior value, and what it
    saw in the round (visible events, actions it could observe)."""
    spec = next((a for a in scenario.agents if a.name == c.observer), None)
    return Evidence(
        observer=c.observer,
        about=c.about,
        role=spec.role if spec else "",
        archetype=spec.archetype.value if spec else "",
        traits=list(spec.traits) if spec else [],
        goal=spec.goal if spec else "",
        prior=c.prior,
        events=[e.text for e in record.events if e.visible_to(c.observer)],
        actions=[describe_action(a) for a in record.actions if can_observe(a, c.observer)],
    )


def new_study(
    store: SaveStore,
    name: str,
    runs: Sequence[str],
    sample: int,
    *,
    stratify: Sequence[str] = STRATA,
    seed: int = 0,
    kinds: Sequence[str] = ("emotion", "relation"),
    dead_zone: Mapping[str, float] | None = None,
) -> Study:
    """Draw a study of ``sample`` judged updates from ``runs`` (not saved: see
    :func:`~engine.studies.labels.study.save_study`)."""
    zone = {**DEAD_ZONE, **(dead_zone or {})}
    bad = [s for s in stratify if s not in STRATA] + [k for k in [*kinds, *zone] if k not in KINDS]
    if bad:
        raise LabelError(f"{bad[0]!r}: strata are {', '.join(STRATA)}; kinds {', '.join(KINDS)}")
    if any(not 0 <= v < float("inf") for v in zone.values()):
        raise LabelError(f"a dead zone is a number of 0 or more, not {zone}")
    if sample < 1 or not runs:
        raise LabelError("a study needs at least one run and a sample of at least 1")
    pool: list[Candidate] = []
    metas = {}
    for run_id in dict.fromkeys(runs):
        metas[run_id] = store.read_meta(run_id)
        before: WorldState | None = None
        for record in store.history(run_id, metas[run_id]).records():
            if before is not None:
                pool.extend(candidates(run_id, before, record, kinds))
            before = record.state
    if not pool:
        raise LabelError("the runs have no judged updates yet (play a round first)")
    picked = draw(pool, sample, list(stratify), zone, seed)
    records: dict[tuple[str, int], RoundRecord] = {}
    for run_id in metas:
        history = store.history(run_id, metas[run_id])  # read forward, round by round
        for number in sorted({c.round for c in picked if c.run_id == run_id}):
            records[run_id, number] = history[number]
    items = [
        Item(
            id=f"i{k + 1:03d}",
            kind=c.kind,
            run_id=c.run_id,
            round=c.round,
            evidence=evidence(c, metas[c.run_id].scenario, records[c.run_id, c.round]),
            delta=c.delta,
            judge=direction(c.delta, zone[c.kind]),
        )
        for k, c in enumerate(picked)
    ]
    return Study(
        name=name,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        seed=seed,
        runs=list(dict.fromkeys(runs)),
        stratify=list(stratify),
        dead_zone=zone,
        items=items,
    )
