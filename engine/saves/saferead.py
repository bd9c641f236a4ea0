"""Reading files from a saves folder: only regular files, never through a symlink, never
waiting on a named pipe or a device, and never more than a bounded size.

A save file is opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked to be a regular file on
the open descriptor (``fstat``), so a symlink, a FIFO or a device put in place of a round
file, the index, run.json, a study or a trial is reported at once as damage instead of
hanging the command or reading ``/dev/zero`` without end.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ..errors import SaveError, SocialsimError

#: The largest save file read, decompressed. A keyframe holds every edge with its memory:
#: 463 MB of JSON for 1,000 agents with ``memory_size = 5`` (bench/casts.py), about four
#: times that for 2,000 (the agent limit).
MAX_SAVE_FILE_BYTES = 2 * 1024 * 1024 * 1024

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def kind(mode: int) -> str:
    """What a non-regular file is, for messages."""
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_regular(
    path: Path,
    what: str = "save file",
    error: type[SocialsimError] = SaveError,
    limit: int = MAX_SAVE_FILE_BYTES,
) -> bytes:
    """The bytes of the regular file ``path``; a missing, special, symlinked, unreadable or
    over-large file raises ``error`` with one line naming it (``what`` it is)."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise error(f"{path}: missing {what}") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise error(f"{path}: a symlink in place of a {what} (refused)") from None
        raise error(f"{path}: unreadable {what} ({err.strerror})") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{path}: {kind(mode)} in place of a {what} (refused)")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, min(1 << 24, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise error(f"{path}: larger than {limit // 1024**2} MB, not a {what}")
        return b"".join(chunks)
    except OSError as err:
        raise error(f"{path}: unreadable {what} ({err.strerror})") from None
    finally:
        os.close(fd)


def stat_regular(path: str, what: str = "round file") -> os.stat_result:
    """The status of ``path`` itself (a symlink is not followed); a SaveError unless it is
    a regular file."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        raise SaveError(f"{path}: missing {what}") from None
    except OSError as err:
        raise SaveError(f"{path}: unreadable {what} ({err.strerror})") from None
    if not stat.S_ISREG(status.st_mode):
        raise SaveError(f"{path}: {kind(status.st_mode)} in place of a {what} (refused)")
    return status


def is_real_folder(path: Path) -> bool:
    """Whether ``path`` is a folder itself (not a symlink to one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
