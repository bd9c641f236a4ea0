"""The offline judge's array steps (engine/minds/offline/edges.py, lastround.py) against
plain reference versions on random inputs: the same output, element for element."""

from __future__ import annotations

import numpy as np
import pytest

from engine.minds.offline.edges import _by_row_then


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
