"""Tidy (long-format) CSV export of a saved run, one row per observation."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path

from .errors import SaveError
from .metrics import metrics_series
from .needs import CATEGORY_OF
from .runmeta import RunMeta
from .state import RoundRecord
from .store import atomic_write_text
from .textsafe import csv_row

COLUMNS: dict[str, tuple[str, ...]] = {
    "transcript": (
        "run_id",
        "round",
        "order",
        "speaker",
        "mode",
        "target",
        "stance",
        "urgency",
        "intent",
        "utterance",
        "forced",
    ),
    "events": ("run_id", "round", "source", "private_to", "text"),
    "emotions": ("run_id", "round", "agent", "emotion", "delta"),
    "relations": (
        "run_id",
        "round",
        "source",
        "target",
        "fav",
        "status",
        "delta",
        "override",
        "importance",
        "summary",
    ),
    "needs": ("run_id", "round", "agent", "category", "need", "current", "expected", "gap"),
    "metrics": ("run_id", "round", "metric", "value"),
    "llm_calls": (
        "run_id",
        "round",
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
    ),
    "surveys": (
        "run_id",
        "round",
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
        "round",
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
    ),
}


def _transcript(run_id: str, records: Sequence[RoundRecord]) -> Iterable[tuple]:
    for r in records:
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
            )


def _events(run_id: str, records: Sequence[RoundRecord]) -> Iterable[tuple]:
    for r in records:
        for e in r.events:
            yield run_id, r.round, e.source, ";".join(e.private_to or []), e.text


def _emotions(run_id: str, records: Sequence[RoundRecord]) -> Iterable[tuple]:
    for r in records:
        deltas = {c.agent: c.delta for c in r.emotion_changes}
        for name, agent in r.state.agents.items():
            yield run_id, r.round, name, agent.emotion, deltas.get(name, 0.0)


def _relations(run_id: str, records: Sequence[RoundRecord]) -> Iterable[tuple]:
    for r in records:
        changes = {(c.source, c.target): c for c in r.relation_changes}
        for source, agent in r.state.agents.items():
            for target, rel in agent.relations.items():
                c = changes.get((source, target))
                yield (
                    run_id,
                    r.round,
                    source,
                    target,
                    rel.fav,
                    rel.status.value,
                    c.delta if c else 0.0,
                    c.override.value if c and c.override else "",
                    c.importance if c else "",
                    c.summary if c else "",
                )


def _needs(run_id: str, records: Sequence[RoundRecord]) -> Iterable[tuple]:
    for r in records:
        for name, agent in r.state.agents.items():
            for need, v in agent.needs.items():
                yield (
                    run_id,
                    r.round,
                    name,
                    CATEGORY_OF.get(need, ""),
                    need,
                    v.current,
                    v.expected,
                    max(0.0, v.expected - v.current),
                )


def _metrics(meta: RunMeta, records: Sequence[RoundRecord]) -> Iterable[tuple]:
    series = metrics_series(meta.scenario, [r.state for r in records])
    for r, m in zip(records, series, strict=True):
        for metric, value in m.as_row().items():
            yield meta.run_id, r.round, metric, "" if value is None else value


def _llm_calls(run_id: str, records: Sequence[RoundRecord]) -> Iterable[tuple]:
    for r in records:
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
                ";".join(c.missing),
            )


def _usage(run_id: str, records: Sequence[RoundRecord]) -> Iterable[tuple]:
    for r in records:
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
            )


def _surveys(run_id: str, rows: list[dict]) -> Iterable[tuple]:
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


def _ratings(run_id: str, rows: list[dict]) -> Iterable[tuple]:
    for r in rows:
        yield run_id, r["agent"], r["criterion"], r["score"], r["evidence"], r["rater"]


def export_run(
    meta: RunMeta,
    records: Sequence[RoundRecord],
    out: Path,
    measurements: dict[str, list[dict]] | None = None,
) -> list[Path]:
    """Write the CSVs of a run into ``out``; returns the paths written.

    The LLM tables hold only their header for runs of the offline model.
    """
    run_id = meta.run_id
    tables = {
        "transcript": _transcript(run_id, records),
        "events": _events(run_id, records),
        "emotions": _emotions(run_id, records),
        "relations": _relations(run_id, records),
        "needs": _needs(run_id, records),
        "metrics": _metrics(meta, records),
        "llm_calls": _llm_calls(run_id, records),
        "usage": _usage(run_id, records),
        "surveys": _surveys(run_id, (measurements or {}).get("surveys", [])),
        "ratings": _ratings(run_id, (measurements or {}).get("ratings", [])),
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise SaveError(f"--out {out}: cannot create folder ({err.strerror})") from None
    written = []
    for name in COLUMNS:
        rows = tables[name]
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(COLUMNS[name])
        writer.writerows(map(csv_row, rows))
        path = out / f"{name}.csv"
        try:
            atomic_write_text(path, buffer.getvalue())
        except OSError as err:
            raise SaveError(f"{path}: cannot write ({err.strerror})") from None
        written.append(path)
    return written
