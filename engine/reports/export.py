"""Tidy (long-format) CSV export of a saved run, one row per observation.

The run is read one round at a time and every table is written as it goes, so memory stays
flat however long the run is. The CSVs are written into a hidden folder beside the target
(``.<name>.export-<pid>-<random>``) and that folder is renamed into place at the end, so an
export appears as a whole set or not at all, also when it replaces an earlier export (the
old folder is renamed away first). A target folder that holds other files too (never
touched) gets the finished files renamed in one by one, with an earlier export's kept aside
until every new one is in (an error puts them back) and ``.socialsim-export-incomplete``
marking the folder meanwhile: a kill in those milliseconds leaves the mix marked, and the
next export to the folder replaces it whole. Hidden folders of exports whose process is
gone are removed by the next export to the same target. An export holds a lock beside its
target (``.<name>.lock``, gone when it ends) from start to end: a second export to the same
folder meanwhile fails at once, so two never mix and the one that succeeds is the one whose
files remain. A long folder name is cut (with a hash) in these hidden names, which stay
within 255 bytes.
"""

from __future__ import annotations

import csv
import errno
import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any, Protocol

from ..core.changes import RoundChanges
from ..core.columns import StateColumns
from ..core.metrics import Metrics
from ..core.state import RoundLog, RoundRecord
from ..core.textsafe import csv_row, escaped
from ..errors import SaveError, SocialsimError
from ..saves.atomic import umask
from ..saves.runfiles import gc_paused
from ..saves.runmeta import RunMeta
from .card import FILE as CARD_FILE
from .card import CardBuilder
from .csvtext import FloatTexts, text_cell
from .dense import emotion_lines, need_lines, relation_columns, relation_lines
from .graphml import FOLDER as GRAPH_FOLDER
from .graphml import GraphWriter
from .parquet import ParquetTable, pyarrow_modules
from .staging import locked, move_into_place, prefix, remove_stale, synced
from .tables import (
    COLUMNS,
    LOG_TABLES,
    STATE_TABLES,
    Safe,
    agent_rows,
    metric_rows,
    metrics_of,
    rating_rows,
    rounds,
    survey_rows,
)


class _Tables:
    """The tables as CSV files, or as Parquet files (``parquet``: read by code, so text
    cells are written as they are)."""

    full_rounds = False

    def __init__(self, staging: Path, meta: RunMeta, stack: ExitStack, parquet: bool) -> None:
        self.meta, self.run_id = meta, meta.run_id
        suffix = ".parquet" if parquet else ".csv"
        self.names = [f"{name}{suffix}" for name in COLUMNS]
        self.writers: dict[str, Any] = {}
        #: The dense tables' CSV files, written a column at a time (none for Parquet).
        self.dense: dict[str, IO[str]] = {}
        #: Whether the relations table holds only the edges each round changed.
        self.changed_only = False
        for name, file in zip(COLUMNS, self.names, strict=True):
            if parquet:
                table = ParquetTable(staging / file, name, COLUMNS[name])
                self.writers[name] = table
                stack.callback(table.close)
                continue
            handle = stack.enter_context(synced(staging / file))
            self.writers[name] = csv.writer(handle, lineterminator="\n")
            self.writers[name].writerow(COLUMNS[name])
            if name in STATE_TABLES:
                self.dense[name] = handle
        # Parquet is read by code: no formula guard, only control characters escaped (the
        # dense tables' text cells are names and summaries, written as they are).
        self.cells: Callable[[tuple], Sequence[Any]] = _escaped if parquet else csv_row
        self.cell: Safe = functools.lru_cache(maxsize=65536)(text_cell)
        self.floats = FloatTexts()

    def add(
        self, log: RoundLog, values: StateColumns, changes: RoundChanges, metrics: Metrics
    ) -> None:
        writers, run_id, changed_only = self.writers, self.run_id, self.changed_only
        for name, rows in LOG_TABLES.items():
            writers[name].writerows(map(self.cells, rows(run_id, log)))
        at = (run_id, log.round, values, changes)
        if self.dense:
            dense, cell = self.dense, self.cell
            dense["emotions"].write(emotion_lines(run_id, log, values, cell))
            dense["relations"].write(relation_lines(*at, cell, changed_only, self.floats))
            dense["needs"].write(need_lines(run_id, log.round, values, cell))
        else:
            for name, state_rows in STATE_TABLES.items():
                if name != "relations":
                    writers[name].writerows(state_rows(run_id, log, values, changes, str))
            writers["relations"].write_columns(relation_columns(*at, changed_only))
        writers["metrics"].writerows(metric_rows(run_id, metrics))

    def finish(self, measurements: dict[str, list[dict]]) -> None:
        surveys, ratings = measurements.get("surveys", []), measurements.get("ratings", [])
        self.writers["surveys"].writerows(map(self.cells, survey_rows(self.run_id, surveys)))
        self.writers["ratings"].writerows(map(self.cells, rating_rows(self.run_id, ratings)))
        self.writers["agents"].writerows(map(self.cells, agent_rows(self.meta)))


class _Card:
    """The run card, ``card.json``."""

    full_rounds = False
    names = [CARD_FILE]

    def __init__(self, staging: Path, meta: RunMeta, stack: ExitStack) -> None:
        self.path, self.builder = staging / CARD_FILE, CardBuilder(meta)

    def add(
        self, log: RoundLog, values: StateColumns, changes: RoundChanges, metrics: Metrics
    ) -> None:
        self.builder.add(log)

    def finish(self, measurements: dict[str, list[dict]]) -> None:
        _write_card(self.path, self.builder.card().to_json())


