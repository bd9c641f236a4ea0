"""Save format 3 and the run's history (engine/saves/roundfile.py, engine/saves/runfiles.py,
engine/saves/history.py): states rebuilt from keyframes and changes equal the played ones, the
history reads only what it is asked for, memory holds a bounded window, branches link their
parent's files, and the index is a cache the round files can always rebuild."""

from __future__ import annotations

import asyncio
import errno
import gc
import gzip
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest
from cast import count_reads
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.saves.runfiles
from engine import ALL, ForcedAction, Mode, SaveStore, Scenario, Simulation
from engine.core.columns import StateColumns
from engine.core.metrics import metrics_series
from engine.core.played import PlayedRound
from engine.core.scenario import Archetype, parse_scenario
from engine.core.state import RoundRecord, WorldState
from engine.reports.export import export_run
from engine.round.simulation import HELD_ROUNDS
from engine.saves.roundfile import KEYFRAME_EVERY
from engine.saves.runfiles import INDEX_FILE, RunFiles

POOL = ["Ann", "Bob", "Cy", "Dee", "Eve"]
TRAITS = ["quite timid", "moderately sociable", "extremely competitive", "slightly resilient"]
TEXTS = ["A crisis hits.", "Good news, thanks all.", "Rumours spread.", "The roof leaks."]
LINES = ["We vote tonight.", "I will not back down.", "Thank you, all of you.", "You lied."]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """2-5 agents (some value-driven), memory of 1-3 entries, long enough to pass keyframes."""
    names = POOL[: draw(st.integers(2, 5))]
    agents = []
    for name in names:
        agent: dict = {
            "name": name,
            "role": "member",
            "archetype": draw(st.sampled_from([a.value for a in Archetype])),
            "emotion": draw(st.floats(0.0, 1.0)),
            "talking_points": ["the budget is fixed", "the roof cannot wait"],
        }
        if draw(st.booleans()):
            agent["kind"] = "value-driven"
            agent["traits"] = draw(st.lists(st.sampled_from(TRAITS), min_size=1, unique=True))
            agent["svo"] = draw(st.sampled_from(["prosocial", "competitive", "altruistic"]))
        agents.append(agent)
    relations = [
        {"from": i, "to": j, "fav": draw(st.floats(-1.0, 1.0))}
        for i in names
        for j in names
        if i != j and draw(st.booleans())
    ]
    half = len(names) // 2
    return parse_scenario(
        {
            "title": "Generated",
            "rounds": 30,
            "memory_size": draw(st.integers(1, 3)),
            "agents": agents,
            "relations": relations,
            "factions": {"a": names[:half], "b": names[half:]} if half else {},
            "events": [{"round": 2, "text": "The notary calls.", "private_to": names[:1]}],
        },
        "generated",
    )


#: What happens before a round: nothing, an intervention, or closing and reopening the run.
Op = tuple[str, int, int, int]
ops = st.tuples(
    st.sampled_from(["step", "step", "force", "inject", "reopen"]),
    st.integers(0, 4),
    st.integers(0, 4),
    st.integers(0, 3),
)


def forced(scenario: Scenario, who: int, whom: int, line: int) -> ForcedAction:
    names = scenario.names
    agent = names[who % len(names)]
    others = [n for n in names if n != agent]
    mode = [Mode.PUBLIC, Mode.PRIVATE, Mode.SILENT][line % 3]
    if mode is Mode.SILENT:
        return ForcedAction(agent=agent, mode=mode)
    target = ALL if mode is Mode.PUBLIC and whom % 2 else others[whom % len(others)]
    return ForcedAction(agent=agent, mode=mode, target=target, utterance=LINES[line])


async def play(sim: Simulation, store: SaveStore, plan: list[Op], held: list[WorldState]):
    """Play ``plan`` on ``sim`` (one round per op), noting the state after every round."""
    for op, a, b, c in plan:
        if sim.finished:
            break
        if op == "force":
            sim.force(forced(sim.scenario, a, b, c))
        elif op == "inject":
            private = [sim.scenario.names[a % len(sim.scenario.names)]] if b % 2 else None
            sim.inject(TEXTS[c], private)
        elif op == "reopen":
            sim.close()
            sim = Simulation.resume(sim.run_id, store)
            assert sim.state == held[-1]
        await sim.step()
        held.append(sim.state)
    return sim


