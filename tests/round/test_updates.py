"""Applying judgements (engine/round/updates.py): the models built without validation are exactly
what validation would have built (engine/core/unvalidated.py)."""

from __future__ import annotations

import copy
import pickle
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from engine.core.needs import NEEDS
from engine.core.rules import remember
from engine.core.scenario import Status
from engine.core.state import AgentState, MemoryEntry, NeedState, Relation, WorldState
from engine.core.unvalidated import trusted
from engine.minds.base import Edge, RelationJudgement
from engine.round.retention import Retention
from engine.round.updates import update_agent, update_relations

OTHERS = ["Bob", "Cy", "Dee", "Eve"]


def assert_as_validated(value: object) -> None:
    """``value`` (and every model inside it) equals a validated copy field by field, with
    the same types and the field order validation gives (the order dumps follow)."""
    if isinstance(value, BaseModel):
        fresh = type(value).model_validate(value.model_dump())
        assert value == fresh
        assert list(value.__dict__) == list(fresh.__dict__)
        assert value.model_dump_json() == fresh.model_dump_json()
        for name in type(value).model_fields:
            assert type(getattr(value, name)) is type(getattr(fresh, name)), name
            assert_as_validated(getattr(value, name))
    elif isinstance(value, list):
        for item in value:
            assert_as_validated(item)
    elif isinstance(value, dict):
        for item in value.values():
            assert_as_validated(item)


def agent(rng: random.Random, memory: int) -> AgentState:
    return AgentState(
        emotion=rng.choice([0.0, 0.2, 0.5, 1.0]),
        needs={n: NeedState(current=rng.choice([0.0, 5.5, 10.0]), expected=8.0) for n in NEEDS},
        relations={
            o: Relation(
                fav=rng.choice([-1.0, -0.45, 0.0, 0.3, 1.0]),
                status=rng.choice(list(Status)),
                memory=[
                    MemoryEntry(round=k, summary=f"m{k}", importance=rng.randint(1, 10))
                    for k in range(memory)
                ],
            )
            for o in OTHERS
        },
    )


def judgements(rng: random.Random) -> dict[str, Edge]:
    return {
        o: RelationJudgement(
            delta=rng.choice([-0.9, -0.3, -0.05, 0.0, 0.12, 0.3, 5.0]),
            status=rng.choice([None, *Status]),
            summary=f"about {o}",
            importance=rng.randint(1, 10),
        ).edge()
        for o in rng.sample(OTHERS, rng.randint(0, len(OTHERS)))
    }


@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=0, max_value=4))
def test_update_agent_builds_what_validation_would(seed, memory):
    rng = random.Random(seed)
    old = agent(rng, memory)
    before = old.model_dump_json()
    judged = judgements(rng)
    needs = {n: rng.choice([-20.0, -0.4, 0.0, 0.25, 3.0]) for n in rng.sample(NEEDS, 5)}
    relations = update_relations("Ann", old, 7, 3, judged)
    update = update_agent(
        "Ann",
        old,
        rng.choice([-1.0, -0.1, 0, 0.2, 0.9]),
        relations,
        needs,
        rng.choice([None, 12.5]),
    )
    assert_as_validated(update.state)
    assert_as_validated(update.emotion)
    assert_as_validated(update.relations)
    assert old.model_dump_json() == before  # the old state is left untouched
    assert [c.target for c in update.relations] == list(judged)
    for change in update.relations:
        rel = update.state.relations[change.target]
        assert (change.fav, change.status) == (rel.fav, rel.status)
        entry = MemoryEntry(round=7, summary=change.summary, importance=change.importance)
        assert rel.memory == remember(old.relations[change.target].memory, entry, 3)
        assert len(rel.memory) <= 3


