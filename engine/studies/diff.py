"""Two saved runs side by side: the first round where they part, and for any round both
have, the favorability matrix difference, each agent's emotion and need differences and
the two transcripts. Differences are always B − A.

Rounds come from each run's lazy history (:mod:`engine.saves.history`) as columns: a walk
rolls the state forward one round file at a time and holds one round of each run, and no
model of an edge or a state is built, so comparing long runs of many agents stays cheap.
Rounds a branch copied from its parent are known to be equal from the lineage: only the fork
round is checked, the rounds before it are not compared.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.changes import STATUSES
from ..core.columns import StateColumns
from ..core.scenario import Status
from ..core.state import ALL, RoundLog
from ..errors import SocialsimError
from ..saves.history import History
from ..saves.runmeta import RunMeta
from ..saves.store import SaveStore

if TYPE_CHECKING:
    import numpy as np

#: Differences smaller than this show as none (values are shown with two decimals).
EPSILON = 0.005
#: Round differences a comparison keeps, so going back and forth reads nothing again.
HELD_ROUNDS = 4


@dataclass(frozen=True)
class Turn:
    """One transcript line: a round's event (``speaker`` None) or an agent's action."""

    speaker: str | None
    text: str
    mode: str  # "event", or the action's mode: public, private, silent
    target: str | None = None
    forced: bool = False
    private_to: tuple[str, ...] = ()
    #: The person who played the turn ("" for the run's mind).
    player: str = ""


#: A round as a comparison reads it: what happened (events, actions) and the state after it.
Round = tuple[RoundLog, StateColumns]


def round_of(history: History, n: int) -> Round:
    """Round ``n`` of ``history`` as columns (rolled on from its keyframe)."""
    log, state, _ = next(history.values(n, n + 1))
    return log, state


def transcript(record: RoundLog) -> list[Turn]:
    """A round as it was told: its events, the turns in speaking order, then the silent."""
    turns = [
        Turn(None, e.text, "event", private_to=tuple(e.private_to or ())) for e in record.events
    ]
    spoken = sorted((a for a in record.actions if a.order is not None), key=lambda a: a.order or 0)
    silent = [a for a in record.actions if a.order is None]
    for a in [*spoken, *silent]:
        target = None if a.target in (None, ALL) else a.target
        player = a.player if a.actor == "human" else ""
        turns.append(Turn(a.speaker, a.utterance, a.mode.value, target, a.forced, player=player))
    return turns


@dataclass(frozen=True)
class EdgeDiff:
    """One directed edge in both runs."""

    fav_a: float
    fav_b: float
    status_a: Status
    status_b: Status

    @property
    def delta(self) -> float:
        return self.fav_b - self.fav_a


@dataclass(frozen=True)
class AgentDiff:
    """One agent's emotion and needs (current values) in both runs."""

    agent: str
    emotion_a: float
    emotion_b: float
    needs: dict[str, tuple[float, float]]

    @property
    def emotion_delta(self) -> float:
        return self.emotion_b - self.emotion_a

    def need_deltas(self) -> list[tuple[str, float]]:
        """The needs that differ, largest difference first."""
        deltas = [(n, b - a) for n, (a, b) in self.needs.items() if abs(b - a) >= EPSILON]
        return sorted(deltas, key=lambda item: -abs(item[1]))


@dataclass(frozen=True)
class RoundDiff:
    """One round of both runs: the matrix and agent differences and both transcripts."""

    round: int
    agents: tuple[str, ...]
    edges: dict[tuple[str, str], EdgeDiff]
    people: dict[str, AgentDiff]
    transcript_a: list[Turn]
    transcript_b: list[Turn]

    def mean_abs_fav(self) -> float:
        """Mean |Δ fav| over the directed edges of the agents both runs have."""
        if not self.edges:
            return 0.0
        return sum(abs(e.delta) for e in self.edges.values()) / len(self.edges)

    def largest(self) -> tuple[tuple[str, str], EdgeDiff] | None:
        """The edge that differs most (None when no edge differs)."""
        if not self.edges:
            return None
        edge, diff = max(self.edges.items(), key=lambda item: abs(item[1].delta))
        return (edge, diff) if abs(diff.delta) >= EPSILON else None


def same_round(a: Round, b: Round) -> bool:
    """Whether two rounds are told alike: events, actions and the state after it (LLM call
    records and usage are bookkeeping, not the story)."""
    (log_a, state_a), (log_b, state_b) = a, b
    return (
        log_a.events == log_b.events
        and log_a.actions == log_b.actions
        and same_state(state_a, state_b)
    )


