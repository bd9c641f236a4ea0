"""Save format 9: a keyframe's notes and needs as columns read back as played (floats bit
for bit, each agent's needs in their order), as JSON and as a binary round's blobs; a
keyframe of format 8 (an object a note, an object an agent's needs) still reads. Format 10:
a round's need changes as columns read back the same way, and changes they cannot hold
keep the objects of format 9."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from engine import Simulation
from engine.core.changes import memory_entries
from engine.core.columns import StateColumns, need_states
from engine.core.scenario import Scenario
from engine.saves.agentcolumns import MovedNeeds, NeedColumns, NoteColumns
from engine.saves.binround import BLOBS
from engine.saves.columnar import PackedState
from engine.saves.roundfile import RoundFile


async def late_state(scenario: Scenario, rounds: int = 12) -> StateColumns:
    """The state after ``rounds`` offline rounds (memories full, needs moved)."""
    sim = Simulation.new(scenario, seed=5, rounds=rounds)
    await sim.run()
    assert sim.played is not None
    return sim.played.after


def read_back(packed: PackedState, binary: bool) -> PackedState:
    """``packed`` written and read as a JSON round file or a binary one would hold it."""
    if not binary:
        return PackedState.model_validate_json(packed.model_dump_json())
    blobs: list[np.ndarray] = []
    head = packed.model_dump_json(context={BLOBS: blobs})
    copies = [np.frombuffer(b.tobytes(), b.dtype) for b in blobs]  # as read: new buffers
    return PackedState.model_validate_json(head, context={BLOBS: copies})


def same_state(a: StateColumns, b: StateColumns) -> None:
    """``a`` and ``b`` hold one state: its model's JSON (every float's digits), and each
    agent's needs in one order."""
    assert a.world().model_dump_json() == b.world().model_dump_json()
    assert [list(n.items()) for n in a.needs] == [list(n.items()) for n in b.needs]


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
async def test_a_keyframe_reads_back_its_notes_and_needs_as_played(
    mini: Scenario, binary: bool
) -> None:
    state = await late_state(mini)
    packed = PackedState.of(state)
    assert isinstance(packed.notes, NoteColumns) and len(packed.notes) > 3
    assert isinstance(packed.needs, NeedColumns) and len(packed.needs) == len(state.names)
    moved = [n.current for needs in state.needs for n in needs.values()]
    assert any(v != round(v, 4) for v in moved)  # floats no decimal holds exactly
    back = read_back(packed, binary)
    assert back.notes.problem() is None and back.needs.problem() is None  # type: ignore[union-attr]
    same_state(back.columns(), state)


async def test_a_format_8_keyframe_still_reads(mini: Scenario) -> None:
    state = await late_state(mini)
    packed = PackedState.of(state)
    assert isinstance(packed.notes, NoteColumns)
    notes = packed.notes
    format_8_notes = memory_entries(notes.round.tolist(), notes.summary, notes.importance.tolist())
    old = packed.model_copy(
        update={"notes": format_8_notes, "needs": [need_states(n) for n in state.needs]}
    )
    doc = json.loads(old.model_dump_json())
    assert set(doc["notes"][0]) == {"round", "summary", "importance"}
    assert set(doc["needs"][0][next(iter(doc["needs"][0]))]) == {"current", "expected"}
    back = PackedState.model_validate(doc)
    assert isinstance(back.notes, list) and isinstance(back.needs, list)
    same_state(back.columns(), state)


async def test_needs_in_another_order_keep_the_form_before_columns(mini: Scenario) -> None:
    """An agent whose needs are in another order than the others' (no writer makes one;
    a state built by hand may): the keyframe keeps an object an agent, and reads back so."""
    state = await late_state(mini, rounds=3)
    needs = list(state.needs)
    needs[1] = dict(reversed(needs[1].items()))
    shuffled = dataclasses.replace(state, needs=needs)
    packed = PackedState.of(shuffled)
    assert isinstance(packed.needs, list)
    back = read_back(packed, binary=True)
    assert [list(n) for n in back.columns().needs] == [list(n) for n in needs]


