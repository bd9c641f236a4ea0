"""The offline dynamics of versions 2 to 4 (engine/minds/offline/params.py, ``Dynamics``),
each mechanism shown alone: with it the pattern it carries holds, switched off (the other
mechanisms as they are) the pattern goes. Agents' acts are forced, so only the mechanism
under test differs between the two runs of a seed."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from test_offline_mind import make_scenario, says, silent

from engine import ForcedAction, Mode, OfflineMind, Simulation, Status
from engine.core.rules import RIVAL_AT
from engine.core.scenario import Scenario, parse_scenario
from engine.core.state import RoundRecord
from engine.minds.offline.params import CURRENT, DYNAMICS

#: Affective variability and temperament's set points off, so a run's emotions move only by
#: the mechanism under test (each persona's baseline is its starting S).
STILL = replace(CURRENT, variability=0.0, temperament=0.0)
NAMES = ("Ivy", "Jo", "Kit", "Lu")


def cast(relations: list[dict] | None = None, **people: dict) -> Scenario:
    """Ivy, Jo, Kit and Lu (balanced, S 0.5 unless ``people`` says otherwise)."""
    agents = [{"name": n, "archetype": "balanced", **people.get(n, {})} for n in NAMES]
    return make_scenario(agents, relations, rounds=40)


async def play(
    scenario: Scenario, rounds: list[list[ForcedAction]], seed: int = 1, **changes: object
) -> list[RoundRecord]:
    """Rounds with these forced acts (everyone else silent), under STILL with ``changes``."""
    mind = OfflineMind(seed)
    mind.dynamics = replace(STILL, **changes)
    sim = Simulation.new(scenario, seed=seed, mind=mind, rounds=len(rounds))
    records = []
    for acts in rounds:
        acting = {a.agent for a in acts}
        for act in acts:
            sim.force(act)
        for name in scenario.names:
            if name not in acting:
                sim.force(silent(name))
        records.append(await sim.step())
    return records


def emotion(record: RoundRecord, agent: str) -> float:
    return record.state.agents[agent].emotion


def fav(record: RoundRecord, i: str, j: str) -> float:
    return record.state.agents[i].relations[j].fav


def test_version_1_is_every_mechanism_off_and_new_runs_play_the_newest() -> None:
    old = DYNAMICS[1]
    assert (old.bound, old.fav_bound, old.inertia, old.fading, old.persistence) == (0, 0, 0, 0, 0)
    assert (old.negativity, old.variability, old.variety, old.rest) == (1.0, 0.0, False, 0.5)
    assert (old.temperament, old.chronic_needs, old.bounded_variability) == (0.0, False, False)
    assert OfflineMind(0).dynamics == CURRENT == DYNAMICS[max(DYNAMICS)]


def test_version_3_is_version_2_and_its_own_three_mechanisms() -> None:
    """Version 2's runs replay as they were played: version 3 only adds mechanisms."""
    two, three = DYNAMICS[2], DYNAMICS[3]
    assert (two.temperament, two.chronic_needs, two.bounded_variability) == (0.0, False, False)
    assert replace(three, version=2, temperament=0.0, chronic_needs=False) == replace(
        two, bounded_variability=True
    )


def test_version_4_is_version_3_with_attention_and_the_needs_soft_bound() -> None:
    """Version 3's runs replay as they were played: version 4 only adds mechanisms."""
    three, four = DYNAMICS[3], DYNAMICS[4]
    assert (three.attention, three.crowding, three.need_bound) == (0, 1.0, 0.0)
    assert (four.attention, four.crowding, four.need_bound) == (4, 0.5, 2.0)
    assert replace(four, version=3, attention=0, crowding=1.0, need_bound=0.0) == three


async def test_emotion_adapts_back_to_the_persona_baseline() -> None:
    scenario = cast(Ivy={"emotion": 0.6})
    hurt = [[says("Jo", "Ivy", "oppose")]] * 3 + [[]] * 12
    on = await play(scenario, hurt)
    off = await play(scenario, hurt, adaptation=0.0)
    assert emotion(on[2], "Ivy") < 0.5 and emotion(off[2], "Ivy") < 0.5  # both hurt
    assert abs(emotion(on[-1], "Ivy") - 0.6) < 0.02  # back at her own baseline, not 0.5
    assert emotion(off[-1], "Ivy") == emotion(off[3], "Ivy") < 0.5  # stays where it fell


