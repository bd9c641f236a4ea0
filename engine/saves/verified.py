"""Which round files of a run were read whole and found sound, so ``list`` re-reads only the
files changed since, and damage a reader found in a file that looks unchanged stays flagged.

A file is known by its fingerprint: size, modification and change times, inode, and the
CRC-32 its index line gives it. Rewriting a file, or restoring its modification time
afterwards, changes its change time, so the file is read again. Damage no fingerprint
shows (the disk's own bit rot) is caught by the reader that reads the file (every read
checks the index's size and checksum) and recorded here, so ``list`` shows it too.

Kept in ``<saves>/.verified/<run-id>.json``, beside the runs and never inside one (nothing is
written into a run to check it). Losing or damaging this file costs one more reading, no
more, so it is written best-effort and without waiting for the disk (a read-only or
full saves folder is checked every time).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SaveError
from .saferead import is_real_folder, read_regular

DIR = ".verified"
#: (size, mtime_ns, ctime_ns, inode, index CRC-32) of a round file.
Print = list[int]


def fingerprint(status: os.stat_result, crc: int) -> Print:
    """The fingerprint of a round file with this status and index checksum."""
    return [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino, crc]


@dataclass
class Verdicts:
    """The verdicts on one run's round files, under ``key`` (the run's check: verdicts
    taken for another cast or lineage are dropped)."""

    path: Path
    key: str
    good: dict[int, Print] = field(default_factory=dict)
    #: (round, its fingerprint then or None for a missing file, the damage found).
    damage: tuple[int, Print | None, str] | None = None
    dirty: bool = False

    @classmethod
    def of(cls, run_folder: Path, key: str) -> Verdicts:
        """The verdicts kept for the run in ``run_folder`` (none if unreadable)."""
        verdicts = cls(run_folder.parent / DIR / f"{run_folder.name}.json", key)
        try:
            doc = json.loads(read_regular(verdicts.path, "verdict file", limit=1 << 26))
            if doc["key"] != key:
                return verdicts
            verdicts.good = {int(n): [int(v) for v in fp] for n, fp in doc["good"].items()}
            if doc["damage"] is not None:
                n, fp, reason = doc["damage"]
                verdicts.damage = (int(n), fp, str(reason))
        except (SaveError, ValueError, KeyError, TypeError):
            verdicts.good, verdicts.damage = {}, None
        return verdicts

    @staticmethod
    def forget(run_folder: Path) -> None:
        """Drop the verdicts kept for a run that is gone (best-effort)."""
        with contextlib.suppress(OSError):
            (run_folder.parent / DIR / f"{run_folder.name}.json").unlink(missing_ok=True)

    def known_damage(self, n: int, fp: Print | None) -> str | None:
        """The damage a reader found in round ``n`` while it had fingerprint ``fp``."""
        if self.damage is not None and self.damage[0] == n and self.damage[1] == fp:
            return self.damage[2]
        return None

    def sound(self, n: int, fp: Print) -> bool:
        """Whether round ``n`` was found sound with this very fingerprint."""
        return self.good.get(n) == fp

    def sound_but_linked(self, n: int, fp: Print) -> bool:
        """Whether round ``n`` was found sound with ``fp`` but for its change time: the
        same file (size, modification time, inode, checksum) since linked elsewhere."""
        was = self.good.get(n)
        return was is not None and was[:2] + was[3:] == fp[:2] + fp[3:]

    def add_sound(self, n: int, fp: Print) -> None:
        self.good[n] = fp
        self.dirty = True

    def add_damage(self, n: int, fp: Print | None, reason: str) -> None:
        self.good.pop(n, None)
        self.damage = (n, fp, reason)
        self.dirty = True

    def save(self) -> None:
        """Write the verdicts if they changed (failures are ignored: they are a cache)."""
        if not self.dirty:
            return
        doc = {"key": self.key, "good": self.good, "damage": self.damage}
        data = json.dumps(doc, separators=(",", ":")).encode()
        try:
            self.path.parent.mkdir(exist_ok=True)
            if not is_real_folder(self.path.parent):  # never write through a symlink
                return
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.rename(tmp, self.path)  # no fsync: a verdict lost is a file read again
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return
        self.dirty = False
