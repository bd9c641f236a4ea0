"""A tiny sentiment lexicon for text the offline model did not write itself."""

from __future__ import annotations

import re

from .state import Stance

POSITIVE = frozenset(
    [
        "agree",
        "agreed",
        "appreciate",
        "back",
        "backing",
        "brave",
        "calm",
        "care",
        "fair",
        "generous",
        "glad",
        "good",
        "grateful",
        "great",
        "help",
        "helped",
        "helpful",
        "honest",
        "hope",
        "kind",
        "love",
        "praise",
        "promise",
        "proud",
        "reasonable",
        "relief",
        "right",
        "safe",
        "sorry",
        "support",
        "supported",
        "thank",
        "thanks",
        "together",
        "trust",
        "welcome",
        "well",
        "wise",
        "yes",
    ]
)
NEGATIVE = frozenset(
    [
        "accuse",
        "afraid",
        "against",
        "anger",
        "angry",
        "attack",
        "betray",
        "betrayed",
        "blame",
        "cheat",
        "cheated",
        "coward",
        "crisis",
        "danger",
        "dead",
        "disagree",
        "dishonest",
        "disgrace",
        "fail",
        "failed",
        "fault",
        "fear",
        "fight",
        "fraud",
        "greedy",
        "hate",
        "hostile",
        "hurt",
        "ignore",
        "ignored",
        "liar",
        "lie",
        "lied",
        "lies",
        "never",
        "no",
        "nonsense",
        "outrage",
        "refuse",
        "ridiculous",
        "ruin",
        "ruined",
        "selfish",
        "shame",
        "stupid",
        "threat",
        "threaten",
        "threatened",
        "wrong",
    ]
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
