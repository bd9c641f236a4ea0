"""The report of one run: the signed favorability network and the favorability heatmap of
every round behind a round slider, emotion and need curves per agent, the metrics over
rounds, the transcript with an anchor per round, the lineage and the run card.

The run is read once, one round at a time (``History.values``): only the numbers the
figures need are kept (a 30-agent, 50-round run holds ~50,000 favorabilities)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..card import CardBuilder
from ..history import History
from ..needs import CATEGORY_OF
from ..rules import threshold_status
from ..runmeta import RunMeta
from ..scenario import Status
from ..store import SaveStore
from . import figures
from .page import figure_json, render, report_modules, write

#: Status codes of the slider's data (index into STATUSES) and their glyphs.
STATUSES = (Status.NEUTRAL, Status.ALLY, Status.RIVAL, Status.ENEMY)
GLYPHS = {Status.ALLY: "+", Status.NEUTRAL: "·", Status.RIVAL: "~", Status.ENEMY: "x"}


@dataclass
class RunSeries:
    """What the figures show of a run, round 0 first."""

    names: list[str]
    rounds: list[int] = field(default_factory=list)
    #: fav[round][source][target] (None on the diagonal), two decimals.
    fav: list[list[list[float | None]]] = field(default_factory=list)
    #: status code (index into STATUSES) per round, source, target (-1 on the diagonal).
    status: list[list[list[int]]] = field(default_factory=list)
    #: (source, target) index pairs whose status its fav alone would not give, per round.
    sticky: list[list[tuple[int, int]]] = field(default_factory=list)
    emotion: list[list[float]] = field(default_factory=list)
    #: agent -> need -> current value per round.
    needs: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    transcript: list[dict[str, Any]] = field(default_factory=list)


def read_series(meta: RunMeta, history: History) -> tuple[RunSeries, dict[str, Any]]:
    """The run's series and its card, from one pass over its rounds."""
    names = list(meta.scenario.names)
    index = {n: k for k, n in enumerate(names)}
    series = RunSeries(names)
    card = CardBuilder(meta)
    code = {s: k for k, s in enumerate(STATUSES)}
    for log, values in history.values():
        card.add(log)
        series.rounds.append(log.round)
        fav: list[list[float | None]] = [[None] * len(names) for _ in names]
        status = [[-1] * len(names) for _ in names]
        sticky = []
        for source, relations in values.relations.items():
            i = index[source]
            for target, (f, s) in relations.items():
                j = index[target]
                fav[i][j] = round(f, 2)
                status[i][j] = code[s]
                if threshold_status(f, Status.NEUTRAL) is not s:
                    sticky.append((i, j))
        series.fav.append(fav)
        series.status.append(status)
        series.sticky.append(sticky)
        series.emotion.append([round(values.emotions[n], 3) for n in names])
        for agent, needs in values.needs.items():
            mine = series.needs.setdefault(agent, {})
            for need, (current, _) in needs.items():
                mine.setdefault(need, []).append(round(current, 2))
        series.transcript.append(_round_text(log))
    return series, card.card().model_dump(mode="json")


def _round_text(log: Any) -> dict[str, Any]:
    spoken = sorted((a for a in log.actions if a.order is not None), key=lambda a: a.order)
    return {
        "round": log.round,
        "events": [
            {"text": e.text, "private_to": ", ".join(e.private_to or []), "source": e.source}
            for e in log.events
        ],
        "actions": [
            {
                "speaker": a.speaker,
                "target": a.target if a.target and a.target != "all" else "",
                "mode": a.mode.value,
                "utterance": a.utterance,
                "forced": a.forced,
                "player": a.player if a.actor == "human" else "",
            }
            for a in spoken
        ],
        "silent": [a.speaker for a in log.actions if a.order is None],
    }


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
    data = {
        "names": series.names,
        "rounds": series.rounds,
        "fav": series.fav,
        "status": series.status,
        "sticky": series.sticky,
        "emotion": series.emotion,
        "glyphs": [GLYPHS[s] for s in STATUSES],
        "statuses": [s.value for s in STATUSES],
        "positions": figures.circle(len(series.names)),
        "bins": figures.EDGE_BINS,
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
        network=figure_json(figures.network(series, last)),
        heatmap=figure_json(figures.heatmap(series, last)),
        emotions=figure_json(figures.emotions(series)),
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
