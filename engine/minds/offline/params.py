"""The offline model's parameters: archetype tables and the strengths of its mechanisms."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...core.scenario import Archetype, Status
from ...core.state import Stance
from ..spec import DYNAMICS_VERSION

BASE_URGENCY = {
    Archetype.DOMINANT: 7.0,
    Archetype.ANALYTICAL: 5.0,
    Archetype.BALANCED: 5.0,
    Archetype.AGREEABLE: 4.2,
    Archetype.RESERVED: 2.6,
}
SILENCE_BELOW = 3.5
#: (aggression, warmth, thin skin, responsiveness to support) per archetype.
TEMPER = {
    Archetype.DOMINANT: (1.6, 0.6, 0.7, 0.7),
    Archetype.ANALYTICAL: (0.8, 0.7, 0.9, 0.8),
    Archetype.BALANCED: (1.0, 1.0, 1.0, 1.0),
    Archetype.AGREEABLE: (0.4, 1.5, 1.2, 1.3),
    Archetype.RESERVED: (0.5, 0.8, 1.4, 0.9),
}
FRIEND_AT = 0.25
FOE_AT = -0.2
NEGATIVE = (Status.RIVAL, Status.ENEMY)
#: Readiness to reach out to a rival or enemy, by archetype (peacemakers first).
PEACE = {
    Archetype.AGREEABLE: 1.0,
    Archetype.BALANCED: 0.8,
    Archetype.ANALYTICAL: 0.5,
    Archetype.RESERVED: 0.4,
    Archetype.DOMINANT: 0.3,
}
#: Option weight of reaching out to a rival at full readiness, calm, no hostility seen.
REPAIR_PULL = 3.0
#: Favorability gained on top of the act when a relation is reconciled, and the level a
#: reconciled relation rises to when the round's clip allows (above the rival threshold).
RECONCILE = 0.15
PEACE_AT = -0.05
#: Support from a rival makes peace when it lifts the relation above this favorability.
PEACE_FROM = -0.3
#: Aggression scales with last round's share of attacks: CALM_AGGRESSION + ESCALATION x
#: share (half in a calm room, two and a half times in one where everyone attacks).
ESCALATION = 2.0
CALM_AGGRESSION = 0.5
#: Heider: favorability change per unit of credence in a peer's stance on a third agent.
HEIDER = 0.08
#: Favorability lost toward an attacker per unit of favorability toward the one attacked.
FRIEND_HURT = 0.15
#: Heider in decisions: weight of joining a friend's attack or backing whom it backed.
HEIDER_PULL = 1.2
#: A rival's grudge fades by this much a round the rival does not attack (times the
#: archetype's PEACE and the calm of the room); once above the rival threshold it is settled.
FORGIVE = 0.25
#: In-group favoritism (Krackhardt & Stern): toward another faction's members attacks are
#: likelier (1 + OUTGROUP)x and reaching out rarer (1 - OUTGROUP)x.
OUTGROUP = 0.4
#: Regard gained by whoever tells me a factual claim (a scenario's evidence) I did not know.
INFORM = 0.05
FLIP: dict[Stance, Stance] = {"support": "oppose", "oppose": "support", "neutral": "neutral"}
SIGN = {"support": 1, "oppose": -1, "neutral": 0}

# -- the judge's mechanisms (judge.py) ------------------------------------------------------

#: Favorability toward whoever backed me (times my responsiveness, warmth toward them and
#: 1 - OUTGROUP toward another faction), and lost toward whoever attacked me (times my thin
#: skin, PUBLIC_STING in public, 1 - warmth and 1 + OUTGROUP toward another faction).
BACKED_ME = 0.13
ATTACKED_ME = 0.16
PUBLIC_STING = 1.2
#: Favorability toward whoever confided in me (a private turn) or spoke to me in public.
CONFIDED = 0.08
SPOKE_TO_ME = 0.02
#: Toward whoever backed my friend (times my warmth), sided with my foe, addressed the group
#: (times my warmth).
FRIEND_BACKED = 0.05
FOE_BACKED = 0.05
ADDRESSED_GROUP = 0.01
#: Favorability change from my own act toward the agent judged.
OWN_ACT: dict[Stance, float] = {"support": 0.03, "oppose": -0.03, "neutral": 0.0}
#: The memory importance (1-10) of what an edge's judgement notes, by mechanism.
IMPORTANCE = {
    "own act": 2,
    "peace": 8,
    "backed me": 5,
    "attacked me": 7,
    "betrayed": 9,
    "confided": 4,
    "spoke to me": 2,
    "attacked my friend": 4,
    "backed my friend": 3,
    "sided with my foe": 3,
    "pressed their case": 2,
    "addressed the group": 1,
    "informed me": 4,
    "believed": 3,
    "grudge faded": 6,
}
#: Needs moved by speaking (and by attacking), by keeping silent, by being attacked or backed
#: (times the speaker's weight, Trust priors), and support from being confided in or addressed.
SPEAKING_NEEDS = {"sense_of_control": 0.2, "passion_and_motivation": 0.15}
ATTACKING_NEEDS = {"sense_of_superiority": 0.3}
SILENT_NEEDS = {
    "passion_and_motivation": -0.15,
    "sense_of_control": -0.15,
    "group_acceptance": -0.1,
}
ATTACKED_NEEDS = {
    "psychological_safety": -0.4,
    "emotional_safety": -0.35,
    "sense_of_respect": -0.4,
    "self_worth": -0.25,
    "group_acceptance": -0.2,
    "psychological_resilience": -0.1,
}
BACKED_NEEDS = {
    "group_acceptance": 0.5,
    "support_system": 0.5,
    "sense_of_respect": 0.3,
    "self_worth": 0.3,
    "psychological_resilience": 0.1,
}
CONFIDED_SUPPORT, ADDRESSED_SUPPORT = 0.3, 0.1
#: Emotional safety lost per attack among others (by the credit given the attacker).
QUARREL_SAFETY = 0.1
#: Needs moved by the round's emotion change (stability by its size).
MOOD_WELLBEING, MOOD_STABILITY, MOOD_MEANING = 3.0, 2.0, 1.0
#: Each need recovers this share of its gap to expected, times resilience (0-1).
RECOVERY = 0.08
#: Emotion: per unit of an untoned event's salient sentiment; from my own act (less when I
#: attack); from being backed or attacked (times responsiveness or thin skin, PUBLIC_SHAME
#: in public); from overhearing an attack; and the pull back toward MOOD_REST.
OWN_ACT_MOOD = 0.01
DIRECT_MOOD = 0.08
PUBLIC_SHAME = 1.25
OVERHEARD_ATTACK = 0.01
MOOD_REST, MOOD_PULL = 0.5, 0.12
#: Emotion change from seeing a friend backed, attacked or addressed.
FRIEND_FEELING = {"support": 0.03, "oppose": -0.05, "neutral": 0.0}

# -- events, by their meaning (event_effects) -----------------------------------------
#: How a toned event moves the needs and emotion of the agents it is about.
TONE_NEEDS: dict[str, dict[str, float]] = {
    "supportive": {
        "psychological_safety": 0.6,
        "emotional_safety": 0.5,
        "group_acceptance": 0.5,
        "support_system": 0.7,
        "self_worth": 0.4,
        "sense_of_respect": 0.4,
    },
    "protective": {"psychological_safety": 0.8, "emotional_safety": 0.4},
    "punitive": {"sense_of_superiority": -0.6, "sense_of_control": -0.4, "sense_of_respect": -0.3},
    "hostile": {
        "psychological_safety": -0.6,
        "emotional_safety": -0.5,
        "group_acceptance": -0.5,
        "self_worth": -0.7,
        "sense_of_respect": -0.7,
    },
}
TONE_EMOTION = {"supportive": 0.08, "protective": 0.05, "punitive": -0.06, "hostile": -0.08}
#: Emotion change per unit of valence of an untoned event, for an agent it names or is about.
EVENT_MOOD = 0.04
#: Need changes per unit of valence of an untoned event, for an agent it names or is about.
VALENCE_NEEDS = {
    "psychological_safety": 0.5,
    "emotional_safety": 0.4,
    "group_acceptance": 0.4,
    "self_worth": 0.3,
    "sense_of_respect": 0.3,
    "support_system": 0.3,
}
#: The share of an untoned scripted event's weight for an agent it neither names nor is
#: about (the scenario's backdrop concerns everyone, each less than one that names them; an
#: injected event that names nobody is news for everyone, in full).
DIFFUSE = 0.3
#: The share of a toned event's weight for an agent it is not about.
BYSTANDER = 0.25
#: Favorability change toward whoever an event implicates, per unit of its valence (half
#: for an observer the event does not touch).
BLAME = 0.12
#: An event matters enough to speak about from this absolute valence.
SALIENT = 0.25
#: What an agent says about news that touches it, by the news's sign.
NEWS = {
    -1: ("{e}, and that changes everything for us", "{e}; we have to face that together"),
    1: ("{e}, and that gives us a way forward", "{e}, and that is good news for all of us"),
}
BLAMED = "{e}, and {x} has to answer for it"

# -- dynamics over long runs (issue 39): what pulls a state back ------------------------


@dataclass(frozen=True)
class Dynamics:
    """The strengths of the mechanisms that keep the state off its bounds over long runs.
    A run plays one version of them (:data:`DYNAMICS`, by the number its save records), so
    a run saved before a version existed replays as it was played. Each mechanism is off at
    its neutral value (0, or 1 for ``negativity`` and ``crowding``); version 1 has them all off.

    * ``adaptation``: hedonic adaptation. Emotion relaxes each round by this share of its
      gap to the persona's baseline (its starting S; ``rest`` instead, if set), divided by
      the archetype's thin skin when ``by_temper`` (a thin-skinned, neurotic persona returns
      more slowly). Frederick & Loewenstein (1999), "Hedonic adaptation"; the affective home
      base and attractor strength of Kuppens, Oravecz & Tuerlinckx (2010), "Feelings change",
      JPSP 99; slower recovery with neuroticism: Suls & Martin (2005), J. Pers. 73.
    * ``bound``, ``fav_bound``: a change shrinks as the state nears the bound it heads for:
      it is scaled by the room left over ``bound`` (emotion's 0-1 scale) or ``fav_bound``
      (favorability's -1 to 1), at most 1 (1 away from the bounds, 0 at the bound): the
      multiplicative soft bound of van Rossum, Bi & Turrigiano (2000), J. Neurosci. 20.
      ``need_bound`` does the same for a round's need changes on their 0-10 scale, before
      they recover toward their level (without it, 14.5% of the library's agents' needs sat
      within 0.2 of a bound in rounds 20-60: an agent who speaks every round held its sense
      of control at 10).
    * ``inertia``: an established tie moves less, either way: a favorability change is
      divided by 1 + inertia x |fav| (commitment makes a tie resist change: Rusbult's
      investment model, 1980, JESP 16).
    * ``negativity``: a net loss of favorability weighs this many times a gain (negativity
      bias: Baumeister, Bratslavsky, Finkenauer & Vohs 2001, "Bad is stronger than good";
      Rozin & Royzman 2001).
    * ``fading``: memories fade: each time an edge is judged its favorability moves this
      share of the way back to the scenario's starting favorability, so an old slight (or
      favour) weighs less than a new one (the decay of ties: Burt 2000, "Decay functions",
      Social Networks 22; Ebbinghaus's forgetting curve).
    * ``persistence``: unrepaired conflict persists (the residues of escalation in Pruitt
      & Kim 2004, Social Conflict, as the Sociodrama paper cites them): on a rival or
      enemy edge above :data:`GRUDGE` a memory fades up toward a higher start at
      1 - persistence of the rate (below it, its extremity fades at the full rate), and
      a grudge does not fade (FORGIVE) while I keep attacking its object myself.
    * ``distrust``: the same residues' distrust of the other's moves: a foe's backing and
      a grudge's forgiving are scaled by 1 - distrust x (1 - PEACE) (peacemakers take an
      overture, dominant agents discount it).
    * ``variability``: affect varies from round to round around its course: a seeded
      normal draw of this standard deviation is added to each agent's U_S each round (the
      affective variability of Kuppens, Oravecz & Tuerlinckx 2010's DynAffect, beside its
      home base and attractor strength above).
    * ``variety``: speech: each round an agent voices its point through a different one of
      its archetype's phrasings and openings (rotated by round), so a long run does not
      repeat one line; person agreement also reads "told her he" as an object.
    * ``temperament``: set points differ by temperament: the emotion baseline's log-odds
      are moved by temperament x (1 - thin skin) of the archetype (a thick-skinned,
      emotionally stable persona sits higher, a neurotic one lower; on the log-odds so a
      baseline near a bound moves less). Costa & McCrae (1980), "Influence of extraversion
      and neuroticism on subjective well-being", JPSP 38; Diener, Lucas & Scollon (2006),
      "Beyond the hedonic treadmill", Am. Psychol. 61 (set points are not neutral and
      differ by temperament).
    * ``chronic_needs``: a need recovers toward the persona's chronic level (its starting
      value) rather than to what it expects, so an unmet need stays unmet until something
      changes it, and what changed it lasts: the set-point model for domain satisfactions
      (Diener, Lucas & Scollon 2006); need frustration as a lasting state (Vansteenkiste &
      Ryan 2013, J. Psychother. Integr. 23).
    * ``bounded_variability``: the round's affective variability is part of the change the
      soft ``bound`` shrinks (the draw is on the latent scale: near a bound, affect varies
      less), so variability does not push a low mood onto the floor (Kuppens, Oravecz &
      Tuerlinckx 2010 model affect on an unbounded latent scale).
    * ``attention``, ``crowding``: a crowd weighs less than the sum of its voices. The acts
      of others that move an agent's emotion in a round, those overheard among others
      that cost it emotional safety, and those aimed at it that move its needs each count
      in full up to ``attention`` of them; beyond, their sum grows as the count to the power
      ``crowding``: each of n weighs attention x (n / attention)**crowding / n. The
      psychosocial law of Latané (1981), "The psychology of social impact", Am. Psychol.
      36 (impact grows as a power below 1 of the number of sources); four in full as a
      conversation holds about four speakers (Dunbar, Duncan & Nettle 1995, "Size and
      structure of freely forming conversational groups", Hum. Nat. 6), the papers' casts
      of at most five. Without it an agent of a 100-agent cast hears some 80 acts a round
      and its emotion sits at a bound from round 5.
    * ``grammar``: speech: voicing reads the cast's genders and a subject's later verbs
      (:class:`.voice.Cast`): "I co-signed the mortgage and am liable", not "and is"; a
      narration's pronoun of someone else named ("When Ethan was seven he had ...") stays
      theirs; a supporter argues no point said in another's first person ("your father
      and I"), and no line says its closing twice. Version 5 changes nothing else: its
      states are version 4's (all 26 library scenarios, 60 rounds).
    """

    version: int
    adaptation: float = MOOD_PULL
    rest: float | None = MOOD_REST
    by_temper: bool = False
    bound: float = 0.0
    fav_bound: float = 0.0
    inertia: float = 0.0
    negativity: float = 1.0
    fading: float = 0.0
    persistence: float = 0.0
    distrust: float = 0.0
    variability: float = 0.0
    variety: bool = False
    temperament: float = 0.0
    chronic_needs: bool = False
    bounded_variability: bool = False
    attention: int = 0
    crowding: float = 1.0
    need_bound: float = 0.0
    grammar: bool = False


#: The favorability an unrepaired grudge fades to (below ENEMY_AT's -0.5 stays enemy).
GRUDGE = -0.5

#: Every version of the dynamics a run can play, by number; the newest plays new runs.
_V2 = Dynamics(
    2,
    adaptation=0.45,
    rest=None,
    by_temper=True,
    bound=0.3,
    fav_bound=0.5,
    inertia=0.5,
    negativity=1.5,
    fading=0.06,
    persistence=0.8,
    distrust=1.0,
    variability=0.08,
    variety=True,
)
_V3 = replace(_V2, version=3, temperament=2.2, chronic_needs=True, bounded_variability=True)
DYNAMICS = {
    1: Dynamics(1),
    2: _V2,
    3: _V3,
    4: replace(_V3, version=4, attention=4, crowding=0.5, need_bound=2.0),
}
DYNAMICS[5] = replace(DYNAMICS[4], version=5, grammar=True)
#: The dynamics new runs play.
CURRENT = DYNAMICS[DYNAMICS_VERSION]
