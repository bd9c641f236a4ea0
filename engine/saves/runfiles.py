"""One run's round files and their index: writing, reading, checking, rebuilding states.

``<run>/rounds/NNNNNN.json.gz`` holds round N in save format 3 and later (gzip'd JSON of a
:class:`~engine.saves.roundfile.RoundFile`), ``NNNNNN.json.zst`` since format 7 for large
JSON (zstd), ``NNNNNN.round`` since format 8 for a round of many edges (binary:
engine/saves/binround.py; which codec a round gets: engine/saves/codec.py); format-2 runs
have ``NNNNNN.json`` (a tinydb document holding the full record) and read as keyframes.
``<run>/index.jsonl`` has one line per round (:class:`~engine.saves.roundfile.IndexEntry`:
metrics, usage, file size and CRC-32, keyframe or not), appended after the round file is in
place; since save format 4 each line ends in ``"check"``, the CRC-32 of the line before it.
The round files are the truth: an index line missing after a kill, a torn last line or a
format-2 run without an index is rebuilt from them. Damage is a file whose size or checksum
differs from its line, a file that fails its run's check (engine/saves/roundcheck.py:
another run's round, a stranger in the cast, uneven columns) or its container's
(engine/saves/binround.py), a special file or symlink in place of one, or an index line
whose check fails.
"""

from __future__ import annotations

import gc
import os
import re
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..core.metrics import RepairCounter, round_metrics
from ..core.played import PlayedRound
from ..core.scenario import Scenario
from ..core.state import RoundRecord
from ..errors import SaveError
from .atomic import atomic_write_bytes, write_all
from .binround import BLOBS, unpack
from .codec import BINARY, GZIP, SUFFIXES, decompress, encoded
from .roundcheck import RunCheck, round_problem
from .roundfile import IndexEntry, RoundFile
from .saferead import is_real_folder, read_regular, stat_regular
from .verified import Verdicts, fingerprint

if TYPE_CHECKING:  # imported when used: list and show never roll states
    from ..core.columns import StateColumns

ROUNDS_DIR = "rounds"
INDEX_FILE = "index.jsonl"
#: How the index is opened to append a line.
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
_ROUND_FILE = re.compile(r"^(\d{6})(\.json\.gz|\.json\.zst|\.round|\.json)$")
#: An index line with its check: the line's JSON up to the check, then the check.
_CHECKED = re.compile(rb'(\{.*),"check":(\d{1,10})\}')

M = TypeVar("M", bound=BaseModel)


def parse_json(
    model: type[M], data: bytes, path: Path, what: str, context: dict | None = None
) -> M:
    """``model`` parsed from JSON ``data`` (validated with ``context``); any problem is one
    SaveError naming the file (and the field, for a valid JSON document of the wrong
    shape)."""
    if not data.strip():
        raise SaveError(f"{path}: empty or truncated save file")
    try:
        return model.model_validate_json(data, context=context)
    except ValidationError as err:
        first = err.errors()[0]
        if first["type"] == "json_invalid":
            raise SaveError(f"{path}: corrupt or truncated save file ({first['msg']})") from None
        loc = ".".join(str(p) for p in first["loc"])
        raise SaveError(f"{path}: not a socialsim {what} ({loc}: {first['msg']})") from None


def read_bytes(path: Path) -> bytes:
    """A save file's bytes (a regular file only: see engine/saves/saferead.py); a missing,
    special or unreadable file is a SaveError naming it."""
    return read_regular(path)


def index_line(entry: IndexEntry) -> bytes:
    """``entry``'s line in index.jsonl, its check included."""
    body = entry.model_dump_json().encode()
    return body[:-1] + b',"check":%d}\n' % zlib.crc32(body)


class _LegacyRound(BaseModel):
    """A format-2 round file: a tinydb table ``round`` holding one full record."""

    model_config = ConfigDict(extra="ignore", defer_build=True)
    round: dict[str, RoundRecord]


