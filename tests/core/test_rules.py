"""The pure state rules of Sociodrama Sec. 3.2-3.3 and App. B (engine/core/rules.py)."""

from __future__ import annotations

import pytest

from engine import ALL, Action, InterventionError, Mode, Status
from engine.core.rules import (
    apply_emotion,
    apply_fav,
    can_observe,
    next_status,
    observed_by,
    relation_triggers,
    remember,
    speaking_order,
    threshold_status,
    validate_action,
)
from engine.core.state import Decision, MemoryEntry

NAMES = ["Ann", "Bob", "Cy", "Dee"]


def act(
    speaker: str,
    mode: Mode = Mode.PUBLIC,
    target: str | None = ALL,
    urgency: float = 5.0,
    stance: str = "neutral",
) -> Action:
    if mode is Mode.SILENT:
        target = None
    return Action(speaker=speaker, urgency=urgency, mode=mode, target=target, stance=stance)


# -- U_S and U_R clipping (Sec. 3.3) -------------------------------------------------------


@pytest.mark.parametrize(
    ("emotion", "delta", "applied", "result"),
    [
        (0.5, 0.1, 0.1, 0.6),
        (0.5, 0.9, 0.3, 0.8),
        (0.5, -0.9, -0.3, 0.2),
        (0.9, 0.3, 0.3, 1.0),
        (0.1, -0.25, -0.25, 0.0),
        (0.95, 5.0, 0.3, 1.0),
        (0.0, -5.0, -0.3, 0.0),
    ],
)
def test_apply_emotion_clips_delta_then_state(emotion, delta, applied, result):
    got_delta, got = apply_emotion(emotion, delta)
    assert got_delta == pytest.approx(applied)
    assert got == pytest.approx(result)
    assert 0.0 <= got <= 1.0


@pytest.mark.parametrize(
    ("fav", "delta", "applied", "result"),
    [
        (0.0, 0.2, 0.2, 0.2),
        (0.0, 0.7, 0.3, 0.3),
        (0.0, -0.7, -0.3, -0.3),
        (0.9, 0.3, 0.3, 1.0),
        (-0.9, -0.3, -0.3, -1.0),
        (-1.0, -2.0, -0.3, -1.0),
        (1.0, 2.0, 0.3, 1.0),
    ],
)
def test_apply_fav_clips_delta_then_fav(fav, delta, applied, result):
    got_delta, got = apply_fav(fav, delta)
    assert got_delta == pytest.approx(applied)
    assert got == pytest.approx(result)
    assert -1.0 <= got <= 1.0


# -- App. B status -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fav", "current", "expected"),
    [
        (0.55, Status.NEUTRAL, Status.ALLY),
        (0.55, Status.ENEMY, Status.ALLY),
        (1.0, Status.RIVAL, Status.ALLY),
        (0.549, Status.NEUTRAL, Status.NEUTRAL),
        (0.549, Status.RIVAL, Status.RIVAL),
        (0.549, Status.ENEMY, Status.ENEMY),
        (-0.50, Status.NEUTRAL, Status.ENEMY),
        (-0.50, Status.ALLY, Status.ENEMY),
        (-1.0, Status.RIVAL, Status.ENEMY),
        (-0.4999, Status.ENEMY, Status.RIVAL),
        (-0.10, Status.NEUTRAL, Status.RIVAL),
        (-0.10, Status.ALLY, Status.RIVAL),
        (-0.0999, Status.NEUTRAL, Status.NEUTRAL),
        (-0.0999, Status.ALLY, Status.ALLY),
        (-0.0999, Status.RIVAL, Status.RIVAL),
        (-0.0999, Status.ENEMY, Status.ENEMY),
        (0.0, Status.ALLY, Status.ALLY),
    ],
)
def test_threshold_status(fav, current, expected):
    assert threshold_status(fav, current) is expected


@pytest.mark.parametrize(
    ("fav", "current", "override"),
    [
        (0.8, Status.ALLY, Status.RIVAL),
        (0.8, Status.NEUTRAL, Status.ENEMY),
        (-0.9, Status.ENEMY, Status.ALLY),
        (-0.3, Status.RIVAL, Status.NEUTRAL),
        (0.0, Status.NEUTRAL, Status.ALLY),
    ],
)
def test_next_status_override_beats_thresholds(fav, current, override):
    assert next_status(fav, current, override) is override


@pytest.mark.parametrize(
    ("fav", "current"),
    [(0.8, Status.NEUTRAL), (-0.7, Status.ALLY), (-0.2, Status.NEUTRAL), (0.1, Status.RIVAL)],
)
def test_next_status_without_override_uses_thresholds(fav, current):
    assert next_status(fav, current, None) is threshold_status(fav, current)


# -- memory M_ij ---------------------------------------------------------------------------


def mem(round_no: int, importance: int, summary: str | None = None) -> MemoryEntry:
    return MemoryEntry(round=round_no, summary=summary or f"r{round_no}", importance=importance)


