"""Property tests: invariants of offline runs over random seeds and small random scenarios."""

from __future__ import annotations

import asyncio
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import ALL, ForcedAction, Mode, SaveStore, Simulation
from engine.core.needs import NEEDS
from engine.core.rules import MAX_EMOTION_DELTA, MAX_FAV_DELTA, next_status
from engine.core.scenario import Archetype, Scenario, Status, parse_scenario
from engine.core.state import RoundRecord
from engine.saves.runmeta import Lineage

POOL = ["Ann", "Bob", "Cy", "Dee", "Eve", "Fay"]
PROPS = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

unit = st.floats(0.0, 1.0, allow_nan=False)
signed = st.floats(-1.0, 1.0, allow_nan=False)
need_value = st.floats(0.0, 10.0, allow_nan=False)


@st.composite
def scenarios(draw) -> Scenario:
    n = draw(st.integers(2, 6))
    names = POOL[:n]
    rounds = draw(st.integers(2, 6))
    agents = []
    for name in names:
        needs = draw(
            st.dictionaries(
                st.sampled_from(NEEDS),
                st.fixed_dictionaries({"current": need_value, "expected": need_value}),
                max_size=4,
            )
        )
        agents.append(
            {
                "name": name,
                "role": "member",
                "archetype": draw(st.sampled_from([a.value for a in Archetype])),
                "emotion": draw(unit),
                "talking_points": draw(st.lists(st.sampled_from(["p1", "p2", "p3"]), max_size=2)),
                "private_info": draw(st.lists(st.sampled_from(["s1", "s2"]), max_size=1)),
                "needs": needs,
            }
        )
    relations = []
    for i in names:
        for j in names:
            if i != j and draw(st.booleans()):
                rel = {"from": i, "to": j, "fav": draw(signed)}
                status = draw(st.none() | st.sampled_from([s.value for s in Status]))
                if status is not None:
                    rel["status"] = status
                relations.append(rel)
    events = [
        {
            "round": draw(st.integers(1, rounds)),
            "text": draw(st.sampled_from(["A crisis hits.", "Good news, thanks all.", "Rumours."])),
            "private_to": draw(st.none() | st.lists(st.sampled_from(names), min_size=1)),
        }
        for _ in range(draw(st.integers(0, 3)))
    ]
    for event in events:
        if event["private_to"] is None:
            del event["private_to"]
    return parse_scenario(
        {
            "title": "Generated",
            "rounds": rounds,
            "memory_size": draw(st.integers(1, 4)),
            "agents": agents,
            "relations": relations,
            "events": events,
        },
        "generated",
    )


seeds = st.integers(0, 2**32 - 1)


def play(scenario: Scenario, seed: int, store: SaveStore | None = None, **kw) -> Simulation:
    sim = Simulation.new(scenario, seed=seed, store=store, **kw)
    asyncio.run(sim.run())
    return sim


def app_b(fav: float, current: Status, override: Status | None) -> Status:
    """Sociodrama App. B, written out independently of engine.core.rules."""
    if override is not None:
        return override
    if fav >= 0.55:
        return Status.ALLY
    if fav <= -0.5:
        return Status.ENEMY
    if -0.5 < fav <= -0.1:
        return Status.RIVAL
    return current


def check_initial(scenario: Scenario, rec: RoundRecord) -> None:
    assert rec.round == 0
    given = {(r.source, r.target): r for r in scenario.relations}
    for spec in scenario.agents:
        agent = rec.state.agents[spec.name]
        assert agent.emotion == spec.emotion
        assert set(agent.relations) == set(scenario.names) - {spec.name}
        for other, rel in agent.relations.items():
            r = given.get((spec.name, other))
            assert rel.fav == (r.fav if r else 0.0)
            expected = r.status if r and r.status else app_b(rel.fav, Status.NEUTRAL, None)
            assert rel.status == expected
            assert rel.memory == []


