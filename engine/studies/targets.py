"""What a run's target names, one kind each, tried in order: a task of the persona-recasting
controller (``task:<id>``, or a bare task id that no library scenario has: an episode in its
Hetero casting, scored when its last round is played) or a Sociodrama scenario (a library id
or a TOML file). The app, ``socialsim tui`` and ``socialsim trial`` open targets here; the
reference a run saves says which kind it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.scenario import library_ids, resolve_scenario
from ..errors import ScenarioError
from .tasks import REF_PREFIX, task_ref

if TYPE_CHECKING:
    from ..core.scenario import Scenario


@dataclass(frozen=True)
class TaskTarget:
    """A task: ``task:<id>``, or a task id that is not a library scenario's (the tasks load
    only when a target is neither)."""

    name: str = "task"

    def claims(self, ref: str) -> bool:
        if ref.startswith(REF_PREFIX):
            return True
        if ref in library_ids():
            return False
        from .tasks.spec import task_ids

        return ref in task_ids()

    def open(self, ref: str) -> tuple[Scenario, str]:
        from .tasks.episode import task_scenario
        from .tasks.spec import load_task

        task = load_task(ref.removeprefix(REF_PREFIX))
        return task_scenario(task, task.casting.hetero), task_ref(task.id)


@dataclass(frozen=True)
class ScenarioTarget:
    """A Sociodrama scenario: a library id or a TOML file (an unknown id names the tasks
    too, as a target may be either)."""

    name: str = "scenario"

    def claims(self, ref: str) -> bool:
        return True

    def open(self, ref: str) -> tuple[Scenario, str]:
        try:
            return resolve_scenario(ref), ref
        except ScenarioError as err:
            if ref.endswith(".toml") or "/" in ref:
                raise
            from .tasks.spec import task_ids

            raise ScenarioError(f"{err}; tasks: {', '.join(task_ids())}") from None


#: The kinds of target, in the order they are tried (the last claims every target).
TARGETS = (TaskTarget(), ScenarioTarget())


def open_target(ref: str) -> tuple[Scenario, str]:
    """The scenario ``ref`` names and the reference its run saves."""
    return next(kind for kind in TARGETS if kind.claims(ref)).open(ref)
