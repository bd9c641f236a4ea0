"""A reply's verdict beyond its schema: its checks' flaw, or a signed change far off its
scale; in a replay, the record's verdict, whatever the checks have become since (a reply the
record took is taken, one it found degenerate is flawed, a mend is made only where it was)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ..core.exchanges import LLMCall
from ..core.quality import Flaw
from .parsing import Parsed, parse

#: The note of a re-ask's record where the first reply's mend was taken over it.
FLAWED_TOO = "as its re-ask was flawed too"


def scale_flaw(far: Sequence[str]) -> Flaw | None:
    """The flaw of a reply whose signed changes ``far`` (one line each) are off their scale."""
    if not far:
        return None
    more = len(far) - 1
    return Flaw("scale", far[0] + (f" (and {more} more)" if more else ""))


def as_recorded(flaw: Flaw | None, recorded: LLMCall | None) -> Flaw | None:
    """A replayed reply's flaw as its record judged it: none where the record took it, one
    (``flaw``, else the record's) where it found it degenerate (asked again or not); ``flaw``
    where the record does not say (not held, or a failure)."""
    if recorded is None or not (recorded.outcome in ("ok", "repaired") or recorded.degenerate):
        return flaw
    if recorded.outcome == "ok" or (recorded.outcome == "repaired" and not recorded.flaw):
        return None
    return flaw or Flaw(recorded.flaw, recorded.error or "")


def mended_then(recorded: LLMCall | None) -> bool:
    """Whether the record mended the reply it holds (a replay mends only where it did)."""
    return recorded is not None and recorded.outcome == "repaired"


def read_as(recorded: LLMCall | None) -> tuple[bool, bool]:
    """How a replayed reply is read (``parse``'s ``lenient`` and ``stray``): leniently where
    the record says it was; with stray keys refused where its reading failed then."""
    if recorded is None:
        return False, False
    return recorded.read == "lenient", recorded.outcome in ("reasked", "fallback")


class Replayed:
    """The record a client replays, by exchange key (``calls`` None: a live client)."""

    def __init__(self, calls: dict[str, LLMCall] | None) -> None:
        self.calls = calls

    @property
    def active(self) -> bool:
        return self.calls is not None

    def call(self, key: str) -> LLMCall | None:
        """Exchange ``key`` in the record (None: not held, or live)."""
        return None if self.calls is None else self.calls.get(key)

    def flaw(self, key: str, flaw: Flaw | None, check: object, value: Any) -> Flaw | None:
        """``flaw``, found in reply ``value`` to exchange ``key`` by ``check``, as the record
        judged it (:func:`as_recorded`; live: as it is); where the record found another kind
        of flaw, or mended the reply, that flaw, mended as then by the check's
        ``as_recorded`` (a check added since, or its verdict on the part kept, does not undo
        a recorded mend, nor one a later re-ask took over from this reply)."""
        if self.calls is None:
            return flaw
        recorded = self.calls.get(key)
        flaw = as_recorded(flaw, recorded)
        remend = getattr(check, "as_recorded", None)
        if remend is None or recorded is None or not recorded.flaw or flaw is None:
            return flaw
        if flaw.kind == recorded.flaw and (flaw.mended is not None or not mended_then(recorded)):
            return flaw
        mended: Flaw | None = remend(value, recorded.flaw)
        return mended or flaw

    def read(self, key: str, text: str, schema: type[BaseModel]) -> Parsed:
        """Reply ``text`` to exchange ``key`` read against ``schema``; in a replay, as it
        was read then (:func:`read_as`)."""
        if self.calls is None:
            return parse(text, schema)
        return parse(text, schema, *read_as(self.calls.get(key)))

    def keeps_first(self, key: str, flaw: Flaw | None) -> bool:
        """Whether the first reply's mend is taken over re-ask ``key``'s reply, whose own
        flaw is ``flaw``: live, when it is flawed with no mend of its own (Gemma 3 270M cut
        a line after a whole sentence, then echoed its task when asked again); in a replay,
        where the record took it."""
        if self.calls is None:
            return flaw is not None and flaw.mended is None
        recorded = self.calls.get(key)
        return (
            recorded is not None and mended_then(recorded) and FLAWED_TOO in (recorded.error or "")
        )

    def mends(self, key: str) -> bool:
        """Whether a flawed reply may be mended at exchange ``key`` (a replay mends only
        where its record did; live, always)."""
        return self.calls is None or mended_then(self.calls.get(key))
