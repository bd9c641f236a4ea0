"""The rating sheet: one CSV row per item with its evidence in readable columns and an
empty ``label`` column, and reading a filled sheet back as one rater's labels.

Every cell written goes through :func:`~engine.core.textsafe.csv_row` (no formula a spreadsheet
would run). Reading checks the whole file before anything is kept: an unknown item, a
label other than increase/unchanged/decrease or an item labelled twice is one error and
no label is imported.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

from ...core.textsafe import csv_row
from ...saves.atomic import atomic_write_text
from ...saves.saferead import read_regular
from .study import DIRECTIONS, Direction, Item, LabelError, Study

#: The largest rating sheet read (a sheet of 60 items is tens of KB).
MAX_SHEET_BYTES = 64 * 1024 * 1024

SHEET_COLUMNS = (
    "item",
    "kind",
    "run",
    "round",
    "observer",
    "about",
    "role",
    "traits",
    "goal",
    "prior",
    "events",
    "actions",
    "label",
)


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A CSV document with every cell neutralised for spreadsheets."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(csv_row(row) for row in rows)
    return out.getvalue()


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """:func:`csv_text` written atomically to ``path``."""
    try:
        atomic_write_text(path, csv_text(header, rows))
    except OSError as err:
        raise LabelError(f"{path}: cannot write ({err.strerror or err})") from None


def sheet_row(item: Item) -> list[Any]:
    """An item as a rater reads it (never the judge's answer)."""
    ev = item.evidence
    return [
        item.id,
        item.kind,
        item.run_id,
        item.round,
        ev.observer,
        ev.about,
        ev.role,
        "; ".join(ev.traits),
        ev.goal,
        round(ev.prior, 4),
        "\n".join(ev.events),
        "\n".join(ev.actions),
        "",
    ]


def write_sheet(study: Study, path: Path) -> None:
    """The study's rating sheet, written atomically."""
    write_csv(path, SHEET_COLUMNS, (sheet_row(i) for i in study.items))


def read_sheet(study: Study, path: Path) -> dict[str, Direction]:
    """The labels of a filled sheet (rows with an empty label are skipped). Read as the
    saves are: a regular file only (never a pipe or a device), at most
    :data:`MAX_SHEET_BYTES`; a cell over the csv module's limit (128 KiB) is one error."""
    try:
        text = read_regular(path, "rating sheet", LabelError, MAX_SHEET_BYTES).decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise LabelError(f"{path}: unreadable sheet ({err})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        return _labels(study, path, reader)
    except csv.Error as err:
        where = f"{path} line {reader.line_num + 1}"  # the line being read
        if "field larger than field limit" in str(err):
            limit = csv.field_size_limit() // 1024
            raise LabelError(f"{where}: a cell larger than {limit} KiB, not a rating") from None
        raise LabelError(f"{where}: not a readable CSV ({err})") from None


def _labels(study: Study, path: Path, reader: csv.DictReader[str]) -> dict[str, Direction]:
    """The labels of the sheet ``reader`` reads (see :func:`read_sheet`)."""
    missing = [c for c in ("item", "label") if c not in (reader.fieldnames or [])]
    if missing:
        raise LabelError(f"{path}: no {missing[0]!r} column (write one with `label sheet`)")
    known = study.item_ids()
    labels: dict[str, Direction] = {}
    for row in reader:
        where = f"{path} line {reader.line_num}"
        item = (row.get("item") or "").strip()
        label = (row.get("label") or "").strip().lower()
        if item not in known:
            raise LabelError(f"{where}: unknown item {item!r} (not in study {study.name!r})")
        if not label:
            continue
        if label not in DIRECTIONS:
            raise LabelError(f"{where}: label {label!r} is not one of {', '.join(DIRECTIONS)}")
        if item in labels:
            raise LabelError(f"{where}: item {item!r} is labelled twice")
        labels[item] = cast(Direction, label)
    return labels