async def test_a_thin_skinned_persona_adapts_more_slowly() -> None:
    scenario = cast(Ivy={"archetype": "reserved"}, Kit={"archetype": "dominant"})
    hit = [[says("Jo", "Ivy", "oppose"), says("Lu", "Kit", "oppose")]] + [[]] * 3

    def kept(records: list[RoundRecord], agent: str) -> float:
        """The share of the first round's fall still there three rounds later."""
        return (0.5 - emotion(records[-1], agent)) / (0.5 - emotion(records[0], agent))

    on = await play(scenario, hit)
    off = await play(scenario, hit, by_temper=False)
    assert kept(on, "Ivy") > kept(on, "Kit") + 0.1
    assert kept(off, "Ivy") == pytest.approx(kept(off, "Kit"), abs=0.02)


def reached(values: list[float], level: float) -> int:
    """The first round (from 1) a value is at ``level`` or above, else past the last."""
    return next((k for k, v in enumerate(values, 1) if v >= level), len(values) + 1)


async def test_emotion_slows_near_its_bound() -> None:
    backed = [[says("Jo", "Ivy", "support"), says("Kit", "Ivy", "support")]] * 30
    on = await play(cast(), backed, adaptation=0.0)
    off = await play(cast(), backed, adaptation=0.0, bound=0.0)
    on_s, off_s = [emotion(r, "Ivy") for r in on], [emotion(r, "Ivy") for r in off]
    assert reached(off_s, 0.6) == reached(on_s, 0.6)  # the same away from the bound
    assert on_s[1] == off_s[1] > 0.8  # then, from the same level, half the rise or less
    assert on_s[2] - on_s[1] < 0.7 * (off_s[2] - off_s[1])
    assert off_s[-1] == 1.0 and reached(on_s, 0.99) > reached(off_s, 0.99)


async def test_favorability_slows_near_its_bound() -> None:
    backed = [[says("Jo", "Ivy", "support")]] * 30
    still = {"inertia": 0.0, "fading": 0.0}
    on = [fav(r, "Ivy", "Jo") for r in await play(cast(), backed, **still)]
    off = [fav(r, "Ivy", "Jo") for r in await play(cast(), backed, fav_bound=0.0, **still)]
    assert reached(off, 0.3) == reached(on, 0.3)  # the same away from the bound
    assert off[-1] == 1.0 and reached(on, 0.99) > 2 * reached(off, 0.99)


async def test_an_established_tie_moves_less() -> None:
    strong = cast([{"from": "Ivy", "to": "Jo", "fav": 0.8}])
    hit = [[says("Jo", "Ivy", "oppose")]]

    def fall(records: list[RoundRecord], start: float) -> float:
        return start - fav(records[0], "Ivy", "Jo")

    on = fall(await play(strong, hit), 0.8) / fall(await play(cast(), hit), 0.0)
    off = fall(await play(strong, hit, inertia=0.0), 0.8) / fall(
        await play(cast(), hit, inertia=0.0), 0.0
    )
    assert on < 0.8 and off == pytest.approx(1.0, abs=0.01)


async def test_a_slight_weighs_more_than_a_kindness() -> None:
    def moved(records: list[RoundRecord]) -> float:
        return abs(fav(records[0], "Ivy", "Jo"))

    hit, backed = [[says("Jo", "Ivy", "oppose")]], [[says("Jo", "Ivy", "support")]]
    on = moved(await play(cast(), hit)) / moved(await play(cast(), backed))
    off = moved(await play(cast(), hit, negativity=1.0)) / moved(
        await play(cast(), backed, negativity=1.0)
    )
    assert on == pytest.approx(1.5 * off, rel=0.02)


async def test_an_old_slight_fades_toward_the_starting_regard() -> None:
    """Jo slights Ivy, then speaks each round to Kit, which moves nothing by itself."""
    friends = cast([{"from": "Ivy", "to": "Jo", "fav": 0.6}])
    then = [[says("Jo", "Ivy", "oppose")]] + [[says("Jo", "Kit", "neutral")]] * 15
    on = [fav(r, "Ivy", "Jo") for r in await play(friends, then)]
    off = [fav(r, "Ivy", "Jo") for r in await play(friends, then, fading=0.0)]
    assert on[0] == off[0] < 0.45  # the slight
    assert off[-1] == off[1] < 0.55  # then it weighs as much as on the next day
    assert on[1] + 0.03 < on[-1] <= 0.6  # it weighs less: back toward the start, not past it


async def test_an_unrepaired_grudge_persists_while_its_holder_keeps_attacking() -> None:
    feud = cast([{"from": "Ivy", "to": "Jo", "fav": -0.4, "status": "rival"}])
    attacks = [[says("Ivy", "Jo", "oppose")]] * 8
    on = await play(feud, attacks)
    off = await play(feud, attacks, persistence=0.0)
    hostile = (Status.RIVAL, Status.ENEMY)
    assert all(r.state.agents["Ivy"].relations["Jo"].status in hostile for r in on)
    assert fav(on[-1], "Ivy", "Jo") < RIVAL_AT
    assert off[-1].state.agents["Ivy"].relations["Jo"].status not in hostile