def test_broken_columns_say_what_is_wrong() -> None:
    ints, floats = np.array([1, 2]), np.array([1.0, 2.0])
    assert NoteColumns(summary=["a"], round=ints, importance=ints).problem() == (
        "notes whose columns differ in length"
    )
    high = NoteColumns(summary=["a", "b"], round=ints, importance=np.array([3, 11]))
    assert high.problem() == "a note whose importance is outside 1..10"
    assert NeedColumns(kinds=["a", "a"], current=floats, expected=floats).problem() == (
        "needs whose kinds repeat"
    )
    three = np.array([1.0, 2.0, 3.0])
    assert NeedColumns(kinds=["a", "b"], current=three, expected=three).problem() == (
        "needs whose columns do not fit their kinds"
    )
    nan = np.array([1.0, float("nan")])
    assert NeedColumns(kinds=["a", "b"], current=nan, expected=floats).problem() == (
        "a need's value outside 0..10"
    )
    ok = NeedColumns(kinds=["a", "b"], current=floats, expected=floats)
    assert ok.problem() is None and len(ok) == 1


def _items(tables: dict[str, dict[str, float]]) -> list:
    """The tables' entries in order, each float as its bits (``0.0`` and ``-0.0`` differ)."""
    return [(a, [(k, v.hex()) for k, v in d.items()]) for a, d in tables.items()]


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
async def test_a_rounds_moved_needs_read_back_as_played(mini: Scenario, binary: bool) -> None:
    sim = Simulation.new(mini, seed=5, rounds=4)
    await sim.run()
    assert sim.played is not None
    changes = sim.played.changes
    assert any(changes.need_deltas.values()) and changes.needs
    assert any(v != round(v, 4) for d in changes.needs.values() for v in d.values())
    moved = MovedNeeds.of(changes.need_deltas, changes.needs)
    assert moved is not None and moved.problem() is None
    file = RoundFile(round=4, moved=moved)
    blobs: list[np.ndarray] = []
    head = file.model_dump_json(context={BLOBS: blobs} if binary else None)
    assert "need_deltas" not in json.loads(head) or not json.loads(head)["need_deltas"]
    copies = [np.frombuffer(b.tobytes(), b.dtype) for b in blobs]
    back = RoundFile.model_validate_json(head, context={BLOBS: copies})
    assert back.moved is not None and back.moved.problem() is None
    need_deltas, needs = back.need_tables()
    assert _items(need_deltas) == _items(changes.need_deltas)
    assert _items(needs) == _items(changes.needs)


@pytest.mark.parametrize(
    ("need_deltas", "needs"),
    [
        ({"Ann": {}, "Bob": {}}, {"Bob": {"self_worth": 3.0}}),  # a value without a move
        ({"Ann": {"self_worth": 0.5}}, {}),  # a move without its value
        ({"Ann": {"self_worth": 0.5}}, {"Ann": {"self_worth": 3.0, "sense_of_respect": 2.0}}),
        ({"Ann": {"flying": 0.5}}, {"Ann": {"flying": 3.0}}),  # not one of the rules' needs
    ],
    ids=["value only", "move only", "extra value", "unknown need"],
)
def test_changes_the_columns_cannot_hold_keep_the_objects(
    need_deltas: dict[str, dict[str, float]], needs: dict[str, dict[str, float]]
) -> None:
    assert MovedNeeds.of(need_deltas, needs) is None


def test_moved_needs_in_another_order_read_back_in_the_moves_order() -> None:
    """New values listed in another order than the moves: the columns hold the moves' order
    (a need's value is found by its name)."""
    deltas = {"Ann": {"self_worth": 0.5, "sense_of_respect": -0.25}, "Bob": {}}
    needs = {"Ann": {"sense_of_respect": 2.0, "self_worth": 3.0}}
    moved = MovedNeeds.of(deltas, needs)
    assert moved is not None and moved.count.tolist() == [2, 0]
    assert moved.tables() == (deltas, {"Ann": {"self_worth": 3.0, "sense_of_respect": 2.0}})


def test_broken_moved_needs_say_what_is_wrong() -> None:
    def moved(**change: object) -> MovedNeeds:
        fields: dict = {
            "agents": ["Ann", "Bob"],
            "kinds": ["a", "b"],
            "count": np.array([1, 1]),
            "kind": np.array([0, 1]),
            "delta": np.array([0.5, -0.5]),
            "current": np.array([3.0, 4.0]),
        }
        return MovedNeeds(**fields | change)

    assert moved().problem() is None
    assert moved(kinds=["a", "a"]).problem() == "need changes whose agents or kinds repeat"
    assert moved(count=np.array([1])).problem() == (
        "need changes whose counts do not fit their agents"
    )
    assert moved(count=np.array([2, 1])).problem() == (
        "need changes whose columns differ in length"
    )
    assert moved(kind=np.array([0, 2])).problem() == (
        "a need change whose kind is not among its kinds"
    )
    assert moved(current=np.array([3.0, 10.5])).problem() == "a moved need's value outside 0..10"
    assert moved(delta=np.array([0.5, float("nan")])).problem() == "a need change is not a number"
