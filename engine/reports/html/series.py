"""What a run report shows of a run, read once, one round at a time (``History.values``):
the favorabilities, statuses and sticky edges of every round, emotions, needs and the
transcript (a 30-agent, 50-round run holds ~50,000 favorabilities)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core.changes import STATUSES as COLUMN_STATUSES
from ...core.rules import threshold_status
from ...core.scenario import Status
from ...saves.history import History
from ...saves.runmeta import RunMeta
from ..card import CardBuilder

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
    for log, values, _ in history.values():
        card.add(log)
        series.rounds.append(log.round)
        fav: list[list[float | None]] = [[None] * len(names) for _ in names]
        status = [[-1] * len(names) for _ in names]
        sticky = []
        at = [index[n] for n in values.names]
        rows = zip(at, values.fav.tolist(), values.status.tolist(), strict=True)
        for i, favs, codes in rows:
            for j, f, c in zip(at, favs, codes, strict=True):
                if j == i:
                    continue
                s = COLUMN_STATUSES[c]
                fav[i][j] = round(f, 2)
                status[i][j] = code[s]
                if threshold_status(f, Status.NEUTRAL) is not s:
                    sticky.append((i, j))
        series.fav.append(fav)
        series.status.append(status)
        series.sticky.append(sticky)
        emotions = dict(zip(values.names, values.emotion, strict=True))
        series.emotion.append([round(emotions[n], 3) for n in names])
        for agent, needs in zip(values.names, values.needs, strict=True):
            mine = series.needs.setdefault(agent, {})
            for need, value in needs.items():
                mine.setdefault(need, []).append(round(value.current, 2))
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