def test_remember_appends_below_capacity():
    memory = [mem(1, 3), mem(2, 3)]
    out = remember(memory, mem(3, 1), capacity=5)
    assert [e.round for e in out] == [1, 2, 3]
    assert len(memory) == 2  # input is not mutated


@pytest.mark.parametrize("capacity", [1, 2, 3, 5])
def test_remember_keeps_capacity(capacity):
    memory: list[MemoryEntry] = []
    for t in range(1, 15):
        memory = remember(memory, mem(t, 1 + (t * 7) % 10), capacity)
        assert len(memory) == min(t, capacity)


def test_remember_evicts_lowest_retention():
    # now = 5: retention = importance - (5 - round)
    memory = [mem(1, 9, "a"), mem(3, 4, "b"), mem(4, 6, "c")]  # retentions 5, 2, 5
    out = remember(memory, mem(5, 4, "d"), capacity=3)  # d: 4
    assert [e.summary for e in out] == ["a", "c", "d"]


def test_old_important_entry_outlives_recent_trivial_one():
    memory = [mem(1, 10, "betrayal"), mem(5, 1, "small talk")]
    out = remember(memory, mem(6, 2, "greeting"), capacity=2)
    # betrayal: 10 - 5 = 5; small talk: 1 - 1 = 0; greeting: 2 - 0 = 2
    assert [e.summary for e in out] == ["betrayal", "greeting"]


def test_old_trivial_entry_is_evicted_before_recent_one():
    memory = [mem(1, 3, "old"), mem(5, 3, "recent")]
    out = remember(memory, mem(6, 3, "new"), capacity=2)
    assert [e.summary for e in out] == ["recent", "new"]


def test_remember_ties_evict_older_entry():
    memory = [mem(2, 5, "x"), mem(3, 6, "y")]  # at now=4 both retain 3
    out = remember(memory, mem(4, 9, "z"), capacity=2)
    assert [e.summary for e in out] == ["y", "z"]


def test_remember_keeps_chronological_order():
    memory: list[MemoryEntry] = []
    for t, imp in enumerate([9, 1, 8, 2, 10, 1, 7, 3], start=1):
        memory = remember(memory, mem(t, imp), capacity=4)
        rounds = [e.round for e in memory]
        assert rounds == sorted(rounds)


# -- visibility (Eq. 4) --------------------------------------------------------------------


def observers(action, names):
    """V(a) as a set, from the engine's membership rule."""
    return frozenset(n for n in names if can_observe(action, n))


def test_observers_public_is_everyone():
    assert observers(act("Ann", Mode.PUBLIC, ALL), NAMES) == frozenset(NAMES)
    assert observers(act("Ann", Mode.PUBLIC, "Bob"), NAMES) == frozenset(NAMES)


def test_observers_private_is_speaker_and_recipient():
    assert observers(act("Ann", Mode.PRIVATE, "Bob"), NAMES) == frozenset({"Ann", "Bob"})


def test_observers_silent_is_nobody():
    assert observers(act("Ann", Mode.SILENT), NAMES) == frozenset()


def test_observed_by_is_what_each_agent_can_observe_in_order():
    actions = [
        act("Ann", Mode.PUBLIC, ALL),
        act("Bob", Mode.PRIVATE, "Cy"),
        act("Dee", Mode.SILENT),
        act("Cy", Mode.PUBLIC, "Ann"),
        act("Cy", Mode.PRIVATE, "Bob"),
    ]
    seen = observed_by(actions, NAMES)
    assert seen == {n: [a for a in actions if can_observe(a, n)] for n in NAMES}
    assert seen["Bob"] == [actions[0], actions[1], actions[3], actions[4]]
    assert seen["Dee"] == [actions[0], actions[3]] == seen["Ann"]
    assert seen["Dee"] is seen["Ann"]  # party to no private act: one list, shared, read only
    assert seen["Bob"] is not seen["Cy"]


@pytest.mark.parametrize("seed", range(20))
def test_observed_by_is_what_each_agent_can_observe_on_random_rounds(seed: int) -> None:
    """Private acts anywhere among the public ones (first, last, one after another), each
    party's list the public acts with its own private ones in their places."""
    import random

    rng = random.Random(seed)
    actions = []
    for _ in range(rng.randint(0, 12)):
        speaker, mode = rng.choice(NAMES), rng.choice(list(Mode))
        others = [n for n in NAMES if n != speaker]
        target = rng.choice([ALL, *others]) if mode is Mode.PUBLIC else rng.choice(others)
        actions.append(act(speaker, mode, target))
    names = NAMES[: rng.randint(1, len(NAMES))]
    assert observed_by(actions, names) == {
        n: [a for a in actions if can_observe(a, n)] for n in names
    }