def same_state(a: StateColumns, b: StateColumns) -> bool:
    """Whether two states are equal as their models would be (each agent's emotion, needs,
    theta, and its regard, status and memories of each other; the agents' order aside)."""
    import numpy as np

    if a.round != b.round or set(a.names) != set(b.names):
        return False
    at = [b.index[name] for name in a.names]  # b in a's order
    every = np.ix_(at, at)
    return (
        [b.emotion[k] for k in at] == a.emotion
        and [b.needs[k] for k in at] == a.needs
        and [b.theta[k] for k in at] == a.theta
        and bool(np.array_equal(a.fav, b.fav[every]))
        and bool(np.array_equal(a.status, b.status[every]))
        and _same_memories(a, b, every)
    )


def _same_memories(a: StateColumns, b: StateColumns, every: tuple[np.ndarray, ...]) -> bool:
    """Whether every edge remembers the same entries in the same order (the empty slots,
    in front, aside: the two states may keep rings of different widths)."""
    import numpy as np

    slots_a, slots_b = a.memory, b.memory[every]
    width = max(a.width, b.width)
    slots_a, slots_b = (
        np.pad(m, ((0, 0), (0, 0), (width - m.shape[2], 0))) for m in (slots_a, slots_b)
    )
    for column in ("rounds", "importance"):
        if not np.array_equal(getattr(a.notes, column)[slots_a], getattr(b.notes, column)[slots_b]):
            return False
    return bool(np.array_equal(a.notes.summaries[slots_a], b.notes.summaries[slots_b]))


def _chain(meta: RunMeta) -> dict[str, int | None]:
    """Run id -> how many of its rounds this run holds as copies (``None``: its own)."""
    kept: dict[str, int | None] = {meta.run_id: None}
    cut: int | None = None
    for link in reversed(meta.ancestry):
        cut = link.round if cut is None else min(cut, link.round)
        kept.setdefault(link.run_id, cut)
    return kept


def copied_prefix(a: RunMeta, b: RunMeta) -> int:
    """The last round both runs hold as copies of the same run's round (-1: none known)."""
    chain_a, chain_b = _chain(a), _chain(b)
    best = -1
    for run_id in chain_a.keys() & chain_b.keys():
        cuts = [c for c in (chain_a[run_id], chain_b[run_id]) if c is not None]
        if cuts:  # both None only for a run compared with itself
            best = max(best, min(cuts))
    return best


def lineage_note(a: RunMeta, b: RunMeta) -> str:
    """How the two runs are related, in a few words."""
    if b.parent is not None and b.parent.run_id == a.run_id:
        return f"B branched from A at round {b.parent.round}"
    if a.parent is not None and a.parent.run_id == b.run_id:
        return f"A branched from B at round {a.parent.round}"
    chain_a, chain_b = _chain(a), _chain(b)
    if b.run_id in chain_a or a.run_id in chain_b:
        return "one descends from the other"
    common = [link.run_id for link in a.ancestry if link.run_id in chain_b]
    if common:
        return f"both descend from {common[-1]}"
    return "independent runs"


def diff_round(a: Round, b: Round, agents: tuple[str, ...]) -> RoundDiff:
    """The differences between two runs' rounds of the same number, over ``agents``."""
    import numpy as np

    (log_a, sa), (log_b, sb) = a, b
    at_a, at_b = ([s.index[n] for n in agents] for s in (sa, sb))
    fav_a, fav_b = sa.fav[np.ix_(at_a, at_a)].tolist(), sb.fav[np.ix_(at_b, at_b)].tolist()
    code_a, code_b = sa.status[np.ix_(at_a, at_a)].tolist(), sb.status[np.ix_(at_b, at_b)].tolist()
    edges = {
        (i, j): EdgeDiff(fav_a[x][y], fav_b[x][y], STATUSES[code_a[x][y]], STATUSES[code_b[x][y]])
        for x, i in enumerate(agents)
        for y, j in enumerate(agents)
        if x != y
    }
    people = {
        n: AgentDiff(
            n,
            sa.emotion[ka],
            sb.emotion[kb],
            {
                k: (need.current, sb.needs[kb][k].current)
                for k, need in sa.needs[ka].items()
                if k in sb.needs[kb]
            },
        )
        for n, ka, kb in zip(agents, at_a, at_b, strict=True)
    }
    return RoundDiff(log_a.round, agents, edges, people, transcript(log_a), transcript(log_b))