@settings(deadline=None)  # the first example imports numpy
@given(
    st.integers(min_value=0, max_value=2**32),
    st.integers(min_value=0, max_value=4),
    st.integers(min_value=0, max_value=4),
)
def test_memory_keys_evict_what_the_entries_would(seed, memory, capacity):
    """update_relations with the state's Retention keys keeps the memories reading every entry
    keeps (also for memories over the capacity), and leaves the keys of the new state."""
    rng = random.Random(seed)
    agents = {"Ann": agent(rng, memory), **{o: agent(rng, memory) for o in OTHERS}}
    for a in agents.values():  # older entries, of varied rounds, as a played run has
        for rel in a.relations.values():
            rounds = sorted(rng.sample(range(1, 7), len(rel.memory)))
            for e, r in zip(rel.memory, rounds, strict=True):
                e.round = r
    agents["Ann"].relations.pop("Ann", None)
    state = WorldState(round=6, agents=agents)
    keys = Retention.of(state, capacity)
    for name in ["Ann", *OTHERS]:
        old = state.agents[name]
        judged = {o: j for o, j in judgements(rng).items() if o != name and o in old.relations}
        plain = update_relations(name, old, 7, capacity, judged)
        kept = update_relations(name, old, 7, capacity, judged, retention=keys)
        assert kept == plain
        agents[name] = old.model_copy(update={"relations": kept.relations})
    after = WorldState(round=7, agents=agents)
    assert keys.keys.tolist() == Retention(after, capacity).keys.tolist()


def test_trusted_models_behave_as_validated_ones():
    build = trusted(Relation)
    entry = MemoryEntry(round=1, summary="x", importance=2)
    rel = build({"fav": 0.25, "status": Status.RIVAL, "memory": [entry]})
    assert rel == Relation(fav=0.25, status=Status.RIVAL, memory=[entry])
    assert rel.model_fields_set == {"fav", "status", "memory"}
    assert copy.deepcopy(rel) == rel
    assert pickle.loads(pickle.dumps(rel)) == rel
    moved = rel.model_copy(update={"fav": -0.5})
    assert (moved.fav, rel.fav) == (-0.5, 0.25)
    rel.fav = 0.75  # assignment as on any model
    assert rel.fav == 0.75
    assert build({"fav": 0.0, "status": Status.ALLY, "memory": []}).model_fields_set == {
        "fav",
        "status",
        "memory",
    }


@given(st.integers(min_value=0, max_value=2**32), st.integers(min_value=0, max_value=4))
def test_a_rounds_shared_memory_entries_change_nothing_but_sharing(seed, memory):
    """Edges that remember the same summary and importance in a round share one entry (the
    round's ``entries``), and the relations are those each edge's own entry gives."""
    rng = random.Random(seed)
    entries: dict[tuple[str, int], MemoryEntry] = {}
    olds = [agent(rng, memory) for _ in range(3)]
    judged = [
        {o: (0.1, None, rng.choice(["left", "came"]), rng.randint(1, 2)) for o in OTHERS}
        for _ in olds
    ]
    pairs = list(zip(olds, judged, strict=True))
    shared = [update_relations("Ann", o, 7, 3, j, entries=entries) for o, j in pairs]
    own = [update_relations("Ann", o, 7, 3, j) for o, j in pairs]
    assert shared == own
    assert_as_validated([r.relations for r in shared])
    remembered = [e for u in shared for r in u.relations.values() for e in r.memory if e.round == 7]
    assert all(entries[e.summary, e.importance] is e for e in remembered)
    assert len(entries) <= 4  # two summaries, two importances
    assert memory >= 3 or len(remembered) == 3 * len(OTHERS)  # with room, every edge keeps its


@settings(deadline=None)  # the first example imports numpy
@given(
    st.integers(min_value=0, max_value=2**32),
    st.integers(min_value=0, max_value=4),
    st.integers(min_value=0, max_value=4),
)
def test_a_rounds_edges_evicted_at_once_evict_what_each_agents_would(seed, memory, capacity):
    rng = random.Random(seed)
    names = ["Ann", *OTHERS]
    agents = {n: agent(rng, memory) for n in names}
    for n, a in agents.items():
        a.relations.pop(n, None)
    state = WorldState(round=6, agents=agents)
    rows = []
    for name in names:
        targets = rng.sample([o for o in names if o != name], rng.randint(0, 3))
        rows.append((name, targets, [rng.randint(7, 17) for _ in targets]))
    at_once, one_by_one = Retention(state, capacity), Retention(state, capacity)
    assert at_once.evict(rows) == [one_by_one.evict([row])[0] for row in rows]
    assert at_once.keys.tolist() == one_by_one.keys.tolist()
    assert any(rows) and at_once.evict([]) == []
