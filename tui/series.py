"""Per-round series of a run for the plots.

Each round is read once and only its numbers are kept: mean favorability from the run's
index (:meth:`History.metrics <engine.saves.history.History.metrics>`), emotion, favorability of
every edge and every need from the values rolled forward from the round files
(:meth:`History.values <engine.saves.history.History.values>`: no state is rebuilt). A run that
has grown since is extended by its new rounds alone, as they end. The series of the last few
runs plotted are kept between visits.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine import History
from engine.core.needs import NEEDS, need_label

#: (rounds, values) of one plotted line, by its label.
Lines = dict[str, tuple[Sequence[int], Sequence[float]]]
KEPT_RUNS = 4


@dataclass
class RunSeries:
    """The numbers of every round of one run read so far, round 0 first."""

    names: tuple[str, ...]
    rounds: array = field(default_factory=lambda: array("l"))
    mean_fav: array = field(default_factory=lambda: array("d"))
    emotion: dict[str, array] = field(default_factory=dict)
    fav: dict[tuple[str, str], array] = field(default_factory=dict)
    needs: dict[tuple[str, str], array] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for i in self.names:
            self.emotion[i] = array("d")
            for n in NEEDS:
                self.needs[i, n] = array("d")
            for j in self.names:
                if i != j:
                    self.fav[i, j] = array("d")

    def extend(self, history: History) -> int:
        """Read the rounds of ``history`` (the run's, round 0 first) not read yet; returns
        how many were read."""
        start, stop = len(self.rounds), len(history)  # a round may end meanwhile: next time
        for n, (_, values, _) in enumerate(history.values(start, stop), start):
            self.rounds.append(values.round)
            self.mean_fav.append(history.metrics(n).mean_fav)
            names = values.names
            for i, emotion in zip(names, values.emotion, strict=True):
                self.emotion[i].append(emotion)
            for i, needs in zip(names, values.needs, strict=True):
                for need, value in needs.items():
                    self.needs[i, need].append(value.current)
            for i, row in zip(names, values.fav.tolist(), strict=True):
                for j, fav in zip(names, row, strict=True):
                    if j != i:
                        self.fav[i, j].append(fav)
        return len(self.rounds) - start

    def lines(self, kind: str, agent: str, other: str, need: str) -> Lines:
        """The labelled lines of one plot kind: ``emotion`` (every agent), ``fav`` (the
        mean), ``edge`` (agent → other and back), ``needs`` (one agent's need, or ``*``
        for all 13)."""
        xs = self.rounds
        if kind == "emotion":
            return {i: (xs, self.emotion[i]) for i in self.names}
        if kind == "fav":
            return {"mean favorability": (xs, self.mean_fav)}
        if kind == "edge":
            if agent == other:
                return {}
            return {
                f"{agent} → {other}": (xs, self.fav[agent, other]),
                f"{other} → {agent}": (xs, self.fav[other, agent]),
            }
        chosen = NEEDS if need == "*" else (need,)
        return {need_label(n): (xs, self.needs[agent, n]) for n in chosen}


_kept: OrderedDict[tuple[str, str], RunSeries] = OrderedDict()


_reading = threading.Lock()  # one reader at a time (the plots read on worker threads)


def run_series(key: tuple[str, str], names: Sequence[str], history: History) -> RunSeries:
    """The series of the run ``key`` (saves folder, run id), extended by the rounds of
    ``history`` not read before."""
    with _reading:
        series = _kept.get(key)
        if series is None or series.names != tuple(names) or len(series.rounds) > len(history):
            series = RunSeries(tuple(names))
        series.extend(history)
        _kept[key] = series
        _kept.move_to_end(key)
        while len(_kept) > KEPT_RUNS:
            _kept.popitem(last=False)
        return series


def series_read(
    key: tuple[str, str], names: Sequence[str], history: History
) -> tuple[str, RunSeries, int]:
    """(run id, :func:`run_series`, how many rounds it holds now): a later reader may
    extend the series while these rounds are drawn."""
    series = run_series(key, names, history)
    return key[1], series, len(series.rounds)
