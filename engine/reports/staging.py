"""Staging an export: a folder written hidden beside its target, under the target's lock,
then moved into place whole (or, after a kill, absent); an earlier export's files replaced
among others' files without ever leaving a mixed set unmarked (:data:`INCOMPLETE`)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..errors import SaveError
from ..saves.atomic import atomic_write_text
from ..saves.cleanup import pid_alive

#: Marks a folder holding other files while an export's files are renamed into it.
INCOMPLETE = ".socialsim-export-incomplete"


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold the lock of exports to ``out``, or fail at once: two exports to one folder never
    mix, and the one that succeeds is the one whose files remain. The lock is a hidden file
    beside ``out``, removed on release; a lock taken on a file already removed (its holder
    finished meanwhile) is refused too, so only the holder of the file there now goes on."""
    import fcntl

    path = out.parent / f"{hidden(out)}.lock"
    busy = SaveError(
        f"--out {out}: another export to this folder is under way; try again when it is done"
    )
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as err:
        raise SaveError(f"--out {out}: cannot lock the folder ({err.strerror})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy from None
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            raise busy from None
        if current != os.fstat(fd).st_ino:
            raise busy
        try:
            yield
        finally:
            with contextlib.suppress(OSError):  # removed by hand meanwhile: nothing to undo
                os.unlink(path)
    finally:
        os.close(fd)


def hidden(out: Path) -> str:
    """``.<name>``, the start of the hidden names beside ``out``; a long name is cut and
    given a hash of the whole, so the names built on it stay within 255 bytes."""
    name = out.name.encode()
    if len(name) <= _NAME_BYTES:
        return f".{out.name}"
    digest = hashlib.sha1(name).hexdigest()[:10]
    return f".{name[:_NAME_BYTES].decode(errors='ignore')}~{digest}"


#: The longest folder name used whole in the hidden names beside it (bytes).
_NAME_BYTES = 160


def prefix(out: Path, kind: str) -> str:
    return f"{hidden(out)}.{kind}-{os.getpid()}-"


def remove_stale(out: Path) -> None:
    """Remove the hidden folders that killed exports to ``out`` left beside it."""
    pattern = re.compile(rf"^{re.escape(hidden(out))}\.(?:export|old)-(\d+)-")
    for entry in out.parent.iterdir():
        m = pattern.match(entry.name)
        if m and entry.is_dir() and not entry.is_symlink() and not pid_alive(int(m.group(1))):
            shutil.rmtree(entry, ignore_errors=True)


def move_into_place(staging: Path, out: Path, ours: set[str]) -> None:
    """Rename the finished ``staging`` folder to ``out``: whole, or (after a kill) absent.
    ``ours``: the names an export may write, which it may replace in ``out``."""
    if not out.exists():
        os.rename(staging, out)
        return
    present = set(os.listdir(out))
    if not present <= ours | {INCOMPLETE}:  # other files: never touch them
        _replace_among_others(staging, out, stale=sorted(present & ours))
        return
    old = Path(tempfile.mkdtemp(prefix=prefix(out, "old"), dir=out.parent))
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
        old = Path(tempfile.mkdtemp(prefix=prefix(out, "old"), dir=out.parent))
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


@contextmanager
def synced(path: Path) -> Iterator[IO[str]]:
    """A new file at ``path``, on disk when the block ends."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        yield handle
        handle.flush()
        os.fsync(handle.fileno())
