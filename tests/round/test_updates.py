"""The update step on columns (engine/round/updates.py, engine/core/columns.py): one round's
changes, applied once, give what the rules give edge by edge on the models, and the models
built from the columns are the validated ones."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.changes import RoundChanges, overrides
from engine.core.columns import StateColumns
from engine.core.needs import NEEDS
from engine.core.rules import apply_emotion, apply_fav, apply_need, next_status, remember
from engine.core.scenario import Status
from engine.core.state import AgentState, MemoryEntry, NeedState, Relation, WorldState
from engine.core.view import AgentsView
from engine.minds.base import Edge, Judgements, NeedRows, RelationJudgement, RoundJudgements
from engine.round.updates import round_changes
from engine.saves.agentcolumns import MovedNeeds
from engine.saves.binround import BLOBS
from engine.saves.columnar import EdgeColumns, StateFrame
from engine.saves.roundfile import RoundFile

NAMES = ["Ann", "Bob", "Cy", "Dee", "Eve"]
SEEDS = st.integers(min_value=0, max_value=2**32)


def world(rng: random.Random, memory: int) -> WorldState:
    """A state whose edges hold up to ``memory`` entries of varied earlier rounds."""

    def relation() -> Relation:
        rounds = sorted(rng.sample(range(1, 7), rng.randint(0, min(memory, 6))))
        return Relation(
            fav=rng.choice([-1.0, -0.45, 0.0, 0.3, 1.0]),
            status=rng.choice(list(Status)),
            memory=[
                MemoryEntry(round=r, summary=f"m{r}", importance=rng.randint(1, 10)) for r in rounds
            ],
        )

    return WorldState(
        round=6,
        agents={
            name: AgentState(
                emotion=rng.choice([0.0, 0.2, 0.5, 1.0]),
                needs={
                    n: NeedState(current=rng.choice([0.0, 5.5, 10.0]), expected=8.0) for n in NEEDS
                },
                relations={o: relation() for o in NAMES if o != name},
                theta=rng.choice([None, 3.0]),
            )
            for name in NAMES
        },
    )


def judgements(rng: random.Random, me: str) -> Judgements:
    others = [o for o in NAMES if o != me]
    edges: dict[str, Edge] = {
        o: RelationJudgement(
            delta=rng.choice([-0.9, -0.3, -0.05, 0.0, 0.12, 0.3, 5.0]),
            status=rng.choice([None, *Status]),
            summary=rng.choice([f"about {o}", "was there"]),
            importance=rng.randint(1, 10),
        ).edge()
        for o in rng.sample(others, rng.randint(0, len(others)))
    }
    needs = {n: rng.choice([-20.0, -0.4, 0.0, 0.25, 3.0]) for n in rng.sample(NEEDS, 5)}
    return Judgements(rng.choice([-1.0, -0.1, 0.0, 0.2, 0.9]), edges, needs)


def by_the_rules(before: WorldState, judged: list[Judgements], capacity: int) -> WorldState:
    """The state the rules give, edge by edge on the models (the reference)."""
    agents = {}
    for (name, old), j in zip(before.agents.items(), judged, strict=True):
        relations = dict(old.relations)
        for other, (delta, override, summary, importance) in j.relations.items():
            rel = old.relations[other]
            _, fav = apply_fav(rel.fav, delta)
            entry = MemoryEntry(round=7, summary=summary, importance=importance)
            relations[other] = Relation(
                fav=fav,
                status=next_status(fav, rel.status, override),
                memory=remember(rel.memory, entry, capacity),
            )
        needs = dict(old.needs)
        for need, change in j.needs.items():
            needs[need] = NeedState(
                current=apply_need(old.needs[need].current, change),
                expected=old.needs[need].expected,
            )
        emotion = apply_emotion(old.emotion, j.emotion)[1]
        agents[name] = AgentState(
            emotion=emotion, needs=needs, relations=relations, theta=old.theta
        )
    return WorldState(round=7, agents=agents)


@settings(deadline=None)  # the first example imports numpy
@given(SEEDS, st.integers(min_value=0, max_value=6), st.integers(min_value=1, max_value=4))
def test_a_rounds_changes_applied_give_what_the_rules_give(seed, memory, capacity):
    """Also for memories over the capacity (a state read from an older save)."""
    rng = random.Random(seed)
    state = world(rng, memory)
    judged = [judgements(rng, name) for name in NAMES]
    before = StateColumns.of(state, capacity)
    changes = round_changes(
        before, 7, capacity, RoundJudgements.of(judged, before.index), [None] * len(NAMES)
    )
    after = before.apply(changes)
    expected = by_the_rules(state, judged, capacity)
    assert after.world().model_dump_json() == expected.model_dump_json()
    # the copy-on-write build and a build of every edge agree
    rebuilt = StateColumns.of(after.world())
    fresh = StateColumns(
        **{f: getattr(rebuilt, f) for f in ("round", "names", "fav", "status")},
        notes=rebuilt.notes,
        memory=rebuilt.memory,
        emotion=rebuilt.emotion,
        needs=rebuilt.needs,
        theta=rebuilt.theta,
    )
    assert fresh.world().model_dump_json() == expected.model_dump_json()
    assert state.model_dump_json() == world(random.Random(seed), memory).model_dump_json()
    # the status changes a round's summary names: built alone, or read from the models
    alone = [changes.flips(limit) for limit in (0, 2, 1000)]
    # the record's changes: one per judged edge, in order, with the real movement
    rows = changes.relation_changes()
    flipped = [c for c in rows if c.status != c.previous_status]
    assert alone == [flipped[:0], flipped[:2], flipped] == [changes.flips(k) for k in (0, 2, 1000)]
    assert [(c.source, c.target) for c in rows] == [
        (name, o) for name, j in zip(NAMES, judged, strict=True) for o in j.relations
    ]
    for c in rows:
        rel = expected.agents[c.source].relations[c.target]
        assert (c.fav, c.status) == (rel.fav, rel.status)
        assert c.delta == round(rel.fav - state.agents[c.source].relations[c.target].fav, 6)


@settings(deadline=None)
@given(SEEDS, st.integers(min_value=0, max_value=6), st.integers(min_value=1, max_value=4))
def test_a_round_file_holds_the_changes_apply_reads(seed, memory, capacity):
    """The changes as the round file stores them (validated, through JSON) apply to the same
    state: resume and history rebuild roll forward what the round played."""
    rng = random.Random(seed)
    state = world(rng, memory)
    judged = [judgements(rng, name) for name in NAMES]
    before = StateColumns.of(state, capacity)
    thetas = [rng.choice([None, 3.0, 9.5]) for _ in NAMES]
    changes = round_changes(before, 7, capacity, RoundJudgements.of(judged, before.index), thetas)
    played = before.apply(changes).world()
    file = RoundFile(
        round=7,
        emotion_changes=changes.emotions,
        edges=EdgeColumns.of_changes(changes),
        need_deltas=changes.need_deltas,
        needs=changes.needs,
        theta=changes.theta,
    )
    read = RoundFile.model_validate_json(file.model_dump_json())
    again = StateColumns.of(state).apply(read.changes(list(state.agents)))
    assert again.world().model_dump_json() == played.model_dump_json()
    assert all(t is None or played.agents[n].theta == t for n, t in zip(NAMES, thetas, strict=True))


@settings(deadline=None)
@given(SEEDS, st.integers(min_value=0, max_value=6), st.integers(min_value=1, max_value=4))
def test_a_keyframe_frame_holds_the_state_it_was_made_of(seed, memory, capacity):
    """A state coded as a keyframe's columns (through JSON) is the same state: every
    edge's favorability, status and memory, and every agent's emotion, needs and theta;
    and a round played on from it is the round played on from the original."""
    rng = random.Random(seed)
    state = world(rng, memory)
    before = StateColumns.of(state, capacity)
    judged = [judgements(rng, name) for name in NAMES]
    changes = round_changes(
        before, 7, capacity, RoundJudgements.of(judged, before.index), [None] * len(NAMES)
    )
    after = before.apply(changes)
    frame = StateFrame.model_validate_json(StateFrame.of(after).model_dump_json())
    read = frame.columns()
    assert read.world().model_dump_json() == after.world().model_dump_json()
    again = round_changes(
        read, 8, capacity, RoundJudgements.of(judged, read.index), [None] * len(NAMES)
    )
    once = round_changes(
        after, 8, capacity, RoundJudgements.of(judged, after.index), [None] * len(NAMES)
    )
    assert (
        read.apply(again).world().model_dump_json() == after.apply(once).world().model_dump_json()
    )


def test_needs_an_agent_lacks_are_skipped_and_the_rest_move_in_the_order_judged():
    """Judged needs in an order unlike the state's, some an agent lacks: each agent's
    moves are the rules' (clipped, the unmoved left out, rounded to 4 places), in the
    order judged, and its lacking needs are skipped."""
    rng = random.Random(4)
    state = world(rng, 2)
    bob = state.agents["Bob"]
    lacking = {NEEDS[0], NEEDS[5]}
    bob = bob.model_copy(update={"needs": {n: v for n, v in bob.needs.items() if n not in lacking}})
    state = state.model_copy(update={"agents": {**state.agents, "Bob": bob}})
    changes_of = [0.5, -20.0, 0.0, 3.0, -0.25, 11.0, 1e-9]
    judged = [
        Judgements(0.0, {}, {n: changes_of[(k + i) % 7] for i, n in enumerate(reversed(NEEDS))})
        for k in range(len(NAMES))
    ]
    before = StateColumns.of(state, 3)
    changes = round_changes(
        before, 7, 3, RoundJudgements.of(judged, before.index), [None] * len(NAMES)
    )
    for name, j in zip(NAMES, judged, strict=True):
        needs = state.agents[name].needs
        moves, now = {}, {}
        for need, change in j.needs.items():
            if need in needs:
                value = apply_need(needs[need].current, change)
                if value != needs[need].current:
                    moves[need] = round(value - needs[need].current, 4)
                    now[need] = value
        assert list(changes.need_deltas[name].items()) == list(moves.items())
        assert list(changes.needs.get(name, {}).items()) == list(now.items())
    assert lacking.isdisjoint(changes.need_deltas["Bob"]) and changes.need_deltas["Bob"]


@settings(deadline=None)
@given(SEEDS)
def test_needs_judged_as_one_matrix_move_as_they_do_one_by_one(seed):
    """The offline judge's matrix of need deltas (NeedRows) changes what its rows, read as
    dicts, change one by one: the same clipping, movements, rounding, order and theta (the
    agents holding their needs in an order of their own, not the rules')."""
    rng = random.Random(seed)
    state = world(rng, 2)
    order = rng.sample(NEEDS, len(NEEDS))
    agents = {
        name: a.model_copy(update={"needs": {n: a.needs[n] for n in order}})
        for name, a in state.agents.items()
    }
    before = StateColumns.of(state.model_copy(update={"agents": agents}), 3)
    choices = [-20.0, -0.4, -0.0, 0.0, 1e-9, 0.25, 0.33335, 3.0, 11.0]
    kept = np.array([[rng.choice(choices) for _ in NEEDS] for _ in NAMES])
    rows = NeedRows(order, kept, np.array([[rng.random() < 0.7 for _ in NEEDS] for _ in NAMES]))
    thetas = [rng.choice([None, 3.0, 4.5]) for _ in NAMES]
    judged = RoundJudgements.of([Judgements(0.0, {}, {}) for _ in NAMES], before.index)

    def changed(needs):
        changes = round_changes(before, 7, 3, judged._replace(needs=needs), thetas)
        moved = (changes.need_deltas, changes.needs, {"": changes.theta})
        return [[(name, list(each.items())) for name, each in d.items()] for d in moved]

    assert changed(rows) == changed(list(rows))
    # the round file's columns as the matrix gives them: those the dicts give
    changes = round_changes(before, 7, 3, judged._replace(needs=rows), thetas)
    assert changes.moved_columns is not None
    assert round_changes(before, 7, 3, judged, thetas).moved_columns is None  # dicts: none
    given = MovedNeeds.of(changes.need_deltas, changes.needs, changes.moved_columns)
    made = MovedNeeds.of(changes.need_deltas, changes.needs)
    assert given.model_dump_json() == made.model_dump_json()
    blobs: tuple[list, list] = ([], [])  # as a binary round file writes them
    assert given.model_dump_json(context={BLOBS: blobs[0]}) == made.model_dump_json(
        context={BLOBS: blobs[1]}
    )
    assert [b.tobytes() for b in blobs[0]] == [b.tobytes() for b in blobs[1]]
    assert [c.dtype for c in (given.count, given.kind, given.delta, given.current)] == [
        c.dtype for c in (made.count, made.kind, made.delta, made.current)
    ]
    # dicts no longer in the columns' order (or of other agents): the dicts are read
    turned = dict(reversed(changes.need_deltas.items()))
    read = MovedNeeds.of(turned, changes.needs, changes.moved_columns)
    assert read is not None
    assert read.model_dump_json() == MovedNeeds.of(turned, changes.needs).model_dump_json()


def test_a_round_without_changes_leaves_the_state():
    rng = random.Random(3)
    state = world(rng, 3)
    after = StateColumns.of(state).apply(RoundChanges.none(7, NAMES))
    assert after.world().agents == state.agents
    assert after.world().round == 7


@settings(deadline=None)
@given(SEEDS)
def test_a_round_builds_models_only_for_the_edges_it_changed(seed):
    """The state after a round shares every untouched edge's model with the state before
    (copy-on-write): a round's model work is its triggered edges', not all N(N-1)."""
    rng = random.Random(seed)
    state = world(rng, 3)
    judged = [judgements(rng, name) for name in NAMES]
    before = StateColumns.of(state, 3)
    after = before.apply(
        round_changes(before, 7, 3, RoundJudgements.of(judged, before.index), [None] * len(NAMES))
    ).world()
    for name, j in zip(NAMES, judged, strict=True):
        for other, rel in after.agents[name].relations.items():
            assert (rel is state.agents[name].relations[other]) is (other not in j.relations)


def test_a_round_builds_no_memory_entry_until_one_is_read(monkeypatch):
    """The notes a round remembers are kept as text, round and importance: no
    :class:`MemoryEntry` is validated while rounds are played. An edge's memory read
    through the view builds its entries once, equal to those of the state built as
    models, and the states after it keep them (no entry is validated twice)."""
    import engine.core.notes as notes

    rng = random.Random(11)
    state = StateColumns.of(world(rng, 2), 3)
    built: list[int] = []
    real = notes.memory_entries

    def counted(rounds, summaries, importance):
        built.append(len(rounds))
        return real(rounds, summaries, importance)

    monkeypatch.setattr(notes, "memory_entries", counted)
    for t in range(7, 12):
        judged = [judgements(rng, name) for name in NAMES]
        index = state.index
        changes = round_changes(state, t, 3, RoundJudgements.of(judged, index), [None] * 5)
        state = state.apply(changes)
    assert built == []
    edges = AgentsView(state)["Ann"].relations
    memories = {other: edges[other].memory for other in NAMES[1:]}
    read = sum(built)
    assert 0 < read <= sum(map(len, memories.values()))
    assert {other: edges[other].memory for other in NAMES[1:]} == memories
    assert sum(built) == read  # read again: nothing built
    assert {o: r.memory for o, r in state.world().agents["Ann"].relations.items()} == memories
    read = sum(built)
    judged = [judgements(rng, name) for name in NAMES]
    changes = round_changes(state, 12, 3, RoundJudgements.of(judged, state.index), [None] * 5)
    later = state.apply(changes)
    now = [edge.memory for edge in AgentsView(later)["Ann"].relations.values()]
    assert [e for memory in now for e in memory if e.round < 12]
    ann = later.memory[0]
    new = np.unique(ann[later.notes.rounds[ann] == 12])
    assert sum(built) - read == len(new) > 0  # only the new round's entries built


def test_the_notes_table_stays_bounded_and_dropping_notes_changes_no_state(monkeypatch):
    """Each round adds its entries to the state's notes; those no memory slot holds any
    more are dropped once they are most of the table. Over many rounds the table stays
    within twice the live notes (plus the slack), and a run that drops them at every
    chance holds the same states as one that never does."""
    import engine.core.notes as notes

    def play(slack: int) -> list[str]:
        monkeypatch.setattr(notes, "COMPACT_AFTER", slack)
        rng = random.Random(5)
        state = StateColumns.of(world(rng, 2), 3)
        states, sizes = [], []
        for t in range(8, 48):
            judged = [judgements(rng, name) for name in NAMES]
            changes = round_changes(
                state, t, 3, RoundJudgements.of(judged, state.index), [None] * len(NAMES)
            )
            state = state.apply(changes)
            states.append(state.world().model_dump_json())
            sizes.append((len(state.notes), state.notes.live))
        live_most = max(len(NAMES) * (len(NAMES) - 1) * 3 + 1, max(live for _, live in sizes))
        assert all(size <= 2 * live_most + slack + len(NAMES) ** 2 for size, _ in sizes)
        return states

    assert play(0) == play(10**9)


def merged_by_hand(
    judged: list[Judgements], extra: dict[int, dict[str, Edge]]
) -> list[tuple[str, str, float, Status | None, str, int]]:
    """Extra edges merged observer by observer, as a loop would (the reference)."""
    rows = []
    for k, (name, j) in enumerate(zip(NAMES, judged, strict=True)):
        mine = {o: list(edge) for o, edge in j.relations.items()}
        for other, (d, o, note, imp) in extra.get(k, {}).items():
            if other in mine:
                mine[other][0] = round(mine[other][0] + d, 4)
                if mine[other][3] < imp:
                    mine[other][2], mine[other][3] = note, imp
            else:
                mine[other] = [d, o, note, imp]
        rows += [(name, other, *edge) for other, edge in mine.items()]  # type: ignore[misc]
    return rows


@given(SEEDS)
def test_extra_edges_merge_into_their_observers_edges(seed):
    """An event's edge adds to an edge judged already (rounded to 4 places) and keeps the
    more important note; a new one follows its observer's edges."""
    rng = random.Random(seed)
    judged = [judgements(rng, name) for name in NAMES]
    extra = {
        k: {
            o: (rng.choice([-0.33333, 0.1, 0.00005]), None, f"blame {o}", rng.randint(1, 10))
            for o in rng.sample([o for o in NAMES if o != NAMES[k]], rng.randint(0, 3))
        }
        for k in rng.sample(range(len(NAMES)), rng.randint(0, len(NAMES)))
    }
    index = {name: k for k, name in enumerate(NAMES)}
    edges = RoundJudgements.of(judged, index).edges.with_extra(extra, np.arange(len(NAMES)), index)
    got = list(
        zip(
            [NAMES[i] for i in edges.source.tolist()],
            [NAMES[j] for j in edges.target.tolist()],
            edges.delta.tolist(),
            overrides(edges.override),
            [edges.notes[c] for c in edges.note.tolist()],
            edges.importance.tolist(),
            strict=True,
        )
    )
    assert got == merged_by_hand(judged, extra)


@settings(deadline=None)
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=20),
    st.floats(-2.0, 0.0),
    st.floats(0.0, 2.0),
)
def test_clipped_arrays_are_clip_value_by_value(values, low, high):
    """NaN stays NaN and -0.0 stays -0.0, as ``clip`` leaves them."""
    from engine.core.rules import clip
    from engine.round.updates import clipped

    out = clipped(np.array(values, float), low, high).tolist()
    want = [clip(v, low, high) for v in values]
    assert [repr(v) for v in out] == [repr(v) for v in want]


@pytest.mark.parametrize("chunk", [1, 2, 5])
@pytest.mark.parametrize("seed", range(8))
def test_rings_worked_out_a_few_edges_at_a_time_give_what_the_rules_give(
    monkeypatch: pytest.MonkeyPatch, seed: int, chunk: int
) -> None:
    """Memory rings are remade a chunk of edges at a time; one that outgrows its slots in a
    later chunk widens every edge's, those of the chunks before it too (slots as many as
    the longest memory, as a keyframe read from a save holds, and a larger capacity)."""
    import engine.core.columns as columns

    rng = random.Random(seed)
    state = world(rng, rng.randint(0, 4))
    judged = [judgements(rng, name) for name in NAMES]
    before = StateColumns.of(state)
    changes = round_changes(
        before, 7, 6, RoundJudgements.of(judged, before.index), [None] * len(NAMES)
    )
    whole = before.apply(changes)
    monkeypatch.setattr(columns, "CHUNK", chunk)
    after = before.apply(changes)
    assert after.world().model_dump_json() == by_the_rules(state, judged, 6).model_dump_json()
    assert after.memory.tolist() == whole.memory.tolist()  # (empty slots in front)
