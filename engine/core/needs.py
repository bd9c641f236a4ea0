"""The 13 psychological needs of EduMirror (EduMirror, App. E, Tab. 9)."""

from __future__ import annotations

from typing import NamedTuple


class Need(NamedTuple):
    """A need's current and expected value as the engine holds it (0-10; its validated
    model, where a state leaves the engine, is :class:`~engine.core.state.NeedState`)."""

    current: float
    expected: float


NEED_CATEGORIES: dict[str, tuple[str, ...]] = {
    "Safety": ("psychological_safety", "emotional_safety"),
    "Social Belonging": ("group_acceptance", "support_system", "sense_of_superiority"),
    "Esteem": ("self_worth", "sense_of_respect"),
    "Meaning and Growth": ("sense_of_meaning", "sense_of_control", "passion_and_motivation"),
    "Psychological Health": (
        "emotional_stability",
        "emotional_wellbeing",
        "psychological_resilience",
    ),
}

NEEDS: tuple[str, ...] = tuple(n for group in NEED_CATEGORIES.values() for n in group)
#: Each need's position in :data:`NEEDS` (how a round file codes a moved need).
NEED_AT: dict[str, int] = {need: k for k, need in enumerate(NEEDS)}

CATEGORY_OF: dict[str, str] = {n: cat for cat, group in NEED_CATEGORIES.items() for n in group}

#: Tab. 9: the personality trait whose strength sets each need's expected value.
NEED_TRAITS: dict[str, str] = {
    "psychological_safety": "timid",
    "emotional_safety": "emotionally sensitive",
    "group_acceptance": "sociable",
    "support_system": "dependent",
    "sense_of_superiority": "competitive",
    "self_worth": "reputation-conscious",
    "sense_of_respect": "ego-driven",
    "sense_of_meaning": "spiritual",
    "sense_of_control": "possessive",
    "passion_and_motivation": "passionate",
    "emotional_stability": "emotionally stable",
    "emotional_wellbeing": "hedonistic",
    "psychological_resilience": "resilient",
}

NEED_MIN, NEED_MAX = 0.0, 10.0
DEFAULT_CURRENT = 7.0
DEFAULT_EXPECTED = 8.0


def need_label(need: str) -> str:
    """Human label of a need id: ``self_worth`` -> ``self worth``."""
    return need.replace("_", " ")


DEGREES = {"slightly": 7.5, "moderately": 8.0, "quite": 8.5, "extremely": 9.0}
TRAIT_NEED = {trait: need for need, trait in NEED_TRAITS.items()}


def parse_trait(text: str) -> tuple[str, float]:
    """Tab. 9: ``"quite timid"`` -> (``"psychological_safety"``, 8.5)."""
    degree, _, trait = text.strip().lower().partition(" ")
    if degree not in DEGREES:
        raise ValueError(
            f"{text!r}: start with a degree ({', '.join(DEGREES)}) then a Tab. 9 trait"
        )
    if trait not in TRAIT_NEED:
        raise ValueError(f"{text!r}: unknown trait {trait!r}; known: {', '.join(TRAIT_NEED)}")
    return TRAIT_NEED[trait], DEGREES[degree]


def expected_from_traits(traits: list[str]) -> dict[str, float]:
    """Tab. 9: the expected need values a value-driven agent's traits set."""
    return dict(parse_trait(t) for t in traits)
