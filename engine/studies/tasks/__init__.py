"""The four collaborative tasks of Sociodrama Sec. 5.1 and the persona-recasting controller."""

#: The prefix of the scenario reference an episode of a task saves (``task:<id>``).
REF_PREFIX = "task:"


def task_ref(task_id: str) -> str:
    """The scenario reference an episode of task ``task_id`` saves."""
    return f"{REF_PREFIX}{task_id}"
