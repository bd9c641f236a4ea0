"""The export's tables: their columns (:data:`COLUMNS`), each table's rows from a run read
one round at a time (:func:`table_rows`, the analysis API's source too), and the rounds as
the export reads them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import islice

from ..core.changes import RoundChanges
from ..core.columns import StateColumns
from ..core.metrics import METRIC_UNITS, Metrics, RepairCounter, round_metrics
from ..core.needs import CATEGORY_OF
from ..core.state import RoundLog, RoundRecord
from ..core.textsafe import list_cell
from ..saves.history import History
from ..saves.roundfile import RoundFile
from ..saves.runmeta import RunMeta
from .card import CSV_SCHEMA
from .dense import relation_rows

Safe = Callable[[str], str]

#: Columns renamed since version 1 (old name -> current name), in every table.
RENAMED_SINCE_1 = {"round": "round_no", "mode": "speech_mode"}
COLUMNS: dict[str, tuple[str, ...]] = {
    "transcript": (
        "run_id",
        "round_no",
        "order",
        "speaker",
        "speech_mode",
        "target",
        "stance",
        "urgency",
        "intent",
        "utterance",
        "forced",
        "actor",
        "player",
    ),
    "events": ("run_id", "round_no", "source", "private_to", "text"),
    "emotions": ("run_id", "round_no", "agent", "emotion", "delta"),
    "relations": (
        "run_id",
        "round_no",
        "source",
        "target",
        "fav",
        "status",
        "delta",
        "override",
        "importance",
        "summary",
    ),
    "needs": ("run_id", "round_no", "agent", "category", "need", "current", "expected", "gap"),
    "metrics": ("run_id", "round_no", "metric", "value", "unit"),
    "llm_calls": (
        "run_id",
        "round_no",
        "key",
        "purpose",
        "agent",
        "model",
        "structured",
        "outcome",
        "attempts",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "latency_s",
        "error",
        "missing",
        "clamped",
        "counted_by",
        "sent_tokens",
        "flaw",
        "at_cap",
        "left_out",
        "cached_tokens",
        "endpoint",
    ),
    "surveys": (
        "run_id",
        "round_no",
        "agent",
        "questionnaire",
        "answers",
        "score",
        "angle",
        "category",
        "respondent",
    ),
    "ratings": ("run_id", "agent", "criterion", "score", "evidence", "rater"),
    "usage": (
        "run_id",
        "round_no",
        "judge_mode",
        "calls",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "retries",
        "repairs",
        "reasks",
        "fallbacks",
        "errors",
        "structured",
        "structured_fallbacks",
        "missing_edges",
        "clamped",
        "degenerate",
        "at_cap",
        "left_out",
        "cached_tokens",
        "cache_reported",
        "shared_prefix",
    ),
    "agents": ("run_id", "agent", "role", "archetype", "faction", "model", "player"),
}


def _transcript(run_id: str, r: RoundLog) -> Iterator[tuple]:
    for a in sorted(r.actions, key=lambda a: (a.order is None, a.order or 0)):
        yield (
            run_id,
            r.round,
            a.order if a.order is not None else "",
            a.speaker,
            a.mode.value,
            a.target or "",
            a.stance,
            a.urgency,
            a.intent,
            a.utterance,
            int(a.forced),
            a.actor,
            a.player,
        )


def _events(run_id: str, r: RoundLog) -> Iterator[tuple]:
    for e in r.events:
        yield run_id, r.round, e.source, list_cell(e.private_to or []), e.text


# The state tables have a row per agent, edge or need every round: only their text cells
# (names, summaries) go through ``safe``, a memo of csv_cell; the rest are numbers and
# values of fixed vocabularies.


def _emotions(
    run_id: str, r: RoundLog, v: StateColumns, c: RoundChanges, safe: Safe
) -> Iterator[tuple]:
    deltas = {c.agent: c.delta for c in r.emotion_changes}
    for name, emotion in zip(v.names, v.emotion, strict=True):
        yield run_id, r.round, safe(name), emotion, deltas.get(name, 0.0)


def _relations(
    run_id: str, r: RoundLog, v: StateColumns, c: RoundChanges, safe: Safe
) -> Iterator[tuple]:
    return relation_rows(run_id, r.round, v, c, safe)


def _needs(
    run_id: str, r: RoundLog, v: StateColumns, c: RoundChanges, safe: Safe
) -> Iterator[tuple]:
    t = r.round
    for name, needs in zip(v.names, v.needs, strict=True):
        s = safe(name)
        for need, value in needs.items():
            current, expected = value.current, value.expected
            yield (
                run_id,
                t,
                s,
                CATEGORY_OF.get(need, ""),
                need,
                current,
                expected,
                max(0.0, expected - current),
            )


def metric_rows(run_id: str, m: Metrics) -> Iterator[tuple]:
    for metric, value in m.as_row().items():
        yield run_id, m.round, metric, "" if value is None else value, METRIC_UNITS[metric]


def agent_rows(meta: RunMeta) -> Iterator[tuple]:
    """One row per agent: its persona's role and archetype, faction ("" for none), the
    model that plays it (the run's, unless the agent has its own) and the person who plays
    it ("" for the model)."""
    scenario, llm = meta.scenario, meta.llm
    factions = scenario.faction_of()
    for spec in scenario.agents:
        model = llm.agent_models.get(spec.name, meta.model) if llm else meta.model
        yield (
            meta.run_id,
            spec.name,
            spec.role,
            spec.archetype.value,
            factions.get(spec.name, ""),
            model,
            meta.players.get(spec.name, ""),
        )


def current_columns(header: Sequence[str], schema: int) -> list[str]:
    """A table's ``header`` as written under ``csv_schema`` ``schema`` (the card's; 1 when
    the card has none), in today's names: old exports read with the code written for new."""
    if schema >= CSV_SCHEMA:
        return list(header)
    return [RENAMED_SINCE_1.get(name, name) for name in header]


