"""Per-round series of a run for the plots.

Each round's state is read once and only its numbers are kept (emotion, favorability of
every edge, every need, mean favorability); a run that has grown since is extended by its
new rounds alone. The series of the last few runs plotted are kept between visits.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine import RoundRecord
from engine.metrics import mean_fav
from engine.needs import NEEDS, need_label

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

    def extend(self, records: Sequence[RoundRecord]) -> int:
        """Read the rounds of ``records`` (the run's, round 0 first) not read yet; returns
        how many were read."""
        start = len(self.rounds)
        for record in records[start:]:
            state = record.state
            self.rounds.append(record.round)
            self.mean_fav.append(mean_fav(state))
            for i, agent in state.agents.items():
                self.emotion[i].append(agent.emotion)
                for n, value in agent.needs.items():
                    self.needs[i, n].append(value.current)
                for j, rel in agent.relations.items():
                    self.fav[i, j].append(rel.fav)
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


def run_series(key: tuple[str, str], names: Sequence[str], records: Sequence[RoundRecord]):
    """The series of the run ``key`` (saves folder, run id), extended by the rounds of
    ``records`` not read before."""
    series = _kept.get(key)
    if series is None or series.names != tuple(names) or len(series.rounds) > len(records):
        series = RunSeries(tuple(names))
    series.extend(records)
    _kept[key] = series
    _kept.move_to_end(key)
    while len(_kept) > KEPT_RUNS:
        _kept.popitem(last=False)
    return series
