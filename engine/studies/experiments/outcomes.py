"""The outcomes of one saved run, as tidy rows: the Sociodrama metrics of every round, each
agent's emotion and needs after the last round, the Surveyor's scores at the last round (a
scenario's questionnaires) and a task's utility."""

from __future__ import annotations

from typing import Any

from ...saves.store import SaveStore

#: The columns of an outcome row (the trial adds its id and the scenario).
COLUMNS = ("seed", "arm", "run_id", "round_no", "metric", "agent", "value")
#: The outcomes a trial's table and report show unless told otherwise (name prefixes): the
#: final Sociodrama metrics, every Surveyor score and a task's utility.
DEFAULT_OUTCOMES = ("mean_fav", "mean_emotion", "reciprocity", "balance", "survey.", "utility")


def default_outcome(metric: str, agent: str) -> bool:
    """Whether ``metric`` is one of :data:`DEFAULT_OUTCOMES`."""
    return metric.startswith(DEFAULT_OUTCOMES)


def outcome_names() -> list[str]:
    """The outcome names a run can have, but a scenario's questionnaires (``survey.<id>``)."""
    from ...core.metrics import Metrics
    from ...core.needs import NEEDS

    metrics = [name for name in Metrics.model_fields if name != "round"]
    return [*metrics, "emotion", *(f"need.{n}" for n in NEEDS), "utility"]


def run_outcomes(store: SaveStore, run_id: str) -> list[dict[str, Any]]:
    """Every outcome of a finished run (``value`` None where a metric is undefined)."""
    meta = store.read_meta(run_id)
    history = store.history(run_id, meta)
    link = meta.trial
    base = {
        "seed": meta.seed,
        "arm": link.arm if link else "",
        "run_id": run_id,
    }
    rows = []
    for r in range(len(history)):
        for name, value in history.metrics(r).as_row().items():
            rows.append({**base, "round_no": r, "metric": name, "agent": "", "value": value})
    last = history[-1]
    final = {**base, "round_no": last.round}
    for agent, state in last.state.agents.items():
        rows.append({**final, "metric": "emotion", "agent": agent, "value": state.emotion})
        for need, level in state.needs.items():
            rows.append({**final, "metric": f"need.{need}", "agent": agent, "value": level.current})
    for survey in store.read_measurements(run_id)["surveys"]:
        if survey["round"] == last.round:
            rows.append(
                {
                    **final,
                    "metric": f"survey.{survey['questionnaire']}",
                    "agent": survey["agent"],
                    "value": survey["score"],
                }
            )
    if meta.outcome is not None:
        rows.append({**final, "metric": "utility", "agent": "", "value": meta.outcome.utility})
    return rows
