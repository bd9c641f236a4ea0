"""The offline judge's array steps (engine/minds/offline/edges.py, lastround.py) against
plain reference versions on random inputs: the same output, element for element."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.state import ALL, Action, Mode
from engine.minds.offline.choose import Option, Options, _given, draws
from engine.minds.offline.edges import _by_row_then
from engine.minds.offline.lastround import SIGN, LastRound, in_steps


@pytest.mark.parametrize("seed", range(6))
def test_cells_sort_by_row_then_key_then_column_as_lexsort_does(seed):
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(1, 40, 2)
    cells = rng.random((rows, cols)) < rng.random()
    key = rng.integers(0, rng.integers(1, 70_000), (rows, cols))
    r, c = np.nonzero(cells)
    want = np.lexsort((c, key[r, c], r))
    got_rows, got_cols = _by_row_then(cells, key)
    assert got_rows.tolist() == r[want].tolist()
    assert got_cols.tolist() == c[want].tolist()


def test_no_cells_sort_to_nothing():
    rows, cols = _by_row_then(np.zeros((3, 4), bool), np.zeros((3, 4), np.int64))
    assert rows.tolist() == cols.tolist() == []


def _round(rng: np.random.Generator, n: int) -> tuple[list[str], list[list[Action]]]:
    """Agents and, for each, the acts of a random round it saw (speakers in order)."""
    names = [f"A{k}" for k in range(n)]
    acts = [
        Action(
            speaker=name,
            urgency=5.0,
            mode=Mode.PUBLIC,
            target=str(rng.choice([*names, ALL])),
            stance=str(rng.choice(["support", "oppose", "neutral"])),
            order=k + 1,
        )
        for k, name in enumerate(names)
        if rng.random() < 0.8
    ]
    lasts = [[a for a in acts if rng.random() < 0.7] for _ in names]
    return names, lasts


@pytest.mark.parametrize("seed", range(6))
def test_last_attacks_and_sides_match_their_unbuffered_sums(seed):
    rng = np.random.default_rng(seed)
    names, lasts = _round(rng, int(rng.integers(2, 30)))
    index = {name: k for k, name in enumerate(names)}
    seen = LastRound(names, lasts, index)
    fav = rng.choice([-0.6, -0.1, 0.2, 0.35, 0.7, 0.9], (len(names), len(names)))
    # the reference: every term added (or maxed) one at a time, in order, by ufunc.at
    attacks = [
        (k, index[a.target], index[a.speaker])
        for k, a in enumerate(seen.acts)
        if a.stance == "oppose" and a.target in index
    ]
    last = np.full(fav.shape, -1)
    hit_friends = np.zeros(fav.shape, bool)
    if attacks:
        acts, victims, speakers = np.array(attacks).T
        rows, which = np.nonzero(seen.seen[:, acts])
        np.maximum.at(last, (rows, victims[which]), which)
        rows, hurt = np.nonzero((last >= 0) & (fav >= 0.3))
        hit_friends[rows, speakers[last[rows, hurt]]] = True
    hit, friends = seen.hit(fav, 0.3)
    assert hit.tolist() == (last >= 0).tolist()
    assert friends.tolist() == hit_friends.tolist()
    sides = np.zeros(fav.shape)
    for k, a in enumerate(seen.acts):
        if a.order and a.stance in SIGN and a.target in index:
            for row in np.flatnonzero(seen.seen[:, k]).tolist():
                friend = fav[row, index[a.speaker]]
                if friend >= 0.3:
                    sides[row, index[a.target]] += friend * SIGN[a.stance]
    assert seen.sides(fav, 0.3).tolist() == sides.tolist()


def test_steps_hold_each_key_once_and_its_positions_in_order():
    keys = np.array([3, 1, 3, 3, 0, 1])
    assert [s.tolist() for s in in_steps(keys)] == [[4, 1, 0], [5, 2], [3]]
    assert in_steps(np.array([], np.intp)) == []


@pytest.mark.parametrize("seed", range(6))
def test_given_acts_are_each_rows_cells_read_in_its_others_order(seed):
    rng = np.random.default_rng(seed)
    rows, n = rng.integers(1, 12), rng.integers(2, 30)
    given = rng.random((rows, n, 3)) < rng.random()
    same = rng.random() < 0.5
    at = [rng.permutation(n)[: n - 1 if same else rng.integers(1, n)] for _ in range(rows)]

    def weigh(r: np.ndarray, c: np.ndarray, kinds: np.ndarray) -> np.ndarray:
        return r * 1000.0 + c * 10.0 + kinds

    got = _given(given, at, weigh)
    for row, (slots, weights) in enumerate(got):
        want = np.flatnonzero(given[row, at[row]].ravel()).tolist()
        assert slots.tolist() == want
        assert weights.tolist() == [row * 1000.0 + at[row][s // 3] * 10.0 + s % 3 for s in want]


def _drawn_from_a_list(chance: float, weights: list[float]) -> int:
    """The draw over a list of weights the offline model made before its acts were arrays."""
    pick = chance * sum(weights)
    for k, weight in enumerate(weights):
        pick -= weight
        if pick <= 0:
            return k
    return len(weights) - 1


def _at_boundary(weights: list[float], tail: list[float], k: int) -> float:
    """The chance whose pick falls on the k-th sum of the weights (in list arithmetic): where
    a total summed in another order picks the next act instead."""
    listed = [1.0, *weights, *tail]
    prefix = sum(listed[: 1 + k % len(listed)])
    return min(prefix / sum(listed), 1.0 - 2**-53)


_ROW = st.tuples(
    st.lists(st.floats(0.0, 40.0), max_size=60),
    st.lists(st.floats(0.0, 3.0), max_size=3),
    st.floats(0.0, 1.0, exclude_max=True)
    | st.sampled_from([0.0, 1.0 - 2**-53])
    | st.integers(0, 80).map(lambda k: -1 - k),  # (a boundary: :func:`_at_boundary`)
)


@settings(max_examples=400)
@given(st.lists(_ROW, max_size=6))
def test_draws_over_the_arrays_are_the_draws_over_lists_float_for_float(rows):
    first: Option = (1.0, "neutral", ALL, Mode.PUBLIC)
    rows = [
        (w, tail, _at_boundary(w, tail, -1 - chance) if chance < 0 else chance)
        for w, tail, chance in rows
    ]
    options = [
        Options(
            first,
            [f"A{k}" for k in range(len(weights))],
            np.arange(len(weights)) * 3,
            np.array(weights, float),
            Mode.PUBLIC,
            [(w, "support", "B", Mode.PUBLIC) for w in tail],
        )
        for weights, tail, _ in rows
    ]
    listed = [[w for w, *_ in o.as_list()] for o in options]
    assert listed == [[1.0, *weights, *tail] for weights, tail, _ in rows]
    assert draws(options, [chance for *_, chance in rows]) == [
        _drawn_from_a_list(chance, weights)
        for (*_, chance), weights in zip(rows, listed, strict=True)
    ]