class _Graphs:
    """A GraphML file per round (the signed network), in a folder."""

    full_rounds = True  # the relations of every round, not only its changes
    names = [GRAPH_FOLDER]

    def __init__(self, staging: Path, meta: RunMeta, stack: ExitStack) -> None:
        self.writer = GraphWriter(staging / GRAPH_FOLDER, meta.run_id, meta.scenario, meta.prior)

    def add(
        self, log: RoundLog, values: StateColumns, changes: RoundChanges, metrics: Metrics
    ) -> None:
        if isinstance(log, RoundRecord):
            self.writer.write(log)

    def finish(self, measurements: dict[str, list[dict]]) -> None:
        """Every round's file is written as it comes."""


class Writer(Protocol):
    """What a format writes into the export's staging folder, round by round."""

    full_rounds: bool
    names: list[str]

    def add(
        self, log: RoundLog, values: StateColumns, changes: RoundChanges, metrics: Metrics
    ) -> None: ...
    def finish(self, measurements: dict[str, list[dict]]) -> None: ...


@dataclass(frozen=True)
class Format:
    """An export format: its name, the option that asks for it (``--name``; the defaults
    are written unless asked otherwise), what it writes, and its writer."""

    name: str
    help: str
    open: Callable[[Path, RunMeta, ExitStack], Writer]
    default: bool = False
    #: The format it is written instead of (Parquet tables instead of CSV ones).
    instead_of: str = ""
    #: Raises the one-line error of a missing library before anything is written.
    check: Callable[[], object] = lambda: None


#: Every export format, in the order their files are listed.
FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("csv", "The tables as CSV.", partial(_Tables, parquet=False), default=True),
        Format(
            "parquet",
            "The tables as Parquet instead of CSV (pyarrow).",
            partial(_Tables, parquet=True),
            instead_of="csv",
            check=pyarrow_modules,
        ),
        Format("card", "The run card (card.json).", _Card, default=True),
        Format("graphml", "Also a GraphML file per round (the signed network).", _Graphs),
    )
}


def formats_of(asked: Iterable[str] = ()) -> list[Format]:
    """The formats an export writes: the defaults and those ``asked`` for, each in place
    of the one it replaces, in :data:`FORMATS` order."""
    wanted = set(asked)
    unknown = wanted - FORMATS.keys()
    if unknown:
        raise SocialsimError(f"export format {sorted(unknown)[0]!r}: choose {', '.join(FORMATS)}")
    replaced = {FORMATS[name].instead_of for name in wanted}
    return [
        f for name, f in FORMATS.items() if (f.default or name in wanted) and name not in replaced
    ]


def export_run(
    meta: RunMeta,
    history: Sequence[RoundRecord],
    out: Path,
    measurements: dict[str, list[dict]] | None = None,
    *,
    formats: Iterable[str] = (),
    changed_only: bool = False,
) -> list[Path]:
    """Write a run (its rounds, round 0 first) into ``out`` in the default formats (the
    CSV tables and ``card.json``) and those named in ``formats`` (:data:`FORMATS`);
    returns the paths written. ``changed_only``: the relations table holds only the edges
    each round changed (round 0 whole; docs/formats.md rebuilds the dense table). The
    metrics come from a :class:`History`'s index, or are computed from the states as they
    stream by.

    The LLM tables hold only their header for runs of the offline model.
    """
    chosen = formats_of(formats)
    for f in chosen:
        f.check()  # a missing library: one line before anything is written
    try:
        if out.exists() and not out.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise SaveError(f"--out {out}: cannot create folder ({err.strerror})") from None
    with locked(out):
        return _export(meta, history, out, measurements or {}, chosen, changed_only)


def _export(
    meta: RunMeta,
    history: Sequence[RoundRecord],
    out: Path,
    taken: dict[str, list[dict]],
    chosen: list[Format],
    changed_only: bool = False,
) -> list[Path]:
    """:func:`export_run` in the ``chosen`` formats, the export folder's lock held."""
    try:
        remove_stale(out)
        staging = Path(tempfile.mkdtemp(prefix=prefix(out, "export"), dir=out.parent))
    except OSError as err:
        raise SaveError(f"--out {out}: cannot create folder ({err.strerror})") from None
    try:
        os.chmod(staging, 0o777 & ~umask())  # mkdtemp's 0700, made what mkdir would give
        with ExitStack() as stack, gc_paused():
            writers = [f.open(staging, meta, stack) for f in chosen]
            for writer in writers:
                if isinstance(writer, _Tables):
                    writer.changed_only = changed_only
            # The rounds there are now: a run still playing may add some while they are read.
            count = len(history)
            read = rounds(history, count, full=any(w.full_rounds for w in writers))
            each = metrics_of(meta, history, count)
            for (log, values, changes), metrics in zip(read, each, strict=True):
                for writer in writers:
                    writer.add(log, values, changes, metrics)
            for writer in writers:
                writer.finish(taken)
        ours = {f"{name}{suffix}" for name in COLUMNS for suffix in (".csv", ".parquet")}
        move_into_place(staging, out, ours | {CARD_FILE, GRAPH_FOLDER})
    except OSError as err:
        raise SaveError(f"--out {out}: cannot write ({err.strerror})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / name for writer in writers for name in writer.names]


def _escaped(row: tuple) -> list[Any]:
    return [escaped(v) for v in row]


def _write_card(path: Path, text: str) -> None:
    with synced(path) as handle:
        handle.write(text)
