"""A reply's verdict beyond its schema: its checks' flaw, or a signed change far off its
scale; in a replay, the record's verdict, whatever the checks have become since (a reply the
record took is taken, one it found degenerate is flawed, a mend is made only where it was)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.exchanges import LLMCall
from ..core.quality import Flaw


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
