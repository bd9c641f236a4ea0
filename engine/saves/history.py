"""A run's rounds as a read-only sequence: the last few in memory, the rest read from the
save when asked, so memory stays flat however long the run grows.

``history[r]`` is round r's :class:`~engine.core.state.RoundRecord` (the state after it
included), ``history[-1]`` the latest, ``len(history)`` counts round 0, and slices are
lazy views. Iterating reads older rounds one at a time from the save, rolling the state
forward from the nearest keyframe, so a loop over the whole run holds one round at a time
(unless the loop keeps them). Per-round metrics and LLM usage come from the run's index
without reading rounds; :meth:`History.logs` gives rounds without their state, which costs
no rebuilding. A run that is not saved keeps every round in memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, overload

from ..core.changes import RoundChanges
from ..core.exchanges import LLMCall, RoundUsage
from ..core.metrics import Metrics
from ..core.played import PastActs, PlayedRound
from ..core.state import RoundLog, RoundRecord, WorldState
from ..core.view import RoundView
from .roundfile import IndexEntry, RoundFile, RoundSummary
from .runfiles import RunFiles, keyframe_before

if TYPE_CHECKING:  # imported when used: list and show never roll states
    from ..core.columns import StateColumns


class _Rounds(Sequence[RoundRecord]):
    """Equality with any sequence of records, element by element (as lists compare)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]


