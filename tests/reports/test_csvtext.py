"""CSV text made a column at a time (engine/reports/csvtext.py, the dense tables of
engine/reports/dense.py): byte for byte what :mod:`csv` writes for the same rows."""

from __future__ import annotations

import copy
import csv
import functools
import io
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Scenario, Simulation
from engine.core.needs import Need
from engine.core.state import EmotionChange
from engine.core.textsafe import csv_cell, csv_row
from engine.reports.csvtext import FloatTexts, cell_texts, csv_text, number_texts, value_texts
from engine.reports.dense import emotion_lines, need_lines
from engine.reports.tables import STATE_TABLES


def _csv(rows) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _cell_of_csv(value: str) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([value])
    text = out.getvalue()
    return "" if text == '""' else text


@pytest.mark.parametrize("code", [*range(0x80), 0x85, 0xA0, 0x2028, 0x2029, 0xFEFF, 0x1F600])
def test_a_cell_is_quoted_exactly_where_csv_quotes_it(code: int) -> None:
    ch = chr(code)
    for text in (ch, f"a{ch}b", f" {ch}", f"{ch} ", f'"{ch}",'):
        assert csv_text(text) == _cell_of_csv(text)


#: Letters a text cell may hold, each of what a cell treats apart among them.
_LETTERS = st.sampled_from(list('ab 1.,"\r\n\t=+-@;\x00\x1b\x7f\x85\u202e\u2066\u2028é'))


@settings(max_examples=400)
@given(st.lists(st.text(_LETTERS, max_size=6), max_size=8))
def test_cell_texts_are_each_texts_cell(texts: list[str]) -> None:
    assert cell_texts(texts) == [csv_text(csv_cell(t)) for t in texts]


@settings(max_examples=400)
@given(
    st.lists(
        st.one_of(st.text(_LETTERS, max_size=6), st.integers(-9, 9), st.floats(), st.none()),
        max_size=8,
    )
)
def test_a_row_is_each_cells_guarded_cell(row: list) -> None:
    """A row checked at once (one search of its texts) is each cell's csv_cell; cells left
    as they are are the row's own (a StrEnum stays one)."""
    got = csv_row(tuple(row))
    assert got == [csv_cell(v) for v in row]
    assert all(a is v for a, v in zip(got, row, strict=True) if csv_cell(v) is v)


@settings(max_examples=200)
@given(st.lists(st.text(st.sampled_from(list('ab 1.,";=é')), max_size=6), max_size=8))
def test_cell_texts_of_guard_free_texts_are_quoted_as_csv_quotes_them(texts: list[str]) -> None:
    """Texts the guard leaves as they are (no control character, line break or formula
    start), commas and quotes among them: each cell as :mod:`csv` writes it."""
    assert cell_texts(texts) == [csv_text(csv_cell(t)) for t in texts]


def test_cell_texts_of_plain_texts_are_the_texts() -> None:
    texts = ["Round 3: Ann backed Bo publicly.", "Bo was present.", ""]
    assert cell_texts(texts) is texts  # (no cell made one by one)


def test_number_texts_are_csvs_for_floats_and_ints_and_keep_minus_zero() -> None:
    floats = np.array([0.1, -0.0, 0.0, 1e-05, 1e16, math.nan, math.inf, 0.1 + 0.2, -0.6575])
    ints = np.array([3, -1, 0, 10, 3])
    for values in (floats, ints, ints[ints >= 0], np.array([1000, 2000]), ints[:0]):
        assert _csv([number_texts(values).tolist()]) == _csv([values.tolist()])


def test_float_texts_kept_across_calls_are_the_texts_of_each_call() -> None:
    rng = np.random.default_rng(4)
    texts = FloatTexts()
    texts.KEPT = 40  # start again from each call's values once this many are kept
    for _ in range(6):
        values = np.round(rng.uniform(-1, 1, 30), 2)
        values[:3] = (-0.0, 0.0, 1 / 3)
        got = texts(values)
        assert got.tolist() == list(map(repr, values.tolist()))
        assert np.all(np.diff(texts.keys) > 0) and len(texts.keys) == texts.count
    assert texts(np.array([2, 3])).tolist() == ["2", "3"]  # not floats: as number_texts


def test_value_texts_are_csvs_for_mixed_values() -> None:
    values = [0.5, 2, None, True, -0.0, np.float64(0.25)]
    assert ",".join(value_texts(values)) + "\n" == _csv([values])
    assert value_texts([0.5, -0.0]) == ["0.5", "-0.0"]


async def test_the_emotions_and_needs_csv_is_the_text_csv_writes_for_their_rows(
    mini: Scenario,
) -> None:
    """Written a column at a time, each table's text is what :mod:`csv` writes for its rows
    (names quoted and guarded, an agent without an emotion change at 0.0, a gap never
    below 0.0)."""
    sim = Simulation.new(mini, seed=3, rounds=2)
    await sim.run()
    played = sim.played
    assert played is not None
    after = copy.copy(played.after)
    after.names = ['=Ann "A", Jr', *after.names[1:]]
    after.needs = [dict(needs) for needs in after.needs]
    first = next(iter(after.needs[0]))
    after.needs[0][first] = Need(9.5, 8.0)  # above what is expected: a gap of 0.0
    log = played.log(relations=False)
    log.emotion_changes = [EmotionChange(agent=after.names[1], delta=-0.0, emotion=0.5)]
    cell = functools.cache(lambda text: csv_text(csv_cell(text)))
    for name, lines in (("emotions", emotion_lines), ("needs", need_lines)):
        rows = STATE_TABLES[name]("run", log, after, played.changes, functools.cache(csv_cell))
        at = log if name == "emotions" else log.round
        assert lines("run", at, after, cell) == _csv(rows)  # type: ignore[arg-type]
    assert '"\'=Ann ""A"", Jr"' in emotion_lines("run", log, after, cell)


async def test_the_relations_columns_are_its_rows_as_parquet_gets_them(mini: Scenario) -> None:
    """Parquet's relations table is written a column at a time: the cells of its rows."""
    from engine.reports.dense import relation_columns, relation_rows
    from engine.reports.parquet import FLOATS, INTS, _cell

    sim = Simulation.new(mini, seed=3, rounds=2)
    await sim.run()
    played = sim.played
    assert played is not None and 0 < len(played.changes) < 6
    names = ("run_id", "round_no", "source", "target", "fav", "status", "delta")
    names += ("override", "importance", "summary")
    kinds = [
        "int"
        if c in INTS["relations"] | {"round_no"}
        else "float"
        if c in FLOATS["relations"]
        else "str"
        for c in names
    ]
    for changed_only in (False, True):
        at = ("run", 2, played.after, played.changes)
        rows = [
            tuple(_cell(v, kind) for v, kind in zip(row, kinds, strict=True))
            for row in relation_rows(*at, str, changed_only)
        ]
        columns = relation_columns(*at, changed_only)
        assert list(zip(*(c.tolist() for c in columns), strict=True)) == rows
        assert len(rows) == (len(played.changes) if changed_only else 6)
