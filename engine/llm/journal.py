"""The exchange journal: every LLM exchange of a round not yet saved, kept on disk as it
completes, so a round cut short (quit, cancel, ``kill -9``, a failed call) loses at most
the calls in flight.

``<run>/journal.jsonl`` holds one JSON line per exchange a transport completed for the
round being played: its record key, a digest of what was sent (model, format, messages,
schema), and the outcome: the reply (text and counts), a failure after its retries, or a
response format refused. Each line carries ``sum``, a SHA-256 prefix of its exchange, and is
flushed and fsynced before the reply goes back to the round. The journal is dropped when
the round's file is saved.

Whoever plays that round next (this process again, ``resume``, the app's reopening) serves
an exchange from the journal when one with the same key *and* digest is there, first
recorded first (a key asked twice, as a system text dropped and asked again, is served in
its order), and asks the server only for the rest: the round is played from the same
exchanges, so it ends as it would have. A torn last line (a kill mid-write) is ignored
silently; a line whose sum is wrong is ignored and said. A reply longer than
:data:`MAX_LINE_BYTES`, or one past :data:`MAX_JOURNAL_BYTES` in all, is not journaled (it
would be asked again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the transport (and litellm) is imported when a call is made
    from .transport import Reply, Request, Transport

JOURNAL_FILE = "journal.jsonl"
#: The longest line journaled (a runaway reply beyond it is asked again after a kill).
MAX_LINE_BYTES = 1 << 20
#: The most a journal holds: a round's exchanges beyond it are asked again after a kill.
MAX_JOURNAL_BYTES = 64 << 20
#: The reply fields a line keeps.
REPLY_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_s",
    "attempts",
    "sent_tokens",
    "counted_by",
)
#: Where a reply came from in a run of several endpoints (kept only when set).
ROUTE_FIELDS = ("endpoint", "moved_from")


def digest(request: Request) -> str:
    """What was sent, as a short hash: an exchange is served only to the same request."""
    sent = [request.model, request.format, request.messages, request.schema]
    text = json.dumps(sent, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _canonical(exchange: dict[str, Any]) -> str:
    return json.dumps(exchange, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class Journal:
    """The journal of one run's round in play, at ``folder/journal.jsonl``."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / JOURNAL_FILE
        self.round = 0
        #: Lines the user must read (damaged journal lines ignored), until taken.
        self.notes: list[str] = []
        #: Damaged lines the last read found.
        self.bad = 0
        self._entries: list[dict[str, Any]] = []
        self._unserved: dict[tuple[str, str], deque[dict[str, Any]]] = {}
        self._size = 0
        self._full = False

    @property
    def kept(self) -> int:
        """The exchanges journaled for the round in play (served ones included)."""
        return len(self._entries)

    def begin(self, round_no: int) -> int:
        """Round ``round_no`` is about to be played: what the journal holds of it is served
        from now on (anything it holds of an earlier round, saved since, is dropped, and a
        torn last line cut off). Returns the exchanges it holds."""
        self.round = round_no
        every, self._size, torn = self._read()
        if torn:  # cut the torn tail, so what is appended next starts a line
            with open(self.path, "r+b") as f:
                f.truncate(self._size)
        entries = [e for e in every if e.get("round") == round_no]
        if len(entries) < len(every) or self.bad:
            self.drop()
            for entry in entries:
                self._append(entry)
        self._entries = entries
        self._unserved = {}
        for entry in entries:
            self._unserved.setdefault((entry["key"], entry["sent"]), deque()).append(entry)
        return len(entries)

    def count(self, round_no: int) -> int:
        """The exchanges of round ``round_no`` the file holds (read only: the run may be
        another process's)."""
        return sum(e.get("round") == round_no for e in self._read()[0])

    def drop(self) -> None:
        """The round is saved: forget its exchanges and remove the file."""
        self._entries, self._unserved = [], {}
        self._size, self._full = 0, False
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def served(self, request: Request, sent: str) -> dict[str, Any] | None:
        """The journaled outcome of ``request`` (first recorded first), if one is left."""
        waiting = self._unserved.get((request.key, sent))
        return waiting.popleft() if waiting else None

    def add(self, request: Request, sent: str, outcome: dict[str, Any]) -> None:
        """Append an exchange's outcome durably (flushed and fsynced) before it returns."""
        entry = {"round": self.round, "key": request.key, "sent": sent, **outcome}
        if self._append(entry):
            self._entries.append(entry)

    # -- the file ------------------------------------------------------------------------

    def _append(self, entry: dict[str, Any]) -> bool:
        text = _canonical(entry)
        line = (json.dumps({"sum": _sum(text), "x": entry}, ensure_ascii=False) + "\n").encode()
        if len(line) > MAX_LINE_BYTES or self._full:
            return False
        if self._size + len(line) > MAX_JOURNAL_BYTES:
            self._full = True
            return False
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._size += len(line)
        return True

    def _read(self) -> tuple[list[dict[str, Any]], int, bool]:
        """The sound lines of the file, the bytes up to its last newline, and whether a torn
        line follows; the damaged lines are counted (:attr:`bad`) and said (:attr:`notes`)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        lines = data.split(b"\n")
        torn = lines.pop()  # after the last newline: empty, or a line cut by a kill
        entries: list[dict[str, Any]] = []
        self.bad = 0
        for raw in lines:
            entry = _checked(raw)
            if entry is None:
                self.bad += 1
            else:
                entries.append(entry)
        if self.bad:
            self.notes.append(
                f"{self.path}: {self.bad} damaged journal line{'s' * (self.bad > 1)} ignored "
                "(their exchanges are asked again)"
            )
        return entries, len(data) - len(torn), bool(torn)


def _checked(raw: bytes) -> dict[str, Any] | None:
    """A line's exchange, or None when it does not read or its sum is wrong."""
    try:
        line = json.loads(raw)
        entry = line["x"]
        if not isinstance(entry, dict) or _sum(_canonical(entry)) != line["sum"]:
            return None
        return entry if isinstance(entry.get("key"), str) else None
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