def table_values(c: StateColumns) -> tuple:
    """What tables show of a state held as columns."""
    needs = [{k: (v.current, v.expected) for k, v in a.items()} for a in c.needs]
    return (c.round, c.names, c.fav.tolist(), c.status.tolist(), c.emotion, needs)


def assert_rebuilt(store: SaveStore, run_id: str, held: list[WorldState], scenario: Scenario):
    """Every way of reading the save gives back the states the simulation held, exactly."""
    played = [s.model_dump_json() for s in held]
    history = store.history(run_id)
    assert [s.model_dump_json() for s in history.states()] == played
    order = list(range(len(held)))
    random.Random(len(held)).shuffle(order)
    fresh = store.history(run_id)  # random access, rolling from keyframes or the last read
    for n in order:
        assert fresh[n].state.model_dump_json() == played[n], n
    assert history.metrics_series() == metrics_series(scenario, held)
    start = len(held) // 2  # the values tables show, rolled forward without building states
    for memory in (True, False):  # with the memories or without: the same values
        rows = history.values(start, memory=memory)
        for (log, values, changes), state in zip(rows, held[start:], strict=True):
            assert log.round == state.round == changes.round
            assert table_values(values) == table_values(StateColumns.of(state))
            assert memory or values.width == 0  # no memory entry read


