"""A study played as a saved run: ``study.json`` in its folder holds what the study (GovSim)
knows of its turns beyond the rounds, written whole and atomically before the turn's round
is saved, so a killed run goes on from its last finished turn (engine/studies/govsim.py)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

from pydantic import BaseModel

from ..round.simulation import Simulation
from ..saves.atomic import atomic_write_text
from ..saves.runfiles import parse_json
from ..saves.saferead import read_regular
from ..saves.store import SaveStore

FILE = "study.json"
M = TypeVar("M", bound=BaseModel)
#: What wraps a study's play given its simulation (the CLI's progress display).
Shown = Callable[[Simulation], AbstractContextManager[object]]


def read_study(store: SaveStore, run_id: str, model: type[M]) -> M | None:
    """The run's study file as ``model`` (None: the run has none); a damaged one is a
    SaveError naming it."""
    path = store.run_dir(run_id) / FILE
    if not path.exists():
        return None
    return parse_json(model, read_regular(path, "study file"), path, "study file")


def write_study(store: SaveStore, run_id: str, value: BaseModel) -> None:
    """Replace the run's study file with ``value`` (a reader sees the old or the new)."""
    atomic_write_text(store.run_dir(run_id) / FILE, value.model_dump_json())
