"""The report of one run: the signed favorability network and the favorability heatmap of
every round behind a round slider, emotion and need curves per agent, the spread of
emotion and favorability round by round, the metrics over rounds, the transcript with an
anchor per round, the lineage and the run card (the run read once: ``series``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core.needs import CATEGORY_OF
from ...saves.history import History
from ...saves.runmeta import RunMeta
from ...saves.store import SaveStore
from . import figures
from .page import figure_json, render, report_modules, write
from .series import GLYPHS, NO_FAV, STATUSES, packed, read_series


def run_report(
    meta: RunMeta, history: History, *, trial_report: str | None = None
) -> tuple[str, dict[str, Any]]:
    """The report page of a run and its card; ``trial_report``: a link back to the trial's
    report (an arm run's)."""
    report_modules()
    series, card = read_series(meta, history)
    metrics = {
        name: [m.as_row()[name] for m in history.metrics_series()]
        for name in history.metrics().as_row()
    }
    last = len(series.rounds) - 1
    xy = figures.layout(series.names, meta.scenario.faction_of(), series.fav_rows(last))
    n = len(series.names)
    data = {
        "names": series.names,
        "rounds": series.rounds,
        "fav": packed(series.fav),
        "status": packed(series.status),
        "sticky": series.sticky,
        "emotion": series.emotion,
        "glyphs": [GLYPHS[s] for s in STATUSES],
        "statuses": [s.value for s in STATUSES],
        "positions": xy,
        "bins": figures.EDGE_BINS,
        "ties": min(n * (n - 1), figures.TIES_PER_AGENT * n),
        "no_fav": NO_FAV,
    }
    page = render(
        "run.html.j2",
        meta=meta,
        title=meta.name or meta.run_id,
        card=card,
        lineage=[*meta.ancestry],
        data=data,
        last=last,
        trial_report=trial_report,
        network=figure_json(figures.network(series, last, xy)),
        heatmap=figure_json(figures.heatmap(series, last)),
        emotions=figure_json(figures.emotions(series)),
        distributions=figure_json(figures.distributions(series)),
        needs=figure_json(figures.needs(series, CATEGORY_OF)),
        metrics=figure_json(figures.metrics(series.rounds, metrics)),
        transcript=series.transcript,
    )
    return page, card


def write_run_report(
    store: SaveStore, run_id: str, out: Path, *, trial_report: str | None = None
) -> Path:
    """Write the report of the saved run ``run_id`` to ``out``."""
    report_modules()
    meta = store.read_meta(run_id)
    page, _ = run_report(meta, store.history(run_id, meta), trial_report=trial_report)
    return write(out, page)
