"""The state rules of Sociodrama Sec. 3 and App. B, as pure functions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from operator import add, attrgetter
from typing import TYPE_CHECKING

from ..errors import InterventionError
from .changes import CODE
from .columns import StateColumns
from .needs import NEED_MAX, NEED_MIN, NEEDS, Need
from .notes import EMPTY_NOTE, Notes
from .scenario import Scenario, Status
from .state import (
    ALL,
    Action,
    Decision,
    MemoryEntry,
    Mode,
    Stance,
)

if TYPE_CHECKING:
    import numpy as np

MAX_EMOTION_DELTA = 0.3
MAX_FAV_DELTA = 0.3
ALLY_AT = 0.55
ENEMY_AT = -0.50
RIVAL_AT = -0.10
#: How many earlier rounds an agent's context carries (Sec. 3.3: the recent history).
HISTORY_WINDOW = 3

_importance = attrgetter("importance")
_round = attrgetter("round")


def clip(value: float, low: float, high: float) -> float:
    """Clamp ``value`` into ``[low, high]``."""
    return low if value < low else high if value > high else value


def apply_emotion(emotion: float, delta: float) -> tuple[float, float]:
    """U_S application: clip delta to ±0.3, then S to [0, 1]. Returns (delta, S)."""
    delta = clip(delta, -MAX_EMOTION_DELTA, MAX_EMOTION_DELTA)
    return delta, clip(emotion + delta, 0.0, 1.0)


def apply_fav(fav: float, delta: float) -> tuple[float, float]:
    """U_R application: clip delta to ±0.3, then fav to [-1, 1]. Returns (delta, fav)."""
    # clip() written out: this runs once per judged edge
    high = MAX_FAV_DELTA
    delta = -high if delta < -high else high if delta > high else delta
    fav += delta
    return delta, -1.0 if fav < -1.0 else 1.0 if fav > 1.0 else fav


def ends_above(fav: float, delta: float, level: float) -> bool:
    """Whether U_R takes ``fav`` above ``level`` when it moves by ``delta``, as a judge
    foresees it: a rise clipped as :func:`apply_fav` clips it, a fall counted whole (so a
    steep fall never counts as crossing upward)."""
    return fav + min(delta, MAX_FAV_DELTA) > level


def threshold_status(fav: float, current: Status) -> Status:
    """App. B thresholds: ally >= 0.55, enemy <= -0.50, rival in (-0.50, -0.10]."""
    if fav >= ALLY_AT:
        return Status.ALLY
    if fav <= ENEMY_AT:
        return Status.ENEMY
    if fav <= RIVAL_AT:
        return Status.RIVAL
    return current


def threshold_codes(fav: np.ndarray, current: np.ndarray) -> np.ndarray:
    """:func:`threshold_status` element by element, on status codes."""
    import numpy as np

    return np.where(
        fav >= ALLY_AT,
        CODE[Status.ALLY],
        np.where(
            fav <= ENEMY_AT,
            CODE[Status.ENEMY],
            np.where(fav <= RIVAL_AT, CODE[Status.RIVAL], current),
        ),
    ).astype(np.int8)


def next_status(fav: float, current: Status, override: Status | None) -> Status:
    """App. B: a consequential-event category overrides the threshold result."""
    return override if override is not None else threshold_status(fav, current)


def apply_need(value: float, delta: float) -> float:
    """Move a need by ``delta`` within the 0-10 scale."""
    return clip(value + delta, NEED_MIN, NEED_MAX)


def remember(memory: Sequence[MemoryEntry], entry: MemoryEntry, capacity: int) -> list[MemoryEntry]:
    """Add ``entry``; when over ``capacity`` evict the lowest-retention entries (retention:
    importance less one per round since the entry's round).

    Ties are broken by evicting the older entry. Chronological order is kept.
    """
    entries = [*memory, entry]
    # Retention is importance + round - now: every entry shares ``now``, so entries rank
    # by importance + round, whole numbers summed in C (this runs once per judged edge).
    while len(entries) > capacity:
        keys = list(map(add, map(_importance, entries), map(_round, entries)))
        del entries[keys.index(min(keys))]  # the first lowest: the oldest of a tie
    return entries


def validate_action(speaker: str, mode: Mode, target: str | None, names: Iterable[str]) -> None:
    """Reject invalid mode/target combinations (Sociodrama Sec. 3.2)."""
    others = {n for n in names if n != speaker}
    if mode is Mode.SILENT:
        if target is not None:
            raise InterventionError(f"{speaker}: a silent action has no target (got {target!r})")
        return
    if target is None:
        raise InterventionError(f"{speaker}: a {mode.value} action needs a target")
    if target == ALL:
        if mode is Mode.PRIVATE:
            raise InterventionError(f"{speaker}: a private action needs one recipient, not 'all'")
        return
    if target == speaker:
        raise InterventionError(f"{speaker}: an agent cannot address itself")
    if target not in others:
        raise InterventionError(f"{speaker}: unknown target {target!r}")


def can_observe(action: Action, name: str) -> bool:
    """Whether ``name`` is in the observer set V(a) of Eq. 4: everyone for a public action,
    speaker and recipient for a private one, nobody for silence."""
    if action.mode is Mode.PUBLIC:
        return True
    return action.mode is Mode.PRIVATE and name in (action.speaker, action.target)


def observed_by(actions: Sequence[Action], names: Iterable[str]) -> dict[str, list[Action]]:
    """What each of ``names`` observes of ``actions``, in order (:func:`can_observe`): the
    public acts, gathered once, for everyone party to no private act (one list they share:
    read it, never change it)."""
    # can_observe, written out: each act read once; a party's private acts, each with the
    # number of public acts before it, are then merged into the public ones
    public: list[Action] = []
    mine: dict[str | None, list[tuple[int, Action]]] = {}
    for a in actions:
        if a.mode is Mode.PUBLIC:
            public.append(a)
        elif a.mode is Mode.PRIVATE:
            for party in {a.speaker, a.target}:
                mine.setdefault(party, []).append((len(public), a))
    return {n: _merged(public, mine[n]) if n in mine else public for n in names}


def _merged(public: list[Action], private: list[tuple[int, Action]]) -> list[Action]:
    """The ``public`` acts with the ``private`` ones, each after the number of public acts
    it gives, in order."""
    merged: list[Action] = []
    start = 0
    for at, act in private:
        merged += public[start:at]
        merged.append(act)
        start = at
    return merged + public[start:]


def speaking_order(decisions: Mapping[str, Decision], names: Sequence[str]) -> list[str]:
    """Phase 2 order: who speaks, by descending urgency of their ``decisions``, silent
    agents skipped.

    Equal urgency keeps scenario order, so the order is deterministic.
    """
    position = {n: k for k, n in enumerate(names)}
    speakers = [n for n in names if decisions[n].mode is not Mode.SILENT]
    return sorted(speakers, key=lambda n: (-decisions[n].urgency, position[n]))


#: An act as the round's loops over every observer read it: (act, speaker, target, stance,
#: mode), read once a round (a model's attribute costs ~40 ns more than a tuple's item).
ReadAct = tuple[Action, str, str | None, Stance, Mode]


def read_acts(actions: Iterable[Action]) -> list[ReadAct]:
    """``actions`` as the round's loops read them."""
    return [(a, a.speaker, a.target, a.stance, a.mode) for a in actions]


def relation_triggers(
    observer: str, actions: Iterable[Action], names: Sequence[str]
) -> dict[str, list[Action]]:
    """E_ij for each j: direct interactions between i and j, and j's visible public acts."""
    found = triggers_among(observer, read_acts(actions))
    return {j: [read[0] for read in acts] for j, acts in found.items()}


def triggers_among(observer: str, acts: Iterable[ReadAct]) -> dict[str, list[ReadAct]]:
    """:func:`relation_triggers` among acts already read (:func:`read_acts`), as read."""
    triggers: dict[str, list[ReadAct]] = {}
    public, private = Mode.PUBLIC, Mode.PRIVATE
    for read in acts:  # can_observe, written out: runs N^2 times
        _, speaker, target, _, mode = read
        if speaker == observer:
            if target is not None and target != ALL and (mode is public or mode is private):
                triggers.setdefault(target, []).append(read)
        elif mode is public or (mode is private and target == observer):
            triggers.setdefault(speaker, []).append(read)
    return triggers


def initial_columns(scenario: Scenario, capacity: int = 0) -> StateColumns:
    """Round-0 state from a scenario's initial emotions, needs and relations, as columns
    with ``capacity`` memory slots an edge (no memories yet). A relation without a status
    takes the App. B thresholds' status of its favorability."""
    import numpy as np

    names = scenario.names
    n = len(names)
    index = {name: k for k, name in enumerate(names)}
    fav = np.zeros((n, n))
    given = np.full((n, n), -1, np.int8)
    for rel in scenario.relations:  # a pair listed twice: the last one holds
        i, j = index[rel.source], index[rel.target]
        fav[i, j] = rel.fav
        given[i, j] = -1 if rel.status is None else CODE[rel.status]
    neutral = np.full((n, n), CODE[Status.NEUTRAL], np.int8)
    status = np.where(given >= 0, given, threshold_codes(fav, neutral)).astype(np.int8)
    return StateColumns(
        round=0,
        names=list(names),
        fav=fav,
        status=status,
        notes=Notes.of([]),
        memory=np.full((n, n, capacity), EMPTY_NOTE, np.int32),
        emotion=[spec.emotion for spec in scenario.agents],
        needs=[{need: Need(*spec.need(need)) for need in NEEDS} for spec in scenario.agents],
        theta=[None] * n,
    )
