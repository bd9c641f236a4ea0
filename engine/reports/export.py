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
gone are removed by the next export to the same target.
"""

from __future__ import annotations

import csv
import errno
import functools
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from itertools import islice
from pathlib import Path
from typing import IO, Any

from ..core.metrics import Metrics, RepairCounter, round_metrics
from ..core.needs import CATEGORY_OF
from ..core.state import RoundLog, RoundRecord
from ..core.textsafe import csv_cell, csv_row
from ..errors import SaveError
from ..saves.atomic import atomic_write_text, umask
from ..saves.cleanup import pid_alive
from ..saves.history import History
from ..saves.runfiles import gc_paused
from ..saves.runmeta import RunMeta
from ..saves.tablevalues import StateValues
from .card import FILE as CARD_FILE
from .card import CardBuilder
from .graphml import FOLDER as GRAPH_FOLDER
from .graphml import GraphWriter
from .parquet import ParquetTable, pyarrow_modules

Safe = Callable[[str], str]

#: Marks a folder holding other files while an export's files are renamed into it.
INCOMPLETE = ".socialsim-export-incomplete"
COLUMNS: dict[str, tuple[str, ...]] = {
    "transcript": (
        "run_id",
        "round",
        "order",
        "speaker",
        "mode",
        "target",
        "stance",
        "urgency",
        "intent",
        "utterance",
        "forced",
        "actor",
        "player",
    ),
    "events": ("run_id", "round", "source", "private_to", "text"),
    "emotions": ("run_id", "round", "agent", "emotion", "delta"),
    "relations": (
        "run_id",
        "round",
        "source",
        "target",
        "fav",
        "status",
        "delta",
        "override",
        "importance",
        "summary",
    ),
    "needs": ("run_id", "round", "agent", "category", "need", "current", "expected", "gap"),
    "metrics": ("run_id", "round", "metric", "value"),
    "llm_calls": (
        "run_id",
        "round",
        "key",
        "purpose",
        "agent",
        "model",
        "structured",
        "outcome",
        "attempts",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "latency_s",
        "error",
        "missing",
    ),
    "surveys": (
        "run_id",
        "round",
        "agent",
        "questionnaire",
        "answers",
        "score",
        "angle",
        "category",
        "respondent",
    ),
    "ratings": ("run_id", "agent", "criterion", "score", "evidence", "rater"),
    "usage": (
        "run_id",
        "round",
        "judge_mode",
        "calls",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "retries",
        "repairs",
        "reasks",
        "fallbacks",
        "errors",
        "structured",
        "structured_fallbacks",
        "missing_edges",
    ),
}


def _transcript(run_id: str, r: RoundLog) -> Iterator[tuple]:
    for a in sorted(r.actions, key=lambda a: (a.order is None, a.order or 0)):
        yield (
            run_id,
            r.round,
            a.order if a.order is not None else "",
            a.speaker,
            a.mode.value,
            a.target or "",
            a.stance,
            a.urgency,
            a.intent,
            a.utterance,
            int(a.forced),
            a.actor,
            a.player,
        )


def _events(run_id: str, r: RoundLog) -> Iterator[tuple]:
    for e in r.events:
        yield run_id, r.round, e.source, ";".join(e.private_to or []), e.text


# The state tables have a row per agent, edge or need every round: only their text cells
# (names, summaries) go through ``safe``, a memo of csv_cell; the rest are numbers and
# values of fixed vocabularies.


def _emotions(run_id: str, r: RoundLog, v: StateValues, safe: Safe) -> Iterator[tuple]:
    deltas = {c.agent: c.delta for c in r.emotion_changes}
    for name, emotion in v.emotions.items():
        yield run_id, r.round, safe(name), emotion, deltas.get(name, 0.0)


def _relations(run_id: str, r: RoundLog, v: StateValues, safe: Safe) -> Iterator[tuple]:
    changes = {(c.source, c.target): c for c in r.relation_changes}
    t = r.round
    for source, relations in v.relations.items():
        s = safe(source)
        for target, (fav, status) in relations.items():
            c = changes.get((source, target))
            if c is None:  # status is a StrEnum: csv writes its value
                yield run_id, t, s, safe(target), fav, status, 0.0, "", "", ""
            else:
                yield (
                    run_id,
                    t,
                    s,
                    safe(target),
                    fav,
                    status,
                    c.delta,
                    c.override or "",
                    c.importance,
                    safe(c.summary),
                )


def _needs(run_id: str, r: RoundLog, v: StateValues, safe: Safe) -> Iterator[tuple]:
    t = r.round
    for name, needs in v.needs.items():
        s = safe(name)
        for need, (current, expected) in needs.items():
            yield (
                run_id,
                t,
                s,
                CATEGORY_OF.get(need, ""),
                need,
                current,
                expected,
                max(0.0, expected - current),
            )


def _metrics(run_id: str, m: Metrics) -> Iterator[tuple]:
    for metric, value in m.as_row().items():
        yield run_id, m.round, metric, "" if value is None else value


def _llm_calls(run_id: str, r: RoundLog) -> Iterator[tuple]:
    for c in r.llm_calls:
        yield (
            run_id,
            r.round,
            c.key,
            c.purpose,
            c.agent,
            c.model,
            c.structured,
            c.outcome,
            c.attempts,
            c.prompt_tokens,
            c.completion_tokens,
            c.cost_usd,
            c.latency_s,
            c.error or "",
            ";".join(c.missing),
        )


def _usage(run_id: str, r: RoundLog) -> Iterator[tuple]:
    if r.usage is not None:
        u = r.usage
        yield (
            run_id,
            r.round,
            u.judge_mode,
            u.calls,
            u.prompt_tokens,
            u.completion_tokens,
            u.cost_usd,
            u.retries,
            u.repairs,
            u.reasks,
            u.fallbacks,
            u.errors,
            u.structured,
            u.structured_fallbacks,
            u.missing_edges,
        )


def _surveys(run_id: str, rows: list[dict]) -> Iterator[tuple]:
    for r in rows:
        yield (
            run_id,
            r["round"],
            r["agent"],
            r["questionnaire"],
            " ".join(str(a) for a in r["answers"]),
            r["score"],
            "" if r.get("angle") is None else r["angle"],
            r.get("category") or "",
            r["respondent"],
        )


def _ratings(run_id: str, rows: list[dict]) -> Iterator[tuple]:
    for r in rows:
        yield run_id, r["agent"], r["criterion"], r["score"], r["evidence"], r["rater"]


#: The tables of a round's log, every cell checked by csv_row.
LOG_TABLES = {
    "transcript": _transcript,
    "events": _events,
    "llm_calls": _llm_calls,
    "usage": _usage,
}
#: The tables of a round's state.
STATE_TABLES = {"emotions": _emotions, "relations": _relations, "needs": _needs}


def export_run(
    meta: RunMeta,
    history: Sequence[RoundRecord],
    out: Path,
    measurements: dict[str, list[dict]] | None = None,
    *,
    graphml: bool = False,
    parquet: bool = False,
) -> list[Path]:
    """Write the CSVs of a run (its rounds, round 0 first) and its ``card.json`` into
    ``out``; returns the paths written (the tables, the card, the GraphML folder). The
    metrics come from a :class:`History`'s index, or are computed from the states as they
    stream by. ``graphml``: a GraphML file per round too (``export_graph``); ``parquet``:
    the tables as Parquet instead of CSV (``export_parquet``, pyarrow).

    The LLM tables hold only their header for runs of the offline model.
    """
    if parquet:
        pyarrow_modules()  # missing: one line before anything is written
    run_id = meta.run_id
    try:
        if out.exists() and not out.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
        out.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(out)
        staging = Path(tempfile.mkdtemp(prefix=_prefix(out, "export"), dir=out.parent))
    except OSError as err:
        raise SaveError(f"--out {out}: cannot create folder ({err.strerror})") from None
    suffix = ".parquet" if parquet else ".csv"
    paths = {name: out / f"{name}{suffix}" for name in COLUMNS}
    try:
        os.chmod(staging, 0o777 & ~umask())  # mkdtemp's 0700, made what mkdir would give
        with ExitStack() as stack, gc_paused():
            writers: dict[str, Any] = {}
            for name in paths:
                if parquet:
                    table = ParquetTable(staging / f"{name}{suffix}", name, COLUMNS[name])
                    writers[name] = table
                    stack.callback(table.close)
                    continue
                handle = stack.enter_context(_synced(staging / f"{name}.csv"))
                writers[name] = csv.writer(handle, lineterminator="\n")
                writers[name].writerow(COLUMNS[name])
            # Parquet is read by code: its text cells are written as they are.
            cells: Callable[[tuple], Sequence[Any]] = _as_is if parquet else csv_row
            safe: Safe = str if parquet else functools.lru_cache(maxsize=65536)(csv_cell)
            card = CardBuilder(meta)
            graphs = (
                GraphWriter(staging / GRAPH_FOLDER, run_id, meta.scenario, meta.prior)
                if graphml
                else None
            )
            # The rounds there are now: a run still playing may add some while they are read.
            count = len(history)
            rounds = _rounds(history, count, full=graphs is not None)
            metrics_of = _metrics_of(meta, history, count)
            for (log, values), metrics in zip(rounds, metrics_of, strict=True):
                for name, rows in LOG_TABLES.items():
                    writers[name].writerows(map(cells, rows(run_id, log)))
                for name, state_rows in STATE_TABLES.items():
                    writers[name].writerows(state_rows(run_id, log, values, safe))
                writers["metrics"].writerows(_metrics(run_id, metrics))
                card.add(log)
                if graphs is not None and isinstance(log, RoundRecord):
                    graphs.write(log)
            taken = measurements or {}
            writers["surveys"].writerows(map(cells, _surveys(run_id, taken.get("surveys", []))))
            writers["ratings"].writerows(map(cells, _ratings(run_id, taken.get("ratings", []))))
            _write_card(staging / CARD_FILE, card.card().to_json())
        _move_into_place(staging, out)
    except OSError as err:
        raise SaveError(f"--out {out}: cannot write ({err.strerror})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [*paths.values(), out / CARD_FILE, *([out / GRAPH_FOLDER] if graphml else [])]


def _as_is(row: tuple) -> tuple:
    return row


def _write_card(path: Path, text: str) -> None:
    with _synced(path) as handle:
        handle.write(text)


def _prefix(out: Path, kind: str) -> str:
    return f".{out.name}.{kind}-{os.getpid()}-"


def _remove_stale(out: Path) -> None:
    """Remove the hidden folders that killed exports to ``out`` left beside it."""
    pattern = re.compile(rf"^\.{re.escape(out.name)}\.(?:export|old)-(\d+)-")
    for entry in out.parent.iterdir():
        m = pattern.match(entry.name)
        if m and entry.is_dir() and not entry.is_symlink() and not pid_alive(int(m.group(1))):
            shutil.rmtree(entry, ignore_errors=True)


def _move_into_place(staging: Path, out: Path) -> None:
    """Rename the finished ``staging`` folder to ``out``: whole, or (after a kill) absent."""
    if not out.exists():
        os.rename(staging, out)
        return
    ours = {f"{name}{suffix}" for name in COLUMNS for suffix in (".csv", ".parquet")}
    ours |= {CARD_FILE, GRAPH_FOLDER}
    present = set(os.listdir(out))
    if not present <= ours | {INCOMPLETE}:  # other files: never touch them
        _replace_among_others(staging, out, stale=sorted(present & ours))
        return
    old = Path(tempfile.mkdtemp(prefix=_prefix(out, "old"), dir=out.parent))
    os.rename(out, old / out.name)
    try:
        os.rename(staging, out)
    except OSError:
        os.rename(old / out.name, out)  # an error (not a kill): the earlier export back
        old.rmdir()
        raise
    shutil.rmtree(old, ignore_errors=True)


def _replace_among_others(staging: Path, out: Path, stale: list[str]) -> None:
    """Rename the finished files of ``staging`` into ``out``, which holds other files too,
    and retire what is left of an earlier export (``stale``: a format or a graphml folder
    this one does not write). The files they replace are kept aside (hard links: ``out`` is
    unchanged meanwhile) and put back if a step fails; :data:`INCOMPLETE` marks ``out``
    until the last is in."""
    new = sorted(os.listdir(staging))
    names = new + [name for name in stale if name not in new]
    marker = out / INCOMPLETE
    atomic_write_text(marker, f"an export was interrupted here; export again: {names}\n")
    try:
        old = Path(tempfile.mkdtemp(prefix=_prefix(out, "old"), dir=out.parent))
    except OSError:
        marker.unlink(missing_ok=True)
        raise
    done: list[str] = []
    try:
        for name in names:
            _keep_aside(out / name, old / name)
            if name in new:
                os.replace(staging / name, out / name)
            elif os.path.lexists(out / name):  # a file (a folder was moved aside whole)
                os.unlink(out / name)
            done.append(name)
    except OSError:
        for name in names[: len(done) + 1]:
            _put_back(old / name, out / name, replaced=name in done)
        marker.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)
    marker.unlink()


def _keep_aside(path: Path, aside: Path) -> None:
    """Keep the file (or our folder) at ``path`` under ``aside`` before it is replaced."""
    if path.is_dir() and not path.is_symlink():
        os.rename(path, aside)  # an earlier export's graphml folder
    elif os.path.lexists(path):
        try:
            os.link(path, aside, follow_symlinks=False)
        except OSError:
            shutil.copy2(path, aside, follow_symlinks=False)


def _put_back(aside: Path, path: Path, replaced: bool) -> None:
    """Undo :func:`_keep_aside` and, when ``replaced``, the rename that followed it."""
    if replaced and path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    if os.path.lexists(aside):
        if replaced or not os.path.lexists(path):
            os.replace(aside, path)
    elif replaced:
        path.unlink(missing_ok=True)  # a file the earlier export did not have


def _rounds(
    history: Sequence[RoundRecord], count: int, full: bool
) -> Iterator[tuple[RoundLog, StateValues]]:
    """The first ``count`` rounds' logs and the values of their states: a saved run's rolled
    forward from its files (no state is built) unless ``full`` (the logs are then the records)."""
    if isinstance(history, History) and not full:
        return history.values(0, count)
    return ((record, StateValues.of(record.state)) for record in islice(history, count))


def _metrics_of(meta: RunMeta, history: Sequence[RoundRecord], count: int) -> Iterator[Metrics]:
    if isinstance(history, History):
        yield from history.metrics_series()[:count]
        return
    counter: RepairCounter | None = None
    for record in islice(history, count):
        counter = counter or RepairCounter(len(record.state.agents))
        yield round_metrics(meta.scenario, record.state, counter)


@contextmanager
def _synced(path: Path) -> Iterator[IO[str]]:
    """A new file at ``path``, on disk when the block ends."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        yield handle
        handle.flush()
        os.fsync(handle.fileno())
