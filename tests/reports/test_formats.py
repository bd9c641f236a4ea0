"""The export formats (engine/reports/export.py FORMATS): defaults, replacements, names."""

from __future__ import annotations

import pytest

from engine.errors import SocialsimError
from engine.reports.export import FORMATS, formats_of


def names(asked: list[str]) -> list[str]:
    return [f.name for f in formats_of(asked)]


def test_an_export_writes_the_csv_tables_and_the_card_unless_asked_otherwise():
    assert names([]) == ["csv", "card"]
    assert names(["graphml"]) == ["csv", "card", "graphml"]


def test_parquet_tables_are_written_instead_of_csv_ones():
    assert names(["parquet", "graphml"]) == ["parquet", "card", "graphml"]


def test_every_format_is_one_entry_that_can_be_asked_for_by_name():
    for name in FORMATS:
        assert name in names([name])


def test_an_unknown_format_is_one_line_naming_the_choices():
    with pytest.raises(SocialsimError, match="export format 'pdf': choose csv, parquet"):
        formats_of(["pdf"])
