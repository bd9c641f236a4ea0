"""Leftovers of killed writers in a saves folder, found and removed when it is opened.

A kill can leave three kinds of hidden entries behind:

* ``.<run-id>.<pid>.<random>/``: the staging folder of a run being created or branched
  (removed once process ``pid`` is gone);
* ``.deleting-<run-id>-<random>/``: a run renamed away to be deleted (always removed);
* ``.<file>.<random>.tmp`` in a run folder or its ``rounds/``: a file being replaced
  atomically (removed while nobody holds the run's lock: its writer held it).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

_STAGING = re.compile(r"^\.[A-Za-z0-9][A-Za-z0-9._-]*\.(\d+)\.[A-Za-z0-9_]+$")
_DELETING = re.compile(r"^\.deleting-")
_TEMP = re.compile(r"^\..+\.tmp$")


def staging_prefix(run_id: str) -> str:
    """The name prefix of this process's staging folder for ``run_id``."""
    return f".{run_id}.{os.getpid()}."


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one we may not signal counts as existing)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_entries(root: Path) -> list[Path]:
    """Staging and deleting folders in ``root`` whose writer is gone."""
    found: list[Path] = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return found
    for name in names:
        if not name.startswith("."):  # a run folder: no status asked (list of 500 runs)
            continue
        staging = _STAGING.match(name)
        if not (_DELETING.match(name) or (staging and not pid_alive(int(staging.group(1))))):
            continue
        path = root / name
        if not path.is_symlink() and path.is_dir():
            found.append(path)
    return found


def temp_files(folder: Path) -> list[Path]:
    """Hidden ``.tmp`` files of interrupted atomic writes in a run folder and its rounds."""
    found: list[Path] = []
    for where in (folder, folder / "rounds"):
        try:
            names = os.listdir(where)
        except OSError:
            continue
        found += [where / n for n in sorted(names) if _TEMP.match(n)]
    return found


def clean(root: Path, run_folders: list[Path], unlocked: Callable[[Path], bool]) -> list[Path]:
    """Remove the leftovers of writers that are gone; returns what was removed.

    ``unlocked(folder)`` tells whether nobody holds a run's lock (checked only for a run
    with temporary files). Anything that cannot be removed (a read-only folder) is left
    and not reported.
    """
    removed: list[Path] = []
    for path in stale_entries(root):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    for folder in run_folders:
        temps = temp_files(folder)
        if not temps or not unlocked(folder):
            continue
        for path in temps:
            try:
                path.unlink()
            except OSError:
                continue
            removed.append(path)
    return removed
