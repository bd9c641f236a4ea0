"""An event's meaning (valence, whom it touches, whom it implicates), read from its text
unless given, and the offline model's response to it by mechanism."""

from __future__ import annotations

import asyncio
import statistics

import pytest

from engine import Simulation, load_library
from engine.core.meaning import meaning_of
from engine.core.state import ScenarioEvent

NAMES = ["Edmund", "Nell", "Silas"]


def test_meaning_is_read_from_the_text():
    bank = meaning_of(ScenarioEvent(text="The bank calls in the loan."), NAMES)
    assert bank.valence < 0 and bank.touches == () and bank.implicates == ()
    assert bank.touched("Nell") and bank.touched("Silas")  # nobody named: everyone
    lie = meaning_of(ScenarioEvent(text="Edmund lied to Nell about the sale."), NAMES)
    assert lie.valence < 0
    assert lie.touches == ("Edmund", "Nell") and lie.implicates == ("Edmund",)
    assert not lie.touched("Silas")
    assert meaning_of(ScenarioEvent(text="It rains."), NAMES).valence == 0


def test_meaning_given_wins_over_the_text():
    event = ScenarioEvent(
        text="The bank calls in the loan.", valence=0.5, about=["Nell"], implicates=["Silas"]
    )
    m = meaning_of(event, NAMES)
    assert (m.valence, m.touches, m.implicates) == (0.5, ("Nell",), ("Silas",))
    toned = meaning_of(ScenarioEvent(text="A teacher steps in.", tone="hostile"), NAMES)
    assert toned.valence < 0


def test_old_events_load_and_new_fields_are_optional():
    old = ScenarioEvent.model_validate({"text": "x", "source": "injected"})
    assert old.valence is None and old.implicates is None
    with pytest.raises(ValueError):
        ScenarioEvent(text="x", valence=2.0)


def _final(inject: ScenarioEvent | None, seed: int, at: int = 3):
    sim = Simulation.new(load_library("tavern"), seed=seed)
    asyncio.run(sim.run(at - 1))
    if inject is not None:
        sim.inject(
            inject.text, valence=inject.valence, about=inject.about, implicates=inject.implicates
        )
    asyncio.run(sim.run())
    return sim


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_injected_event_moves_a_seeded_offline_run(seed: int):
    none = _final(None, seed)
    bank = _final(ScenarioEvent(text="The bank calls in the loan."), seed)
    assert bank.metrics().mean_emotion < none.metrics().mean_emotion
    said = " ".join(a.utterance for r in bank.records for a in r.actions).lower()
    assert "the bank calls in the loan" in said  # what agents talk about next
    assert (
        "the bank calls in the loan"
        not in " ".join(a.utterance for r in none.records for a in r.actions).lower()
    )


def test_an_event_turns_the_room_against_whoever_it_implicates():
    def regard(sim: Simulation, at: int = 3) -> float:
        """Everyone else's mean favorability toward Edmund after the event's round."""
        agents = sim.records[at].state.agents
        return statistics.fmean(
            s.relations["Edmund"].fav for n, s in agents.items() if n != "Edmund"
        )

    blamed = ScenarioEvent(text="Edmund has been hiding gambling debts from the family.")
    credited = ScenarioEvent(text="Edmund pays for the new roof.", valence=0.8)
    for seed in (1, 2, 3):
        none = regard(_final(None, seed))
        assert regard(_final(blamed, seed)) < none < regard(_final(credited, seed))
    remembered = [
        m.summary
        for n, s in _final(blamed, 1).records[3].state.agents.items()
        if n != "Edmund"
        for m in s.relations["Edmund"].memory
    ]
    assert any("Edmund is to blame for this" in m for m in remembered), remembered