PROPS = settings(
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@PROPS
@given(
    scenario=scenarios(),
    seed=st.integers(0, 2**32 - 1),
    ablation=st.sampled_from([False, False, False, True]),
    plan=st.lists(ops, min_size=1, max_size=24),
    fork=st.none() | st.tuples(st.integers(0, 24), st.lists(ops, min_size=1, max_size=14)),
)
def test_rebuilt_states_equal_the_played_states(
    scenario: Scenario,
    seed: int,
    ablation: bool,
    plan: list[Op],
    fork: tuple[int, list[Op]] | None,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SaveStore(tmp)

        async def scenario_run() -> None:
            sim = Simulation.new(scenario, seed=seed, store=store, run_id="run", ablation=ablation)
            held = [sim.state]
            sim = await play(sim, store, plan, held)
            assert list(sim.records) == list(store.history("run"))
            live = zip(sim.records.values(), held, strict=True)  # held rounds, then the save's
            assert all(
                table_values(values) == table_values(StateColumns.of(state))
                for (_, values, _), state in live
            )
            branch_held = None
            if fork is not None:
                at = min(fork[0], sim.round)
                kid = sim.branch(at, run_id="kid")
                branch_held = held[: at + 1]
                kid = await play(kid, store, fork[1], branch_held)
                kid.close()
            sim.close()
            assert_rebuilt(store, "run", held, scenario)
            if branch_held is not None:
                assert_rebuilt(store, "kid", branch_held, scenario)

        asyncio.run(scenario_run())


# -- the format ------------------------------------------------------------------------


async def played(store: SaveStore, scenario: Scenario, run_id: str, rounds: int) -> Simulation:
    sim = Simulation.new(scenario, seed=4, store=store, run_id=run_id, rounds=rounds)
    await sim.run()
    sim.close()
    return sim


def file_json(store: SaveStore, run_id: str, n: int) -> bytes:
    return gzip.decompress(store.files(run_id).path(n).read_bytes())


async def test_keyframes_every_k_rounds_and_changes_only_between(
    store: SaveStore, mini: Scenario
) -> None:
    await played(store, mini, "r", 2 * KEYFRAME_EVERY + 3)
    files = store.files("r")
    keyframes = [n for n in files.numbers() if files.read(n).keyframe is not None]
    assert keyframes == [0, KEYFRAME_EVERY, 2 * KEYFRAME_EVERY]
    # a round between keyframes holds no state, and is smaller than one that does
    assert b'"keyframe":null' in file_json(store, "r", 3)
    assert b'"keyframe":null' not in file_json(store, "r", KEYFRAME_EVERY)
    assert len(file_json(store, "r", 3)) < len(file_json(store, "r", KEYFRAME_EVERY)) * 0.6


async def test_the_index_holds_each_rounds_metrics_size_and_checksum(
    store: SaveStore, mini: Scenario
) -> None:
    sim = await played(store, mini, "r", 12)
    entries = store.files("r").load_index(mini)
    assert [e.round for e in entries] == list(range(13))
    assert [e.keyframe for e in entries] == [n % KEYFRAME_EVERY == 0 for n in range(13)]
    assert [e.size for e in entries] == [store.files("r").path(n).stat().st_size for n in range(13)]
    assert [e.metrics for e in entries] == metrics_series(mini, [r.state for r in sim.records])


# -- memory and lazy reading -------------------------------------------------------------


def live_records() -> int:
    """Rounds alive in memory: records, and rounds as played (their records not built)."""
    gc.unfreeze()  # frozen objects are not listed
    gc.collect()
    return sum(isinstance(o, RoundRecord | PlayedRound) for o in gc.get_objects())


def built_records() -> int:
    gc.unfreeze()
    gc.collect()
    return sum(isinstance(o, RoundRecord) for o in gc.get_objects())


async def test_playing_builds_no_record_until_one_is_read(mini: Scenario) -> None:
    """A round's pydantic record (every relation change, the whole state) is built where it
    leaves the engine, not by playing: run() builds none, reading a round builds its own."""
    sim = Simulation.new(mini, seed=2, rounds=6)
    base = built_records()
    await sim.run()
    assert built_records() == base
    assert sim.history[3].round == 3 and sim.history[3] is sim.history[3]
    assert built_records() == base + 1
    assert sim.history[3].state.round == 3


async def test_a_saved_run_holds_only_its_last_rounds(store: SaveStore, mini: Scenario) -> None:
    base = live_records()
    sim = Simulation.new(mini, seed=2, store=store, run_id="r", rounds=25)
    with pytest.MonkeyPatch.context() as mp:
        reads = count_reads(mp)
        await sim.run()
        assert reads == []  # playing never reads the save back
        assert live_records() - base == HELD_ROUNDS  # and holds only the last rounds
        recent = [r.round for r in sim.records[-HELD_ROUNDS:]]
        assert recent == list(range(26 - HELD_ROUNDS, 26)) and reads == []
        assert sim.records[3].round == 3
        assert 0 < len(reads) <= 4  # from the keyframe at round 0
        reads.clear()
        assert sim.records[4].round == 4
        assert reads == [4]  # on from the round read last
        reads.clear()
        assert [r.round for r in sim.records.logs(10, 13)] == [10, 11, 12]
        assert reads == [10, 11, 12]  # logs rebuild nothing
        reads.clear()
        assert [m.round for m in sim.records.metrics_series()] == list(range(26))
        assert reads == []  # the metrics come from the index
    sim.close()


async def test_iterating_streams_one_round_at_a_time(store: SaveStore, mini: Scenario) -> None:
    sim = await played(store, mini, "r", 24)
    history = store.history("r")
    view = history[5:20]
    assert len(view) == 15 and view[0].round == 5 and view[-1].round == 19
    assert [r.round for r in view[::5]] == [5, 10, 15]
    assert view == list(sim.records)[5:20]
    assert history == list(sim.records) and list(sim.records) == history
    with pytest.raises(IndexError):
        history[25]


async def test_an_unsaved_run_keeps_every_round(mini: Scenario) -> None:
    sim = Simulation.new(mini, seed=1, rounds=12)
    await sim.run()
    assert [r.round for r in sim.records] == list(range(13))
    assert sim.records.metrics_series() == metrics_series(mini, [r.state for r in sim.records])
    assert sim.metrics(5) == sim.records.metrics(5)


# -- show, list, export read only what they need -----------------------------------------


async def test_list_reads_each_round_file_once(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = await played(store, mini, "r", 5)
    loads: list[int] = []
    real = RunFiles._load

    def load(files: RunFiles, n: int, entry: object = None) -> object:
        loads.append(n)
        return real(files, n, entry)  # type: ignore[arg-type]

    monkeypatch.setattr(RunFiles, "_load", load)
    for _ in range(2):
        (row,) = store.list_runs()
        assert (row.ok, row.rounds_done, row.metrics) == (True, 5, sim.metrics())
    assert loads == [0, 1, 2, 3, 4, 5]  # the second list trusts the verdicts of the first
    os.utime(store.files("r").path(3))  # touched: its change time moved, so read again
    store.list_runs()
    assert loads == [0, 1, 2, 3, 4, 5, 3]


async def test_list_flags_a_damaged_middle_round_from_its_size(
    store: SaveStore, mini: Scenario
) -> None:
    await played(store, mini, "r", 5)
    path = store.files("r").path(2)
    path.write_bytes(path.read_bytes()[:-7])
    (row,) = store.list_runs()
    assert not row.ok
    assert str(path) in row.reason and "damaged" in row.reason
    with pytest.raises(engine.saves.runfiles.SaveError, match="damaged round file"):
        list(store.history("r"))


async def test_a_bit_flip_is_caught_by_the_checksum(store: SaveStore, mini: Scenario) -> None:
    await played(store, mini, "r", 3)
    path = store.files("r").path(1)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(
        engine.saves.runfiles.SaveError, match=r"000001\.json\.gz: damaged round file"
    ):
        store.read_round("r", 1)


async def test_show_reads_the_rounds_it_prints_and_no_others(
    run_cli, store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    await played(store, mini, "r", 2 * KEYFRAME_EVERY + 4)
    reads: list[int] = []
    real = RunFiles._load

    def counted(self: RunFiles, n: int, entry=None):
        reads.append(n)
        return real(self, n, entry)

    monkeypatch.setattr(RunFiles, "_load", counted)
    printed = list(range(2 * KEYFRAME_EVERY, 2 * KEYFRAME_EVERY + 5))
    result = run_cli("show", "r", "--saves", str(store.root))
    assert result.code == 0, result.err
    # The whole run is checked first: the rounds no verdict of the writer covers (round 0,
    # written while staged, and those after the last keyframe) are read once.
    assert reads == [0, *printed[1:], *printed]
    reads.clear()
    assert run_cli("show", "r", "--saves", str(store.root)).code == 0
    assert reads == printed
    reads.clear()
    assert run_cli("show", "r", "--round", "3", "--saves", str(store.root)).code == 0
    assert reads == [0, 1, 2, 3]


async def test_export_from_the_index_equals_export_from_the_states(
    store: SaveStore, mini: Scenario, tmp_path: Path
) -> None:
    sim = await played(store, mini, "r", 14)
    meta = store.read_meta("r")
    from_save = export_run(meta, store.history("r"), tmp_path / "a")
    from_list = export_run(meta, list(sim.records), tmp_path / "b")
    assert [p.read_bytes() for p in from_save] == [p.read_bytes() for p in from_list]


# -- branches ------------------------------------------------------------------------------


async def test_branch_links_the_parents_rounds_and_writes_a_keyframe(
    store: SaveStore, mini: Scenario
) -> None:
    parent = await played(store, mini, "p", 14)
    rounds, metrics = list(parent.records), parent.metrics(13)
    store.branch("p", at_round=13, new_id="kid")
    kid = store.files("kid")
    for n in range(13):
        assert os.path.samefile(kid.path(n), store.files("p").path(n))
    assert not os.path.samefile(kid.path(13), store.files("p").path(13))
    assert kid.read(13).keyframe is not None
    shutil.rmtree(store.run_dir("p"))
    assert list(store.history("kid")) == rounds[:14]
    with Simulation.resume("kid", store) as sim:
        assert sim.state == rounds[13].state
        assert sim.metrics() == metrics


async def test_branch_copies_where_links_fail(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = await played(store, mini, "p", 4)

    def no_links(src: object, dst: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_links)
    store.branch("p", at_round=3, new_id="kid")
    assert not os.path.samefile(store.files("kid").path(1), store.files("p").path(1))
    assert list(store.history("kid")) == list(parent.records)[:4]


# -- the index is a cache of the round files -----------------------------------------------


async def test_a_missing_index_line_after_a_kill_is_rebuilt(
    store: SaveStore, mini: Scenario
) -> None:
    sim = await played(store, mini, "r", 6)
    index = store.run_dir("r") / INDEX_FILE
    lines = index.read_bytes().splitlines(keepends=True)
    index.write_bytes(b"".join(lines[:-1]) + lines[-1][:20])  # killed while appending
    assert store.history("r") == list(sim.records)
    assert store.list_runs()[0].rounds_done == 6
    with Simulation.resume("r", store) as again:
        again.extend(1)
        await again.step()
    entries, whole = store.files("r").index_lines()
    assert whole and [e.round for e in entries] == list(range(8))


async def test_a_lost_index_is_rebuilt_from_the_round_files(
    store: SaveStore, mini: Scenario
) -> None:
    sim = await played(store, mini, "r", 12)
    before = (store.run_dir("r") / INDEX_FILE).read_bytes()
    (store.run_dir("r") / INDEX_FILE).unlink()
    assert store.history("r").metrics_series() == sim.records.metrics_series()
    with Simulation.resume("r", store) as again:
        again.extend(1)
        await again.step()
    rebuilt = (store.run_dir("r") / INDEX_FILE).read_bytes()
    assert rebuilt.startswith(before)


def test_a_saved_run_reads_back_as_an_unsaved_one_played(mini: Scenario) -> None:
    sim = Simulation.new(mini, seed=5, rounds=6)
    asyncio.run(sim.run())
    records: list[RoundRecord] = list(sim.records)
    with tempfile.TemporaryDirectory() as tmp:
        store = SaveStore(tmp)
        Simulation.new(mini, seed=5, store=store, run_id="r", rounds=6).close()
        with Simulation.resume("r", store) as again:
            asyncio.run(again.run())
        assert [store.read_round("r", n) for n in range(7)] == records


# -- opening a run: what the first screen reads ----------------------------------------------


async def test_resume_rolls_the_state_from_the_last_keyframe_only(
    store: SaveStore, mini: Scenario
) -> None:
    """Reopening reads the last keyframe and the rounds after it, not the keyframe before
    the held window; the run goes on as if never closed."""
    last = 2 * KEYFRAME_EVERY + 2
    await played(store, mini, "r", last)
    with pytest.MonkeyPatch.context() as mp:
        reads = count_reads(mp)
        with Simulation.resume("r", store) as again:
            assert reads == list(range(2 * KEYFRAME_EVERY, last + 1))
            assert again.history.columns().built is None  # no state model built
            again.extend(2)
            await again.run()
    unsaved = Simulation.new(mini, seed=4, rounds=last + 2)
    await unsaved.run()
    assert store.history("r") == list(unsaved.records)


async def test_a_round_view_reads_as_its_record(store: SaveStore, mini: Scenario) -> None:
    """What the app draws of a round, held or read back from the save, is its record's."""
    await played(store, mini, "r", KEYFRAME_EVERY + 3)
    with Simulation.resume("r", store) as sim:
        for n in (3, KEYFRAME_EVERY + 3):  # one read back from the save, one held
            view, record = sim.history.view(n), sim.history[n]
            assert view.round == n and view.log.actions == record.actions
            assert view.log.emotion_changes == record.emotion_changes
            state = record.state
            assert list(view.state.agents) == list(state.agents)
            for name, agent in state.agents.items():
                row = view.state.agents[name]
                assert (row.emotion, row.theta, row.needs) == (
                    agent.emotion,
                    agent.theta,
                    agent.needs,
                )
                assert list(row.relations) == list(agent.relations)
                for other, rel in agent.relations.items():
                    seen = row.relations[other]
                    assert (seen.fav, seen.status, seen.memory) == (rel.fav, rel.status, rel.memory)
                with pytest.raises(KeyError):
                    row.relations[name]
            moved = {
                (c.source, c.target)
                for c in record.relation_changes
                if abs(c.delta) >= 0.005 or c.status != c.previous_status
            }
            edges = view.moved(0.005)
            names = list(state.agents)
            assert moved and {(i, j) for i in names for j in names if (i, j) in edges} == moved
            assert ("nobody", names[0]) not in edges and "ab" not in edges
