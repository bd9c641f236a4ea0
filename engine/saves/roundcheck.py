"""A round file checked against the run it is read for, before any of it is used.

A round file well-formed as JSON can still be wrong for its run: taken from another run or
scenario, a keyframe of another cast, an agent named twice, relation columns of uneven
length, values outside the rules' bounds. :func:`round_problem` names the first such fault
(the reader reports it as damage); a file that passes applies to its run's states without
a missing agent, edge or need. A binary round's container (its checksum, size and blob
table, and each column's reference to its blobs) is checked before it is parsed
(engine/saves/binround.py); its columns are then checked here like any others.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

from ..core.changes import CODE
from ..core.needs import NEEDS
from ..core.scenario import Status
from ..core.state import ALL, MemoryEntry, WorldState
from .agentcolumns import NeedColumns, NoteColumns
from .columnar import EdgeColumns, PackedEdges, PackedState, StateFrame, status_array
from .roundfile import PackedMarks, RelationColumns, RoundFile

if TYPE_CHECKING:
    from .runmeta import RunHead, RunMeta

_NEEDS = frozenset(NEEDS)


@dataclass(frozen=True, slots=True)
class RunCheck:
    """What every round file of one run must agree with: the id of the run that wrote
    each round (its own, or an ancestor's for the rounds before a fork), the ids its
    folder had before a copy or rename, and its cast in order."""

    run_id: str
    aliases: frozenset[str]
    #: (ancestor id, fork round), root first, as run.json's ``ancestry``.
    forks: tuple[tuple[str, int], ...]
    names: tuple[str, ...]

    @classmethod
    def of(cls, doc: RunMeta | RunHead, run_id: str) -> RunCheck:
        """The check of the run in folder ``run_id`` whose run.json says ``doc``."""
        aliases = {*doc.aliases, doc.run_id} - {run_id}
        return cls(
            run_id=run_id,
            aliases=frozenset(aliases),
            forks=tuple((f.run_id, f.round) for f in doc.ancestry),
            names=tuple(a.name for a in doc.scenario.agents),
        )

    def owner(self, n: int) -> str:
        """The id of the run that wrote round ``n``: an ancestor's for a round before the
        fork it was linked from, else this run's."""
        owner = self.run_id
        for run_id, fork in reversed(self.forks):
            if n >= fork:
                break
            owner = run_id
        return owner

    def key(self) -> str:
        """A digest of this check (a verdict cached under another key is stale)."""
        import hashlib

        text = repr((self.run_id, sorted(self.aliases), self.forks, self.names))
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def round_problem(file: RoundFile, n: int, check: RunCheck) -> str | None:
    """What is wrong with ``file`` read as round ``n`` of the run ``check`` describes
    (None: nothing). A file without a run id was written before round files carried one."""
    if file.round != n:
        return f"holds round {file.round}, not {n}"
    if file.run is not None and file.run != check.owner(n) and file.run not in check.aliases:
        return f"a round of run {file.run!r}, not of this run"
    cast = set(check.names)
    keyframe = file.keyframe
    if keyframe is not None:
        if keyframe.packed is not None:
            problem = _packed_state_problem(keyframe.packed, n, check.names)
        elif keyframe.frame is not None:
            problem = _frame_problem(keyframe.frame, n, check.names)
        else:
            assert keyframe.state is not None
            problem = _state_problem(keyframe.state, n, check.names)
        marks = keyframe.repair
        if isinstance(marks, PackedMarks) and sorted(marks.names) != sorted(check.names):
            problem = problem or "its repair marks are of another cast"
        if problem:
            return problem
    return _changes_problem(file, cast) or _log_problem(file, cast)


def _cast_problem(held_round: int, held: list[str], n: int, names: tuple[str, ...]) -> str | None:
    """What is wrong with a keyframe of round ``held_round`` holding agents ``held`` read
    as round ``n`` of a run of cast ``names``."""
    if held_round != n:
        return f"its keyframe is the state after round {held_round}, not {n}"
    if tuple(held) != names:
        stranger = next((a for a in held if a not in names), None)
        if stranger is not None:
            return f"its keyframe names {stranger!r}, who is not in this run's cast"
        return "its keyframe does not hold this run's cast"
    return None


def _frame_problem(frame: StateFrame, n: int, names: tuple[str, ...]) -> str | None:
    """What is wrong with a keyframe's columns (format 5) for round ``n`` of a run of
    cast ``names``."""
    import numpy as np

    problem = _cast_problem(frame.round, frame.names, n, names) or _agents_problem(frame, names)
    if problem:
        return problem
    count, width = len(names), frame.width
    sizes = (len(frame.fav), len(frame.status), len(frame.memory))
    if sizes != (count * count, count * count, count * count * width):
        return "its keyframe's columns do not fit its cast"
    problem = _notes_problem(frame.notes, set(names), None)
    if problem:
        return problem
    diagonal = np.eye(count, dtype=bool)
    if np.array(frame.fav).reshape(count, count)[diagonal].any():
        return "its keyframe holds an agent's regard for themself"
    if (status_array(frame.status).reshape(count, count)[diagonal] != CODE[Status.NEUTRAL]).any():
        return "its keyframe holds an agent's status toward themself"
    slots = np.array(frame.memory, np.int64).reshape(count, count, width)  # target, observer
    sizes_of = np.array([len(frame.notes.get(name, ())) for name in names])
    if (slots >= sizes_of[:, None, None]).any():
        return "its keyframe's memory names a note its target does not have"
    filled = slots >= 0
    if filled[diagonal].any():
        return "its keyframe holds an agent's memory of themself"
    if (filled[:, :, :-1] & ~filled[:, :, 1:]).any():
        return "its keyframe's memory has a gap (the empty slots come first)"
    return None


def _packed_state_problem(frame: PackedState, n: int, names: tuple[str, ...]) -> str | None:
    """What is wrong with a keyframe's packed columns (format 6) for round ``n`` of a run
    of cast ``names``."""
    import numpy as np

    problem = _cast_problem(frame.round, frame.names, n, names) or _agents_problem(frame, names)
    if problem is None and isinstance(frame.notes, NoteColumns):
        problem = frame.notes.problem()
        problem = problem and f"its keyframe holds {problem}"
    if problem:
        return problem
    count, width = len(names), frame.width
    sizes = (len(frame.fav), len(frame.status), len(frame.memory))
    if sizes != (count * count, count * count, count * count * width):
        return "its keyframe's columns do not fit its cast"
    fav = frame.fav.reshape(count, count)
    if not (np.abs(fav) <= 1.0).all():
        return "its keyframe holds a favorability outside -1..1"
    diagonal = np.eye(count, dtype=bool)
    if fav[diagonal].any():
        return "its keyframe holds an agent's regard for themself"
    if (status_array(frame.status).reshape(count, count)[diagonal] != CODE[Status.NEUTRAL]).any():
        return "its keyframe holds an agent's status toward themself"
    slots = frame.memory.reshape(count, count, width)  # observer, target
    if len(slots) and (slots.min() < 0 or slots.max() > len(frame.notes)):
        return "its keyframe's memory names a note it does not have"
    filled = slots > 0
    if filled[diagonal].any():
        return "its keyframe holds an agent's memory of themself"
    if (filled[:, :, :-1] & ~filled[:, :, 1:]).any():
        return "its keyframe's memory has a gap (the empty slots come first)"
    return None


def _agents_problem(frame: StateFrame | PackedState, names: tuple[str, ...]) -> str | None:
    """What is wrong with a keyframe's columns of one value an agent."""
    count = len(names)
    columns = frame.needs if isinstance(frame.needs, NeedColumns) else None
    problem = None if columns is None else columns.problem()
    if problem:
        return f"its keyframe holds {problem}"
    if (len(frame.emotion), len(frame.needs), len(frame.theta)) != (count,) * 3:
        return "its keyframe's agent columns do not fit its cast"
    if columns is not None:
        if set(columns.kinds) != _NEEDS:
            return "its keyframe's needs are not the rules' needs"
    else:
        for name, needs in zip(names, frame.needs, strict=True):
            if set(needs) != _NEEDS:
                return f"its keyframe's needs of {name!r} are not the rules' needs"
    for name, theta in zip(names, frame.theta, strict=True):
        if theta is not None and not math.isfinite(theta):
            return f"its keyframe's theta of {name!r} is not a number"
    return None


def _notes_problem(
    notes: dict[str, list[MemoryEntry]], cast: set[str], round_no: int | None
) -> str | None:
    """What is wrong with the notes of a format-5 file (of round ``round_no``'s new
    entries, when given)."""
    stranger = next((a for a in notes if a not in cast), None)
    if stranger is not None:
        return f"it names {stranger!r}, who is not in this run's cast"
    if round_no is not None and any(e.round != round_no for m in notes.values() for e in m):
        return f"a memory it adds is not of round {round_no}"
    return None


def _state_problem(state: WorldState, n: int, names: tuple[str, ...]) -> str | None:
    problem = _cast_problem(state.round, list(state.agents), n, names)
    if problem:
        return problem
    for name, agent in state.agents.items():
        if set(agent.relations) != set(names) - {name}:
            return f"its keyframe's relations of {name!r} are not the cast's"
        if set(agent.needs) != _NEEDS:
            return f"its keyframe's needs of {name!r} are not the rules' needs"
        if agent.theta is not None and not math.isfinite(agent.theta):
            return f"its keyframe's theta of {name!r} is not a number"
    return None


def _columns_problem(file: RoundFile, cast: set[str]) -> str | None:
    """What is wrong with the shape of the relation columns (either format's)."""
    if sum(c is not None for c in (file.packed, file.edges, file.relations)) > 1:
        return "it holds its relation changes twice"
    cols = file.columns
    common = (
        len(cols.source), len(cols.target), len(cols.delta), len(cols.fav), len(cols.status),
        len(cols.previous_status), len(cols.override),
    )  # fmt: skip
    if isinstance(cols, PackedEdges):
        more: tuple[int, ...] = (len(cols.note), len(cols.importance))
        rows, evicted = common[0], len(cols.evicted)
        if (evicted % rows or not evicted) if rows else evicted:
            return "its relation columns have different lengths"
    elif isinstance(cols, EdgeColumns):
        more = (len(cols.memory), len(cols.evicted))
    else:
        more = (len(cols.summary), len(cols.importance), len(cols.evicted))
    if len({*common, *more}) > 1:
        return "its relation columns have different lengths"
    return None


def _added_problem(cols: EdgeColumns, cast: set[str], round_no: int) -> str | None:
    """What is wrong with the memories a round's edges add (format 5)."""
    problem = _notes_problem(cols.notes, cast, round_no)
    if problem:
        return problem
    sizes = {name: len(about) for name, about in cols.notes.items()}
    if any(k >= sizes.get(t, 0) for t, k in zip(cols.target, cols.memory, strict=True)):
        return "a memory it adds names a note its target does not have"
    return None


def _changes_problem(file: RoundFile, cast: set[str]) -> str | None:
    problem = _columns_problem(file, cast)
    if problem:
        return problem
    cols = file.columns
    if isinstance(cols, PackedEdges):
        problem = _packed_edges_problem(cols, cast)
    else:
        problem = _edges_problem(cols, cast, file.round)
    return problem or _agent_changes_problem(file, cast)


def _edges_problem(
    cols: EdgeColumns | RelationColumns, cast: set[str], round_no: int
) -> str | None:
    """What is wrong with the relation changes of a file of format 2 to 5."""
    edges = list(zip(cols.source, cols.target, strict=True))
    for source, target in edges:
        for who in (source, target):
            if who not in cast:
                return f"it names {who!r}, who is not in this run's cast"
        if source == target:
            return f"it changes a relation of {source!r} to themself"
    if len(set(edges)) != len(edges):
        return "it changes one relation twice"
    if isinstance(cols, EdgeColumns):
        problem = _added_problem(cols, cast, round_no)
        if problem:
            return problem
    if not all(math.isfinite(d) for d in cols.delta):
        return "a relation change is not a number"
    return None


def _packed_edges_problem(cols: PackedEdges, cast: set[str]) -> str | None:
    """What is wrong with the packed relation changes of a format-6 file (their lengths
    are checked already)."""
    import numpy as np

    stranger = next((a for a in cols.names if a not in cast), None)
    if stranger is not None:
        return f"it names {stranger!r}, who is not in this run's cast"
    count = len(cols.names)
    if len(set(cols.names)) != count:
        return "it names an agent twice"
    source, target = cols.source, cols.target
    if len(source) and not (
        0 <= min(source.min(), target.min()) <= max(source.max(), target.max()) < count
    ):
        return "it names an agent it does not list"
    same = source == target
    if same.any():
        return f"it changes a relation of {cols.names[source[same.argmax()]]!r} to themself"
    changed = np.zeros(count * count, bool)  # a mark an edge: fewer marks, an edge twice
    changed[source * count + target] = True
    if np.count_nonzero(changed) != len(source):
        return "it changes one relation twice"
    if not np.isfinite(cols.delta).all():
        return "a relation change is not a number"
    if not (np.abs(cols.fav) <= 1.0).all():
        return "a relation's favorability is outside -1..1"
    if len(cols.override) and (cols.override.min() < -1 or cols.override.max() >= len(CODE)):
        return "a relation's override is not a status"
    if len(cols.note) and (cols.note.min() < 0 or cols.note.max() >= len(cols.notes)):
        return "a memory it adds names a note it does not have"
    if len(cols.importance) and (cols.importance.min() < 1 or cols.importance.max() > 10):
        return "a memory it adds has an importance outside 1..10"
    return None


def _agent_changes_problem(file: RoundFile, cast: set[str]) -> str | None:
    """What is wrong with a round's changes of emotions, needs and theta."""
    emotions = [c.agent for c in file.emotion_changes]
    if len(set(emotions)) != len(emotions):
        return "it changes an agent's emotion twice"
    for change in file.emotion_changes:
        if change.agent not in cast:
            return f"it names {change.agent!r}, who is not in this run's cast"
        if not (0.0 <= change.emotion <= 1.0 and math.isfinite(change.delta)):
            return f"the emotion of {change.agent!r} is outside 0..1"
    columns = file.moved
    agents: list[str]
    kinds: list[Iterable[str]]
    deltas: Iterable[float]
    if columns is not None:  # (its values are checked by its problem())
        problem = columns.problem()
        if problem or file.need_deltas or file.needs:
            return f"it holds {problem or 'its need changes twice'}"
        agents, kinds, deltas = columns.agents, [columns.kinds], ()
    else:
        agents = [*file.needs, *file.need_deltas]
        kinds = [*file.needs.values(), *file.need_deltas.values()]
        deltas = chain.from_iterable(d.values() for d in file.need_deltas.values())
    for table in (agents, file.theta):
        if not cast.issuperset(table):
            stranger = next(a for a in table if a not in cast)
            return f"it names {stranger!r}, who is not in this run's cast"
    for moved in kinds:
        if not _NEEDS.issuperset(moved):
            unknown = next(need for need in moved if need not in _NEEDS)
            return f"it moves the need {unknown!r}, not one of the rules' needs"
    if not all(map(math.isfinite, deltas)):
        return "a need change is not a number"
    if not all(t is None or math.isfinite(t) for t in file.theta.values()):
        return "a theta value is not a number"
    return None


def _log_problem(file: RoundFile, cast: set[str]) -> str | None:
    for action in file.actions:
        target = None if action.target == ALL else action.target
        for who in (action.speaker, target):
            if who is not None and who not in cast:
                return f"it names {who!r}, who is not in this run's cast"
    for event in file.events:
        for who in (*(event.private_to or ()), *event.about):
            if who not in cast:
                return f"an event names {who!r}, who is not in this run's cast"
    return None
