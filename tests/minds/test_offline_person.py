"""No grammatical-person slips in what the offline model says: every text a library persona
voices (talking points, secrets, goal) by every speaker to every addressee, every
template of every archetype, and narrated frames over both pronoun sets."""

from __future__ import annotations

import itertools
import re

import pytest

from engine.core.scenario import library_ids, resolve_scenario
from engine.minds.offline.speech import BACKING, CONFIDE, TEMPLATES, UNHEARD, cast_of
from engine.minds.offline.voice import inside, voiced

#: A first- or second-person form where grammar wants another: a possessive before a
#: pronoun, article or auxiliary ("told my he would"), "I" or "you" with a third-person
#: verb, an object pronoun opening a clause with a verb.
SLIPS = re.compile(
    r"\b(?:my|your) (?:he|she|they|we|i|you|it|him|her|them|me|us|to|the|a|an|and|that|"
    r"would|will|is|was|has|had|can|could)\b"
    r"|\bI (?:has|is|does|wants|says)\b"
    r"|(?:^|[.;,:] |\band |\bthat |\bknows |\bsays )you (?:has|is|was|does|wants|says)\b"
    r"|(?:^|[.;,] )me (?:would|will|is|has|was|can|am)\b",
    re.IGNORECASE,
)

#: Pronoun sets: subject, object, possessive, reflexive.
PRONOUNS = (("he", "him", "his", "himself"), ("she", "her", "her", "herself"))
#: Narrated frames about a named person (N) with their pronouns.
FRAMES = (
    "{N}'s son has told {o} {s} would take the money.",
    "Her son has told {o} {s} would take the money.",
    "{N} said {s} would go, and {s} told {o} so.",
    "Everyone knows {N} wants {p} share, but nobody asks {o} what {s} thinks.",
    "{N} has told {o}self nothing; {s} keeps {p} doubts to {r}.",
    "They gave {o} the keys, and {s} lost them before {p} shift.",
    "If {N} leaves, {s} takes {p} savings with {o}.",
)


#: With the fuller grammar (dynamics 5), also: a first person's later verb left in the
#: third ("I co-signed it and is liable").
LATER = re.compile(r"\bI\b[^.;:]*?\b(?:and|but) (?:\w+ly )?(?:is|has|does)\b")


def _slips(text: str, later: bool = False) -> list[str]:
    found = [m.group(0) for m in SLIPS.finditer(text)]
    return found + ([m.group(0) for m in LATER.finditer(text)] if later else [])


def test_the_known_slip_is_gone() -> None:
    secret = "Her son wants to leave farming and has told her he would take the compensation."
    said = voiced(secret, "Martha", "Tom", about_speaker=True, strict=True)
    assert "told me he would" in said
    assert not _slips(said)
    legacy = voiced(secret, "Martha", "Tom", about_speaker=True)  # dynamics 1 replay as played
    assert "told my he would" in legacy


@pytest.mark.parametrize("pronouns", PRONOUNS)
@pytest.mark.parametrize("frame", FRAMES)
def test_narrated_frames_voice_without_slips(frame: str, pronouns: tuple[str, ...]) -> None:
    s, o, p, r = pronouns
    text = frame.format(N="Ada", s=s, o=o, p=p, r=r)
    for speaker, addressee, about in itertools.product(
        ("Ada", "Bo"), ("Ada", "Bo", None), (True, False)
    ):
        said = voiced(text, speaker, addressee, about_speaker=about, strict=True)
        assert not _slips(said), (text, speaker, addressee, about, said)


@pytest.mark.parametrize("grammar", [False, True])
@pytest.mark.parametrize("scenario_id", library_ids())
def test_every_persona_text_voices_without_slips(scenario_id: str, grammar: bool) -> None:
    scenario = resolve_scenario(scenario_id)
    names = scenario.names
    cast = cast_of(scenario) if grammar else None
    for agent in scenario.agents:
        for to in (*[n for n in names if n != agent.name], None):
            for point in (*agent.talking_points, agent.goal):
                said = inside(voiced(point, agent.name, to, strict=True, cast=cast))
                assert not _slips(said, grammar), (agent.name, to, point, said)
            for secret in agent.private_info:
                said = voiced(secret, agent.name, to, about_speaker=True, strict=True, cast=cast)
                assert not _slips(said, grammar), (agent.name, to, secret, said)


def test_every_template_fills_without_slips() -> None:
    point = "the money was mine to give"
    texts = [v for by in TEMPLATES.values() for vs in by.values() for v in vs]
    texts += [v for by in UNHEARD.values() for vs in by.values() for v in vs]
    texts += [v for vs in BACKING.values() for v in vs] + list(CONFIDE)
    for template in texts:
        said = template.format(t="Ada", p=point, P=point.capitalize())
        assert not _slips(said), (template, said)
