"""The fuller grammar of the offline voicing (dynamics 5): a subject's later verbs agree,
a narration's pronouns are the speaker's only in the speaker's gender and when no one
named nearer has them; no line says its closing twice, and nobody argues another's point
in that one's first person. The examples are the library's own texts; version 4 said them
as the ``before`` column does, and replays them so."""

from __future__ import annotations

import pytest

from engine import Simulation
from engine.core.scenario import Archetype, resolve_scenario
from engine.minds.offline.speech import (
    BACKING,
    CLOSERS,
    CONFIDE,
    OPENERS,
    TEMPLATES,
    TOLD,
    UNHEARD,
    UNTOLD,
    _combos,
    cast_of,
)
from engine.minds.offline.voice import Cast, narrated_as, voiced
from engine.minds.spec import Offline

#: (scenario, speaker, private information, as version 4 said it, as version 5 says it)
SECRETS = [
    (
        "tavern",
        "Greta",
        "She co-signed the 90,000-pound second mortgage on the building and is personally"
        " liable if it is not repaid.",
        "I co-signed the 90,000-pound second mortgage on the building and is personally"
        " liable if it is not repaid.",
        "I co-signed the 90,000-pound second mortgage on the building and am personally"
        " liable if it is not repaid.",
    ),
    (
        "hospital",
        "Victor",
        "He is a paid co-investigator on the sponsor's trial and receives consulting fees from"
        " the manufacturer.",
        "I am a paid co-investigator on the sponsor's trial and receives consulting fees from"
        " the manufacturer.",
        "I am a paid co-investigator on the sponsor's trial and receive consulting fees from"
        " the manufacturer.",
    ),
    (  # past tense first, "has" after a comma and "and"
        "discrimination",
        "Amir",
        "He scored 96 on the chemistry test, the highest in the class, and has told nobody.",
        "I scored 96 on the chemistry test, the highest in the class, and has told nobody.",
        "I scored 96 on the chemistry test, the highest in the class, and have told nobody.",
    ),
    (  # a hyphenated verb after an adverb
        "gossip",
        "Tessa",
        "She moved here because of her mother's new job, and she still video-calls her old"
        " friends every night.",
        "I moved here because of my mother's new job, and I still video-calls my old friends"
        " every night.",
        "I moved here because of my mother's new job, and I still video-call my old friends"
        " every night.",
    ),
    (  # "her" before an adverb is an object
        "demolition",
        "Ines",
        "The mayor told her privately that the council will not back forced evictions before"
        " the election.",
        "The mayor told my privately that the council will not back forced evictions before"
        " the election.",
        "The mayor told me privately that the council will not back forced evictions before"
        " the election.",
    ),
    (  # the first pronoun is someone else's: Mei narrates as "she"
        "helicopter-parent",
        "Mei",
        "When Ethan was seven he had a severe asthma attack on a school outing and spent two"
        " nights in hospital, and she has never forgiven the school.",
        "When Ethan was seven I had a severe asthma attack on a school outing and spent two"
        " nights in hospital, and she has never forgiven the school.",
        "When Ethan was seven he had a severe asthma attack on a school outing and spent two"
        " nights in hospital, and I have never forgiven the school.",
    ),
    (  # someone of the speaker's gender named nearer keeps their pronouns
        "hospital",
        "Tomas",
        "Daniel confided that he is terrified of dying in intensive care and might choose"
        " hospice if his family were not pleading with him.",
        "Daniel confided that I am terrified of dying in intensive care and might choose"
        " hospice if my family were not pleading with me.",
        "Daniel confided that he is terrified of dying in intensive care and might choose"
        " hospice if his family were not pleading with him.",
    ),
    (
        "bullying",
        "Helen",
        "Alice's mother phoned in September to say Alice had been bullied at her previous school.",
        "Alice's mother phoned in September to say Alice had been bullied at my previous school.",
        "Alice's mother phoned in September to say Alice had been bullied at her previous school.",
    ),
    (  # the speaker named as a subject before an adverb and its verb
        "bullying",
        "Lily",
        "Jane once threatened to tell everyone Lily still sleeps with a night light if she"
        " ever took Alice's side.",
        "Jane once threatened to tell everyone me still sleeps with a night light if I ever"
        " took Alice's side.",
        "Jane once threatened to tell everyone I still sleep with a night light if I ever"
        " took Alice's side.",
    ),
    (  # an object in a clause the speaker is the subject of is someone else
        "bullying",
        "Alice",
        "She writes to her grandmother every Sunday and has not told her anything about Jane.",
        "I write to my grandmother every Sunday and has not told my anything about Jane.",
        "I write to my grandmother every Sunday and have not told her anything about Jane.",
    ),
    (
        "village-assembly",
        "Felix",
        "He went to school with Northwater's chief executive and has already had lunch with him.",
        "I went to school with Northwater's chief executive and has already had lunch with me.",
        "I went to school with Northwater's chief executive and have already had lunch with him.",
    ),
    (  # ... but not in a clause of its own
        "friendship",
        "Sandra",
        "Jade's mother has emailed her about the divorce and asked her to keep an eye on Jade.",
        "Jade's mother has emailed me about the divorce and asked me to keep an eye on Jade.",
        "Jade's mother has emailed me about the divorce and asked me to keep an eye on Jade.",
    ),
    (
        "village-assembly",
        "Fiona",
        "She has received anonymous letters telling her to record the farmers' objections in"
        " full or else.",
        "I have received anonymous letters telling me to record the farmers' objections in"
        " full or else.",
        "I have received anonymous letters telling me to record the farmers' objections in"
        " full or else.",
    ),
    (  # another's gender, learned from the cast
        "romantic-rejection",
        "Monica",
        "Noah's file notes a difficult term last year after he lost his friend group.",
        "Noah's file notes a difficult term last year after I lost my friend group.",
        "Noah's file notes a difficult term last year after he lost his friend group.",
    ),
]