def check_round(prev: RoundRecord, rec: RoundRecord, memory_size: int) -> None:
    assert rec.state.round == rec.round == prev.round + 1
    changes = {(c.source, c.target): c for c in rec.relation_changes}
    emotions = {c.agent: c for c in rec.emotion_changes}
    for name, agent in rec.state.agents.items():
        old = prev.state.agents[name]
        assert 0.0 <= agent.emotion <= 1.0
        e = emotions[name]
        assert abs(e.delta) <= MAX_EMOTION_DELTA
        assert agent.emotion == e.emotion
        assert abs(e.delta - (agent.emotion - old.emotion)) < 1e-6  # the real movement
        assert set(agent.needs) == set(NEEDS)
        for need, value in agent.needs.items():
            assert 0.0 <= value.current <= 10.0
            assert value.expected == old.needs[need].expected
        for other, rel in agent.relations.items():
            before = old.relations[other]
            assert -1.0 <= rel.fav <= 1.0
            assert len(rel.memory) <= memory_size
            change = changes.get((name, other))
            if change is None:
                assert rel == before
                continue
            assert abs(change.delta) <= MAX_FAV_DELTA
            assert rel.fav == change.fav
            assert abs(change.delta - (rel.fav - before.fav)) < 1e-6  # the real movement
            assert change.previous_status == before.status
            assert rel.status == change.status
            assert rel.status == next_status(rel.fav, before.status, change.override)
            assert rel.status == app_b(rel.fav, before.status, change.override)
            fresh = [m for m in rel.memory if m.round == rec.round]
            assert len(fresh) <= 1
            if len(before.memory) < memory_size:
                assert len(rel.memory) == len(before.memory) + 1 and fresh
            rounds = [m.round for m in rel.memory]
            assert rounds == sorted(rounds)


@st.composite
def interventions(draw, names: list[str]) -> ForcedAction | None:
    if draw(st.booleans()):
        return None
    agent = draw(st.sampled_from(names))
    others = [n for n in names if n != agent]
    mode = draw(st.sampled_from(list(Mode)))
    if mode is Mode.SILENT:
        return ForcedAction(agent=agent, mode=mode)
    target = draw(st.sampled_from([*others, ALL] if mode is Mode.PUBLIC else others))
    text = draw(st.sampled_from(["Thanks, you are right.", "That is a lie!", "Hm.", "No. Never."]))
    return ForcedAction(agent=agent, mode=mode, target=target, utterance=text)


@PROPS
@given(scenario=scenarios(), seed=seeds, data=st.data())
def test_offline_runs_keep_every_invariant(scenario: Scenario, seed: int, data):
    sim = Simulation.new(scenario, seed=seed)
    check_initial(scenario, sim.records[0])
    while not sim.finished:
        forced = data.draw(interventions(scenario.names), label=f"force {sim.round + 1}")
        if forced is not None:
            sim.force(forced)
        asyncio.run(sim.step())
    assert sim.round == scenario.rounds
    for prev, rec in zip(sim.records, sim.records[1:], strict=False):
        check_round(prev, rec, scenario.memory_size)
        assert [a.speaker for a in rec.actions] == scenario.names
        orders = sorted(a.order for a in rec.actions if a.order is not None)
        assert orders == list(range(1, len(orders) + 1))


@PROPS
@given(scenario=scenarios(), seed=seeds)
def test_same_seed_gives_identical_saved_records(scenario: Scenario, seed: int):
    dumps = []
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        for folder in (one, two):
            store = SaveStore(folder)
            sim = play(scenario, seed, store, run_id="run")
            sim.close()
            saved = [r.model_dump(mode="json") for r in store.read_rounds("run")]
            assert saved == [r.model_dump(mode="json") for r in sim.records]
            dumps.append(saved)
    assert dumps[0] == dumps[1]


@PROPS
@given(scenario=scenarios(), seed=seeds, data=st.data())
def test_branch_then_continue_equals_continue(scenario: Scenario, seed: int, data):
    t = data.draw(st.integers(1, scenario.rounds), label="t")
    k = data.draw(st.integers(0, t - 1), label="k")
    with tempfile.TemporaryDirectory() as folder:
        store = SaveStore(folder)
        with Simulation.new(scenario, seed=seed, store=store, run_id="orig") as sim:
            asyncio.run(sim.run(t))
            with sim.branch(at_round=k, run_id="fork") as fork:
                assert fork.round == k
                assert fork.meta.parent == Lineage(run_id="orig", round=k)
                asyncio.run(fork.run(1))  # the branch as returned by Simulation.branch ...
            with Simulation.resume("fork", store) as fork:  # ... then reopened with a new mind
                asyncio.run(fork.run(t - k - 1))
                assert fork.round == t
                for n in range(k + 1, t + 1):
                    mine, theirs = fork.records[n], sim.records[n]
                    assert mine.state == theirs.state
                    assert mine.actions == theirs.actions
                    assert mine.model_dump() == theirs.model_dump()
            assert store.read_round("fork", t) == store.read_round("orig", t)
