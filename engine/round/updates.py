"""The update step (Sociodrama Sec. 3.3): one round's judgements clipped and applied by
the rules, as one :class:`~engine.core.changes.RoundChanges`.

The judged edges are read into columns once; U_R (:func:`~engine.core.rules.apply_fav`,
:func:`~engine.core.rules.next_status`, :func:`~engine.core.rules.remember`) then runs on
the arrays of the triggered edges only, with numpy; U_S and the needs move for every
agent at once too (the needs one by one where the agents hold them in different orders).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, compress
from typing import TYPE_CHECKING

from ..core.changes import NO_ROUND, MovedColumns, RoundChanges, evicted_array, validated
from ..core.columns import StateColumns, row_counts
from ..core.needs import NEED_AT, NEED_MAX, NEED_MIN, Need
from ..core.notes import Notes
from ..core.rounding import rounded
from ..core.rules import MAX_EMOTION_DELTA, MAX_FAV_DELTA, threshold_codes
from ..core.state import EmotionChange
from ..minds.base import NeedRows, RoundJudgements

if TYPE_CHECKING:
    import numpy as np

#: The retention key of an empty slot: never the lowest (a round and an importance are far
#: below it).
EMPTY = (1 << 31) - 1


def round_changes(
    before: StateColumns,
    round_no: int,
    memory_size: int,
    judged: RoundJudgements,
    thetas: Sequence[float | None],
) -> RoundChanges:
    """The changes of round ``round_no`` from the state ``before`` it: the agents'
    judgements (in ``before``'s order) clipped and applied, and each agent's new theta
    (None: unchanged). Deltas recorded are the real movement after clipping."""
    import numpy as np

    names, edges = before.names, judged.edges
    rows, cols = edges.source, edges.target
    override, importance = edges.override, edges.importance
    at = rows * len(names) + cols  # each edge's flat position (a take reads it fastest)
    was = before.fav.take(at)
    fav = np.clip(was + np.clip(edges.delta, -MAX_FAV_DELTA, MAX_FAV_DELTA), -1.0, 1.0)
    previous = before.status.take(at)
    status = threshold_codes(fav, previous)
    forced = override >= 0
    status[forced] = override[forced]
    changes = RoundChanges(
        round=round_no,
        names=names,
        source=rows,
        target=cols,
        delta=rounded(fav - was, 6),
        fav=fav,
        status=status,
        previous=previous,
        override=override,
        notes=edges.notes,
        note=edges.note,
        importance=importance,
        evicted=_evicted(before, rows, cols, round_no, importance, memory_size),
    )
    _agents(changes, before, judged, thetas)
    return changes


def _evicted(
    before: StateColumns,
    rows: np.ndarray,
    cols: np.ndarray,
    t: int,
    importance: np.ndarray,
    capacity: int,
) -> np.ndarray:
    """The rounds of the entries each edge evicts when it remembers a new entry of
    ``importance`` (:func:`~engine.core.rules.remember`: the lowest importance + round,
    the oldest of a tie; the round's own when the new entry is the one), as
    :attr:`RoundChanges.evicted` holds them. Worked out :data:`CHUNK` edges at a time (a
    thousand agents' million edges would make each step's array tens of MB)."""
    import numpy as np

    k = len(rows)
    victims = np.full((k, 1), NO_ROUND, np.int64)  # the round each edge evicts, if one
    more: list[int] = []  # the edges that evict more than one
    keys = retention(before.notes)
    for first in range(0, k, CHUNK):
        part = slice(first, first + CHUNK)
        out = victims[part]  # (a view: written through)
        over = _victims(before, keys, rows[part], cols[part], t, importance[part], capacity, out)
        more += (np.flatnonzero(over > 1) + first).tolist()
    if not more:
        return victims
    evicted = [[] if r == NO_ROUND else [r] for r in victims[:, 0].tolist()]
    for m in more:  # a memory over the capacity (an older save)
        held = [
            (r, i)
            for r, i in zip(
                before.rounds_at(rows[m], cols[m]).tolist(),
                before.importance_at(rows[m], cols[m]).tolist(),
                strict=True,
            )
            if r != NO_ROUND
        ]
        entries = [*held, (t, int(importance[m]))]
        while len(entries) > capacity:
            ranks = [r + i for r, i in entries]
            del entries[ranks.index(min(ranks))]
        kept = {r for r, _ in entries}
        evicted[m] = [r for r, _ in held if r not in kept] + ([] if t in kept else [t])
    return evicted_array(evicted)


#: Edges :func:`_evicted` works out at a time.
CHUNK = 1 << 16


def retention(notes: Notes) -> np.ndarray:
    """Each entry's key in the order of eviction (:func:`~engine.core.rules.remember`):
    its importance + round; :data:`EMPTY` for the empty slot's."""
    import numpy as np

    keys = notes.rounds + notes.importance.astype(np.int32)
    keys[notes.rounds == NO_ROUND] = EMPTY
    return keys


def _victims(
    before: StateColumns,
    keys: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    t: int,
    importance: np.ndarray,
    capacity: int,
    victims: np.ndarray,
) -> np.ndarray:
    """How many entries each edge (rows[k], cols[k]) evicts (``keys``: the entries'
    :func:`retention`); the round of the one evicted where it is one goes into
    ``victims`` (this part of them)."""
    import numpy as np

    codes = before.slots_at(rows, cols)
    held = keys.take(codes)
    width = held.shape[1]
    over = (width - row_counts(held == EMPTY)) + 1 - capacity
    one = over == 1
    # the victims of the edges that evict one: of every edge when most do (no gather)
    at = slice(None) if 2 * int(np.count_nonzero(one)) > len(rows) else np.flatnonzero(one)
    new = t + importance[at]
    if width:
        mine = held[at]
        slot = mine.argmin(axis=1)  # the first lowest: the oldest of a tie
        slot += np.arange(0, mine.size, width)  # (as flat positions: one take each)
        oldest = before.notes.rounds.take(codes[at].take(slot))
        chosen = np.where(new < mine.take(slot), t, oldest)  # a tie: the older entry goes
    else:
        chosen = np.full(len(new), t)
    if isinstance(at, slice):
        victims[np.flatnonzero(one), 0] = chosen[one]
    else:
        victims[at, 0] = chosen
    return over


def _agents(
    changes: RoundChanges,
    before: StateColumns,
    judged: RoundJudgements,
    thetas: Sequence[float | None],
) -> None:
    """U_S, the needs and theta of every agent, into ``changes``: every agent's emotion
    moved at once, its needs too where every agent holds them in the judged order (else
    one by one, :func:`_needs_each`), then its theta."""
    import numpy as np

    names = before.names
    old = np.array(before.emotion, float)
    step = clipped(np.array(judged.emotions, float), -MAX_EMOTION_DELTA, MAX_EMOTION_DELTA)
    emotion = clipped(old + step, 0.0, 1.0)
    emotions = [
        {"agent": name, "delta": delta, "emotion": value}
        for name, delta, value in zip(
            names, rounded(emotion - old, 6).tolist(), emotion.tolist(), strict=True
        )
    ]
    changes.emotions = validated(list[EmotionChange], emotions)
    needs = judged.needs
    if isinstance(needs, NeedRows) and all(tuple(n) == needs.names for n in before.needs):
        _needs_at_once(changes, names, before.needs, needs)
    else:
        _needs_each(changes, names, before.needs, needs)
    for name, theta, was in zip(names, thetas, before.theta, strict=True):
        if theta is not None and theta != was:
            changes.theta[name] = theta


def _needs_at_once(
    changes: RoundChanges, names: list[str], before: list[dict[str, Need]], judged: NeedRows
) -> None:
    """:func:`_needs_each` on the matrix of the judged deltas: the same clipping, the
    same movements, rounded alike."""
    import numpy as np

    kinds = judged.names
    pairs = chain.from_iterable(chain.from_iterable(n.values() for n in before))
    was = np.fromiter(pairs, float, count=2 * judged.kept.size)[::2].reshape(judged.kept.shape)
    now = np.where(judged.moved, clipped(was + judged.kept, NEED_MIN, NEED_MAX), was)
    moved = now != was
    movements = rounded(now - was, 4)
    rows = zip(names, moved.tolist(), movements.tolist(), now.tolist(), strict=True)
    for name, mine, movement, current in rows:
        changes.need_deltas[name] = dict(compress(zip(kinds, movement, strict=True), mine))
        if any(mine):
            changes.needs[name] = dict(compress(zip(kinds, current, strict=True), mine))
    if all(kind in NEED_AT for kind in kinds):
        at = np.array([NEED_AT[kind] for kind in kinds], np.int64)
        changes.moved_columns = MovedColumns(
            list(names),
            np.count_nonzero(moved, axis=1).astype(np.int64),
            np.broadcast_to(at, moved.shape)[moved],
            movements[moved],
            now[moved],
        )


def _needs_each(
    changes: RoundChanges,
    names: list[str],
    before: list[dict[str, Need]],
    judged: Sequence[dict[str, float]],
) -> None:
    """Each agent's judged need deltas applied one by one (:func:`~engine.core.rules.
    apply_need` written out): a need it lacks is skipped; the movements rounded at once."""
    import numpy as np

    movements: list[float] = []  # every moved need's movement, rounded at once below
    moves: list[dict[str, float]] = []  # the agents' movements, in that order
    low, high = NEED_MIN, NEED_MAX
    for name, deltas, needs in zip(names, judged, before, strict=True):
        moved: dict[str, float] = {}
        now: dict[str, float] = {}
        for (need, change), value in zip(deltas.items(), map(needs.get, deltas), strict=True):
            if value is None:
                continue
            was = value.current
            current = was + change  # (clip() written out: this runs once per judged need)
            current = low if current < low else high if current > high else current
            if current != was:
                moved[need] = current - was
                now[need] = current
        changes.need_deltas[name] = moved
        if now:
            changes.needs[name] = now
            movements += moved.values()
            moves.append(moved)
    rounded_movements = iter(rounded(np.array(movements, float), 4).tolist())
    for moved in moves:
        for need in moved:
            moved[need] = next(rounded_movements)


def clipped(values: np.ndarray, low: float, high: float) -> np.ndarray:
    """:func:`~engine.core.rules.clip` of every value (NaN and -0.0 kept as it keeps them)."""
    import numpy as np

    return np.where(values < low, low, np.where(values > high, high, values))
