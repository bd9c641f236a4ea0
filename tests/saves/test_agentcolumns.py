"""Save format 9: a keyframe's notes and needs as columns read back as played (floats bit
for bit, each agent's needs in their order), as JSON and as a binary round's blobs; a
keyframe of format 8 (an object a note, an object an agent's needs) still reads."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from engine import Simulation
from engine.core.columns import StateColumns, need_states
from engine.core.scenario import Scenario
from engine.saves.agentcolumns import NeedColumns, NoteColumns
from engine.saves.binround import BLOBS
from engine.saves.columnar import PackedState


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
    old = packed.model_copy(
        update={"notes": packed.notes.entries(), "needs": [need_states(n) for n in state.needs]}
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