async def test_a_dominant_agent_distrusts_a_foes_overture() -> None:
    feud = cast(
        [{"from": "Ivy", "to": "Jo", "fav": -0.6, "status": "enemy"}], Ivy={"archetype": "dominant"}
    )
    overture = [[says("Jo", "Ivy", "support")]]
    on = await play(feud, overture)
    off = await play(feud, overture, distrust=0.0)
    assert fav(off[0], "Ivy", "Jo") - (-0.6) > 2 * (fav(on[0], "Ivy", "Jo") - (-0.6)) > 0


async def test_affect_varies_round_to_round_seeded_by_the_run() -> None:
    quiet = [[]] * 10
    on = [emotion(r, "Ivy") for r in await play(cast(), quiet, variability=0.08)]
    again = [emotion(r, "Ivy") for r in await play(cast(), quiet, variability=0.08)]
    other = [emotion(r, "Ivy") for r in await play(cast(), quiet, seed=2, variability=0.08)]
    off = [emotion(r, "Ivy") for r in await play(cast(), quiet)]
    assert on == again != other
    assert max(on) - min(on) > 0.05
    assert set(off) == {0.5}


async def test_a_stable_temperament_settles_higher_and_a_neurotic_one_lower() -> None:
    """Quiet rounds: with temperament each persona settles at its own set point (dominant
    above its starting S, reserved below, balanced at it); without, all at the start."""
    scenario = cast(Ivy={"archetype": "reserved"}, Kit={"archetype": "dominant"})
    quiet = [[]] * 20
    on, off = await play(scenario, quiet, temperament=2.2), await play(scenario, quiet)
    assert emotion(on[-1], "Kit") > 0.6 and emotion(on[-1], "Ivy") < 0.35
    assert emotion(on[-1], "Jo") == pytest.approx(0.5, abs=1e-3)
    assert {emotion(off[-1], n) for n in NAMES} == {0.5}


async def test_a_need_recovers_to_the_personas_chronic_level_not_to_what_it_expects() -> None:
    """Ivy's self-worth (3 of an expected 8) is lifted by three rounds of backing; then,
    quiet, it returns toward 3 and keeps part of the lift; without the mechanism it climbs
    on toward 8 whatever happened."""
    scenario = cast(Ivy={"needs": {"self_worth": {"current": 3, "expected": 8}}})
    backed = [[says("Jo", "Ivy", "support")]] * 3 + [[]] * 12

    def worth(records: list[RoundRecord]) -> list[float]:
        return [r.state.agents["Ivy"].needs["self_worth"].current for r in records]

    on, off = (
        worth(await play(scenario, backed)),
        worth(await play(scenario, backed, chronic_needs=False)),
    )
    assert on[2] > 3.5 and off[2] > 3.5  # both lifted
    assert 3.0 < on[-1] < on[2]  # back toward the chronic level, part of the lift kept
    assert off[-1] > off[2]  # on toward the expectation


async def test_affect_varies_less_near_a_bound() -> None:
    """A persona whose baseline is near the floor: its variability is shrunk with the rest
    of the round's change, so it is less often pushed onto the floor."""
    low = cast(Ivy={"emotion": 0.06})
    quiet = [[]] * 40
    floor = []
    for bounded in (True, False):
        records = await play(low, quiet, variability=0.08, bounded_variability=bounded)
        floor.append(sum(emotion(r, "Ivy") < 0.02 for r in records))
    assert floor[0] < floor[1] / 2 and floor[1] >= 5


async def test_speech_does_not_repeat_a_line_over_a_long_run() -> None:
    """Over 30 rounds at least 80% of each speaking agent's utterances are distinct once
    every agent's name is taken out; version 1 repeated itself."""
    from engine import load_library

    shares: dict[tuple[int, str, int], dict[str, float]] = {}
    for version in (1, 2):
        for scenario_id in ("tavern", "bullying", "village-assembly"):
            scenario = load_library(scenario_id)
            for seed in (1, 2):
                sim = Simulation.new(
                    scenario, seed=seed, rounds=30, mind=OfflineMind(seed, version)
                )
                await sim.run()
                said: dict[str, list[str]] = {}
                for record in sim.records:
                    for a in record.actions:
                        if a.mode is not Mode.SILENT:
                            text = a.utterance
                            for name in scenario.names:
                                text = text.replace(name, "X")
                            said.setdefault(a.speaker, []).append(text)
                shares[(version, scenario_id, seed)] = {
                    who: len(set(texts)) / len(texts) for who, texts in said.items()
                }
    new = [s for (v, _, _), by in shares.items() if v == 2 for s in by.values()]
    old = [s for (v, _, _), by in shares.items() if v == 1 for s in by.values()]
    assert min(new) >= 0.8, shares
    assert min(old) < 0.8


