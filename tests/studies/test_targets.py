"""What a target names (engine/studies/targets.py): a task, or a Sociodrama scenario."""

from __future__ import annotations

import pytest

from engine.errors import ScenarioError
from engine.studies.targets import open_target
from engine.studies.tasks.spec import task_ids


def test_a_library_id_opens_the_scenario_and_is_saved_as_given():
    scenario, ref = open_target("tavern")
    assert (scenario.id, ref) == ("tavern", "tavern")


@pytest.mark.parametrize("prefix", ["", "task:"])
def test_a_task_id_opens_an_episode_saved_as_a_task_reference(prefix):
    task_id = task_ids()[0]
    scenario, ref = open_target(prefix + task_id)
    assert ref == f"task:{task_id}"
    assert scenario.names


def test_an_unknown_id_is_one_error_that_names_the_tasks_too():
    with pytest.raises(ScenarioError, match=rf"tasks: {task_ids()[0]}"):
        open_target("no-such-thing")