class RunComparison:
    """Two saved runs compared round by round (Δ = B − A).

    ``first_divergence`` is the first round whose events, actions or state differ, or None
    when the runs agree on every round both have (``last_common``). Rounds come from each
    run's lazy history: a walk over rounds rolls the state forward one round file at a time.
    """

    def __init__(self, store: SaveStore, run_a: str, run_b: str) -> None:
        self.store = store
        self.meta_a, self.meta_b = store.read_meta(run_a), store.read_meta(run_b)
        self.history_a = store.history(run_a, self.meta_a, whole=True)
        self.history_b = store.history(run_b, self.meta_b, whole=True)
        self.done_a, self.done_b = len(self.history_a) - 1, len(self.history_b) - 1
        self.last_common = min(self.done_a, self.done_b)
        first, other = self.meta_a.scenario.names, self.meta_b.scenario.names
        self.agents = tuple(n for n in first if n in other)
        if not self.agents:
            raise SocialsimError(
                f"runs {run_a!r} and {run_b!r} share no agents: nothing to compare"
            )
        self.only_a = tuple(n for n in first if n not in other)
        self.only_b = tuple(n for n in other if n not in first)
        self._held: dict[int, RoundDiff] = {}  # the last rounds shown, oldest first
        self._lock = threading.Lock()
        self.first_divergence = self._find_divergence()

    @property
    def run_a(self) -> str:
        return self.meta_a.run_id

    @property
    def run_b(self) -> str:
        return self.meta_b.run_id

    def lineage(self) -> str:
        """How the two runs are related."""
        return lineage_note(self.meta_a, self.meta_b)

    def scenario_warning(self) -> str | None:
        """Runs of two scenarios: their agents are matched by id (the name), which may
        stand for two different people; None for runs of one scenario."""
        a, b = self.meta_a.scenario.id, self.meta_b.scenario.id
        if a == b:
            return None
        return (
            f"warning: runs of two scenarios ({a}, {b}): agents matched by id (name), "
            f"{len(self.agents)} in both; a shared name may be another person"
        )

    def _steps(self, start: int) -> Iterator[tuple[Round, Round]]:
        """Both runs' rounds from ``start`` to the last common one, in step, each walk
        rolled on from its keyframe (a history's walks share no read position: one in a
        worker thread and one on the UI thread do not meet)."""
        stop = self.last_common + 1
        walks = self.history_a.values(start, stop), self.history_b.values(start, stop)
        for (log_a, state_a, _), (log_b, state_b, _) in zip(*walks, strict=True):
            yield (log_a, state_a), (log_b, state_b)

    def _find_divergence(self) -> int | None:
        """Walk both runs from the fork round the lineage names (from round 0 if it names
        none, or if that round turns out to differ); the first round that differs is kept
        as :meth:`round_diff`'s first answer."""
        known = min(copied_prefix(self.meta_a, self.meta_b), self.last_common)
        for start in dict.fromkeys((max(known, 0), 0)):
            for a, b in self._steps(start):
                if same_round(a, b):
                    continue
                if a[0].round == known > 0:  # the lineage was wrong: compare from round 0
                    break
                self._held[a[0].round] = diff_round(a, b, self.agents)
                return a[0].round
            else:
                return None
        return None

    def check_round(self, n: int) -> int:
        """``n`` if both runs have that round, else a one-line error."""
        if not 0 <= n <= self.last_common:
            raise SocialsimError(
                f"round {n}: runs {self.run_a!r} and {self.run_b!r} both have rounds "
                f"0..{self.last_common}"
            )
        return n

    def default_round(self) -> int:
        """The round to show first: where the runs part, else the last both have."""
        return self.last_common if self.first_divergence is None else self.first_divergence

    def round_diff(self, n: int) -> RoundDiff:
        """Round ``n`` of both runs (the last few asked for are kept). Safe to call from
        several threads: one at a time reads."""
        self.check_round(n)
        with self._lock:
            held = self._held.pop(n, None)
            if held is None:
                a, b = round_of(self.history_a, n), round_of(self.history_b, n)
                held = diff_round(a, b, self.agents)
            self._held[n] = held
            while len(self._held) > HELD_ROUNDS:
                del self._held[next(iter(self._held))]
            return held

    def profile(self) -> Iterator[tuple[int, float, float]]:
        """(round, mean |Δ fav|, largest |Δ fav|) from the first divergence to the last
        common round, one round of each run held at a time."""
        if self.first_divergence is None:
            return
        for a, b in self._steps(self.first_divergence):
            rd = diff_round(a, b, self.agents)
            largest = rd.largest()
            yield rd.round, rd.mean_abs_fav(), abs(largest[1].delta) if largest else 0.0
