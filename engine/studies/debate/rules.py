"""The offline rule model of a debate: seeded, deterministic from ``seed``, no network.

Each agent has a skill, each question a difficulty and one popular distractor, so agents
start right with probability ~0.55 and are wrong together often enough to form wrong
majorities. In a revision an agent moves to the answer held by more of the others than its
own with a conformity probability that grows with the sign of its relations to those agents
(``BASE_CONFORMITY`` with no prior, a hair below it for Explicit-Neutral, up to
``+SLOPE[relation]`` for all-positive and down to ``-SLOPE`` for all-negative edges). Being
right makes an agent somewhat harder to move and a right majority somewhat more persuasive,
so positivity raises convergence (CR) much more than correctness (CCR), the pattern
Relational priors reports.

Every draw has its own generator keyed by seed, question, round, agent position and purpose,
so each answer depends only on the previous round's answers: the debate asks it of the mind
one agent and round at a time.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from ...core.priors import Prior
from .questions import DebateQuestion

#: Per-agent skill range (probability of a right independent answer before difficulty).
SKILL_RANGE = (0.45, 0.65)
#: Spread of the per-question difficulty (shared by the team) and of the per-agent draw.
DIFFICULTY_SD = 0.12
COMPETENCE_SD = 0.10
COMPETENCE_CLIP = (0.05, 0.95)
#: A wrong independent answer goes to the question's popular distractor this often.
DISTRACTOR_PULL = 0.6
#: Conformity with no relational block (No-Prior).
BASE_CONFORMITY = 0.5
#: Any explicit relational block (even all-neutral) shifts conformity by this much: the paper
#: finds Explicit-Neutral at or below No-Prior (Sec. 5.2, Fig. 8), not equal to it.
EXPLICIT_SHIFT = -0.03
#: Conformity change per unit of mean edge sign; Influence targets revision most directly,
#: Attitude least (Sec. 5.2: Influence most disruptive, Attitude comparatively stable).
SLOPE = {"influence": 0.4, "trust": 0.3, "attitude": 0.2}
DEFAULT_SLOPE = 0.3
CONFORMITY_CLIP = (0.02, 0.98)
#: A right agent resists the majority by up to this fraction (scaled by its competence);
#: a wrong agent facing a right majority is persuaded by up to this extra fraction, and a
#: wrong agent whose answer is as popular as a right one moves to it with probability
#: conformity * INSIGHT * competence (so a wrong 2-1 majority can still be corrected);
#: otherwise an agent tied with a rival answer moves to it with probability
#: conformity * DOUBT * (1 - competence) (so a right 2-1 majority can still fail).
RESIST = 0.5
INSIGHT = 0.25
DOUBT = 0.15


class Network:
    """The signed, undirected relation network of a prior, for the rule model."""

    def __init__(self, prior: Prior | None) -> None:
        edges = prior.edges if prior is not None else []
        self.signs = {frozenset((i, j)): s for i, j, s in edges}
        relation = prior.relation if prior is not None else None
        self.slope = SLOPE.get(relation or "", DEFAULT_SLOPE)

    def sign(self, a: str, b: str) -> int | None:
        """The sign of the edge a-b, or None for a non-edge (no relational context)."""
        return self.signs.get(frozenset((a, b)))

    def explicit(self, agent: str) -> bool:
        """True if ``agent`` has a stated relation (its prompt carries a relational block)."""
        return any(agent in pair for pair in self.signs)

    def conformity(self, agent: str, holders: Iterable[str]) -> float:
        """Probability of moving to the answer ``holders`` share (see the module doc)."""
        if not self.explicit(agent):
            return BASE_CONFORMITY
        signs = [s for s in (self.sign(agent, h) for h in holders) if s is not None]
        c = BASE_CONFORMITY + EXPLICIT_SHIFT
        if signs:
            c += self.slope * sum(signs) / len(signs)
        return _clip(c, CONFORMITY_CLIP)


def _rng(seed: int, qid: str, round_no: int, agent: int, purpose: str) -> random.Random:
    """A generator for one draw site. Keyed by agent *position*, not name, so conditions
    that differ only in the prior share their random numbers (paired comparisons)."""
    key = f"{seed}|{qid}|{round_no}|{agent}|{purpose}".encode()
    return random.Random(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest()))


def _clip(x: float, bounds: tuple[float, float]) -> float:
    return min(bounds[1], max(bounds[0], x))


class RuleDebater:
    """The rule model on one question: its hidden popular option and distractor, and each
    agent's competence on it."""

    def __init__(
        self, question: DebateQuestion, names: Sequence[str], network: Network, seed: int
    ) -> None:
        self.question, self.names, self.network, self.seed = question, names, network, seed
        letters = question.letters
        qrng = _rng(seed, question.id, -1, -1, "question")
        # a subjective question gets a hidden popular option: agents lean to it, nothing is scored
        self.focal = question.answer or qrng.choice(letters)
        self.wrong = [x for x in letters if x != self.focal]
        self.distractor = qrng.choice(self.wrong)
        difficulty = qrng.gauss(0, DIFFICULTY_SD)
        self.competence = []
        for i in range(len(names)):
            skill = _rng(seed, "", -1, i, "skill").uniform(*SKILL_RANGE)
            noise = _rng(seed, question.id, -1, i, "competence").gauss(0, COMPETENCE_SD)
            self.competence.append(_clip(skill + difficulty + noise, COMPETENCE_CLIP))

    def answer(self, i: int, round_no: int, prev: Mapping[str, str | None]) -> str | None:
        """Agent ``i``'s answer in round ``round_no``; ``prev`` holds the previous round's
        answers (unused in round 0, the independent answer)."""
        return self._first(i) if round_no == 0 else self._revise(i, round_no, prev)

    def _first(self, i: int) -> str:
        rng = _rng(self.seed, self.question.id, 0, i, "answer")
        if rng.random() < self.competence[i]:
            return self.focal
        if rng.random() < DISTRACTOR_PULL:
            return self.distractor
        return rng.choice(self.wrong)

    def _revise(self, i: int, round_no: int, prev: Mapping[str, str | None]) -> str | None:
        """One agent's revision: move toward the answer more others hold, with conformity."""
        rng = _rng(self.seed, self.question.id, round_no, i, "revise")
        draw, tie_break = rng.random(), rng.random()
        names, net, competence = self.names, self.network, self.competence[i]
        truth = self.question.answer
        me = names[i]
        mine = prev[me]
        others = [(n, prev[n]) for n in names if n != me]
        counts = Counter(a for _, a in others if a is not None)
        rivals = {x: c for x, c in counts.items() if x != mine}
        if not rivals:
            return mine
        support = counts.get(mine, 0) if mine is not None else 0
        best = max(rivals.values())
        if best < support:
            return mine
        candidates = sorted(x for x, c in rivals.items() if c == best)
        if best == support:  # no majority pressure: an agent may still be won over by a peer
            if truth is not None and truth in candidates and mine != truth:
                target, insight = truth, INSIGHT * competence
            else:
                target = candidates[int(tie_break * len(candidates))]
                insight = DOUBT * (1 - competence)
            holders = [n for n, a in others if a == target]
            return target if draw < net.conformity(me, holders) * insight else mine

        def pull(option: str) -> float:
            return net.conformity(me, [n for n, a in others if a == option])

        top = max(pull(x) for x in candidates)
        candidates = [x for x in candidates if pull(x) == top]
        target = candidates[int(tie_break * len(candidates))]
        c = top
        if truth is not None and mine is not None:
            if mine == truth:
                c *= 1 - RESIST * competence
            elif target == truth:
                c += (1 - c) * INSIGHT * competence
        pressure = (best - support) / (len(names) - 1)
        return target if draw < c * pressure else mine
