"""The offline answers of a task episode, by rule: who spoke, who was heard, who was trusted.

A listener's ranking moves only on facts someone voiced in a turn the listener observed
(public, or private to or from it): a holder that stays silent shares nothing. Each hearing
counts by the listener's credence in the speaker when it makes up its mind, read from the
run's relations (Sociodrama's R_ij): a stranger's word counts ``STRANGER``; every round in
which the listener registered an exchange with the speaker (a U_R update of that edge) makes
the speaker more familiar, up to full credence after ``FAMILIAR_AFTER``; favorability scales
it (x(1 + fav): an ally's word counts more, a rival's less, an enemy's at -1 nothing).
Hearings combine as independent sources, 1 - prod(1 - credence). The ablation updates no
relations, so nobody becomes familiar and every claim stays a stranger's.

The negotiation: the most active speaker proposes the package best for its weighting of the
tables (its own by archetype; another party's by its credence in it if it heard that party's
pitch, ``UNHEARD`` if not), and a voter accepts at its threshold less its goodwill toward the
proposer (``GOODWILL`` points per unit of favorability: allies concede, rivals ask for more).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ...core.rules import clip
from ...core.scenario import Archetype
from ...core.state import Action, Mode, RoundRecord
from ...round.simulation import Simulation
from .scoring import Agreement, Tiers, agreements, package_score, tiers_from_scores
from .spec import AGENTS, Task

#: Credence in a claim from someone the listener has registered no exchange with.
STRANGER = 0.5
#: Rounds of registered exchanges after which a speaker's word counts fully.
FAMILIAR_AFTER = 3
#: Weight of a party's table in the proposal when the proposer never heard its pitch.
UNHEARD = 0.3
#: Points of a voter's table it gives up (or asks for) per unit of favorability to the proposer.
GOODWILL = 10.0
#: How much a proposer weighs its own table against the others' (negotiation, offline).
SELF_WEIGHT = {
    Archetype.DOMINANT: 3.0,
    Archetype.BALANCED: 1.5,
    Archetype.ANALYTICAL: 1.2,
    Archetype.AGREEABLE: 0.8,
    Archetype.RESERVED: 1.2,
}


def observed(records: Sequence[RoundRecord], agent: str) -> list[Action]:
    """Every spoken turn ``agent`` observed, its own included, in speaking order."""
    return [
        a
        for record in records[1:]
        for a in sorted(record.actions, key=lambda a: a.order or 0)
        if a.mode is Mode.PUBLIC or (a.mode is Mode.PRIVATE and agent in (a.speaker, a.target))
    ]


def voiced(text: str, utterance: str) -> bool:
    """Whether ``utterance`` states ``text`` (case and a trailing stop ignored)."""
    return text.rstrip(". ").lower() in utterance.lower()


@dataclass(frozen=True)
class Trust:
    """How each agent regards each other at the end of a run: favorability, and the rounds
    in which it registered an exchange with them."""

    fav: dict[tuple[str, str], float]
    exchanges: Counter[tuple[str, str]]

    @classmethod
    def of(cls, sim: Simulation) -> Trust:
        """Read from the run's final relations and its records' relation changes."""
        fav = {
            (me, other): rel.fav
            for me, agent in sim.state.agents.items()
            for other, rel in agent.relations.items()
        }
        exchanges = Counter(
            (c.source, c.target) for record in sim.records for c in record.relation_changes
        )
        return cls(fav, exchanges)

    def credence(self, listener: str, speaker: str) -> float:
        """How much one hearing of ``speaker``'s claim counts for ``listener`` (0 to 1)."""
        if listener == speaker:
            return 1.0
        familiarity = min(1.0, self.exchanges[listener, speaker] / FAMILIAR_AFTER)
        regard = 1.0 + self.fav[listener, speaker]
        return clip((STRANGER + (1.0 - STRANGER) * familiarity) * regard, 0.0, 1.0)

    def goodwill(self, voter: str, proposer: str) -> float:
        """Points ``voter`` concedes to ``proposer`` (negative: asks for more)."""
        return 0.0 if voter == proposer else GOODWILL * self.fav[voter, proposer]


def fact_weights(task: Task, sim: Simulation | None, agent: str) -> dict[str, float]:
    """Item scores from the facts ``agent`` holds and, after a run, the facts it heard,
    each weighted by its combined credence in those who voiced it."""
    trust = Trust.of(sim) if sim else None
    heard = observed(sim.records, agent) if sim else []
    scores = dict.fromkeys(task.items, 0.0)
    for fact in task.facts:
        if task.knows(agent, fact):
            scores[fact.item] += fact.weight
            continue
        doubt = 1.0
        for a in heard:
            if trust and voiced(fact.text, a.utterance):
                doubt *= 1.0 - trust.credence(agent, a.speaker)
        scores[fact.item] += fact.weight * (1.0 - doubt)
    return scores


def ranking(task: Task, sim: Simulation | None, agent: str) -> Tiers:
    """``agent``'s ranking by :func:`fact_weights`, tied items in one tier."""
    return tiers_from_scores(task.items, fact_weights(task, sim, agent))


def heard_pitch(task: Task, sim: Simulation, listener: str, party: str) -> bool:
    """Whether ``listener`` observed ``party`` stating one of its pitch lines."""
    pitch = task.agents[party].pitch
    return any(
        a.speaker == party and any(voiced(p, a.utterance) for p in pitch)
        for a in observed(sim.records, listener)
    )


def proposer(sim: Simulation) -> str:
    """The most active public speaker (ties: the first agent)."""
    turns = Counter(
        a.speaker for record in sim.records[1:] for a in record.actions if a.mode is Mode.PUBLIC
    )
    return max(AGENTS, key=lambda n: turns[n])


def proposal(task: Task, sim: Simulation, by: str) -> Agreement:
    """The package best for ``by``'s weighting of the four tables."""
    trust = Trust.of(sim)
    tables = {n: [task.agents[n].scores[i.name] for i in task.issues] for n in AGENTS}

    def weight(party: str) -> float:
        if party == by:
            return SELF_WEIGHT[sim.scenario.agent(by).archetype]
        return trust.credence(by, party) if heard_pitch(task, sim, by, party) else UNHEARD

    weights = {n: weight(n) for n in AGENTS}
    return max(
        agreements(len(task.issues)),
        key=lambda a: sum(w * package_score(tables[n], a) for n, w in weights.items()),
    )


def accepts(task: Task, sim: Simulation, voter: str, by: str, package: Agreement) -> bool:
    """Whether ``package`` reaches ``voter``'s threshold less its goodwill toward ``by``."""
    table = task.agents[voter]
    points = package_score([table.scores[i.name] for i in task.issues], package)
    return points + Trust.of(sim).goodwill(voter, by) >= table.threshold
