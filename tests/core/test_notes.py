"""The notes table: a round's notes join the table before it without changing it, whichever
table they join and however many rounds share its buffers."""

from __future__ import annotations

import numpy as np

from engine.core.changes import NO_ROUND
from engine.core.notes import EMPTY_NOTE, LEAST_ROOM, Notes
from engine.core.state import MemoryEntry


def _said(round_no: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    texts = np.array([f"r{round_no} n{k}" for k in range(count)], object)
    return texts, np.arange(count, dtype=np.int64) % 3 + 1


def _joined(notes: Notes, round_no: int, count: int) -> Notes:
    return notes.joined(*_said(round_no, count)[:1], round_no, _said(round_no, count)[1])


def _columns(notes: Notes) -> tuple[list, list, list]:
    return notes.summaries.tolist(), notes.rounds.tolist(), notes.importance.tolist()


def test_a_round_joins_after_the_table_and_leaves_it_as_it_was():
    first = Notes.of([MemoryEntry(round=0, summary="met at the gate", importance=2)])
    before = _columns(first)
    second = _joined(first, 1, 3)
    assert _columns(first) == before
    assert _columns(second) == (
        [None, "met at the gate", "r1 n0", "r1 n1", "r1 n2"],
        [NO_ROUND, 0, 1, 1, 1],
        [0, 2, 1, 2, 3],
    )


def test_two_rounds_joined_to_one_table_keep_their_own_notes():
    """A branch plays another round from an earlier state: both tables hold their own."""
    base = _joined(Notes.of([]), 1, 2)
    ahead = _joined(base, 2, 2)
    branch = base.joined(np.array(["a branch's note"], object), 2, np.array([3]))
    assert ahead.summaries.tolist()[-2:] == ["r2 n0", "r2 n1"]
    assert branch.summaries.tolist()[-1] == "a branch's note"
    assert _joined(ahead, 3, 1).summaries.tolist()[-3:] == ["r2 n0", "r2 n1", "r3 n0"]
    assert _joined(branch, 3, 1).summaries.tolist()[-2:] == ["a branch's note", "r3 n0"]


def test_many_rounds_outgrow_the_buffers_and_every_table_stays_whole():
    tables = [Notes.of([])]
    for round_no in range(1, 40):
        tables.append(_joined(tables[-1], round_no, 97))
    assert len(tables[-1]) > 2 * LEAST_ROOM
    for round_no, table in enumerate(tables):
        assert len(table) == 1 + 97 * round_no
        assert table.rounds.tolist() == [NO_ROUND, *np.repeat(range(1, round_no + 1), 97)]
        if round_no:
            assert table.summaries[-1] == f"r{round_no} n96"


def test_entries_built_on_a_table_are_its_notes_and_its_successors():
    base = _joined(Notes.of([]), 1, 3)
    later = _joined(base, 2, 2)
    built = base.entries_at(np.array([[EMPTY_NOTE, 2]]))
    assert built[0, 0] is None
    assert built[0, 1] == MemoryEntry(round=1, summary="r1 n1", importance=2)
    assert later.entries_at(np.array([2]))[0] is built[0, 1]  # (built once, shared)
    assert later.entries_at(np.array([4]))[0] == MemoryEntry(round=2, summary="r2 n0", importance=1)


def test_a_table_from_a_save_joins_a_round_with_its_entries_unbuilt():
    loaded = Notes.unbuilt(["said before"], np.array([4]), np.array([2]))
    after = _joined(loaded, 5, 1)
    assert _columns(after) == (
        [None, "said before", "r5 n0"],
        [NO_ROUND, 4, 5],
        [0, 2, 1],
    )
    assert after.entries_at(np.array([1]))[0] == MemoryEntry(
        round=4, summary="said before", importance=2
    )


def test_a_long_table_drops_the_notes_no_slot_holds():
    table = _joined(Notes.of([]), 1, 5000)
    memory = np.array([[[EMPTY_NOTE, 7]], [[4999, 3]]], np.int32)
    kept, coded = table.kept(memory)
    assert kept.summaries.tolist() == [None, "r1 n2", "r1 n6", "r1 n4998"]
    assert coded.tolist() == [[[0, 2]], [[3, 1]]]
    assert _joined(kept, 2, 1).summaries.tolist()[-2:] == ["r1 n4998", "r2 n0"]


def test_the_room_after_a_table_is_claimed_once():
    """Two rounds joined to one table at once (on two threads) cannot both write after it:
    the first claims the room, the second is refused and copies."""
    base = _joined(Notes.of([]), 1, 2)
    room = base._room
    assert room is not None
    assert room.claim(len(base), len(base) + 3)
    assert not room.claim(len(base), len(base) + 1)
    assert not room.claim(len(base) + 3, 10 * LEAST_ROOM)  # (no room for so many)