def _llm_calls(run_id: str, r: RoundLog) -> Iterator[tuple]:
    for c in r.llm_calls:
        yield (
            run_id,
            r.round,
            c.key,
            c.purpose,
            c.agent,
            c.model,
            c.structured,
            c.outcome,
            c.attempts,
            c.prompt_tokens,
            c.completion_tokens,
            c.cost_usd,
            c.latency_s,
            c.error or "",
            list_cell(c.missing),
            list_cell(c.clamped),
            c.counted_by,
            c.sent_tokens,
            c.flaw,
            int(c.at_cap),
            list_cell(c.left_out),
            "" if c.cached_tokens is None else c.cached_tokens,
            c.endpoint,
        )


def _usage(run_id: str, r: RoundLog) -> Iterator[tuple]:
    if r.usage is not None:
        u = r.usage
        yield (
            run_id,
            r.round,
            u.judge_mode,
            u.calls,
            u.prompt_tokens,
            u.completion_tokens,
            u.cost_usd,
            u.retries,
            u.repairs,
            u.reasks,
            u.fallbacks,
            u.errors,
            u.structured,
            u.structured_fallbacks,
            u.missing_edges,
            u.clamped,
            u.degenerate,
            u.at_cap,
            u.left_out,
            u.cached_tokens,
            u.cache_reported,
            u.shared_prefix,
        )


def survey_rows(run_id: str, rows: list[dict]) -> Iterator[tuple]:
    for r in rows:
        yield (
            run_id,
            r["round"],
            r["agent"],
            r["questionnaire"],
            " ".join(str(a) for a in r["answers"]),
            r["score"],
            "" if r.get("angle") is None else r["angle"],
            r.get("category") or "",
            r["respondent"],
        )


def rating_rows(run_id: str, rows: list[dict]) -> Iterator[tuple]:
    for r in rows:
        yield run_id, r["agent"], r["criterion"], r["score"], r["evidence"], r["rater"]


#: The tables of a round's log, every cell checked by csv_row.
LOG_TABLES = {
    "transcript": _transcript,
    "events": _events,
    "llm_calls": _llm_calls,
    "usage": _usage,
}
#: The tables of a round's state.
STATE_TABLES = {"emotions": _emotions, "relations": _relations, "needs": _needs}


def table_rows(
    name: str,
    meta: RunMeta,
    history: Sequence[RoundRecord],
    measurements: dict[str, list[dict]] | None = None,
) -> Iterator[tuple]:
    """The rows of one table of :data:`COLUMNS` with their cells as they are (as Parquet
    gets them), the run read one round at a time: the analysis API's source."""
    run_id = meta.run_id
    taken = measurements or {}
    if name == "agents":
        yield from agent_rows(meta)
    elif name == "surveys":
        yield from survey_rows(run_id, taken.get("surveys", []))
    elif name == "ratings":
        yield from rating_rows(run_id, taken.get("ratings", []))
    elif name == "metrics":
        for metrics in metrics_of(meta, history, len(history)):
            yield from metric_rows(run_id, metrics)
    elif name in LOG_TABLES:
        logs = history.logs(relations=False) if isinstance(history, History) else iter(history)
        for log in logs:
            yield from LOG_TABLES[name](run_id, log)
    elif name in STATE_TABLES:
        for log, values, changes in rounds(history, len(history), full=False):
            yield from STATE_TABLES[name](run_id, log, values, changes, str)
    else:
        raise KeyError(name)


def rounds(
    history: Sequence[RoundRecord], count: int, full: bool
) -> Iterator[tuple[RoundLog, StateColumns, RoundChanges]]:
    """The first ``count`` rounds' logs, the values of their states and their changes: a
    saved run's rolled forward from its files (no state, edge or memory model is built;
    the tables read no memory) unless ``full`` (the logs are then the records)."""
    if isinstance(history, History) and not full:
        return history.values(0, count, memory=False)
    return (_values(record) for record in islice(history, count))


def _values(record: RoundRecord) -> tuple[RoundLog, StateColumns, RoundChanges]:
    values = StateColumns.of(record.state)
    return record, values, RoundFile.legacy(record).changes(values.names)


def metrics_of(meta: RunMeta, history: Sequence[RoundRecord], count: int) -> Iterator[Metrics]:
    if isinstance(history, History):
        yield from history.metrics_series()[:count]
        return
    counter: RepairCounter | None = None
    for record in islice(history, count):
        counter = counter or RepairCounter(len(record.state.agents))
        yield round_metrics(meta.scenario, StateColumns.of(record.state), counter)
