"""``measurements.json``, a run's post-hoc surveys and ratings, as a tinydb database whose
every write replaces the file atomically (tables of numbered rows, as tinydb lays them out),
and the lock its writers hold to read, merge and rewrite it."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tinydb import TinyDB
from tinydb.storages import Storage

from ..errors import SaveError
from .atomic import atomic_write_text
from .saferead import read_regular


class AtomicJSONStorage(Storage):
    """tinydb storage on one JSON file, replaced atomically on every write; a damaged file
    is a :class:`SaveError`, never an empty database."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def read(self) -> dict[str, dict[str, Any]] | None:
        if not os.path.lexists(self.path):
            return None
        try:
            text = read_regular(self.path).decode("utf-8")
        except UnicodeDecodeError as err:
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
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        try:
            atomic_write_text(self.path, text)
        except OSError as err:
            raise SaveError(f"{self.path}: cannot write ({err.strerror or err})") from None


@contextmanager
def locked(path: Path, missing: str) -> Iterator[None]:
    """Hold the lock file ``path`` of a run's measurements (waited for: a writer holds it
    for one file write); a SaveError where it cannot be taken (``missing``: no run folder;
    a read-only or full folder). The run folder is never created for it (filelock would:
    a run deleted meanwhile stays deleted)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:
        raise SaveError(missing) from None
    except OSError as err:
        raise SaveError(
            f"{path.parent}: cannot lock the run's measurements ({err.strerror})"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def open_db(path: Path) -> TinyDB:
    """The measurements database at ``path`` (created on its first write)."""
    return TinyDB(path, storage=AtomicJSONStorage)