class RunFiles:
    """The round files and index of the run in ``folder``; ``check``: what its round files
    must agree with (every file read is checked against it, and files written carry its
    run id)."""

    def __init__(self, folder: Path, check: RunCheck | None = None) -> None:
        self.folder = folder
        self.check = check
        self.rounds = folder / ROUNDS_DIR
        self.index_path = folder / INDEX_FILE
        #: Whether index.jsonl held exactly the entries :meth:`load_index` returned (no
        #: torn line, no round missing from it): otherwise the next write rewrites it.
        self.index_complete = False
        #: (round, index size before its line, its file) of the last :meth:`write`, for
        #: :meth:`discard`.
        self._index_end: tuple[int, int, Path] | None = None
        #: The verdicts this writer adds for the files it writes (loaded at its first).
        self._written: Verdicts | None = None

    def path(self, n: int, suffix: str = GZIP) -> Path:
        """Where round ``n`` is written in the codec of ``suffix`` (engine/saves/codec.py)."""
        return self.rounds / round_name(n, suffix)

    def legacy_path(self, n: int) -> Path:
        """Where a format-2 save holds round ``n``."""
        return self.rounds / f"{n:06d}.json"

    def existing_path(self, n: int) -> Path:
        """The file holding round ``n``: a compressed one (a zstd one first) unless only a
        format-2 one is; the gzip'd one's path if none is."""
        for path in (*(self.path(n, s) for s in SUFFIXES), self.legacy_path(n)):
            if os.path.lexists(path):
                return path
        return self.path(n)

    def numbers(self) -> list[int]:
        """The rounds present, checked to be contiguous from 0 and saved once each."""
        if not is_real_folder(self.rounds):
            if self.rounds.is_symlink():
                raise SaveError(f"{self.rounds}: a symlink in place of the rounds folder (refused)")
            raise SaveError(f"{self.rounds}: missing rounds folder")
        try:
            names = os.listdir(self.rounds)
        except OSError as err:
            raise SaveError(f"{self.rounds}: unreadable ({err.strerror})") from None
        found = sorted(int(m.group(1)) for name in names if (m := _ROUND_FILE.match(name)))
        numbers = sorted(set(found))
        if len(numbers) != len(found):
            twice = sorted({n for n in found if found.count(n) > 1})
            raise SaveError(f"{self.rounds}: rounds saved twice, in both formats: {twice[:12]}")
        if numbers != list(range(len(numbers))) or not numbers:
            raise SaveError(f"{self.rounds}: rounds are missing (found {numbers[:12]})")
        return numbers

    # -- writing ---------------------------------------------------------------------

    def write(self, file: RoundFile) -> IndexEntry:
        """Write a round file (atomically), then append its index line; both are on disk
        when this returns. When the line cannot be written (a full disk) the round file is
        removed again and the index cut back, so the round is saved whole or not at all."""
        if self.check is not None:
            file = file.model_copy(update={"run": self.check.run_id})
        suffix, data = encoded(file)
        path = self.path(file.round, suffix)
        try:
            atomic_write_bytes(path, data)
            for other in SUFFIXES:  # a file of the round in the other codec is gone
                if other != suffix:
                    self.path(file.round, other).unlink(missing_ok=True)
        except OSError as err:
            raise SaveError(f"{path}: cannot write round ({err.strerror})") from None
        entry = _entry(file, data)
        line = index_line(entry)
        try:
            fd = os.open(self.index_path, _APPEND, 0o666)
            try:
                self._index_end = (file.round, os.lseek(fd, 0, os.SEEK_END), path)
                write_all(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as err:
            self.discard(entry)
            raise SaveError(f"{self.index_path}: cannot write ({err.strerror})") from None
        self._note_sound(entry, path)
        return entry

    def _note_sound(self, entry: IndexEntry, path: Path) -> None:
        """Keep a verdict on the file just written (what it holds is what the run played),
        so neither ``list`` nor ``resume`` reads it to check it; kept on disk at every
        keyframe (the rounds since the last are read once by the next check)."""
        if self.check is None or self.folder.name != self.check.run_id:  # staging: later
            return
        if self._written is None:
            self._written = self.verdicts()
        if self._written is None:
            return
        try:
            self._written.add_sound(entry.round, fingerprint(os.lstat(path), entry.crc))
        except OSError:
            return
        if entry.keyframe:
            self._written.save()

    def discard(self, entry: IndexEntry) -> None:
        """Undo the last :meth:`write` (of ``entry``'s round): its index line is cut off,
        then its file removed. Where the cut fails the round stays saved (its file is the
        truth, and its line is rebuilt from it)."""
        end, self._index_end = self._index_end, None
        if end is None or end[0] != entry.round:
            return
        try:
            os.truncate(self.index_path, end[1])
            end[2].unlink(missing_ok=True)
        except OSError:
            self.index_complete = False

    def write_index(self, entries: list[IndexEntry]) -> None:
        """Replace the index (atomically) with ``entries``."""
        data = b"".join(index_line(e) for e in entries)
        try:
            atomic_write_bytes(self.index_path, data)
        except OSError as err:
            raise SaveError(f"{self.index_path}: cannot write ({err.strerror})") from None
        self.index_complete = True

    # -- reading ---------------------------------------------------------------------

    def read(self, n: int, entry: IndexEntry | None = None) -> RoundFile:
        """Round ``n``'s file, checked against its index ``entry`` when given."""
        return self._load(n, entry)[1]

    def _load(self, n: int, entry: IndexEntry | None = None) -> tuple[bytes, RoundFile]:
        path = self.existing_path(n)
        try:
            return self._checked(n, path, entry)
        except SaveError as err:
            if entry is not None:
                self._record_damage(n, path, entry, str(err))
            raise

    def _checked(self, n: int, path: Path, entry: IndexEntry | None) -> tuple[bytes, RoundFile]:
        data = read_regular(path, "round file")
        if entry is not None and (len(data) != entry.size or zlib.crc32(data) != entry.crc):
            raise SaveError(
                f"{path}: damaged round file ({len(data):,} bytes, checksum "
                f"{zlib.crc32(data):08x}; the index says {entry.size:,} bytes, {entry.crc:08x})"
            )
        if path.name.endswith(BINARY):
            head, blobs = unpack(data, path)
            file = parse_json(RoundFile, head, path, "round file", {BLOBS: blobs})
        elif path.name.endswith(SUFFIXES):
            file = parse_json(RoundFile, decompress(data, path), path, "round file")
        else:
            file = _legacy(data, path)
        if file.round != n:
            raise SaveError(f"{path}: holds round {file.round}, expected {n}")
        if entry is not None and entry.keyframe != (file.keyframe is not None):
            said = "a keyframe" if entry.keyframe else "no keyframe"
            raise SaveError(f"{path}: damaged round file (the index says it holds {said})")
        if self.check is not None:
            problem = round_problem(file, n, self.check)
            if problem:
                raise SaveError(f"{path}: damaged round file ({problem})")
        return data, file

    def verdicts(self) -> Verdicts | None:
        """The verdicts kept on this run's round files (None for a run without a check)."""
        return Verdicts.of(self.folder, self.check.key()) if self.check is not None else None

    def _record_damage(self, n: int, path: Path, entry: IndexEntry, reason: str) -> None:
        """Keep the damage a read found, so ``list`` shows it even where no fingerprint
        changed."""
        verdicts = self.verdicts()
        if verdicts is None:
            return
        try:
            fp = fingerprint(stat_regular(os.fspath(path)), entry.crc)
        except SaveError:
            fp = None
        verdicts.add_damage(n, fp, reason)
        verdicts.save()

    def verify(self, entries: list[IndexEntry], stop: Callable[[], bool] | None = None) -> None:
        """Check every indexed round file whole (size, checksum, the run's check), reading
        only those not found sound before with the same fingerprint; the first damage is a
        SaveError (and is kept for ``list``). Once ``stop()`` is true the rest is left
        unchecked (what was found is kept)."""
        verdicts = self.verdicts()
        folder = os.fspath(self.rounds)
        try:
            for n, entry in enumerate(entries):
                if stop is not None and stop():
                    return
                path = f"{folder}/{round_name(n)}"
                if not os.path.lexists(path):
                    path = os.fspath(self.existing_path(n))
                status = stat_regular(path)
                if status.st_size != entry.size:
                    raise SaveError(
                        f"{path}: damaged round file ({status.st_size:,} bytes; "
                        f"the index says {entry.size:,})"
                    )
                fp = fingerprint(status, entry.crc)
                if verdicts is None:
                    self._load(n, entry)
                    continue
                known = verdicts.known_damage(n, fp)
                if known is not None:
                    raise SaveError(known)
                if not verdicts.sound(n, fp):
                    self._load(n, entry)
                    verdicts.add_sound(n, fp)
        finally:
            if verdicts is not None:
                verdicts.save()

    def adopt_verdicts(self, parent: RunFiles, entries: list[IndexEntry]) -> None:
        """Keep known, in this branch and in its ``parent``, that the round files just
        linked from the parent are sound, and that this run's last file (the fork round,
        just written) is: linking moves a file's change time and nothing else, which
        would have both runs read whole again by the next ``list``. A linked file whose
        size, modification time or inode differs from the parent's verdict is left to be
        read; so are copies (a file system without links)."""
        mine, theirs = self.verdicts(), parent.verdicts()
        if mine is None or theirs is None:
            return
        *linked, fork = entries
        for n, entry in enumerate(linked):
            try:
                fp = fingerprint(stat_regular(os.fspath(self.existing_path(n))), entry.crc)
            except SaveError:
                continue
            if theirs.sound_but_linked(n, fp):
                theirs.add_sound(n, fp)
                mine.add_sound(n, fp)
        with suppress(SaveError):
            mine.add_sound(
                fork.round,
                fingerprint(stat_regular(os.fspath(self.existing_path(fork.round))), fork.crc),
            )
        theirs.save()
        mine.save()

    def index_lines(self) -> tuple[list[IndexEntry], bool]:
        """The index's entries, and whether it is whole (every line complete and valid).
        A missing index is empty and not whole. Only an unfinished last line (no newline:
        a kill while it was appended) is left out; a complete line that is invalid, out of
        order or fails its check is damage."""
        if not os.path.lexists(self.index_path):
            return [], False
        data = read_regular(self.index_path, "index")
        *lines, tail = data.split(b"\n")
        entries: list[IndexEntry] = []
        for k, line in enumerate(lines):
            checked = _CHECKED.fullmatch(line)
            if checked:
                line = checked[1] + b"}"
                if zlib.crc32(line) != int(checked[2]):
                    raise self._index_damage(k, "its check fails")
            try:
                entry = IndexEntry.model_validate_json(line)
            except ValidationError:
                entry = None
            if entry is None or entry.round != k:
                raise self._index_damage(k, f"not round {k}'s entry")
            entries.append(entry)
        return entries, not tail

    def _index_damage(self, k: int, why: str) -> SaveError:
        return SaveError(
            f"{self.index_path}: damaged line {k + 1} ({why}; remove the index to rebuild "
            "it from the round files)"
        )

    def load_index(self, scenario: Scenario) -> list[IndexEntry]:
        """An entry for every round present: the index's, completed from the round files
        it lacks (a format-2 run's metrics are computed from its states)."""
        numbers = self.numbers()
        entries, whole = self.index_lines()
        if len(entries) > len(numbers):
            raise SaveError(
                f"{self.rounds}: rounds are missing (the index lists {len(entries)} rounds, "
                f"found {len(numbers)})"
            )
        self.index_complete = whole and len(entries) == len(numbers)
        for n in numbers[len(entries) :]:
            data, file = self._load(n)
            if file.metrics is None:  # a format-2 round: count the run from round 0
                return self._rebuilt_index(scenario, len(numbers))
            entries.append(_entry(file, data))
        return entries

    def _rebuilt_index(self, scenario: Scenario, count: int) -> list[IndexEntry]:
        """Every round's entry, its metrics computed from the states in one pass."""
        with gc_paused():
            return self._rebuild_entries(scenario, count)

    def _rebuild_entries(self, scenario: Scenario, count: int) -> list[IndexEntry]:
        entries: list[IndexEntry] = []
        state: StateColumns | None = None
        counter: RepairCounter | None = None
        for n in range(count):
            data, file = self._load(n)
            state = _next(file, n, state)
            counter = counter or RepairCounter(len(state.names))
            metrics = round_metrics(scenario, state, counter)
            entries.append(_entry(file.model_copy(update={"metrics": metrics}), data))
        return entries

    def next_state(
        self, n: int, entry: IndexEntry, before: StateColumns | None, memory: bool = True
    ) -> tuple[RoundFile, StateColumns]:
        """Round ``n``'s file and the state after it, given the state ``before`` it (None
        when round ``n`` is a keyframe; ``memory``: see :meth:`RoundFile.apply`). The
        cyclic GC is paused meanwhile: a round is a burst of acyclic objects, and each
        collection would rescan the whole state held."""
        with gc_paused():
            file = self.read(n, entry)
            return file, _next(file, n, before, memory)

    def walk(
        self, entries: list[IndexEntry], start: int, stop: int, memory: bool = True
    ) -> Iterator[tuple[RoundFile, StateColumns]]:
        """(file, state after it) of rounds ``start``..``stop - 1``, rolled forward from
        the nearest keyframe at or before ``start`` (the states are columns: their
        :meth:`~engine.core.columns.StateColumns.world` is built only if asked; without
        memories unless ``memory``, see :meth:`RoundFile.apply`)."""
        state: StateColumns | None = None
        for n in range(keyframe_before(entries, start), stop):
            file, state = self.next_state(n, entries[n], state, memory)
            if n >= start:
                yield file, state

    def tail(
        self, entries: list[IndexEntry], keep: int, scenario: Scenario
    ) -> tuple[list[PlayedRound], RepairCounter]:
        """The last ``keep`` rounds of ``entries`` since their last keyframe as played (their
        records, states included, built only when asked) and the repair counter after the
        last: what a simulation needs to go on. No state is rolled from further back: the
        rounds before the keyframe are read from the save when asked."""
        first = max(0, len(entries) - keep)
        with gc_paused():
            counter, rounds = self._rolled(entries, scenario)
            held = [_played(file, state) for n, file, state in rounds if n >= first]
        return held, counter

    def last_state(
        self, entries: list[IndexEntry], scenario: Scenario
    ) -> tuple[RoundFile, StateColumns, RepairCounter]:
        """The last round of ``entries``: its file, the state after it as columns and the
        repair counter then."""
        with gc_paused():
            counter, rounds = self._rolled(entries, scenario)
            ((_, file, state),) = deque(rounds, maxlen=1)
        return file, state, counter

    def _rolled(
        self, entries: list[IndexEntry], scenario: Scenario
    ) -> tuple[RepairCounter, Iterator[tuple[int, RoundFile, StateColumns]]]:
        """The repair counter, and (round, file, state after it) from the last keyframe of
        ``entries`` to the last round; the counter is after the round last yielded. It goes
        on from the keyframe's marks, or from round 0 in a run whose keyframes hold none
        (format 2)."""
        last = len(entries) - 1
        k = keyframe_before(entries, last)
        file = self.read(k, entries[k])
        marks = file.keyframe.repair if file.keyframe else None
        if marks is None and k > 0:  # a format-2 keyframe: count the run from round 0
            k = 0
            file = self.read(0, entries[0])
        state = _next(file, k, None)
        if marks is not None:
            counter = marks.counter(state.names)
        else:
            counter = RepairCounter(len(state.names))
            round_metrics(scenario, state, counter)

        def rounds(state: StateColumns) -> Iterator[tuple[int, RoundFile, StateColumns]]:
            yield k, file, state
            for n in range(k + 1, last + 1):
                after = self.read(n, entries[n])
                state = _next(after, n, state)
                round_metrics(scenario, state, counter)
                yield n, after, state

        return counter, rounds(state)


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off for the block: reading rounds makes bursts of acyclic objects (freed
    by reference counting), and each collection would rescan every object held."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def round_name(n: int, suffix: str = GZIP) -> str:
    """The name of round ``n``'s file in the codec of ``suffix`` (format 3 and later)."""
    return f"{n:06d}{suffix}"


def keyframe_before(entries: list[IndexEntry], n: int) -> int:
    """The last keyframe round at or before ``n`` (round 0 always is one)."""
    while n > 0 and not entries[n].keyframe:
        n -= 1
    return n


def _next(
    file: RoundFile, n: int, before: StateColumns | None, memory: bool = True
) -> StateColumns:
    """The state after round ``n`` (``file``), given the state before it (None: the round
    is a keyframe)."""
    if before is None and file.keyframe is None:
        raise SaveError(f"round {n}: expected a keyframe (the index says it is one)")
    return file.apply(before, memory)


def _played(file: RoundFile, after: StateColumns) -> PlayedRound:
    """Round ``file`` as played, the state after it ``after``."""
    return PlayedRound(
        round=file.round,
        events=file.events,
        actions=file.actions,
        changes=file.changes(after.names),
        after=after,
        llm_calls=file.llm_calls,
        usage=file.usage,
    )


def _entry(file: RoundFile, data: bytes) -> IndexEntry:
    if file.metrics is None:
        raise SaveError(f"round {file.round}: a round file without its metrics")
    return IndexEntry(
        round=file.round,
        metrics=file.metrics,
        usage=file.usage,
        size=len(data),
        crc=zlib.crc32(data),
        keyframe=file.keyframe is not None,
    )


def _legacy(data: bytes, path: Path) -> RoundFile:
    rows = parse_json(_LegacyRound, data, path, "round file").round
    if len(rows) != 1:
        raise SaveError(f"{path}: not a socialsim save file (no single 'round' record)")
    ((doc_id, record),) = rows.items()
    if not doc_id.isdigit():
        raise SaveError(f"{path}: not a socialsim save file (malformed 'round' record)")
    return RoundFile.legacy(record)
