"""Properties of the offline model's speech over every bundled scenario: nobody names
themselves in the third person, nobody agrees with someone who has not yet spoken, no
speaker says the same thing word for word within three rounds, nor tells a secret twice."""

from __future__ import annotations

import asyncio
import re
from functools import cache

import pytest

from engine.core.scenario import library_ids, load_library
from engine.core.state import Action
from engine.minds.offline.speech import _personas, plain
from engine.minds.offline.voice import inside, voiced
from engine.round.simulation import Simulation

#: Phrases of agreement the offline voices use, each naming whom it agrees with.
AGREEING = (
    r"agree with {t}\b",
    r"\b{t} is right\b",
    r"\b{t}'s point holds up\b",
    r"\bI'm with {t}\b",
    r"\b{t} makes a fair point\b",
)
SEEDS = (1, 2)


@cache
def _run(scenario_id: str, seed: int) -> list[list[Action]]:
    """Each round's spoken acts, in speaking order, of a seeded offline run."""
    sim = Simulation.new(load_library(scenario_id), seed=seed)
    asyncio.run(sim.run())
    return [
        sorted((a for a in r.actions if a.order), key=lambda a: a.order or 0)
        for r in sim.records[1:]
    ]


def _runs() -> list[tuple[str, int]]:
    return [(s, seed) for s in library_ids() for seed in SEEDS]


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(name)}\b")


@pytest.mark.parametrize(("scenario_id", "seed"), _runs())
def test_no_speaker_names_themselves(scenario_id: str, seed: int) -> None:
    for acts in _run(scenario_id, seed):
        for a in acts:
            assert not _word(a.speaker).search(a.utterance), (a.speaker, a.utterance)


@pytest.mark.parametrize(("scenario_id", "seed"), _runs())
def test_nobody_agrees_with_someone_who_has_not_spoken(scenario_id: str, seed: int) -> None:
    names = load_library(scenario_id).names
    agreeing = {n: [re.compile(p.format(t=re.escape(n))) for p in AGREEING] for n in names}
    spoke: set[str] = set()
    for acts in _run(scenario_id, seed):
        for a in acts:
            for name in names:
                if name not in spoke and name != a.speaker:
                    assert not any(p.search(a.utterance) for p in agreeing[name]), (
                        a.speaker,
                        a.utterance,
                    )
            spoke.add(a.speaker)


@pytest.mark.parametrize(("scenario_id", "seed"), _runs())
def test_no_utterance_repeated_within_three_rounds(scenario_id: str, seed: int) -> None:
    recent: dict[str, dict[str, int]] = {}
    for round_no, acts in enumerate(_run(scenario_id, seed), 1):
        for a in acts:
            said = recent.setdefault(a.speaker, {})
            last = said.get(a.utterance)
            assert last is None or round_no - last > 3, (a.speaker, a.utterance, last, round_no)
            said[a.utterance] = round_no


@pytest.mark.parametrize(("scenario_id", "seed"), _runs())
def test_a_secret_is_told_once_then_referred_to(scenario_id: str, seed: int) -> None:
    """Within the rounds a speaker remembers, none of its secrets is told twice."""
    specs = {a.name: a for a in load_library(scenario_id).agents}
    told: dict[tuple[str, str], int] = {}
    for round_no, acts in enumerate(_run(scenario_id, seed), 1):
        for a in acts:
            for secret in specs[a.speaker].private_info:
                spoken = voiced(secret, a.speaker, a.target, about_speaker=True)
                if plain(inside(spoken)) in a.utterance.lower():
                    last = told.get((a.speaker, secret))
                    assert last is None or round_no - last > 3, (a.speaker, secret, last)
                    told[a.speaker, secret] = round_no


def test_a_supporter_looks_up_whom_it_backs_in_the_scenario_it_plays() -> None:
    first = load_library(library_ids()[0])
    second = first.model_copy(update={"agents": [a.model_copy() for a in first.agents]})
    name = first.agents[0].name
    for scenario in (first, second, first):  # one cached at a time: each read afresh
        assert _personas(scenario)[name] is scenario.agents[0]
