"""Run saves: one folder per run, JSON files written atomically.

Layout of ``<saves>/<run-id>/``::

    run.json                  run metadata (tinydb document: scenario snapshot, seed,
                              lineage, pending interventions)
    head.json                 what ``list`` shows of run.json, kept for it as it is
                              (engine/saves/headfile.py)
    rounds/000000.json.gz     round 0: the initial state (a keyframe)
    rounds/000001.json.gz     one file per finished round: what changed (engine/saves/roundfile.py)
    rounds/000002.round       the same for a large round: binary (engine/saves/binround.py)
    index.jsonl               one line per round: metrics, usage, file size and checksum
    .lock                     held by the process that runs the simulation
    measurements.json         post-hoc surveys and ratings (engine/saves/measurements.py)
    .measure.lock             held while measurements.json is read, merged and rewritten

Each round has its own small file written once and replaced atomically, so autosave cost
stays flat however long the run grows and a kill at any moment leaves every finished round
readable. A branch hard-links its parent's round files (they are never written again) and
writes its fork round as a keyframe, so it costs the same at round 200 as at round 2 and
stays readable when the parent is deleted. Format-2 runs (``rounds/NNNNNN.json``, the full
state in every file) read as they are; engine/saves/runfiles.py reads and writes a run's rounds.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from ..core.metrics import Metrics
from ..core.scenario import Scenario
from ..core.state import RoundRecord
from ..errors import RunLockedError, SaveError
from .atomic import atomic_write_text
from .cleanup import clean, staging_prefix
from .headfile import HEAD_FILE, listed_head, read_head, single_doc, write_head
from .history import History
from .roundcheck import RunCheck
from .roundfile import IndexEntry, Keyframe, PackedMarks, RoundFile
from .runfiles import INDEX_FILE, ROUNDS_DIR, RunFiles, parse_json, read_bytes
from .runmeta import Lineage, RunMeta, Snapshot, TrialLink, fork
from .saferead import is_real_folder, stat_regular
from .verified import Verdicts

if TYPE_CHECKING:
    from filelock import FileLock

META_FILE = "run.json"
LOCK_FILE = ".lock"
MEASURE_FILE = "measurements.json"
MEASURE_LOCK = ".measure.lock"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


#: The folder in the saves folder the app exports runs to by default (never a run).
EXPORTS = "exports"


def check_run_id(run_id: str) -> str:
    """Accept only plain names: no paths, no traversal, no hidden files, not the exports
    folder."""
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise SaveError(f"run id {run_id!r} is not a plain name (letters, digits, '.', '_', '-')")
    if run_id == EXPORTS:
        raise SaveError(f"run id {run_id!r} is taken: the saves folder keeps exports there")
    return run_id


def default_saves_dir() -> Path:
    """``$SOCIALSIM_SAVES`` if set, else ``./saves``."""
    return Path(os.environ.get("SOCIALSIM_SAVES") or "saves")


class _MetaDoc(BaseModel):
    """run.json as tinydb writes it: table ``run`` holding one document."""

    model_config = ConfigDict(extra="ignore", defer_build=True)
    run: dict[str, RunMeta]


def _doc_id(row: Any) -> int:
    return int(row.doc_id)


def _write_meta(path: Path, meta: RunMeta) -> None:
    """Write run.json (table -> {"1": meta}) in a single atomic replace, then its head."""
    written = atomic_write_text(path, f'{{"run":{{"1":{meta.model_dump_json(by_alias=True)}}}}}')
    write_head(path, meta, written)


class RunListing(BaseModel):
    """One row of ``list``: a readable run, or a broken entry with the reason."""

    run_id: str
    ok: bool = True
    reason: str = ""
    name: str = ""
    title: str = ""
    scenario_id: str = ""
    created: str = ""
    rounds_done: int = 0
    total_rounds: int = 0
    model: str = ""
    parent: Lineage | None = None
    trial: TrialLink | None = None
    #: Its named snapshots (``s`` in the app), in the order they were named.
    snapshots: list[Snapshot] = []
    #: The metrics after the last round (None when the index does not hold them yet).
    metrics: Metrics | None = None


def _check_rounds(
    files: RunFiles, stop: Callable[[], bool] | None = None
) -> tuple[int, Metrics | None]:
    """(rounds done, metrics after the last) of a run, every indexed round file checked
    whole against its index and its run (:meth:`RunFiles.verify`: only files not found
    sound before with the same fingerprint are read); a format-2 run without an index has
    its last round read."""
    numbers = files.numbers()
    entries, _ = files.index_lines()
    if not entries:
        files.read(numbers[-1])
        return numbers[-1], None
    if len(entries) > len(numbers):
        raise SaveError(f"{files.rounds}: rounds are missing (the index lists {len(entries)})")
    files.verify(entries, stop)
    return numbers[-1], entries[-1].metrics if len(entries) == len(numbers) else None


def _is_run_folder(entry: Path) -> bool:
    return is_real_folder(entry) and bool(_RUN_ID.fullmatch(entry.name))


#: What a run folder may hold (besides ``.tmp`` files of interrupted writes).
_RUN_ENTRIES = frozenset(
    {META_FILE, HEAD_FILE, ROUNDS_DIR, INDEX_FILE, LOCK_FILE, MEASURE_FILE, MEASURE_LOCK}
)


def _holdings(folder: Path, entries: list[str]) -> str:
    """``run.json (812 bytes), rounds/ (3 files)``: what a run folder holds."""
    parts = []
    for name in entries:
        path = folder / name
        try:
            if path.is_dir():
                parts.append(f"{name}/ ({len(os.listdir(path))} files)")
            else:
                parts.append(f"{name} ({path.stat().st_size:,} bytes)")
        except OSError:
            parts.append(f"{name} (unreadable)")
    return ", ".join(parts) or "nothing"


def _link(source: Path, folder: Path) -> None:
    """Hard-link ``source`` into ``folder``; copy it where the file system cannot link
    (another device, no link support, too many links)."""
    try:
        os.link(source, folder / source.name)
    except OSError:
        shutil.copyfile(source, folder / source.name)


class SaveStore:
    """All runs under one saves folder."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_saves_dir()

    def run_dir(self, run_id: str) -> Path:
        """The folder of a run (the id is checked to be a plain name; a symlinked run
        folder is refused, so one run never writes into another)."""
        folder = self.root / check_run_id(run_id)
        if folder.is_symlink():
            raise SaveError(f"{folder}: a symlinked run folder is refused (copy the run instead)")
        return folder

    def exists(self, run_id: str) -> bool:
        """Whether a run folder with this id exists."""
        return (self.run_dir(run_id) / META_FILE).exists()

    def exists_quietly(self, ref: str) -> bool:
        """:meth:`exists`, but False (not an error) for anything that is not a plain id:
        tells a saved run id from a scenario id or path."""
        try:
            return self.exists(ref)
        except SaveError:
            return False

    def new_run_id(self, prefix: str) -> str:
        """A fresh id such as ``tavern-20261130-094512-3fa2``."""
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        base = re.sub(r"[^A-Za-z0-9_-]", "-", prefix or "run")[:40] or "run"
        while True:
            run_id = f"{base}-{stamp}-{secrets.token_hex(2)}"
            if not self.run_dir(run_id).exists():
                return run_id

    # -- writing ---------------------------------------------------------------------

    def create(self, meta: RunMeta, first: RoundFile) -> IndexEntry:
        """Create a run folder holding its metadata and round 0 (a keyframe)."""
        entries: list[IndexEntry] = []
        self._materialize(meta, lambda files: entries.append(files.write(first)))
        return entries[0]

    def _materialize(self, meta: RunMeta, fill: Callable[[RunFiles], object]) -> None:
        """Build a run folder in a hidden staging folder (its metadata, then ``fill`` writes
        its rounds), then rename it into place."""
        target = self.run_dir(meta.run_id)
        if target.exists():
            raise SaveError(f"{target}: a run with id {meta.run_id!r} already exists")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=staging_prefix(meta.run_id), dir=self.root))
        except OSError as err:
            raise SaveError(f"{self.root}: cannot create a run here ({err.strerror})") from None
        try:
            _write_meta(staging / META_FILE, meta)
            (staging / ROUNDS_DIR).mkdir()
            fill(RunFiles(staging, RunCheck.of(meta, meta.run_id)))
            os.rename(staging, target)
        except OSError as err:
            raise SaveError(f"{target}: cannot create run ({err.strerror})") from None
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    @contextmanager
    def staging(self, run_id: str) -> Iterator[SaveStore]:
        """A store in a hidden staging folder of this one, to build run ``run_id`` whole
        before :meth:`publish` moves it here; what is not published is removed (what a kill
        leaves, by :meth:`clean_leftovers` once this process is gone)."""
        target = self.run_dir(run_id)
        if target.exists():
            raise SaveError(f"{target}: a run with id {run_id!r} already exists")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=staging_prefix(run_id), dir=self.root))
        except OSError as err:
            raise SaveError(f"{self.root}: cannot create a run here ({err.strerror})") from None
        try:
            yield SaveStore(staging)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def publish(self, staged: SaveStore, run_id: str) -> None:
        """Move run ``run_id``, built whole in ``staged`` (:meth:`staging`), into place."""
        if (target := self.run_dir(run_id)).exists():
            raise SaveError(f"{target}: a run with id {run_id!r} already exists")
        try:
            os.rename(staged.run_dir(run_id), target)
        except OSError as err:
            raise SaveError(f"{target}: cannot save the run ({err.strerror})") from None

    def write_meta(self, meta: RunMeta) -> None:
        """Replace a run's metadata atomically."""
        path = self.run_dir(meta.run_id) / META_FILE
        try:
            _write_meta(path, meta)
        except OSError as err:
            raise SaveError(f"{path}: cannot write ({err.strerror})") from None

    def files(self, run_id: str, meta: RunMeta | None = None) -> RunFiles:
        """The round files and index of a run (``meta``: its metadata, read if not given),
        every file read checked against the run."""
        meta = meta or self.read_meta(run_id)
        return RunFiles(self.run_dir(run_id), RunCheck.of(meta, run_id))

    def lock(self, run_id: str) -> FileLock:
        """Take the run's lock, or fail at once if another process holds it or the run
        cannot be written (its folder or ``rounds/`` read-only): then nothing is changed."""
        from filelock import FileLock, Timeout  # only writers lock: show and export do not

        folder = self.run_dir(run_id)
        for where in (folder, folder / ROUNDS_DIR):
            if where.is_dir() and not os.access(where, os.W_OK | os.X_OK):
                raise SaveError(f"{where}: cannot write the run (permission denied)")
        if os.path.lexists(folder / LOCK_FILE):
            stat_regular(os.fspath(folder / LOCK_FILE), "lock file")
        lock = FileLock(str(folder / LOCK_FILE), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise RunLockedError(
                f"run {run_id!r} is open in another socialsim process; close it there first"
            ) from None
        except OSError as err:
            raise SaveError(f"{folder}: cannot lock the run ({err.strerror})") from None
        return lock

    def _unlocked(self, folder: Path) -> bool:
        """Whether nobody holds the run's nor its measurements' lock (False if unknown)."""
        from filelock import FileLock, Timeout

        for name in (LOCK_FILE, MEASURE_LOCK):
            if name == MEASURE_LOCK and not os.path.lexists(folder / name):
                continue  # never taken, so not held (and not made here)
            lock = FileLock(str(folder / name), timeout=0)
            try:
                lock.acquire()
            except (Timeout, OSError):
                return False
            lock.release()
        return True

    def clean_leftovers(self, run_ids: Iterable[str] | None = None) -> list[Path]:
        """Remove what killed writers left in the saves folder (staging folders of creates
        and branches, runs half-deleted, ``.tmp`` files of interrupted writes); returns the
        paths removed. See engine/saves/cleanup.py. ``run_ids``: look for ``.tmp`` files in these
        runs only (what a command opening one run does: one listing of the saves folder
        and two of the run), else in every run."""
        if not self.root.is_dir():
            return []
        if run_ids is not None:
            named = (self.root / r for r in run_ids if _RUN_ID.fullmatch(r) and ".." not in r)
            runs = [e for e in named if _is_run_folder(e)]
            return clean(self.root, runs, self._unlocked)
        try:
            entries = sorted(self.root.iterdir())
        except OSError:
            return []
        runs = [e for e in entries if not e.name.startswith(".") and _is_run_folder(e)]
        return clean(self.root, runs, self._unlocked)

    # -- reading ---------------------------------------------------------------------

    def read_meta(self, run_id: str) -> RunMeta:
        """A run's metadata, validated; clear errors for missing, corrupt or newer saves."""
        folder = self.run_dir(run_id)
        path = folder / META_FILE
        if not folder.is_dir():
            raise SaveError(f"no run {run_id!r} in {self.root}")
        read_head(path)
        meta: RunMeta = single_doc(parse_json(_MetaDoc, read_bytes(path), path, "save").run, path)
        # A copied or renamed folder is its own run: never write into the original. Its
        # earlier round files carry the id it had.
        if meta.run_id == run_id:
            return meta
        return meta.model_copy(update={"run_id": run_id, "aliases": [*meta.aliases, meta.run_id]})

    def round_numbers(self, run_id: str) -> list[int]:
        """Numbers of the round files present, checked to be contiguous from 0."""
        return self.files(run_id).numbers()

    def history(self, run_id: str, meta: RunMeta | None = None, *, whole: bool = False) -> History:
        """A saved run's rounds, read lazily (see :class:`~engine.saves.history.History`);
        ``whole``: every round is checked first (a reader of them all fails before it
        shows anything)."""
        meta = meta or self.read_meta(run_id)
        files = self.files(run_id, meta)
        entries = files.load_index(meta.scenario)
        if whole:
            files.verify(entries)
        return History.saved(files, entries)

    #: The name :meth:`history` had when it returned a list.
    read_rounds = history

    def read_round(self, run_id: str, number: int) -> RoundRecord:
        """One round's record, with the state after it."""
        history = self.history(run_id)
        if not 0 <= number < len(history):
            raise SaveError(f"run {run_id!r} has rounds 0..{len(history) - 1}, not {number}")
        return history[number]

    def check_outside(self, path: Path, option: str = "--out") -> Path:
        """``path``, if a command may write it: outside this saves folder or in its exports
        folder (symlinks resolved), so no output lands on a run, a round or among the runs."""
        root = self.root.resolve()
        where = path.resolve()
        if where != root and root not in where.parents:
            return path
        if where == root / EXPORTS or root / EXPORTS in where.parents:
            return path
        raise SaveError(
            f"{option} {path}: inside the saves folder {self.root}, where only runs are "
            f"written; write outside it (or in {self.root / EXPORTS})"
        )

    def export_dir(self, run_id: str) -> Path:
        """Where the app exports a run by default: ``<saves>/exports/<run id>``."""
        return self.root / EXPORTS / run_id

    def list_runs(self, stop: Callable[[], bool] | None = None) -> list[RunListing]:
        """Every entry of the saves folder; unreadable ones are listed with a reason.
        Reads each run's head (head.json; run.json where none is kept for it) and index,
        checks the size of every round file against the index, and reads whole only the
        round files not found sound before (engine/saves/verified.py; a format-2 run's last
        one). Once ``stop()`` is true (checked between round files) the listing ends early:
        its rows are then not whole, for a caller that no longer shows them."""
        if not self.root.is_dir():
            return []
        try:
            entries = sorted(self.root.iterdir())
        except OSError as err:
            raise SaveError(f"{self.root}: unreadable saves folder ({err.strerror})") from None
        rows: list[RunListing] = []
        for entry in entries:
            if stop is not None and stop():
                break
            if entry.name.startswith(".") or entry.name == EXPORTS:
                continue
            rows.append(self._listing(entry, stop))
        return rows

    def _listing(self, entry: Path, stop: Callable[[], bool] | None = None) -> RunListing:
        name = entry.name
        if entry.is_symlink() and _RUN_ID.fullmatch(name):
            return RunListing(run_id=name, ok=False, reason="a symlinked run folder (refused)")
        if not entry.is_dir() or not _RUN_ID.fullmatch(name):
            return RunListing(run_id=name, ok=False, reason="not a socialsim run folder")
        try:
            head = listed_head(entry / META_FILE)
            files = RunFiles(entry, RunCheck.of(head, name))
            done, metrics = _check_rounds(files, stop)
        except SaveError as err:
            return RunListing(run_id=name, ok=False, reason=str(err))
        return RunListing(
            run_id=name,
            name=head.name,
            title=head.scenario.title,
            scenario_id=head.scenario.id,
            created=head.created,
            rounds_done=done,
            total_rounds=head.total_rounds,
            model=head.model,
            parent=head.parent,
            trial=head.trial,
            snapshots=head.snapshots,
            metrics=metrics,
        )

    # -- measurements (post hoc; never part of the run's state) -------------------------

    def read_measurements(self, run_id: str) -> dict[str, list[dict[str, Any]]]:
        """Surveys and ratings saved with a run: ``{"surveys": [...], "ratings": [...]}``."""
        from .measurements import open_db  # tinydb: only commands that measure need it

        with open_db(self.run_dir(run_id) / MEASURE_FILE) as db:
            return {
                name: [dict(row) for row in sorted(db.table(name).all(), key=_doc_id)]
                for name in ("surveys", "ratings")
            }

    def add_measurements(self, run_id: str, table: str, rows: list[BaseModel]) -> None:
        """Append survey or rating rows to the run's measurements file, merged under its
        measurements lock (not the run's: a run playing can be measured)."""
        from .measurements import open_db

        folder = self.run_dir(run_id)
        with self._measure_lock(run_id):
            if not (folder / META_FILE).is_file():
                raise SaveError(f"no run {run_id!r} in {self.root}")
            with open_db(folder / MEASURE_FILE) as db:
                db.table(table).insert_multiple(row.model_dump(mode="json") for row in rows)

    def _measure_lock(self, run_id: str) -> AbstractContextManager[None]:
        """The lock of a run's measurements (:func:`~engine.saves.measurements.locked`)."""
        from .measurements import locked

        missing = f"no run {run_id!r} in {self.root}"
        return locked(self.run_dir(run_id) / MEASURE_LOCK, missing)

    # -- lineage ---------------------------------------------------------------------

    def branch(
        self,
        run_id: str,
        at_round: int,
        new_id: str | None = None,
        name: str = "",
        scenario: Scenario | None = None,
        intervention: str | None = None,
        rounds: int | None = None,
        meta: RunMeta | None = None,
    ) -> RunMeta:
        """A new run holding rounds 0..at_round; readable without its parent (``meta``:
        the parent's metadata as its open simulation holds it, read if not given: a
        large cast's ``run.json`` takes a good part of a second).

        Rounds before the fork are hard links to the parent's files (copies where the file
        system cannot link); the fork round is written as a keyframe. ``intervention``
        names one of the scenario's ready-made interventions: its events are scheduled
        from the fork on (its round 1 is the first round after the fork); ``rounds`` plans
        that many rounds after the fork, and the queue goes with a fork at the last round
        (:func:`~engine.saves.runmeta.fork`).
        """
        meta = self.read_meta(run_id) if meta is None else meta
        parent = self.files(run_id, meta)
        entries = parent.load_index(meta.scenario)
        done = len(entries) - 1
        if not 0 <= at_round <= done:
            raise SaveError(
                f"--at {at_round}: run {run_id!r} has rounds 0..{done}; cannot branch there"
            )
        new_id = check_run_id(new_id) if new_id else self.new_run_id(meta.scenario.id or "run")
        if self.run_dir(new_id).exists():
            raise SaveError(f"{self.run_dir(new_id)}: a run with id {new_id!r} already exists")
        parent.verify(entries[: at_round + 1])  # a branch never links a damaged round
        child = fork(
            meta,
            at_round,
            new_id,
            name=name,
            scenario=scenario,
            intervention=intervention,
            rounds=rounds,
        )
        file, state, counter = parent.last_state(entries[: at_round + 1], meta.scenario)
        fork_file = file.model_copy(
            update={
                "metrics": entries[at_round].metrics,
                "keyframe": Keyframe.of(state, PackedMarks.of(counter, state.names)),
            }
        )

        written: list[IndexEntry] = []

        def fill(files: RunFiles) -> None:
            for n in range(at_round):
                try:
                    _link(parent.existing_path(n), files.rounds)
                except (OSError, SaveError):
                    if (parent.folder / META_FILE).is_file():
                        raise
                    raise SaveError(
                        f"run {run_id!r} was deleted while it was being branched; "
                        "no branch was made"
                    ) from None
            files.write_index(entries[:at_round])
            written.append(files.write(fork_file))

        self._materialize(child, fill)
        self.files(new_id, child).adopt_verdicts(parent, [*entries[:at_round], *written])
        return child

    def damage(self, run_id: str) -> str | None:
        """What ``delete`` would remove: None for a run whose metadata reads as one; for a
        damaged run (``run.json`` unreadable or missing beside ``rounds/``), why and what it
        holds. A folder that is not a run at all is a SaveError: it is never deleted."""
        folder = self.run_dir(run_id)
        if not folder.is_dir():
            raise SaveError(f"no run {run_id!r} in {self.root}")
        try:
            read_head(folder / META_FILE)
        except SaveError as err:
            reason = str(err)
        else:
            return None
        try:
            entries = sorted(os.listdir(folder))
        except OSError as err:
            raise SaveError(f"{folder}: unreadable ({err.strerror})") from None
        foreign = [e for e in entries if e not in _RUN_ENTRIES and not e.endswith(".tmp")]
        if not {META_FILE, ROUNDS_DIR} & set(entries) or foreign:
            what = f"it holds {', '.join(foreign[:3])}" if foreign else "no run.json, no rounds/"
            raise SaveError(f"{folder}: not a socialsim run ({what}); not deleted")
        return f"{reason}; it holds {_holdings(folder, entries)}"

    def delete(self, run_id: str, *, damaged: bool = False) -> None:
        """Delete a run folder (refused while another process holds its lock); a damaged
        run only when ``damaged`` (its :meth:`damage` was shown), never another folder."""
        folder = self.run_dir(run_id)
        damage = self.damage(run_id)
        if damage is not None and not damaged:
            raise SaveError(f"run {run_id!r} is damaged ({damage}); not deleted")
        lock = self.lock(run_id)
        try:
            with self._measure_lock(run_id):  # a survey saving now fails, never lost
                trash = folder.with_name(f".deleting-{run_id}-{secrets.token_hex(2)}")
                os.rename(folder, trash)
        except OSError as err:
            raise SaveError(f"{folder}: cannot delete the run ({err.strerror})") from None
        finally:
            lock.release()
        shutil.rmtree(trash, ignore_errors=True)
        Verdicts.forget(folder)
