"""``measurements.json``, a run's post-hoc surveys and ratings, as a tinydb database whose
every write replaces the file atomically (tables of numbered rows, as tinydb lays them out)."""

from __future__ import annotations

import json
import os
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


def open_db(path: Path) -> TinyDB:
    """The measurements database at ``path`` (created on its first write)."""
    return TinyDB(path, storage=AtomicJSONStorage)
