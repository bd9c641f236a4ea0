"""The export's tables as Parquet files (``socialsim export --parquet``), for runs too large
for CSV. pyarrow is imported only here.

Each table has the CSV's columns, typed: counts and rounds as int64, measures as double
(an empty CSV cell is null), the rest as strings, written as they are (no spreadsheet
formula guard: Parquet is read by code). Rows are buffered and written in row groups of
:data:`BATCH` rows, so memory stays flat however long the run is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..core.exchanges import RoundUsage
from ..errors import SocialsimError, incomplete_install

#: Rows per row group (and the most rows held in memory per table).
BATCH = 65_536


def _typed(kind: type) -> frozenset[str]:
    """The usage table's columns of ``kind``, as :class:`RoundUsage` declares them."""
    return frozenset(n for n, f in RoundUsage.model_fields.items() if f.annotation is kind)


#: Each table's int64 columns besides ``round_no``, and its double columns.
INTS: dict[str, frozenset[str]] = {
    "transcript": frozenset({"order", "forced"}),
    "relations": frozenset({"importance"}),
    "llm_calls": frozenset(
        {"attempts", "prompt_tokens", "completion_tokens", "sent_tokens", "cached_tokens"}
    ),
    "usage": _typed(int),
}
FLOATS: dict[str, frozenset[str]] = {
    "transcript": frozenset({"urgency"}),
    "emotions": frozenset({"emotion", "delta"}),
    "relations": frozenset({"fav", "delta"}),
    "needs": frozenset({"current", "expected", "gap"}),
    "metrics": frozenset({"value"}),
    "llm_calls": frozenset({"cost_usd", "latency_s"}),
    "usage": _typed(float),
    "surveys": frozenset({"score", "angle"}),
    "ratings": frozenset({"score"}),
    "outcomes": frozenset({"value"}),
}


class ParquetMissing(SocialsimError):
    """``--parquet`` without pyarrow installed."""


def pyarrow_modules() -> tuple[Any, Any]:
    """``(pyarrow, pyarrow.parquet)``, or :class:`ParquetMissing` with the install hint."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ParquetMissing(str(incomplete_install("pyarrow", "--parquet"))) from None
    return pyarrow, pyarrow.parquet


class ParquetTable:
    """One table written to a Parquet file in row groups; ``writerows`` as a csv writer."""

    def __init__(self, path: Path, table: str, columns: Sequence[str]) -> None:
        pa, pq = pyarrow_modules()
        self._pa = pa
        self.path = path
        ints, floats = INTS.get(table, frozenset()), FLOATS.get(table, frozenset())
        self.kinds = [
            "int" if c == "round_no" or c in ints else "float" if c in floats else "str"
            for c in columns
        ]
        self.schema = pa.schema(
            [
                (c, pa.int64() if k == "int" else pa.float64() if k == "float" else pa.string())
                for c, k in zip(columns, self.kinds, strict=True)
            ]
        )
        self._writer = pq.ParquetWriter(str(path), self.schema)
        self._rows: list[Sequence[Any]] = []
        #: Rows added as columns (:meth:`write_columns`), and how many.
        self._columns: list[list[Any]] = []
        self._count = 0

    def writerows(self, rows: Iterable[Sequence[Any]]) -> None:
        """Add rows (tuples in column order); a full batch is written at once."""
        self._rows.extend(rows)
        if len(self._rows) >= BATCH:
            self._flush()

    def write_columns(self, columns: Sequence[Any]) -> None:
        """Add rows as their columns, in column order (numpy arrays, or object arrays with
        None for a missing value); a full batch is written at once, as by
        :meth:`writerows` (a table is written one way or the other)."""
        pa = self._pa
        self._columns.append(
            [pa.array(c, type=f.type) for c, f in zip(columns, self.schema, strict=True)]
        )
        self._count += len(columns[0])
        if self._count >= BATCH:
            self._flush_columns()

    def close(self) -> None:
        """Write what is buffered, close the file and put it on disk."""
        self._flush()
        self._flush_columns()
        self._writer.close()
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _flush(self) -> None:
        if not self._rows:
            return
        columns = list(zip(*self._rows, strict=True))
        arrays = [
            self._pa.array([_cell(v, kind) for v in values], type=field.type)
            for values, kind, field in zip(columns, self.kinds, self.schema, strict=True)
        ]
        self._writer.write_batch(self._pa.record_batch(arrays, schema=self.schema))
        self._rows = []

    def _flush_columns(self) -> None:
        if not self._count:
            return
        pa, chunks = self._pa, self._columns
        arrays = [pa.concat_arrays([chunk[k] for chunk in chunks]) for k in range(len(self.kinds))]
        self._writer.write_batch(pa.record_batch(arrays, schema=self.schema))
        self._columns, self._count = [], 0


def _cell(value: Any, kind: str) -> Any:
    if kind == "str":
        return None if value is None else str(value)
    if value is None or value == "":
        return None
    return int(value) if kind == "int" else float(value)
