"""Run saves: one folder per run, tinydb JSON files written atomically.

Layout of ``<saves>/<run-id>/``::

    run.json            run metadata (scenario snapshot, seed, lineage, pending interventions)
    rounds/000000.json  the initial state (round 0)
    rounds/000001.json  one file per finished round: actions, updates, state after it
    .lock               held by the process that runs the simulation

tinydb rewrites a whole file on every write, so every round gets its own small file:
autosave cost stays flat however long the run grows, and a kill at any moment leaves
every finished round readable (each file is replaced atomically, never edited in place).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock, Timeout
from pydantic import BaseModel, ValidationError
from tinydb.storages import Storage

from .errors import RunLockedError, SaveError
from .runmeta import FORMAT_VERSION, Lineage, RunMeta, fork
from .scenario import Scenario
from .state import RoundRecord

META_FILE = "run.json"
ROUNDS_DIR = "rounds"
LOCK_FILE = ".lock"
MEASURE_FILE = "measurements.json"
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
_ROUND_FILE = re.compile(r"^(\d{6})\.json$")


def check_run_id(run_id: str) -> str:
    """Accept only plain names: no paths, no traversal, no hidden files."""
    if not _RUN_ID.fullmatch(run_id) or ".." in run_id:
        raise SaveError(f"run id {run_id!r} is not a plain name (letters, digits, '.', '_', '-')")
    return run_id


def default_saves_dir() -> Path:
    """``$SOCIALSIM_SAVES`` if set, else ``./saves``."""
    return Path(os.environ.get("SOCIALSIM_SAVES") or "saves")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old or the new file, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class AtomicJSONStorage(Storage):
    """tinydb storage that replaces its file atomically on every write."""

    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        self.create = create

    def read(self) -> dict[str, dict[str, Any]] | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as err:
            raise SaveError(f"{self.path}: unreadable save file ({err})") from None
        if not text.strip():
            raise SaveError(f"{self.path}: empty or truncated save file")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise SaveError(f"{self.path}: corrupt or truncated save file ({err})") from None
        if not isinstance(data, dict):
            raise SaveError(f"{self.path}: not a socialsim save file")
        return data

    def write(self, data: dict[str, dict[str, Any]]) -> None:
        if not self.create and not self.path.exists():
            raise SaveError(f"{self.path}: save file disappeared")
        atomic_write_text(self.path, json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def _read_doc(path: Path, table: str) -> dict[str, Any]:
    """The single document of a one-document tinydb file."""
    if not path.is_file():
        raise SaveError(f"{path}: missing save file")
    tables = AtomicJSONStorage(path, create=False).read() or {}
    rows = tables.get(table)
    if not isinstance(rows, dict) or len(rows) != 1:
        raise SaveError(f"{path}: not a socialsim save file (no single {table!r} record)")
    ((doc_id, doc),) = rows.items()
    if not doc_id.isdigit() or not isinstance(doc, dict):
        raise SaveError(f"{path}: not a socialsim save file (malformed {table!r} record)")
    return doc


def _write_doc(path: Path, table: str, doc: BaseModel) -> None:
    """Write a one-document tinydb file (table -> {"1": doc}) in a single atomic replace."""
    body = doc.model_dump_json(by_alias=True)
    atomic_write_text(path, f'{{"{table}":{{"1":{body}}}}}')


M = TypeVar("M", bound=BaseModel)


def _validated(model: type[M], doc: dict[str, Any], path: Path, what: str) -> M:
    """Validate a loaded document; a mismatch is one SaveError naming file and field."""
    try:
        return model.model_validate(doc)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise SaveError(f"{path}: invalid {what} ({loc}: {first['msg']})") from None


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


class SaveStore:
    """All runs under one saves folder."""

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_saves_dir()

    def run_dir(self, run_id: str) -> Path:
        """The folder of a run (the id is checked to be a plain name)."""
        return self.root / check_run_id(run_id)

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

    def create(self, meta: RunMeta, initial: RoundRecord) -> None:
        """Create a run folder holding its metadata and round-0 state."""
        self._materialize(meta, [initial])

    def _materialize(self, meta: RunMeta, records: list[RoundRecord]) -> None:
        """Build a run folder in a hidden staging folder, then rename it into place."""
        target = self.run_dir(meta.run_id)
        if target.exists():
            raise SaveError(f"{target}: a run with id {meta.run_id!r} already exists")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{meta.run_id}.", dir=self.root))
        except OSError as err:
            raise SaveError(f"{self.root}: cannot create a run here ({err.strerror})") from None
        try:
            _write_doc(staging / META_FILE, "run", meta)
            for record in records:
                path = staging / ROUNDS_DIR / f"{record.round:06d}.json"
                _write_doc(path, "round", record)
            os.rename(staging, target)
        except OSError as err:
            raise SaveError(f"{target}: cannot create run ({err.strerror})") from None
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    def write_meta(self, meta: RunMeta) -> None:
        """Replace a run's metadata atomically."""
        path = self.run_dir(meta.run_id) / META_FILE
        _write_doc(path, "run", meta)

    def append_round(self, run_id: str, record: RoundRecord) -> None:
        """Persist one finished round in its own file (atomic)."""
        path = self.run_dir(run_id) / ROUNDS_DIR / f"{record.round:06d}.json"
        try:
            _write_doc(path, "round", record)
        except OSError as err:
            raise SaveError(f"{path}: cannot write round ({err.strerror})") from None

    def lock(self, run_id: str) -> FileLock:
        """Take the run's lock, or fail at once if another process holds it."""
        folder = self.run_dir(run_id)
        lock = FileLock(str(folder / LOCK_FILE), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise RunLockedError(
                f"run {run_id!r} is open in another socialsim process; close it there first"
            ) from None
        return lock

    # -- reading ---------------------------------------------------------------------

    def read_meta(self, run_id: str) -> RunMeta:
        """A run's metadata, validated; clear errors for missing, corrupt or newer saves."""
        folder = self.run_dir(run_id)
        path = folder / META_FILE
        if not folder.is_dir():
            raise SaveError(f"no run {run_id!r} in {self.root}")
        doc = _read_doc(path, "run")
        version = doc.get("format_version")
        if not isinstance(version, int):
            raise SaveError(f"{path}: not a socialsim save file (no format_version)")
        if version > FORMAT_VERSION:
            raise SaveError(
                f"{path}: written by a newer socialsim (save format {version}; "
                f"this version reads up to {FORMAT_VERSION})"
            )
        meta = _validated(RunMeta, doc, path, "save")
        # A copied or renamed folder is its own run: never write into the original.
        return meta if meta.run_id == run_id else meta.model_copy(update={"run_id": run_id})

    def round_numbers(self, run_id: str) -> list[int]:
        """Numbers of the round files present, checked to be contiguous from 0."""
        folder = self.run_dir(run_id) / ROUNDS_DIR
        if not folder.is_dir():
            raise SaveError(f"{folder}: missing rounds folder")
        numbers = sorted(
            int(m.group(1)) for p in folder.iterdir() if (m := _ROUND_FILE.match(p.name))
        )
        if numbers != list(range(len(numbers))) or not numbers:
            raise SaveError(f"{folder}: rounds are missing (found {numbers[:12]})")
        return numbers

    def read_round(self, run_id: str, number: int) -> RoundRecord:
        """One round record, validated."""
        path = self.run_dir(run_id) / ROUNDS_DIR / f"{number:06d}.json"
        doc = _read_doc(path, "round")
        record = _validated(RoundRecord, doc, path, "round record")
        if record.round != number:
            raise SaveError(f"{path}: holds round {record.round}, expected {number}")
        return record

    def read_rounds(self, run_id: str) -> list[RoundRecord]:
        """Every saved round of a run, round 0 first."""
        return [self.read_round(run_id, n) for n in self.round_numbers(run_id)]

    def list_runs(self) -> list[RunListing]:
        """Every entry of the saves folder; unreadable ones are listed with a reason."""
        if not self.root.is_dir():
            return []
        rows: list[RunListing] = []
        for entry in sorted(self.root.iterdir()):
            if entry.name.startswith("."):
                continue
            rows.append(self._listing(entry))
        return rows

    def _listing(self, entry: Path) -> RunListing:
        name = entry.name
        if not entry.is_dir() or not _RUN_ID.fullmatch(name):
            return RunListing(run_id=name, ok=False, reason="not a socialsim run folder")
        try:
            meta = self.read_meta(name)
            done = len(self.round_numbers(name)) - 1
            self.read_round(name, done)
        except SaveError as err:
            return RunListing(run_id=name, ok=False, reason=str(err))
        return RunListing(
            run_id=name,
            name=meta.name,
            title=meta.scenario.title,
            scenario_id=meta.scenario.id,
            created=meta.created,
            rounds_done=done,
            total_rounds=meta.total_rounds,
            model=meta.model,
            parent=meta.parent,
        )

    # -- measurements (post hoc; never part of the run's state) -------------------------

    def read_measurements(self, run_id: str) -> dict[str, list[dict[str, Any]]]:
        """Surveys and ratings saved with a run: ``{"surveys": [...], "ratings": [...]}``."""
        path = self.run_dir(run_id) / MEASURE_FILE
        tables = AtomicJSONStorage(path).read() or {}
        return {
            name: [tables[name][k] for k in sorted(tables.get(name, {}), key=int)]
            for name in ("surveys", "ratings")
        }

    def add_measurements(self, run_id: str, table: str, rows: list[BaseModel]) -> None:
        """Append survey or rating rows to the run's measurements file (one atomic write)."""
        if not (self.run_dir(run_id) / META_FILE).is_file():
            raise SaveError(f"no run {run_id!r} in {self.root}")
        path = self.run_dir(run_id) / MEASURE_FILE
        tables = AtomicJSONStorage(path).read() or {}
        current = tables.setdefault(table, {})
        start = max((int(k) for k in current), default=0) + 1
        for k, row in enumerate(rows):
            current[str(start + k)] = row.model_dump(mode="json")
        AtomicJSONStorage(path).write(tables)

    # -- lineage ---------------------------------------------------------------------

    def branch(
        self,
        run_id: str,
        at_round: int,
        new_id: str | None = None,
        name: str = "",
        scenario: Scenario | None = None,
        intervention: str | None = None,
    ) -> RunMeta:
        """A new run holding copies of rounds 0..at_round; readable without its parent.

        ``intervention`` names one of the scenario's ready-made interventions: its events
        are scheduled from the fork on (its round 1 is the first round after the fork).
        """
        meta = self.read_meta(run_id)
        done = len(self.round_numbers(run_id)) - 1
        if not 0 <= at_round <= done:
            raise SaveError(
                f"--at {at_round}: run {run_id!r} has rounds 0..{done}; cannot branch there"
            )
        records = [self.read_round(run_id, n) for n in range(at_round + 1)]
        new_id = check_run_id(new_id) if new_id else self.new_run_id(meta.scenario.id or "run")
        child = fork(
            meta, at_round, new_id, name=name, scenario=scenario, intervention=intervention
        )
        self._materialize(child, records)
        return child

    def delete(self, run_id: str) -> None:
        """Delete a run folder (refused while another process holds its lock)."""
        folder = self.run_dir(run_id)
        if not folder.is_dir():
            raise SaveError(f"no run {run_id!r} in {self.root}")
        lock = self.lock(run_id)
        try:
            trash = folder.with_name(f".deleting-{run_id}-{secrets.token_hex(2)}")
            os.rename(folder, trash)
        finally:
            lock.release()
        shutil.rmtree(trash, ignore_errors=True)
