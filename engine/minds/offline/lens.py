"""Relational priors as the offline model reads them, one channel per relation type."""

from __future__ import annotations

from dataclasses import dataclass, field

from .params import FOE_AT, FRIEND_AT

#: Relational priors, read by relation type (see :class:`PriorLens`). Attitude, warmth
#: toward the peer: extra weight to back (s = +1) or challenge (s = -1) it, and its support
#: counts (1 + ATTITUDE_LENS s)x, its attacks (1 - ATTITUDE_LENS s)x when it is judged.
ATTITUDE_WARMTH = 0.8
ATTITUDE_LENS = 0.5
#: Trust, weight of the peer's claims: its acts move my emotion and needs (1 + TRUST_WEIGHT s)x,
#: and its stance on a third agent moves my view of that agent as a friend's (or foe's) of
#: favorability TRUST_WEIGHT s would, on top of my own feelings toward the peer.
TRUST_WEIGHT = 0.6
#: Influence, pull toward the peer's proposals: the weight of an option that follows its
#: last act (s = +1: same stance and target) or counters it (s = -1: the opposite stance).
INFLUENCE_PULL = 1.5


@dataclass(frozen=True)
class PriorLens:
    """An agent's relational prior as the offline model reads it: the sign stated toward
    each peer, in the channel of the prior's relation type (the other two empty; unstated
    pairs and Explicit-Neutral edges read as 0)."""

    #: Warmth toward the peer (Attitude priors).
    attitude: dict[str, int] = field(default_factory=dict)
    #: Credit given to the peer's words (Trust priors).
    trust: dict[str, int] = field(default_factory=dict)
    #: Pull toward the peer's proposals (Influence priors).
    influence: dict[str, int] = field(default_factory=dict)

    def weight(self, peer: str) -> float:
        """How much ``peer``'s acts move my emotion and needs (1 without a Trust prior)."""
        return 1.0 + TRUST_WEIGHT * self.trust.get(peer, 0) if self.trust else 1.0

    def credence(self, peer: str, fav: float) -> float:
        """How far ``peer``'s stance on a third agent moves my view of that agent: my
        friendship (or enmity) toward ``peer``, plus the trust the prior states (Heider)."""
        held = fav if fav >= FRIEND_AT or fav <= FOE_AT else 0.0
        return held + TRUST_WEIGHT * self.trust.get(peer, 0) if self.trust else held


NO_LENS = PriorLens()
