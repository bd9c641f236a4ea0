"""A labelling study: the sampled items, each with its evidence and the judge's change, and
every rater's labels, saved as one JSON file ``<saves>/.studies/NAME.json``.

The folder is hidden so ``socialsim list`` never shows it as a run; the file is replaced
atomically on every save (a kill leaves the old study or the new one), and labels are
added under a lock beside it (``NAME.json.lock``), read-merge-write, so raters labelling
the same study at once keep each other's labels.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, ValidationError

from ...errors import SocialsimError
from ...saves.atomic import atomic_write_text
from ...saves.saferead import read_regular

STUDIES_DIR = ".studies"
Kind = Literal["emotion", "relation", "need"]
KINDS: tuple[Kind, ...] = ("emotion", "relation", "need")
Direction = Literal["increase", "unchanged", "decrease"]
DIRECTIONS: tuple[Direction, ...] = ("increase", "unchanged", "decrease")
#: |delta| below these counts as unchanged: emotion and favourability live in [0, 1] and
#: [-1, 1], needs in [0, 10]; the judge's rounding noise stays inside the zone.
DEAD_ZONE: dict[str, float] = {"emotion": 0.01, "relation": 0.01, "need": 0.1}
JUDGE = "judge"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


class LabelError(SocialsimError):
    """A bad study name, rater, label or sheet."""


def check_name(name: str, what: str) -> str:
    """Accept plain names only (a study file name, a rater)."""
    if not _NAME.fullmatch(name) or ".." in name:
        raise LabelError(f"{what} {name!r} is not a plain name (letters, digits, '.', '_', '-')")
    return name


def direction(delta: float, dead_zone: float) -> Direction:
    """The sign of an applied change; ``|delta| < dead_zone`` (and no change at all) counts
    as unchanged."""
    if delta == 0 or abs(delta) < dead_zone:
        return "unchanged"
    return "increase" if delta > 0 else "decrease"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(_Model):
    """What the judge was shown for one update: who observes, its persona, the value before
    the round, and the round's events and actions that observer saw."""

    observer: str
    about: str = ""
    role: str = ""
    archetype: str = ""
    traits: list[str] = []
    goal: str = ""
    prior: float
    events: list[str] = []
    actions: list[str] = []


class Item(_Model):
    """One judged update: where it comes from, its evidence, the judge's applied change."""

    id: str
    kind: Kind
    run_id: str
    round: int
    evidence: Evidence
    delta: float
    judge: Direction


class Study(_Model):
    """A labelling study: items (in presentation order) and labels per rater."""

    name: str
    created: str
    seed: int
    runs: list[str]
    stratify: list[str]
    dead_zone: dict[str, float]
    items: list[Item]
    labels: dict[str, dict[str, Direction]] = {}

    def item_ids(self) -> set[str]:
        return {item.id for item in self.items}


def study_path(saves: Path, name: str) -> Path:
    """Where study ``name`` lives in the saves folder ``saves``."""
    return saves / STUDIES_DIR / f"{check_name(name, 'study')}.json"


def save_study(saves: Path, study: Study) -> Path:
    """Write ``study`` atomically; returns its path."""
    path = study_path(saves, study.name)
    try:
        atomic_write_text(path, study.model_dump_json(indent=1))
    except OSError as err:
        raise LabelError(f"{path}: cannot write the study ({err.strerror or err})") from None
    return path


def load_study(saves: Path, name: str) -> Study:
    """Read study ``name``; a missing or damaged file is one clear error."""
    path = study_path(saves, name)
    if not os.path.lexists(path):
        raise LabelError(f"no study {name!r} in {saves} (make one with `label new`)")
    try:
        text = read_regular(path, "study", LabelError).decode("utf-8")
    except UnicodeDecodeError as err:
        raise LabelError(f"{path}: unreadable study ({err})") from None
    try:
        return Study.model_validate_json(text)
    except ValidationError as err:
        raise LabelError(f"{path}: not a valid study ({err.error_count()} errors)") from None


def set_labels(study: Study, rater: str, labels: dict[str, Direction]) -> Study:
    """``study`` with ``labels`` merged into ``rater``'s (later labels replace earlier)."""
    check_name(rater, "rater")
    if rater == JUDGE:
        raise LabelError(f"rater {JUDGE!r} is reserved for the judge")
    unknown = sorted(set(labels) - study.item_ids())
    if unknown:
        raise LabelError(f"unknown item {unknown[0]!r} (study {study.name!r} has no such item)")
    merged = {**study.labels.get(rater, {}), **labels}
    return study.model_copy(update={"labels": {**study.labels, rater: merged}})


def add_labels(saves: Path, name: str, rater: str, labels: dict[str, Direction]) -> Study:
    """Merge ``labels`` into ``rater``'s in the saved study (under its lock); returns the
    study as saved."""
    path = study_path(saves, name)
    lock = FileLock(str(path) + ".lock")
    try:
        lock.acquire()
    except OSError as err:
        raise LabelError(f"{path}: cannot lock the study ({err.strerror or err})") from None
    try:
        study = set_labels(load_study(saves, name), rater, labels)
        save_study(saves, study)
    finally:
        lock.release()
    return study
