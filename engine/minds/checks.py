"""Each purpose's checks beyond its schema, from what an agent's context knows: the prompt's
instructions, the lines heard this round and in the rounds it remembers, the speaker's own
lines of those rounds, the names of those present. The checks and their thresholds are
:mod:`engine.core.quality`'s, :mod:`engine.core.naming`'s and :mod:`engine.core.phrases`'; a
degenerate reply is asked again once, then falls back (``engine.llm.client``), so it never
reaches the transcript, a later prompt or a memory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.naming import name_prefix, only_names, self_named
from ..core.phrases import keeps_silent, phrase_flaw
from ..core.quality import Flaw, mended_line, recited, utterance_flaw
from ..core.scenario import Status
from ..core.state import Decision
from . import prompts
from .base import AgentContext

Check = Callable[[Any], Flaw | None]


@dataclass(frozen=True)
class SpeechCheck:
    """An utterance's check (its ``flaws``, a flawed line mended where it can be), and how a
    replay mends a line as its record did."""

    flaws: Callable[[str], Flaw | None]

    def __call__(self, text: str) -> Flaw | None:
        return mended_line(self.flaws(text), text, self)

    def as_recorded(self, text: str, kind: str) -> Flaw | None:
        """``text``'s flaw of ``kind`` as a record mended it (a replay): cut as it was then,
        whatever the checks of the part kept, or a check added since, find now."""
        return mended_line(Flaw(kind, f"{kind}, mended as recorded"), text, _passes)


def _passes(text: str) -> None:
    """Nothing wrong (the part a record kept)."""


def speech(ctx: AgentContext, decision: Decision, field: str | None = None) -> SpeechCheck:
    """An utterance's check: said, words, no debris, no echo of its prompt's instructions
    nor recital of its system text or of the events it was told (this round's, and those
    of the rounds it remembers), no copy of a line heard this round or in a round the agent
    remembers, nor of the speaker's own lines of those rounds, and not spoken to or of the
    speaker as another would."""
    instructions = prompts.speak_instructions(ctx, decision, field)
    events = [e.text for r in ctx.history for e in r.events] + [e.text for e in ctx.events]
    told = "\n".join([prompts.system(ctx), *events])
    me = ctx.name
    others = [a.utterance for a in ctx.heard if a.speaker != me and a.utterance]
    earlier = [
        a.utterance for r in ctx.history for a in r.actions if a.speaker != me and a.utterance
    ]
    own = [a.utterance for r in ctx.history for a in r.actions if a.speaker == me and a.utterance]
    last = own[-1] if own else None  # (the speaker's last line)
    names = ctx.scenario.names
    others_present = [n for n in names if n != me]
    role = ctx.persona.role  # (a name it goes by there is its own: "Ms. Osei to her students")

    def flaws(text: str) -> Flaw | None:
        flaw = utterance_flaw(text, instructions, others, last, earlier, own)
        flaw = flaw or recited(text, told)
        flaw = flaw or only_names(text, names) or name_prefix(text, others_present)
        return flaw or self_named(text, me, names, role)

    return SpeechCheck(flaws)


def _left_out(
    out: Any, field: str, description: str, names: Sequence[str], parts: str = ""
) -> Flaw | None:
    """The first flaw (:func:`~engine.core.phrases.phrase_flaw`, ``names``: those present)
    of ``out``'s optional ``field``, or of its ``parts``' (each part's ``field``), mended to
    ``out`` with each flawed one left out: a reply whose optional words are flawed again
    when asked again is kept without them, rather than falling back."""
    items = getattr(out, parts) if parts else [out]
    flaws = [phrase_flaw(getattr(item, field), field, description, names) for item in items]
    flaw = next((f for f in flaws if f is not None), None)
    if flaw is None:
        return None
    kept = [
        item if f is None else item.model_copy(update={field: ""})
        for item, f in zip(items, flaws, strict=True)
    ]
    mended = out.model_copy(update={parts: kept}) if parts else kept[0]
    return replace(flaw, mended=mended, mending=f"the {field} left out")


def decision(names: Sequence[str]) -> Check:
    """A decision's intent: words, not the schema's description nor only names of
    ``names``. The intent is optional (a small model copies "one sentence" and would
    otherwise stay silent). A decision to speak whose intent is, all of it, to keep silent
    contradicts itself, and is taken as silence, as its intent says: Gemma 3 270M chose a
    speaking mode for 10 of its 28 intents in saved runs that were "stay silent" or "stay
    quiet", 9 of them at urgency 0."""

    def check(out: Any) -> Flaw | None:
        return _left_out(out, "intent", prompts.DECIDE_RULES, names) or _contrary(out)

    return check


def plan(n: int, names: Sequence[str]) -> Check:
    """A plan's candidates' intents, optional as a decision's (Gemma 3 270M's planners
    wrote ``":{"`` and ``"}, ] }"`` as intents, and their plans fell back); a candidate
    that speaks meaning to keep silent is silent, as a decision is (19 of 284 plans in 67
    saved Gemma runs held one)."""
    rules = prompts.plan_rules(n)

    def check(out: Any) -> Flaw | None:
        return _left_out(out, "intent", rules, names, "candidates") or _contrary(out, "candidates")

    return check


def _contrary(out: Any, parts: str = "") -> Flaw | None:
    """The flaw of a decision (or of ``parts``: a plan's candidates) that speaks with an
    intent that is, all of it, to keep silent, mended to silence."""
    items = getattr(out, parts) if parts else [out]
    contrary = [c.action.mode != "silent" and keeps_silent(c.intent) for c in items]
    if not any(contrary):
        return None
    k = contrary.index(True)
    intent, mode = items[k].intent.strip()[:40], items[k].action.mode
    note = f"its intent {intent!r} keeps silent, but it speaks ({mode})"
    if parts:
        note = f"candidate {k + 1}: {note}"
    kept = [
        {**item.model_dump(), "action": {"mode": "silent"}} if wrong else item.model_dump()
        for item, wrong in zip(items, contrary, strict=True)
    ]
    silent = type(out).model_validate({**out.model_dump(), parts: kept} if parts else kept[0])
    return Flaw("contradicts", note, mended=silent, mending="kept silent, as its intent says")


#: The direction of a change of favorability each status goes against: a rival or an enemy
#: made while warming, an ally while cooling. App. B's consequential events that set a status
#: move favorability its way (a betrayal makes a rival, and hurts).
_AGAINST = {Status.RIVAL: 1, Status.ENEMY: 1, Status.ALLY: -1}


def _status_contrary(out: Any, parts: str = "") -> Flaw | None:
    """The flaw of an edge's judgement (or of ``parts``: each judgement's) whose status goes
    against its change of favorability, mended with that status left out (the thresholds
    set it then): Gemma 3 270M judged Kayla's ally Brooke "rival" with +0.3 (gossip), and
    she stood at +1.00, a rival; 10 of the 97 judgements with a status in the saved Gemma
    runs were so."""
    items = getattr(out, parts) if parts else [out]
    wrong = [_AGAINST.get(item.status, 0) * item.delta_fav > 0 for item in items]
    if not any(wrong):
        return None
    item = items[wrong.index(True)]
    note = (
        f"its status {item.status!s} goes against its change of favorability ({item.delta_fav:+g})"
    )
    if parts:
        note = f"the judgement of {item.target}: {note}"
    kept = [
        i.model_copy(update={"status": None}) if w else i for i, w in zip(items, wrong, strict=True)
    ]
    mended = out.model_copy(update={parts: kept}) if parts else kept[0]
    return Flaw("contradicts", note, mended=mended, mending="the status left out")


def relation(names: Sequence[str]) -> Check:
    """One edge's summary (the memory it becomes): words, not the schema's description nor
    only names of ``names``; optional, as a decision's intent. A status against the change
    is left out (:func:`_status_contrary`; after the summary's flaw, whose mend the records
    of earlier runs hold)."""
    return lambda out: (
        _left_out(out, "summary", prompts.RELATION_RULES, names) or _status_contrary(out)
    )


def judgements(names: Sequence[str]) -> Check:
    """A batched judgement's summaries (none, for an observer with no triggered edge),
    optional as a decision's intent (Gemma 3 270M, held to the edges' steps by a grammar,
    wrote ``":0, "`` as a summary, and its judgement fell back although its changes were
    on their scale); a status against its edge's change is left out
    (:func:`_status_contrary`; after the summaries' flaw, whose mend the records of earlier
    runs hold: a replay takes a record's mend as the checks make it now)."""

    def check(out: Any) -> Flaw | None:
        if not getattr(out, "judgements", None):
            return None
        summary = _left_out(out, "summary", prompts.OBSERVER_RULES, names, "judgements")
        return summary or _status_contrary(out, "judgements")

    return check
