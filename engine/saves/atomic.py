"""Atomic file writes: a reader sees the old file or the new one, never a mix."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def atomic_write_bytes(path: Path, data: bytes) -> os.stat_result:
    """Write ``data`` to a hidden temporary file beside ``path``, flush it to disk, then
    rename it over ``path``; a failure (or a kill) leaves the old file. The file gets the
    mode the umask gives a new file (the kernel applies it: not mkstemp's 0600). Returns
    the new file's status before the rename (its inode tells it from a later one)."""
    made = False
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, _NEW, 0o666)
            break
        except FileExistsError:
            continue
        except FileNotFoundError:  # the folder first (then: not a call every write)
            if made or path.parent.is_dir():  # (a folder that takes no new file: /proc)
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
            made = True
    try:
        try:
            write_all(fd, data)
            os.fsync(fd)
            status = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return status


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to file descriptor ``fd`` (a write may take only part)."""
    view, done = memoryview(data), 0
    while done < len(view):
        done += os.write(fd, view[done:])


def atomic_write_text(path: Path, text: str) -> os.stat_result:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def umask() -> int:
    """The process's umask, read without changing it where ``/proc`` shows it."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