async def test_a_bullied_student_stays_below_the_class_and_the_bully_hostile_over_60_rounds():
    """Bullying without intervention, seeds 0-4 (bench/long_horizon.py's): from round 10 to
    60 Alice's emotion is below the class mean and Jane's regard for her negative in every
    round (version 2: below the mean in 195 of the 255 rounds)."""
    from engine import load_library

    scenario = load_library("bullying")
    for seed in range(5):
        sim = Simulation.new(scenario, seed=seed, rounds=60)
        await sim.run()
        for record in sim.records[10:]:
            agents = record.state.agents
            mean = sum(a.emotion for a in agents.values()) / len(agents)
            assert agents["Alice"].emotion < mean, (seed, record.round)
            assert agents["Jane"].relations["Alice"].fav < 0, (seed, record.round)


def crowd(size: int) -> Scenario:
    """Ivy, Jo and ``size`` others (balanced, S 0.5), all strangers."""
    agents = [{"name": n, "archetype": "balanced"} for n in ("Ivy", "Jo")]
    agents += [{"name": f"P{k:02d}", "archetype": "balanced"} for k in range(size)]
    return make_scenario(agents, rounds=4)


def need(record: RoundRecord, agent: str, name: str) -> float:
    return record.state.agents[agent].needs[name].current


@pytest.mark.parametrize("attackers", [4, 16])
async def test_a_crowd_weighs_less_than_the_sum_of_its_voices(attackers: int) -> None:
    """Ivy overhears ``attackers`` others attack Jo, a stranger to her: up to four count in
    full, as in the papers' casts (the same state with attention off); sixteen fall on her
    emotion and emotional safety as eight would (4 x sqrt(16 / 4)), half of their sum."""
    scenario = crowd(16)
    attack = [[says(f"P{k:02d}", "Jo", "oppose") for k in range(attackers)]]
    still = {"adaptation": 0.0, "bound": 0.0}
    on = (await play(scenario, attack, **still))[0]
    off = (await play(scenario, attack, attention=0, **still))[0]
    fell = [0.5 - emotion(r, "Ivy") for r in (on, off)]
    safety = [need(r, "Ivy", "emotional_safety") for r in (on, off)]
    if attackers == 4:
        assert on.state == off.state
    else:
        assert fell[0] == pytest.approx(fell[1] / 2, abs=1e-4) and fell[1] > 0.1
        assert safety[0] > safety[1]


async def test_a_large_cast_stays_off_its_bounds() -> None:
    """A generated 100-agent cast (bench/casts.py) over 30 rounds: with attention, 5% or
    fewer of its agent-rounds from round 20 have S below 0.02 or above 0.98; without it
    (the rest of the newest dynamics as they are) a third or more of them sit on the floor."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from casts import cast_data

    scenario = parse_scenario(cast_data(100, 4, 30), "cast")
    share = []
    for attention in (CURRENT.attention, 0):
        mind = OfflineMind(4)
        mind.dynamics = replace(CURRENT, attention=attention)
        sim = Simulation.new(scenario, seed=4, rounds=30, mind=mind)
        await sim.run()
        late = np.array([values.emotion for _, values, _ in sim.history.values(20)])
        share.append(((late < 0.02) | (late > 0.98)).mean())
    assert share[0] <= 0.05 and share[1] >= 0.3, share


async def test_a_need_slows_near_its_bound() -> None:
    """Backed by two agents every round, Ivy's support system rises alike while it is 2 or
    more below 10, then by less the nearer it gets, and stays below 10; without the soft
    bound it reaches 10 and stays there."""
    backed = [[says("Jo", "Ivy", "support"), says("Kit", "Ivy", "support")]] * 20
    on = [need(r, "Ivy", "support_system") for r in await play(cast(), backed)]
    off = [need(r, "Ivy", "support_system") for r in await play(cast(), backed, need_bound=0.0)]
    assert on[:2] == off[:2] and on[0] <= 8.0  # the same while 2 or more below 10
    assert on[2] - on[1] < 0.6 * (off[2] - off[1])  # then, from the same level, less
    assert off[-1] == 10.0 and max(on) < 9.9
