"""What a run report shows of a run, read once, one round at a time (``History.values``):
the favorabilities, statuses and sticky edges of every round, emotions, needs and the
transcript (a 30-agent, 50-round run holds ~50,000 favorabilities)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.changes import STATUSES as COLUMN_STATUSES
from ...core.rounding import rounded
from ...core.rules import threshold_codes
from ...core.scenario import Status
from ...saves.history import History
from ...saves.runmeta import RunMeta
from ..card import CardBuilder

if TYPE_CHECKING:
    import numpy as np

#: Status codes of the slider's data (index into STATUSES) and their glyphs.
STATUSES = (Status.NEUTRAL, Status.ALLY, Status.RIVAL, Status.ENEMY)
GLYPHS = {Status.ALLY: "+", Status.NEUTRAL: "·", Status.RIVAL: "~", Status.ENEMY: "x"}


@dataclass
class RunSeries:
    """What the figures show of a run, round 0 first."""

    names: list[str]
    rounds: list[int] = field(default_factory=list)
    #: fav[round][source, target] in hundredths (favorability to two decimals, as the page
    #: shows it; :data:`NO_FAV` on the diagonal).
    fav: list[np.ndarray] = field(default_factory=list)
    #: status code (index into STATUSES) per round, source, target (-1 on the diagonal).
    status: list[np.ndarray] = field(default_factory=list)
    #: (source, target) index pairs whose status its fav alone would not give, per round.
    sticky: list[list[tuple[int, int]]] = field(default_factory=list)
    emotion: list[list[float]] = field(default_factory=list)
    #: agent -> need -> current value per round.
    needs: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    transcript: list[dict[str, Any]] = field(default_factory=list)

    def fav_rows(self, k: int) -> list[list[float | None]]:
        """Round index ``k``'s favorabilities, row by row (None on the diagonal)."""
        return [[None if f == NO_FAV else f / 100 for f in row] for row in self.fav[k].tolist()]

    def fav_values(self, k: int) -> list[float]:
        """Round index ``k``'s favorabilities, every edge's (row by row)."""
        fav = self.fav[k]
        return (fav[fav != NO_FAV] / 100).tolist()


#: The code of "no favorability" (an agent's regard for itself) in :attr:`RunSeries.fav`.
NO_FAV = -128


def read_series(meta: RunMeta, history: History) -> tuple[RunSeries, dict[str, Any]]:
    """The run's series and its card, from one pass over its rounds."""
    import numpy as np

    names = list(meta.scenario.names)
    index = {n: k for k, n in enumerate(names)}
    series = RunSeries(names)
    card = CardBuilder(meta)
    code = np.array([STATUSES.index(s) for s in COLUMN_STATUSES], np.int8)
    neutral = COLUMN_STATUSES.index(Status.NEUTRAL)
    size = len(names)
    for log, values, _ in history.values():
        card.add(log)
        series.rounds.append(log.round)
        at = np.array([index[name] for name in values.names], np.intp)
        # hundredths of round(f, 2), exactly: a two-decimal value times 100 is within its
        # rounding error of the integer
        hundredths = np.rint(rounded(values.fav, 2) * 100).astype(np.int8)
        fav = np.full((size, size), NO_FAV, np.int8)
        status = np.full((size, size), -1, np.int8)
        fav[np.ix_(at, at)] = hundredths
        status[np.ix_(at, at)] = code[values.status]
        np.fill_diagonal(fav, NO_FAV)
        np.fill_diagonal(status, -1)
        sticky = threshold_codes(values.fav, np.full_like(values.status, neutral))
        off = sticky != values.status
        np.fill_diagonal(off, False)
        i, j = np.nonzero(off)
        series.sticky.append(sorted(zip(at[i].tolist(), at[j].tolist(), strict=True)))
        series.fav.append(fav)
        series.status.append(status)
        emotions = dict(zip(values.names, values.emotion, strict=True))
        series.emotion.append([round(emotions[n], 3) for n in names])
        for agent, needs in zip(values.names, values.needs, strict=True):
            mine = series.needs.setdefault(agent, {})
            for need, value in needs.items():
                mine.setdefault(need, []).append(round(value.current, 2))
        series.transcript.append(_round_text(log))
    return series, card.card().model_dump(mode="json")


def packed(matrices: list[np.ndarray]) -> str:
    """Int8 matrices, one a round, as the page reads them (``templates/run.js``
    ``unpack``): each round's difference from the round before (round 0 whole, wrapping as
    int8 does), deflated (zlib), in base64: a 300-agent round is 90,000 cells, most of
    them the same as the round before or near it."""
    import base64
    import zlib

    import numpy as np

    if not matrices:
        return ""
    cells = np.stack(matrices).astype(np.int8)
    cells[1:] = cells[1:] - cells[:-1]  # int8 arithmetic: wraps, as the page's sums do
    return base64.b64encode(zlib.compress(cells.tobytes(), 6)).decode("ascii")


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