# -- action validation (Sec. 3.2) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "target"),
    [
        (Mode.SILENT, "Bob"),
        (Mode.SILENT, ALL),
        (Mode.PUBLIC, None),
        (Mode.PRIVATE, None),
        (Mode.PRIVATE, ALL),
        (Mode.PUBLIC, "Ann"),
        (Mode.PRIVATE, "Ann"),
        (Mode.PUBLIC, "Zed"),
        (Mode.PRIVATE, "Zed"),
    ],
)
def test_validate_action_rejects(mode, target):
    with pytest.raises(InterventionError) as info:
        validate_action("Ann", mode, target, NAMES)
    assert "Ann" in str(info.value)


@pytest.mark.parametrize(
    ("mode", "target"),
    [
        (Mode.SILENT, None),
        (Mode.PUBLIC, ALL),
        (Mode.PUBLIC, "Bob"),
        (Mode.PRIVATE, "Bob"),
    ],
)
def test_validate_action_accepts(mode, target):
    validate_action("Ann", mode, target, NAMES)


# -- Phase 2 order -------------------------------------------------------------------------


def test_speaking_order_descending_urgency_silent_skipped():
    actions = [
        act("Ann", urgency=3.0),
        act("Bob", Mode.SILENT, urgency=9.0),
        act("Cy", urgency=8.5),
        act("Dee", Mode.PRIVATE, "Ann", urgency=6.0),
    ]
    assert speaking_order(_decisions(actions), NAMES) == ["Cy", "Dee", "Ann"]


def test_speaking_order_ties_follow_scenario_order():
    actions = [act("Dee", urgency=5.0), act("Bob", urgency=5.0), act("Ann", urgency=5.0)]
    assert speaking_order(_decisions(actions), NAMES) == ["Ann", "Bob", "Dee"]
    # the order of the input does not matter, only urgency and scenario order
    rev = speaking_order(_decisions(list(reversed(actions))), NAMES)
    assert rev == ["Ann", "Bob", "Dee"]
    mixed = [act("Dee", urgency=7.0), act("Cy", urgency=5.0), act("Bob", urgency=7.0)]
    assert speaking_order(_decisions(mixed), NAMES) == ["Bob", "Dee", "Cy"]


def _decisions(actions: list[Action]) -> dict[str, Decision]:
    """The decisions behind ``actions``, by speaker; the cast's others silent."""
    silent = {n: Decision(urgency=9.5, mode=Mode.SILENT) for n in NAMES}
    return silent | {
        a.speaker: Decision(urgency=a.urgency, mode=a.mode, target=a.target) for a in actions
    }


# -- E_ij (Sec. 3.1) -----------------------------------------------------------------------


def test_private_message_between_others_is_not_a_trigger():
    private = act("Bob", Mode.PRIVATE, "Cy", stance="oppose")
    assert relation_triggers("Ann", [private], NAMES) == {}


def test_private_message_triggers_both_parties():
    private = act("Bob", Mode.PRIVATE, "Cy", stance="oppose")
    assert relation_triggers("Cy", [private], NAMES) == {"Bob": [private]}
    assert relation_triggers("Bob", [private], NAMES) == {"Cy": [private]}


def test_public_act_of_j_is_a_trigger_for_every_observer():
    public = act("Bob", Mode.PUBLIC, "Cy", stance="oppose")
    assert relation_triggers("Ann", [public], NAMES) == {"Bob": [public]}
    assert relation_triggers("Dee", [public], NAMES) == {"Bob": [public]}
    to_all = act("Bob", Mode.PUBLIC, ALL)
    assert relation_triggers("Ann", [to_all], NAMES) == {"Bob": [to_all]}


def test_own_action_to_j_is_a_trigger_for_edge_i_to_j():
    mine_public = act("Ann", Mode.PUBLIC, "Bob", stance="support")
    mine_private = act("Ann", Mode.PRIVATE, "Cy", stance="oppose")
    got = relation_triggers("Ann", [mine_public, mine_private], NAMES)
    assert got == {"Bob": [mine_public], "Cy": [mine_private]}


def test_own_action_to_all_and_silence_are_not_triggers():
    got = relation_triggers("Ann", [act("Ann", Mode.PUBLIC, ALL), act("Bob", Mode.SILENT)], NAMES)
    assert got == {}


def test_triggers_collect_several_actions_per_edge_in_order():
    a1 = act("Bob", Mode.PUBLIC, "Cy", stance="oppose")
    a2 = act("Bob", Mode.PRIVATE, "Ann", stance="support")
    a3 = act("Ann", Mode.PUBLIC, "Bob", stance="oppose")
    a4 = act("Cy", Mode.PRIVATE, "Dee")
    got = relation_triggers("Ann", [a1, a2, a3, a4], NAMES)
    assert got == {"Bob": [a1, a2, a3]}


def test_a_judge_foresees_a_rise_clipped_and_a_fall_whole():
    from engine.core.rules import ends_above

    assert ends_above(-0.35, 0.9, -0.1)  # clipped to +0.3: -0.05 is above -0.1
    assert not ends_above(-0.45, 0.9, -0.1)  # clipped to +0.3: -0.15 is not
    assert not ends_above(0.25, -0.4, -0.1)  # a fall counts whole: -0.15
    assert ends_above(0.25, -0.3, -0.1)  # -0.05
