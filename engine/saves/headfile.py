"""run.json's head (what ``list`` shows of a run, and what its round files are checked
against): read from run.json, or from ``head.json`` kept beside it, so ``list`` shows a run
without parsing the scenario snapshot run.json holds (a scenario file may be tens of MB).

``head.json`` holds a :class:`~engine.saves.runmeta.RunHead` and the fingerprint of the
run.json it was taken from (size, modification and change times, inode), and is believed
only while run.json still has that fingerprint: every write of run.json replaces the file
(a new inode), then writes the head, both atomically. A kill between the two, a run saved
before the head was kept, a copied folder, or a head file that is missing, damaged or too
large leaves no head that matches, and the row is read from run.json as before. Nothing
but the writer of run.json writes it: a read-only saves folder lists as it always did.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..core.limits import rounds_problem
from ..errors import SaveError
from .atomic import atomic_write_bytes
from .runfiles import parse_json, read_bytes
from .runmeta import FORMAT_VERSION, RunHead, RunMeta
from .saferead import read_regular

HEAD_FILE = "head.json"
#: The largest head file read (a head names the cast, lineage and snapshots only).
MAX_HEAD_BYTES = 4 * 1024 * 1024


class _HeadDoc(BaseModel):
    """run.json as tinydb writes it, table ``run``, read for its head only."""

    model_config = ConfigDict(extra="ignore")
    run: dict[str, RunHead]


class _HeadFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    #: (size, mtime_ns, ctime_ns, inode) of the run.json the head was taken from.
    of: list[int]
    head: RunHead


def _fingerprint(status: os.stat_result) -> list[int]:
    return [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino]


def write_head(meta_path: Path, meta: RunMeta, written: os.stat_result) -> None:
    """Keep the head of ``meta`` beside run.json ``meta_path``, just written as the file of
    status ``written`` (if another has replaced it since, no head is kept for it). Best
    effort: a head not written costs ``list`` one parse of run.json."""
    try:
        status = os.lstat(meta_path)
        if status.st_ino != written.st_ino:
            return
        doc = _HeadFile(of=_fingerprint(status), head=RunHead.of(meta))
        atomic_write_bytes(meta_path.with_name(HEAD_FILE), doc.model_dump_json().encode())
    except OSError:
        return


def kept_head(meta_path: Path) -> RunHead | None:
    """The head kept for run.json ``meta_path`` as it is now (None: none kept for it)."""
    try:
        now = _fingerprint(os.lstat(meta_path))
        data = read_regular(meta_path.with_name(HEAD_FILE), "head file", limit=MAX_HEAD_BYTES)
        doc = _HeadFile.model_validate_json(data)
    except (OSError, SaveError, ValidationError):
        return None
    return doc.head if doc.of == now else None


def single_doc(rows: dict[str, Any], path: Path) -> Any:
    """The one document of a one-document tinydb table."""
    if len(rows) != 1:
        raise SaveError(f"{path}: not a socialsim save file (no single 'run' record)")
    ((doc_id, doc),) = rows.items()
    if not doc_id.isdigit():
        raise SaveError(f"{path}: not a socialsim save file (malformed 'run' record)")
    return doc


def read_head(path: Path) -> RunHead:
    """run.json's head, read from it; a save written by a newer format is refused here."""
    head: RunHead = single_doc(parse_json(_HeadDoc, read_bytes(path), path, "save").run, path)
    return _checked(head, path)


def listed_head(path: Path) -> RunHead:
    """run.json's head for ``list``: the head kept beside it (no parse of the scenario
    snapshot) if one is kept for it as it is, else read from it."""
    head = kept_head(path)
    return read_head(path) if head is None else _checked(head, path)


def _checked(head: RunHead, path: Path) -> RunHead:
    """``head``, if its run may be read: a save written by a newer format is refused."""
    if head.format_version > FORMAT_VERSION:
        raise SaveError(
            f"{path}: written by a newer socialsim (save format {head.format_version}; "
            f"this version reads up to {FORMAT_VERSION})"
        )
    problem = rounds_problem(head.total_rounds)
    if problem:
        raise SaveError(f"{path}: not a socialsim save (total_rounds: {problem})")
    return head