class History(_Rounds):
    """The rounds of one run, round 0 first."""

    def __init__(
        self,
        summaries: list[RoundSummary],
        window: Sequence[RoundRecord | PlayedRound],
        *,
        keep: int | None = None,
        files: RunFiles | None = None,
        entries: list[IndexEntry] | None = None,
    ) -> None:
        self._summaries = summaries
        self._entries = entries if entries is not None else []
        self._files = files
        #: The rounds held: records, or rounds as played (their records built when read).
        self._window: deque[RoundRecord | PlayedRound] = deque(window, maxlen=keep)
        self._cursor: tuple[int, StateColumns] | None = None

    @classmethod
    def in_memory(cls, first: RoundRecord | PlayedRound, summary: RoundSummary) -> History:
        """The history of a run that is not saved: every round stays in memory."""
        return cls([summary], [first])

    @classmethod
    def saved(
        cls,
        files: RunFiles,
        entries: list[IndexEntry],
        window: Sequence[RoundRecord | PlayedRound] = (),
        keep: int = 0,
    ) -> History:
        """The history of a saved run: ``entries`` (its index), the records of its last
        rounds (``window``), and at most ``keep`` records held as rounds are appended."""
        return cls([], window, keep=keep, files=files, entries=entries)

    def append(self, record: RoundRecord | PlayedRound, summary: RoundSummary) -> None:
        """Add the round just played (the engine calls this; readers never do)."""
        if self._files is not None:
            if not isinstance(summary, IndexEntry):
                raise TypeError("a saved run's rounds are appended with their index entry")
            self._entries.append(summary)
        else:
            self._summaries.append(summary)
        self._window.append(record)

    @property
    def _rows(self) -> Sequence[RoundSummary]:
        return self._entries if self._files is not None else self._summaries

    # -- the sequence --------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> RoundRecord: ...

    @overload
    def __getitem__(self, index: slice) -> HistoryView: ...

    def __getitem__(self, index: int | slice) -> RoundRecord | HistoryView:
        if isinstance(index, slice):
            return HistoryView(self, range(len(self))[index])
        n = _position(index, len(self))
        held = self._held(n)
        return _record(held) if held is not None else self._read(n)

    def __iter__(self) -> Iterator[RoundRecord]:
        return self.records()

    def records(self, start: int = 0, stop: int | None = None) -> Iterator[RoundRecord]:
        """Rounds ``start``..``stop - 1`` with their states, one at a time."""
        stop = len(self) if stop is None else stop
        state: StateColumns | None = None
        for n in range(start, stop):
            held = self._held(n)
            if held is not None:
                record, state = _record(held), None
            elif state is not None:  # roll on from the previous round's state
                file, state = self._disk.next_state(n, self._entries[n], state)
                record = file.record(state.world())
            else:
                record = self._read(n)
                state = self._cursor[1] if self._cursor is not None else None
            yield record

    def logs(
        self, start: int = 0, stop: int | None = None, relations: bool = True
    ) -> Iterator[RoundLog]:
        """Rounds ``start``..``stop - 1`` without their states (nothing is rebuilt), and
        without their relation changes unless ``relations`` (no model an edge is built)."""
        stop = len(self) if stop is None else stop
        for n in range(start, stop):
            held = self._held(n)
            if isinstance(held, PlayedRound):
                yield held.log(relations)
            elif held is not None:
                yield held
            else:
                yield self._disk.read(n, self._entries[n]).log(relations)

    def values(
        self, start: int = 0, stop: int | None = None, memory: bool = True
    ) -> Iterator[tuple[RoundLog, StateColumns, RoundChanges]]:
        """Rounds ``start``..``stop - 1`` as tables read them: each one's log without its
        state and relation changes, the state's columns and the round's changes as arrays,
        rolled forward without building a state's or an edge's model; unless ``memory``, the
        states read from the save need not hold their memories (none since save format 6:
        no model is built for an entry a round remembered)."""
        stop = len(self) if stop is None else stop
        if self._files is None:
            yield from (self._values(n) for n in range(start, stop))
            return
        held = [n for n in range(start, stop) if self._held(n) is not None]
        disk_stop = held[0] if held else stop
        if start < disk_stop:
            files = self._files.walk(self._entries, start, disk_stop, memory)
            for file, values in files:
                yield file.log(relations=False), values, file.changes(values.names)
        yield from (self._values(n) for n in range(disk_stop, stop))

    def view(self, n: int = -1) -> RoundView:
        """Round ``n`` (default: the latest) as a screen draws it: its log, a view of the
        state after it and its changes, no model an edge built."""
        n = _position(n, len(self))
        held = self._held(n)
        if isinstance(held, PlayedRound):
            return held.view()
        return RoundView.of(*next(self.values(n, n + 1)))

    def columns(self, n: int = -1, capacity: int = 0) -> StateColumns:
        """The state after round ``n`` as columns: a round held as played has them (nothing
        is built); else they are made from its record (memory slots for ``capacity``)."""
        from ..core.columns import StateColumns

        held = self._held(_position(n, len(self)))
        if isinstance(held, PlayedRound):
            return held.after
        return StateColumns.of(self[n].state, capacity)

    def _values(self, n: int) -> tuple[RoundLog, StateColumns, RoundChanges]:
        """Held round ``n``'s log, state columns and changes."""
        from ..core.columns import StateColumns

        held = self._held(n)
        if isinstance(held, PlayedRound):
            return held.log(relations=False), held.after, held.changes
        record = self[n]
        values = StateColumns.of(record.state)
        return record, values, RoundFile.legacy(record).changes(values.names)

    def recent(self, count: int) -> list[PastActs]:
        """The last ``count`` rounds' acts (round 0 included if among them), their records
        not built for a round just played."""
        start = max(0, len(self) - count)
        return [self._acts(n) for n in range(start, len(self))]

    def latest(self) -> PastActs:
        """The last round's acts (see :meth:`recent`)."""
        return self._acts(len(self) - 1)

    def usage(self, n: int) -> RoundUsage | None:
        """Round ``n``'s LLM usage, from the index."""
        return self._rows[_position(n, len(self))].usage

    def _acts(self, n: int) -> PastActs:
        held = self._held(n)
        return held if held is not None else next(self.logs(n, n + 1, relations=False))

    def states(self, start: int = 0, stop: int | None = None) -> Iterator[WorldState]:
        """The state after each of rounds ``start``..``stop - 1``, one at a time."""
        return (r.state for r in self.records(start, stop))

    # -- what the index holds: no round is read ---------------------------------------

    def metrics(self, n: int = -1) -> Metrics:
        """The App. D metrics after round ``n`` (default: the latest)."""
        return self._rows[_position(n, len(self))].metrics

    def metrics_series(self) -> list[Metrics]:
        """The metrics after every round, round 0 first."""
        return [row.metrics for row in self._rows]

    def usages(self) -> list[RoundUsage]:
        """The LLM usage of every round that made calls."""
        return [row.usage for row in self._rows if row.usage is not None]

    def index_entries(self) -> list[IndexEntry]:
        """A saved run's index entries, round 0 first (empty for a run not saved)."""
        return list(self._entries)

    def llm_calls(self) -> Iterator[LLMCall]:
        """Every recorded LLM exchange, round by round (read from the rounds)."""
        return (call for log in self.logs(relations=False) for call in log.llm_calls)

    # -- reading -----------------------------------------------------------------------

    def _held(self, n: int) -> RoundRecord | PlayedRound | None:
        """Round ``n``'s record if it is in memory (found by its round number, so a reader
        in another thread never gets a neighbour while a round is being appended)."""
        window = self._window
        try:
            first = window[0].round
            return window[n - first] if first <= n <= window[-1].round else None
        except IndexError:  # empty, or emptied while we looked
            return None

    @property
    def _disk(self) -> RunFiles:
        if self._files is None:
            raise IndexError("an unsaved run holds every round; this one is not held")
        return self._files

    def _read(self, n: int) -> RoundRecord:
        """Round ``n`` from the save, rolled forward from the last round read if that is
        nearer than the keyframe."""
        files, entries, cursor = self._disk, self._entries, self._cursor
        if cursor is not None and keyframe_before(entries, n) <= cursor[0] <= n:
            at, state = cursor
            if at == n:
                file = files.read(n, entries[n])
            for m in range(at + 1, n + 1):
                file, state = files.next_state(m, entries[m], state)
        else:
            file, state = next(files.walk(entries, n, n + 1))
        self._cursor = (n, state)
        return file.record(state.world())


class HistoryView(_Rounds):
    """A slice of a :class:`History` (rounds ``rounds``), read lazily like it."""

    def __init__(self, history: History, rounds: range) -> None:
        self._history = history
        self._rounds = rounds

    def __len__(self) -> int:
        return len(self._rounds)

    @overload
    def __getitem__(self, index: int) -> RoundRecord: ...

    @overload
    def __getitem__(self, index: slice) -> HistoryView: ...

    def __getitem__(self, index: int | slice) -> RoundRecord | HistoryView:
        if isinstance(index, slice):
            return HistoryView(self._history, self._rounds[index])
        return self._history[self._rounds[index]]

    def __iter__(self) -> Iterator[RoundRecord]:
        r = self._rounds
        if r.step == 1:
            return self._history.records(r.start, r.stop)
        return (self._history[n] for n in r)


def _record(held: RoundRecord | PlayedRound) -> RoundRecord:
    return held.record() if isinstance(held, PlayedRound) else held


def _position(index: int, length: int) -> int:
    n = index + length if index < 0 else index
    if not 0 <= n < length:
        raise IndexError(f"round {index} is outside 0..{length - 1}")
    return n
