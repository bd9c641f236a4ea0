"""A tiny sentiment lexicon for text the offline model did not write itself."""

from __future__ import annotations

import re

from .state import Stance

POSITIVE = frozenset(
    """accept agree agreed apologise apologises apologize appreciate back backing brave calm
    care comfort comforts cooperate cooperative encourage encourages fair friend friends
    generous glad good grateful great help helped helpful helps honest hope include included
    includes kind love praise praised praises promise protect protects proud reasonable
    relief right safe sorry support supported supportive supports team thank thanks together
    trust welcome welcomes well wise yes""".split()
)
NEGATIVE = frozenset(
    """accuse afraid against alone anger angry attack betray betrayed blame bully bullies
    bullying cheat cheated coward crisis cries cry danger dead disagree dishonest disgrace
    excluded exclude fail failed fault fear fight fraud greedy hate hostile humiliate
    humiliated hurt ignore ignored laugh laughed laughing liar lie lied lies lonely mock
    mocked never no nonsense outrage push pushed pushes refuse ridiculous ruin ruined rumour
    rumours rumor rumors selfish shame stupid threat threaten threatened wrong""".split()
)
_WORD = re.compile(r"[a-z']+")


def sentiment(text: str) -> float:
    """Net tone of ``text`` in [-1, 1]: (positive - negative) / matched words."""
    words = _WORD.findall(text.lower())
    pos = sum(w in POSITIVE for w in words)
    neg = sum(w in NEGATIVE for w in words)
    return 0.0 if pos + neg == 0 else (pos - neg) / (pos + neg)


def infer_stance(text: str) -> Stance:
    """Stance of a user-written utterance toward its target."""
    tone = sentiment(text)
    return "support" if tone > 0.2 else "oppose" if tone < -0.2 else "neutral"
