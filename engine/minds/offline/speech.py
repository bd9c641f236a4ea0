"""Offline utterances: the agent's talking points and evidence in its archetype's voice,
voiced from the speaker to its addressee (:mod:`.voice`), never said twice word for word
while the agent remembers saying it."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from operator import attrgetter

from ...core.scenario import AgentSpec, Archetype, Scenario
from ...core.state import ALL, Action, Decision, Mode, Stance
from ..base import AgentContext
from .event_effects import topic
from .per_scenario import per_scenario
from .voice import Cast, inside, voiced

#: Chance that a speaker with unshared evidence (task facts) voices it rather than a
#: talking point: analysts pool information, dominant and agreeable agents echo the
#: common view (Sociodrama Sec. 1: information holders stay silent, dominant voices anchor).
SHARES_EVIDENCE = {
    Archetype.ANALYTICAL: 0.9,
    Archetype.BALANCED: 0.5,
    Archetype.RESERVED: 0.6,
    Archetype.AGREEABLE: 0.15,
    Archetype.DOMINANT: 0.1,
}

#: Each archetype's ways of saying a point, by stance. A supporter argues the case of the
#: one it supports ({p} is the target's point); these presume the target has spoken.
TEMPLATES: dict[Archetype, dict[Stance, tuple[str, ...]]] = {
    Archetype.DOMINANT: {
        "support": (
            "{t} is right, and I'll back that all the way: {p}.",
            "Listen to {t}. {P}, and that settles it.",
        ),
        "oppose": (
            "{t}, that is simply wrong. {P}, and everyone here knows it.",
            "No, {t}. {P}, and nothing you say changes that.",
        ),
        "neutral": ("Let me be clear: {p}. We settle this now.", "Here it is, plainly: {p}."),
    },
    Archetype.ANALYTICAL: {
        "support": (
            "{t}'s point holds up. Look at it closely: {p}.",
            "The evidence is on {t}'s side: {p}.",
        ),
        "oppose": (
            "{t}, the facts don't support you. Consider this: {p}.",
            "{t}, that doesn't follow. {P}.",
        ),
        "neutral": ("Let's look at what we actually know: {p}.", "One thing we should weigh: {p}."),
    },
    Archetype.AGREEABLE: {
        "support": (
            "I'm with {t} on this. {P}, and that helps all of us.",
            "I think {t} has it right: {p}.",
        ),
        "oppose": (
            "{t}, I understand where you're coming from, but I can't agree. {P}.",
            "I'm sorry, {t}, I see it another way. {P}.",
        ),
        "neutral": (
            "Maybe we can find common ground here: {p}.",
            "Could we all keep this in mind: {p}?",
        ),
    },
    Archetype.RESERVED: {
        "support": ("...I agree with {t}. {P}.", "...{t} is right, I think. {P}."),
        "oppose": (
            "I don't think that's fair, {t}. {P}.",
            "...I can't go along with that, {t}. {P}.",
        ),
        "neutral": ("If I may... {p}.", "...Just one thing: {p}."),
    },
    Archetype.BALANCED: {
        "support": ("{t} makes a fair point, and {p}.", "I'd back {t} here: {p}."),
        "oppose": ("{t}, I see it differently: {p}.", "I hear you, {t}, but {p}."),
        "neutral": ("Here is where I stand: {p}.", "For what it's worth, {p}."),
    },
}
#: Backing or challenging someone who has not spoken yet (nothing of theirs to agree with).
UNHEARD: dict[Archetype, dict[Stance, tuple[str, ...]]] = {
    Archetype.DOMINANT: {
        "support": (
            "I'm standing with {t}, and so should all of you: {p}.",
            "Everyone, back {t} on this: {p}.",
        ),
        "oppose": ("{t}, before you start: {p}.", "Let me stop you before you begin, {t}: {p}."),
    },
    Archetype.ANALYTICAL: {
        "support": ("{t}'s position deserves a hearing: {p}.", "Consider {t}'s side of it: {p}."),
        "oppose": (
            "{t}, here is what you will have to answer: {p}.",
            "{t}, the record is against you: {p}.",
        ),
    },
    Archetype.AGREEABLE: {
        "support": (
            "I'd like to stand up for {t}: {p}.",
            "We should all look after {t} here: {p}.",
        ),
        "oppose": ("{t}, I hope you'll hear me out. {P}.", "{t}, please think about this: {p}."),
    },
    Archetype.RESERVED: {
        "support": (
            "...I think {t} deserves support. {P}.",
            "...someone should stand by {t}. {P}.",
        ),
        "oppose": ("...{t}, I'm worried about this. {P}.", "...{t}, please don't. {P}."),
    },
    Archetype.BALANCED: {
        "support": ("{t} has my backing here: {p}.", "I'll stand with {t} on this: {p}."),
        "oppose": (
            "I'll put it to you straight, {t}: {p}.",
            "{t}, hear this before you speak: {p}.",
        ),
    },
}
#: Backing someone without a point of theirs to argue (none heard, no fact to add).
BACKING: dict[Archetype, tuple[str, ...]] = {
    Archetype.DOMINANT: (
        "I'm standing with {t}, and so should all of you.",
        "{t} has my full backing, and that's final.",
    ),
    Archetype.ANALYTICAL: (
        "{t}'s position deserves a fair hearing.",
        "I'd like to hear {t} out before anyone decides.",
    ),
    Archetype.AGREEABLE: (
        "I'd like to stand up for {t} here.",
        "We should all look after {t} in this.",
    ),
    Archetype.RESERVED: ("...I think {t} deserves support.", "...someone should stand by {t}."),
    Archetype.BALANCED: ("{t} has my backing here.", "I'll stand with {t} on this."),
}
CONFIDE = (
    "Between you and me, {t}: {p}.",
    "{t}, keep this to yourself: {p}.",
)
#: A confidence once every secret is told: referred to, not told again.
TOLD = (
    "You remember what I told you, {t}. It still stands.",
    "{t}, what I told you in confidence has not changed.",
)
UNTOLD = (
    "{t}, there is more to this than I can say in front of everyone.",
    "Between you and me, {t}: I am keeping some things back for now.",
)
#: Each archetype's openings and closings, which the offline dynamics from version 2 rotate
#: with the phrasings round by round (:meth:`_Speech.phrasings`): 48 ways of putting one
#: point, so a long run does not repeat a line.
OPENERS: dict[Archetype, tuple[str, ...]] = {
    Archetype.DOMINANT: (
        "",
        "Look, ",
        "Enough. ",
        "Mark my words: ",
        "Let's be honest. ",
        "Right. ",
    ),
    Archetype.ANALYTICAL: (
        "",
        "Logically, ",
        "To be precise, ",
        "On reflection, ",
        "Note this. ",
        "So, ",
    ),
    Archetype.AGREEABLE: ("", "Honestly, ", "Please, ", "You know, ", "If it helps, ", "Friends, "),
    Archetype.RESERVED: ("", "Um, ", "Sorry, ", "Well, ", "I mean, ", "Okay, "),
    Archetype.BALANCED: ("", "Fair enough. ", "Still, ", "Frankly, ", "As I see it, ", "So, "),
}
CLOSERS: dict[Archetype, tuple[str, ...]] = {
    Archetype.DOMINANT: ("", " That's final.", " Remember that.", " I won't say it twice."),
    Archetype.ANALYTICAL: (
        "",
        " The record shows it.",
        " Think it through.",
        " That much is clear.",
    ),
    Archetype.AGREEABLE: ("", " I hope that helps.", " We're in this together.", " Thank you."),
    Archetype.RESERVED: ("", " ...That's all.", " ...Sorry.", " ...I just wanted to say it."),
    Archetype.BALANCED: ("", " That's my view.", " Let's keep going.", " Fair's fair."),
}
#: Said before a point the speaker said in the same words lately (the last resort).
AGAIN = (
    "I'll say it again: ",
    "Once more, then: ",
    "Let me repeat myself: ",
    "For the last time: ",
)


class Heard:
    """The acts an agent heard, by speaker: each earlier round it remembers (``past``: the
    round's acts as it saw them, by speaker) and this round's so far (``now``)."""

    __slots__ = ("_now", "_past")

    def __init__(self, past: Sequence[dict[str, list[Action]]], now: Sequence[Action]) -> None:
        self._past, self._now = past, now

    def spoke(self, name: str) -> bool:
        """Whether the agent heard ``name`` speak."""
        return any(name in by for by in self._past) or name in map(attrgetter("speaker"), self._now)

    def earlier(self, name: str) -> list[Action]:
        """``name``'s acts the agent heard in the earlier rounds, in order."""
        return [a for by in self._past for a in by.get(name, ())]

    def acts_of(self, name: str) -> list[Action]:
        """``name``'s acts the agent heard, earlier rounds first."""
        return self.earlier(name) + [a for a in self._now if a.speaker == name]


def utterance(
    ctx: AgentContext,
    decision: Decision,
    rng: random.Random,
    said: str,
    heard: Heard,
    variety: bool = False,
    cast: Cast | None = None,
) -> str:
    """What the agent says: a confidence in private, else a point in its archetype's voice,
    prefixed by a retort to whoever attacked it this round and by news that touches it (an
    injected event it has not spoken of, :func:`.event_effects.topic`) when the point is
    not that news. ``said``: everything the agent itself said earlier, lower case, to
    avoid repeating a point or an utterance; ``heard``: the acts it heard. ``variety``:
    phrasings and openings rotate by round, and voicing is strict (the dynamics from
    version 2, :class:`~.params.Dynamics`); ``cast``: the fuller grammar of the voicing
    (from version 5, :func:`.voice.voiced`)."""
    target = decision.target if decision.target not in (None, ALL) else None
    t = target or "everyone"
    speech = _Speech(ctx, rng, said, variety, cast)
    if decision.mode is Mode.PRIVATE and decision.stance == "neutral":
        options = speech.confidences(t, heard)
    else:
        options = speech.arguments(decision.stance, target, heard)
    jab = _last_attack(ctx.heard, ctx.name, target) if decision.mode is Mode.PUBLIC else None
    prefix = f"({jab}, I heard that.) " if jab else ""
    news = speech.topic()
    if news:
        options = list(options)
        if not any(plain(news) in o.lower() for o in options):  # news comes first
            prefix += news[:1].upper() + news[1:] + ". "
    texts = (prefix + o for o in options)  # made only until one was not said lately
    first = next(texts)
    if first.lower() not in said:
        return first
    return next((x for x in texts if x.lower() not in said), None) or next(
        (a + first for a in AGAIN if (a + first).lower() not in said), AGAIN[0] + first
    )


def _last_attack(heard: Sequence[Action], me: str, target: str | None) -> str | None:
    """Who made the last act in ``heard`` against ``me`` (not ``target``): the acts aimed at
    me found newest first by ``list.index`` over their targets (C loops; a thousand agents
    hear hundreds of acts each, few of them aimed at one agent)."""
    targets = list(map(attrgetter("target"), reversed(heard)))
    at = 0
    while True:
        try:
            at = targets.index(me, at)
        except ValueError:
            return None
        act = heard[len(heard) - 1 - at]
        if act.stance == "oppose" and act.speaker != target:
            return act.speaker
        at += 1


def plain(text: str) -> str:
    """A point as utterances are searched for it: lower case, no trailing stop."""
    return text.rstrip(". ").lower()


class _Speech:
    """What one agent can say this round: its context, the round's draws, what it said
    lately (lower case) and whether phrasings rotate and voicing is strict (``variety``)."""

    def __init__(
        self, ctx: AgentContext, rng: random.Random, said: str, variety: bool, cast: Cast | None
    ) -> None:
        self.ctx, self.rng, self.said, self.variety, self.cast = ctx, rng, said, variety, cast
        self._topic: tuple[str | None] | None = None

    def topic(self) -> str | None:
        """The news the agent speaks of (:func:`.event_effects.topic`), read once."""
        if self._topic is None:
            self._topic = (topic(self.ctx, self.said),)
        return self._topic[0]

    def voiced(self, text: str, to: str | None = None, *, about_speaker: bool = False) -> str:
        return voiced(
            text,
            self.ctx.name,
            to,
            about_speaker=about_speaker,
            strict=self.variety,
            cast=self.cast,
        )

    def phrasings(self, variants: Sequence[str]) -> list[str]:
        """The variants in the order tried: shuffled by the round's draw; with ``variety``
        each with each of the archetype's openings and closings, in an order fixed for the
        agent and set: :data:`TRIED` of them, from a step further each round (a long run
        cycles through them all)."""
        if not self.variety:
            return _shuffled(self.rng, variants)
        ctx = self.ctx
        combos = _combos(ctx.name, ctx.persona.archetype, tuple(variants), self.cast is not None)
        k = ctx.round % len(combos)
        return [combos[(k + step) % len(combos)] for step in range(TRIED)]

    def confidences(self, t: str, heard: Heard) -> Iterable[str]:
        """A secret not yet told (in the agent's memory, to anyone), in its own voice, else
        a reference to what was told (``heard``: its earlier rounds by speaker)."""
        ctx, rng = self.ctx, self.rng
        me, persona = ctx.name, ctx.persona
        mine = [a for a in heard.earlier(me) if a.order]

        def tells(secret: str, to: str | None) -> str:
            """The secret as the agent tells it to ``to`` (a fact is quoted as it is)."""
            if secret in persona.evidence:
                return secret
            return inside(self.voiced(secret, to, about_speaker=True))

        secrets = [*persona.private_info, *persona.evidence]
        fresh = [
            tells(s, t).rstrip(". ")
            for s in secrets
            if not any(plain(tells(s, a.target)) in a.utterance.lower() for a in mine)
        ]
        if fresh:
            return _fill(self.phrasings(CONFIDE), _shuffled(rng, fresh), t)
        if secrets:
            confided = any(a.target == t and a.mode is Mode.PRIVATE for a in mine)
            return [v.format(t=t) for v in self.phrasings(TOLD if confided else UNTOLD)]
        return _fill(self.phrasings(CONFIDE), self.own_points(t), t)

    def arguments(self, stance: Stance, target: str | None, heard: Heard) -> Iterable[str]:
        """A point for or against the target in the agent's voice, agreeing only with
        someone it heard speak. A supporter argues the target's case as it heard it (or
        adds a fact of its own); with neither, it backs the target without a point."""
        ctx = self.ctx
        t, arch = target or "everyone", ctx.persona.archetype
        spoke = target is None or heard.spoke(target)
        variants = (
            TEMPLATES[arch][stance] if spoke or stance == "neutral" else UNHEARD[arch][stance]
        )
        if stance != "support" or target is None:
            return _fill(self.phrasings(variants), self.own_points(target), t)
        facts = self.facts()
        case = self.heard_case(target, heard)
        if not facts and not case:
            return [v.format(t=t) for v in self.phrasings(BACKING[arch])]
        points = facts + (_fresh_first(self.rng, case, self.said) if case else [])
        return _fill(self.phrasings(variants), points, t)

    def heard_case(self, name: str, heard: Heard) -> list[str]:
        """The talking points the agent heard ``name`` make, as the agent says them."""
        ctx = self.ctx
        spec = _personas(ctx.scenario).get(name)
        if spec is None:
            return []
        said = [(a.speaker, _addressee(a), a.utterance.lower()) for a in heard.acts_of(name)]
        strict, cast = self.variety, self.cast
        return [
            inside(self.voiced(p)).rstrip(". ")
            for p in spec.talking_points
            if any(_as_said(p, speaker, to, strict, cast) in text for speaker, to, text in said)
            and not (cast and _PERSONAL.search(p))
        ]

    def facts(self) -> list[str]:
        """An unsaid fact of the agent's (its evidence, quoted as it is), if its archetype
        shares one now."""
        ctx, rng = self.ctx, self.rng
        fresh = [e.rstrip(". ") for e in ctx.persona.evidence if plain(e) not in self.said]
        if fresh and rng.random() < SHARES_EVIDENCE[ctx.persona.archetype]:
            return [rng.choice(fresh)]
        return []

    def own_points(self, addressee: str | None) -> list[str]:
        """The agent's points, voiced to the addressee: news that touches it first, then
        an unsaid fact as its archetype shares it, then unsaid talking points."""
        ctx = self.ctx
        persona = ctx.persona
        given = tuple(persona.talking_points)
        named = addressee if addressee and any(addressee in p for p in given) else None
        points = _points(given, ctx.name, named, self.variety, self.cast)
        fallback = (
            self.voiced(persona.goal).rstrip(".")
            or f"as the {persona.role}, I have a stake in how this ends"
        )
        news = self.topic()
        first = ([news] if news else []) + self.facts()
        rest = _fresh_first(self.rng, points, self.said) if points else []
        evidence = [e.rstrip(". ") for e in persona.evidence]
        return list(dict.fromkeys([*first, *rest, fallback, *evidence]))


#: A point in its speaker's first or second person ("your father and I gave up everything"),
#: which nobody else can argue in its words (the dynamics from version 5).
_PERSONAL = re.compile(r"(?i)\b(?:i|me|my|mine|myself|we|us|our|ours|you|your|yours)\b")


@per_scenario
def cast_of(scenario: Scenario) -> Cast:
    """The genders the scenario's private information narrates its personas in."""
    return Cast.of((a.name, a.private_info) for a in scenario.agents)


@per_scenario
def _personas(scenario: Scenario) -> dict[str, AgentSpec]:
    """The scenario's agents by name (a supporter looks up the one it backs)."""
    return {a.name: a for a in scenario.agents}


#: How many of an agent's rotated phrasings are tried, from this round's on (the rest wait
#: for later rounds; an utterance said within the agent's memory is skipped).
TRIED = 4


@lru_cache(maxsize=1 << 12)
def _points(
    points: tuple[str, ...], me: str, to: str | None, strict: bool, cast: Cast | None = None
) -> tuple[str, ...]:
    """Talking points as ``me`` says them to ``to`` inside a sentence, without a closing
    stop (kept for the last 4,096: an agent voices its points round after round; ``to``
    None where the points do not name the addressee, as :func:`.voice.voiced` ignores
    it then)."""
    return tuple(inside(voiced(p, me, to, strict=strict, cast=cast)).rstrip(". ") for p in points)


@lru_cache(maxsize=1 << 12)
def _combos(
    name: str, arch: Archetype, variants: tuple[str, ...], grammar: bool = False
) -> tuple[str, ...]:
    """Every opening x variant x closing of the archetype, in an order fixed for the agent
    and the variants; with ``grammar`` (the dynamics from version 5) none that says its
    closing twice ("…, and that's final. That's final.", "Sorry, … …Sorry.") or opens a
    line of a colon with another ("Mark my words: Helena, keep this to yourself: …")."""
    combos = [
        _opened(o, v) + c
        for o in OPENERS[arch]
        for v in variants
        for c in CLOSERS[arch]
        if not grammar or _reads_well(o, v, c)
    ]
    random.Random("|".join((name, *variants))).shuffle(combos)
    return tuple(combos)


def _reads_well(opener: str, variant: str, closer: str) -> bool:
    """Whether an opening, a variant and a closing make a line without saying a thing twice
    or a colon after a colon."""
    said = closer.strip(" .").lower()
    twice = bool(said) and said in (opener + variant).lower()  # "Sorry, … …Sorry."
    return not twice and not (opener.endswith(": ") and ":" in variant)


def _opened(opener: str, variant: str) -> str:
    """``variant`` after ``opener``: after a comma its first word loses its capital unless
    it is "I" or a placeholder."""
    if not opener.endswith(", ") or not variant[:1].isupper() or variant.startswith(("I ", "I'")):
        return opener + variant
    return opener + variant[:1].lower() + variant[1:]


def _fill(variants: Sequence[str], points: Sequence[str], t: str) -> Iterator[str]:
    """Every variant with every point, the first point first (each made when it is read:
    an utterance reads them only until one was not said lately)."""
    return (v.format(t=t, p=p, P=p[:1].upper() + p[1:]) for p in points for v in variants)


def _addressee(act: Action) -> str | None:
    return act.target if act.target not in (None, ALL) else None


def _as_said(
    point: str, speaker: str, to: str | None, strict: bool = False, cast: Cast | None = None
) -> str:
    """``point`` as ``speaker`` says it to ``to``, as utterances are searched for it."""
    return plain(inside(voiced(point, speaker, to, strict=strict, cast=cast)))


def _fresh_first(rng: random.Random, points: Sequence[str], said: str) -> list[str]:
    """A random one of the points not yet said (any if all were), then the others."""
    fresh = [p for p in points if plain(p) not in said]
    pick = rng.choice(fresh or points)
    return [pick, *[p for p in points if p != pick]]


def _shuffled(rng: random.Random, items: Sequence[str]) -> list[str]:
    out = list(items)
    rng.shuffle(out)
    return out