class Journaled:
    """Serves the journaled exchanges of the round in play, and journals every exchange
    the transport inside completes (a reply, a failure after retries, a refused format);
    a fatal failure or a cancelled call is not journaled. Without a journal attached
    (:meth:`attach`) it passes every exchange through."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.journal: Journal | None = None

    def attach(self, journal: Journal | None) -> None:
        self.journal = journal

    async def complete(self, request: Request) -> Reply:
        journal = self.journal
        if journal is None:
            return await self.inner.complete(request)
        from .transport import SchemaRejected, TransportError

        sent = digest(request)
        kept = journal.served(request, sent)
        if kept is not None:
            return _outcome(kept, request)
        try:
            reply = await self.inner.complete(request)
        except SchemaRejected as err:
            journal.add(request, sent, {"rejected": str(err)})
            raise
        except TransportError as err:
            if not err.fatal:
                failure = {"error": str(err), "attempts": err.attempts, "timed_out": err.timed_out}
                journal.add(request, sent, failure)
            raise
        fields = {name: getattr(reply, name) for name in REPLY_FIELDS}
        fields.update({name: getattr(reply, name) for name in ROUTE_FIELDS if getattr(reply, name)})
        journal.add(request, sent, {"text": reply.text, **fields})
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()


def _outcome(entry: dict[str, Any], request: Request) -> Reply:
    """The journaled outcome as the transport gave it: a reply, or the error raised."""
    from .transport import Reply, SchemaRejected, TransportError

    if "rejected" in entry:
        raise SchemaRejected(str(entry["rejected"]))
    if "text" not in entry:
        raise TransportError(
            str(entry.get("error", "journaled failure")),
            fatal=False,
            attempts=int(entry.get("attempts", 1)),
            timed_out=bool(entry.get("timed_out", False)),
        )
    text = str(entry["text"])
    if request.sink is not None and text:
        request.sink(text)
    kept = (*REPLY_FIELDS, *ROUTE_FIELDS)
    return Reply(text=text, **{name: entry[name] for name in kept if name in entry})