@pytest.mark.parametrize(("scenario", "speaker", "secret", "before", "after"), SECRETS)
def test_a_secret_is_told_in_grammatical_first_person(
    scenario: str, speaker: str, secret: str, before: str, after: str
) -> None:
    sc = resolve_scenario(scenario)
    assert secret in next(a for a in sc.agents if a.name == speaker).private_info
    assert voiced(secret, speaker, about_speaker=True, strict=True) == before
    assert voiced(secret, speaker, about_speaker=True, strict=True, cast=cast_of(sc)) == after


@pytest.mark.parametrize(
    ("speaker", "text", "said"),
    [  # the object of someone else's verb is the speaker; the one named stays named
        (
            "Marco",
            "Tessa told him that she lost her laptop.",
            "Tessa told me that she lost her laptop.",
        ),
        # a possessive after a name of unknown gender (a company, a teacher) is the speaker's
        (
            "Marco",
            "He took it when Ms. Novak stepped out, and his phone still has it.",
            "I took it when Ms. Novak stepped out, and my phone still has it.",
        ),
        # "and" before a noun, not a verb, changes nothing
        ("Marco", "He likes apples and pears.", "I like apples and pears."),
        ("Marco", "He sold his cars and bikes.", "I sold my cars and bikes."),
        # a later sentence opens with a capital
        (
            "Marco",
            "He arrives and demands an answer. His wife waits.",
            "I arrive and demand an answer. My wife waits.",
        ),
        # the verb after a clause the speaker is the subject of inside is someone else's
        (
            "Brooke",
            "Marco, whom she has liked since last year, has been laughing with Tessa.",
            "Marco, whom I have liked since last year, has been laughing with Tessa.",
        ),
        # after ", and" the narration is the speaker's again
        (
            "Brooke",
            "She heard them say Tessa had lost her laptop, and she believes it.",
            "I heard them say Tessa had lost her laptop, and I believe it.",
        ),
    ],
)
def test_narrated_grammar(speaker: str, text: str, said: str) -> None:
    he, she = frozenset({"he", "him", "his", "himself"}), frozenset({"she", "her", "herself"})
    cast = Cast({"Marco": he, "Brooke": she, "Tessa": she})
    assert voiced(text, speaker, about_speaker=True, strict=True, cast=cast) == said


def test_the_addressee_s_later_verbs_agree() -> None:
    text = "Maya writes both names down and asks Sophie to dance."
    cast = Cast({})
    assert voiced(text, "Ada", "Maya", strict=True, cast=cast) == (
        "you write both names down and ask Sophie to dance."
    )
    assert voiced(text, "Ada", "Maya", strict=True) == (
        "you write both names down and asks Sophie to dance."
    )


@pytest.mark.parametrize(
    ("texts", "pronouns"),
    [
        (["She has a dog.", "Her brother left."], "she"),
        (["Noah's file says he left.", "She saw it."], "she"),  # Noah's pronouns are his
        (["Daniel confided that he is afraid."], None),  # only someone else's
        (["The school has a fund."], None),
    ],
)
def test_a_persona_is_narrated_in_the_gender_its_texts_use(
    texts: list[str], pronouns: str | None
) -> None:
    found = narrated_as("Ada", texts)
    assert (found and sorted(found)[-1]) == pronouns


def test_a_library_cast_is_narrated_as_its_texts_say() -> None:
    sc = resolve_scenario("village-assembly")
    cast = cast_of(sc)
    assert "she" in cast.pronouns["Agnes"] and "he" in cast.pronouns["Huw"]
    assert "Walter" not in cast.pronouns  # "Northwater has privately offered him": whose?
    assert cast_of(sc) is cast  # worked out once a scenario


#: The openings that end in a colon.
COLONED = [o for opens in OPENERS.values() for o in opens if o.endswith(": ")]


@pytest.mark.parametrize("arch", list(Archetype))
def test_no_line_says_its_closing_twice_or_a_colon_after_a_colon(arch: Archetype) -> None:
    groups = [*TEMPLATES[arch].values(), *UNHEARD[arch].values(), BACKING[arch], CONFIDE]
    for variants in [*groups, TOLD, UNTOLD]:
        for line in _combos("Ada", arch, variants, True):
            for closer in filter(None, (c.strip(" .") for c in CLOSERS[arch])):
                assert line.lower().count(closer.lower()) <= 1, line
            assert not any(line.startswith(o) and ":" in line[len(o) :] for o in COLONED), line
    if arch is Archetype.DOMINANT:  # what version 4 said
        assert "{t} has my full backing, and that's final. That's final." in _combos(
            "Ada", arch, BACKING[arch]
        )


async def test_nobody_argues_another_s_point_in_that_one_s_first_person() -> None:
    """Family-pressure, seed 7: Kevin backs his mother Lina in round 2. Version 4 had him
    say her point as she says it, "Your father and I gave up everything so you could
    study"; version 5 backs her in his own words."""
    sc = resolve_scenario("family-pressure")

    async def kevins(dynamics: int) -> list[str]:
        sim = Simulation.new(sc, seed=7, rounds=6, mind=Offline(dynamics=dynamics))
        return [a.utterance for r in await sim.run() for a in r.actions if a.speaker == "Kevin"]

    assert any("Your father and I gave up everything" in line for line in await kevins(4))
    assert not any("father and I" in line for line in await kevins(5))
