"""How well a model played: :class:`Tally` sums a run's exchanges per model and purpose into
the shares a run's summary, card, ``show`` and the app give (degenerate, clamped, at the caps,
fallen back; a reply's flaws are :mod:`.quality`'s), and :func:`loud_lines` says when a share
passes its threshold.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from .exchanges import LLMCall, RoundUsage

#: A purpose's share over which the run's summary says, loudly, that the model, not the
#: scenario, shaped the dynamics.
DEGENERATE_LOUD = 0.2
CLAMPED_LOUD = 0.3
AT_CAP_LOUD = 0.5
FALLEN_BACK_LOUD = 0.1
#: Fewer replies of a purpose than this say nothing loud.
LOUD_MIN_REPLIES = 3
#: What a purpose's replies are called in the loud line.
NOUNS = {
    "speak": "utterances",
    "decide": "decisions",
    "plan": "plans",
    "judge": "judgements",
    "relation": "relation judgements",
    "emotion": "emotion judgements",
    "needs": "need judgements",
    "narrate": "narrations",
}


class PurposeQuality(BaseModel):
    """One model's replies for one purpose: how many, and how many were degenerate (by
    kind), clamped, at the caps; the questions settled, and how many fell back (a failed
    exchange, an invalid or a degenerate reply asked again in vain)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    purpose: str
    replies: int = 0
    degenerate: int = 0
    kinds: dict[str, int] = {}
    clamped: int = 0
    at_cap: int = 0
    questions: int = 0
    fallen_back: int = 0

    def share(self, name: str) -> float:
        """``name``'s share: of the replies (degenerate, clamped, at_cap) or of the
        questions (fallen_back)."""
        whole = self.questions if name == "fallen_back" else self.replies
        return getattr(self, name) / whole if whole else 0.0

    def add(self, call: LLMCall) -> None:
        if call.response is not None and call.outcome != "error":
            self.replies += 1
            self.clamped += bool(call.clamped)
            self.at_cap += call.at_cap
        if call.degenerate:
            self.degenerate += 1
            self.kinds[call.flaw] = self.kinds.get(call.flaw, 0) + 1
        if call.settles:
            self.questions += 1
            self.fallen_back += call.fell_back


class Tally:
    """Sums exchanges, round by round, into a :class:`PurposeQuality` per model and purpose."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], PurposeQuality] = {}

    def add(self, calls: Iterable[LLMCall]) -> Tally:
        for call in calls:
            key = (call.model, call.purpose)
            row = self._rows.get(key)
            if row is None:
                row = self._rows[key] = PurposeQuality(model=call.model, purpose=call.purpose)
            row.add(call)
        return self

    def rows(self) -> list[PurposeQuality]:
        """Every model's purposes, sorted."""
        return [self._rows[k] for k in sorted(self._rows)]


def quality_line(row: PurposeQuality) -> str:
    """One purpose's figures, those not nil: ``speak: 12 replies, 25% degenerate (echo 2,
    empty 1), 8% fell back`` (``…, all counted`` when none)."""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(row.kinds.items()))
    named = {
        "degenerate": "degenerate" + (f" ({kinds})" if kinds else ""),
        "clamped": "clamped",
        "at_cap": "at the caps",
        "fallen_back": "fell back",
    }
    parts = [f"{row.share(n):.0%} {label}" for n, label in named.items() if getattr(row, n)]
    return f"{row.purpose}: {row.replies} replies, " + (", ".join(parts) or "all counted")


def loud_lines(rows: Iterable[PurposeQuality]) -> list[str]:
    """One line per model with a purpose whose share passed its threshold: "openai/gemma:
    40% of utterances were degenerate (echo 3, copy 1); 60% of judgements at the caps — its
    social dynamics measure the model's limits, not the scenario"."""
    said: dict[str, list[str]] = {}
    for row in rows:
        if row.replies < LOUD_MIN_REPLIES:
            continue
        noun = NOUNS.get(row.purpose, f"{row.purpose} replies")
        parts = said.setdefault(row.model, [])
        if row.share("degenerate") > DEGENERATE_LOUD:
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(row.kinds.items()))
            parts.append(f"{row.share('degenerate'):.0%} of {noun} were degenerate ({kinds})")
        if row.share("at_cap") > AT_CAP_LOUD:
            parts.append(f"{row.share('at_cap'):.0%} of {noun} at the caps")
        if row.share("clamped") > CLAMPED_LOUD:
            parts.append(f"{row.share('clamped'):.0%} of {noun} clamped")
        if row.share("fallen_back") > FALLEN_BACK_LOUD:
            parts.append(f"{row.share('fallen_back'):.0%} of {noun} fell back")
    return [
        f"{model}: {'; '.join(parts)} — its social dynamics measure the model's limits, "
        "not the scenario"
        for model, parts in said.items()
        if parts
    ]


def badge(usage: RoundUsage) -> tuple[str, bool] | None:
    """The app header's reply-quality badge from a run's usage: ``⚑ 12% degenerate · 40% at
    the caps`` (shares of the calls), and whether a share passed its loud threshold (None
    when nothing was degenerate or at the caps)."""
    if not usage.calls or not (usage.degenerate or usage.at_cap):
        return None
    degenerate, at_cap = usage.degenerate / usage.calls, usage.at_cap / usage.calls
    parts = [f"{degenerate:.0%} degenerate"] * bool(usage.degenerate)
    parts += [f"{at_cap:.0%} at the caps"] * bool(usage.at_cap)
    return "⚑ " + " · ".join(parts), degenerate > DEGENERATE_LOUD or at_cap > AT_CAP_LOUD
