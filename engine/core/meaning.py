"""What an event means, as the offline model reads it: how good or bad it is, whom it
touches and whom it implicates; what the event leaves unset is read from its text with
the engine's lexicon."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .lexicon import sentiment
from .state import ScenarioEvent

#: The valence of a toned event for those it touches.
TONE_VALENCE = {"supportive": 0.6, "protective": 0.4, "punitive": -0.4, "hostile": -0.6}


@dataclass(frozen=True)
class EventMeaning:
    """An event's valence (-1..1), whom it touches (empty: everyone who sees it) and whom
    it implicates (whoever it is laid at)."""

    valence: float
    touches: tuple[str, ...]
    implicates: tuple[str, ...]

    def touched(self, name: str) -> bool:
        """Whether the event touches the named agent."""
        return not self.touches or name in self.touches


def meaning_of(event: ScenarioEvent, names: Sequence[str]) -> EventMeaning:
    """The event's meaning: its own fields where set, else read from its text (the tone's
    valence or the lexicon's; the agents it names; the one it opens with)."""
    implicates = None if event.implicates is None else tuple(event.implicates)
    return _meaning(
        event.text, event.tone, event.valence, tuple(event.about), implicates, tuple(names)
    )


@lru_cache(maxsize=256)
def _meaning(
    text: str,
    tone: str,
    valence: float | None,
    about: tuple[str, ...],
    implicates: tuple[str, ...] | None,
    names: tuple[str, ...],
) -> EventMeaning:
    named = [n for n in names if re.search(rf"\b{re.escape(n)}\b", text)]
    if valence is None:
        valence = TONE_VALENCE[tone] if tone in TONE_VALENCE else sentiment(text)
    if implicates is None:  # the agent the text opens with did it ("Edmund sells ...")
        opening = text.lstrip("\"' ").split(" ", 1)[0].removesuffix("'s")
        implicates = tuple(n for n in named if n == opening)
    return EventMeaning(round(valence, 4), about or tuple(named), implicates)
