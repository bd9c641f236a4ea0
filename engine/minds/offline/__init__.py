"""The offline rule-based social model: deterministic from the run seed, no network.

Dynamics by design: support warms the target toward the speaker and lifts its emotion,
attacks cool both, returned support is likely (reciprocity), dominant agents speak more and
earlier, reserved agents less and withdraw when hurt. Sociodrama Sec. 5's patterns come
from mechanisms in the decisions and judgements, not from the starting relations:

* Structural balance (Heider): agents resolve unbalanced triads. Attacking my friend cools
  me toward the attacker; a friend's (or a trusted peer's) stance on a third agent moves my
  view of that agent the same way (my friend's enemy becomes mine, its friend warms me, my
  foe's enemy warms me), and I lean to join my friends' attacks and back whom they back.
* Repair: relations that turned rival or enemy get mended. Agents reach out to rivals, the
  peacemaking archetypes (agreeable, balanced) most, a calm agent more than an upset one;
  backing a rival, or being backed by one, makes peace (status neutral, favorability lifted
  above the rival threshold) unless the rival struck back that round, and a grudge the
  rival does not renew fades round by round until it is settled.
* Escalation: the hostility an agent saw last round (the share of attacks among the acts
  it observed; in the judges, this round's) scales its aggression up from half and its
  readiness to reach out and to forgive down, so conflict feeds on itself where it is high
  and repair prevails where it is low. Rivals in another faction are attacked more readily
  and reached out to less (in-group favoritism, Krackhardt & Stern).

A relational prior (Relational priors Sec. 3) is a fixed prompt layer, never a relation
state: the model reads each stated sign s in {-1, 0, +1} through the relation type's own
channel (:class:`PriorLens`): Attitude is warmth toward the peer (how it is treated and
judged), Trust the weight of the peer's words (on emotion, needs and views of third
agents), Influence the pull toward the peer's last act (followed or countered). Explicit-
Neutral states every edge with s = 0, which carries no direction to act on, so offline it
plays exactly as No-Prior; only the prompt an LLM sees differs.

Layout: :mod:`.params` (archetype tables, mechanism strengths), :mod:`.lens` (priors),
:mod:`.choose` (decisions), :mod:`.speech` (utterances), :mod:`.judge` (U_S, U_R, needs),
:mod:`.mind` (the :class:`OfflineMind` that ties them to the run).
"""

from .mind import LABEL, OfflineMind

__all__ = ["LABEL", "OfflineMind"]
