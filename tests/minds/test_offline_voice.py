"""Points voiced by their speaker: names and pronouns resolved against the speaker and the
addressee (the issue's examples, and the cases the rules must not touch)."""

from __future__ import annotations

import pytest

from engine.minds.offline.voice import inside, voiced


@pytest.mark.parametrize(
    ("text", "speaker", "addressee", "said"),
    [
        (  # Edmund to Nell: he is the brother, she is "you"
            "Nell cannot afford to buy out her brother, and pretending otherwise only delays it",
            "Edmund",
            "Nell",
            "you cannot afford to buy out your brother, and pretending otherwise only delays it",
        ),
        (
            "the bar was opened every morning by the daughter who stayed, while Edmund visited",
            "Nell",
            "Edmund",
            "the bar was opened every morning by the daughter who stayed, while you visited",
        ),
        (
            "Edmund's share can be paid off over ten years if he allows it",
            "Nell",
            "Edmund",
            "your share can be paid off over ten years if you allow it",
        ),
        ("Agnes always wants more; ask Agnes", "Agnes", None, "I always want more; ask me"),
        ("Walter is right", "Agnes", None, "Walter is right"),  # a third party stays named
    ],
)
def test_names_are_resolved_against_speaker_and_addressee(
    text: str, speaker: str, addressee: str | None, said: str
) -> None:
    assert voiced(text, speaker, addressee) == said


@pytest.mark.parametrize(
    ("secret", "said"),
    [
        (
            "Her herd has tested positive for bovine TB.",
            "my herd has tested positive for bovine TB.",
        ),
        (
            "She found a note in her father's handwriting saying he wanted her to have it.",
            "I found a note in my father's handwriting saying he wanted me to have it.",
        ),
        (
            "He carries debts that his wife does not know about.",
            "I carry debts that my wife does not know about.",
        ),
    ],
)
def test_a_secret_is_told_in_the_first_person(secret: str, said: str) -> None:
    assert inside(voiced(secret, "Agnes", "Walter", about_speaker=True)) == said


def test_a_pronoun_opening_a_point_is_left_alone_unless_it_narrates_the_speaker() -> None:
    assert voiced("He never listens.", "Agnes", "Walter") == "He never listens."
    assert inside("The roof leaks") == "the roof leaks" and inside("Nell knows") == "Nell knows"


@pytest.mark.parametrize("strict", [False, True])
def test_an_addressee_a_point_does_not_name_changes_nothing(strict: bool) -> None:
    """What lets a speaker's voiced points be kept without the addressee where they do
    not name it (``speech._points``): every library agent's points, to every other agent."""
    from engine.core.scenario import library_ids, load_library
    from engine.minds.offline.speech import _points

    for title in library_ids():
        sc = load_library(title)
        for spec in sc.agents:
            points = tuple(spec.talking_points)
            for other in sc.names:
                if not any(other in p for p in points):
                    alone = [voiced(p, spec.name, None, strict=strict) for p in points]
                    assert [voiced(p, spec.name, other, strict=strict) for p in points] == alone
                    named = _points(points, spec.name, other, strict)
                    assert named == _points(points, spec.name, None, strict)
