"""Sociodrama App. D metrics on hand-built world states (engine/core/metrics.py)."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import Simulation, SocialsimError, Status, compute_metrics
from engine.core import metrics as metrics_module
from engine.core.metrics import (
    Edges,
    _faction_means,
    _shared_neighbours,
    balance,
    ei_contrast,
    ei_index,
    mean_emotion,
    mean_fav,
    reciprocity,
    repair,
    repair_counts,
    repair_series,
)
from engine.core.scenario import parse_scenario
from engine.core.state import AgentState, Relation, WorldState

R, E, N, A = Status.RIVAL, Status.ENEMY, Status.NEUTRAL, Status.ALLY


def world(
    names: str | list[str],
    fav: dict[str, float] | None = None,
    status: dict[str, Status] | None = None,
    emotion: dict[str, float] | None = None,
    round_no: int = 0,
) -> WorldState:
    """Edges are keyed by the two names joined: "AB" for A -> B."""
    fav, status, emotion = fav or {}, status or {}, emotion or {}
    agents = {
        i: AgentState(
            emotion=emotion.get(i, 0.5),
            needs={},
            relations={
                j: Relation(fav=fav.get(i + j, 0.0), status=status.get(i + j, N))
                for j in names
                if j != i
            },
        )
        for i in names
    }
    return WorldState(round=round_no, agents=agents)


def negative_dyads(*pairs: str) -> dict[str, Status]:
    """Both directions of each pair are rival: a negative dyad (s_ij = -1)."""
    return {edge: R for p in pairs for edge in (p, p[::-1])}


def pearson(xs: list[float], ys: list[float]) -> float:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    cov = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    vx = sum((x - mx) ** 2 for x in xs)
    vy = sum((y - my) ** 2 for y in ys)
    return cov / math.sqrt(vx * vy)


# -- means ---------------------------------------------------------------------------------


def test_mean_fav_over_all_directed_edges():
    st = world("ABC", fav={"AB": 0.6, "BA": -0.3, "AC": 0.9, "CA": 0.0, "BC": -1.0, "CB": 0.4})
    assert mean_fav(st) == pytest.approx((0.6 - 0.3 + 0.9 + 0.0 - 1.0 + 0.4) / 6)


def test_mean_emotion_over_agents():
    st = world("ABCD", emotion={"A": 0.1, "B": 0.9, "C": 0.5, "D": 0.3})
    assert mean_emotion(st) == pytest.approx(0.45)


# -- reciprocity ---------------------------------------------------------------------------


def test_reciprocity_perfectly_reciprocal_is_one():
    st = world("ABCD", fav={"AB": 0.8, "BA": 0.8, "AC": -0.4, "CA": -0.4, "BD": 0.1, "DB": 0.1})
    assert reciprocity(st) == pytest.approx(1.0)


def test_reciprocity_perfectly_antisymmetric_is_minus_one():
    st = world("ABC", fav={"AB": 0.5, "BA": -0.5, "AC": 0.2, "CA": -0.2, "BC": -0.7, "CB": 0.7})
    assert reciprocity(st) == pytest.approx(-1.0)


def test_reciprocity_hand_computed_double_entry():
    favs = {"AB": 0.2, "BA": 0.4, "AC": 0.6, "CA": 0.6, "BC": -0.4, "CB": 0.0}
    st = world("ABC", fav=favs)
    # each dyad enters twice, once per direction
    xs = [0.2, 0.4, 0.6, 0.6, -0.4, 0.0]
    ys = [0.4, 0.2, 0.6, 0.6, 0.0, -0.4]
    assert reciprocity(st) == pytest.approx(pearson(xs, ys))
    # the direction listed first does not matter
    flipped = world("ABC", fav={k[::-1]: v for k, v in favs.items()})
    assert reciprocity(flipped) == pytest.approx(reciprocity(st))


def test_reciprocity_undefined():
    assert reciprocity(world("ABC")) is None  # constant: no variance
    assert reciprocity(world("AB", fav={"AB": 0.3, "BA": -0.2})) is None  # one dyad


def constant(names: str | list[str], value: float) -> dict[str, float]:
    return {i + j: value for i in names for j in names if i != j}


@given(
    value=st.floats(min_value=-1.0, max_value=1.0, allow_nan=False),
    n=st.integers(min_value=3, max_value=9),
)
def test_reciprocity_of_a_constant_matrix_is_undefined(value, n):
    names = [f"a{k}" for k in range(n)]
    assert reciprocity(world(names, fav=constant(names, value))) is None


@given(
    value=st.floats(min_value=-0.99, max_value=0.99, allow_nan=False),
    jitter=st.floats(min_value=-1e-10, max_value=1e-10),
)
def test_reciprocity_of_a_matrix_constant_within_rounding_is_undefined(value, jitter):
    favs = constant("ABCD", value)
    favs["AB"] += jitter
    assert reciprocity(world("ABCD", fav=favs)) is None


def test_reciprocity_one_direction_constant_is_still_defined():
    # double-entry: every dyad enters both ways, so the two series share their values
    st_ = world("ABC", fav={"AB": 0.5, "AC": 0.5, "BC": 0.5, "BA": -0.5, "CA": 0.1, "CB": 0.3})
    xs = [0.5, -0.5, 0.5, 0.1, 0.5, 0.3]
    ys = [-0.5, 0.5, 0.1, 0.5, 0.3, 0.5]
    assert reciprocity(st_) == pytest.approx(pearson(xs, ys))


# -- E-I index -----------------------------------------------------------------------------

#: A and B in faction x, C in y, D in none (its edges are ignored).
FACTIONS = {"A": "x", "B": "x", "C": "y"}
OUTSIDER = {"AD": -1.0, "DA": 1.0, "CD": 0.9}


def test_ei_index_is_krackhardt_stern_on_mean_favorability():
    favs = {"AB": 0.8, "BA": 0.6, "AC": 0.2, "BC": 0.4, "CA": 0.6, "CB": 0.4} | OUTSIDER
    st_ = world("ABCD", fav=favs)
    e, i = (0.2 + 0.4 + 0.6 + 0.4) / 4, (0.8 + 0.6) / 2  # 0.4 across, 0.7 within
    assert ei_index(st_, FACTIONS) == pytest.approx((e - i) / (e + i))  # -3/11
    assert ei_contrast(st_, FACTIONS) == pytest.approx(e - i)


def test_ei_index_is_zero_for_equal_means_whatever_the_faction_sizes():
    st_ = world("ABCDE", fav=constant("ABCDE", 0.75))
    assert ei_index(st_, {"A": "x", "B": "x", "C": "y", "D": "y"}) == pytest.approx(0.0)
    assert ei_index(st_, {"A": "x", "B": "y", "C": "y", "D": "y", "E": "y"}) == pytest.approx(0.0)


def test_ei_index_leaves_minus_two_when_cross_hostility_nearly_cancels_in_group_warmth():
    favs = {"AB": 0.7, "BA": 0.7, "AC": -0.5, "BC": -0.5, "CA": -0.5, "CB": -0.5}
    st_ = world("ABC", fav=favs)
    assert ei_index(st_, FACTIONS) == pytest.approx(-1.2 / 0.2)  # -6
    assert ei_contrast(st_, FACTIONS) == pytest.approx(-1.2)


def test_ei_index_positive_when_out_group_preferred():
    favs = {"AB": 0.1, "BA": 0.1, "AC": 0.5, "BC": 0.5, "CA": 0.5, "CB": 0.5}
    assert ei_index(world("ABC", fav=favs), FACTIONS) == pytest.approx(0.4 / 0.6)


def test_ei_index_undefined_where_means_sum_to_zero_or_less():
    cancel = {"AB": 0.4, "BA": 0.4, "AC": -0.4, "BC": -0.4, "CA": -0.4, "CB": -0.4}
    assert ei_index(world("ABC", fav=cancel), FACTIONS) is None
    # both means negative: the ratio would read +0.5, out-group preferred; it is not
    hostile = {"AB": -0.2, "BA": -0.2, "AC": -0.6, "BC": -0.6, "CA": -0.6, "CB": -0.6}
    assert ei_index(world("ABC", fav=hostile), FACTIONS) is None
    assert ei_contrast(world("ABC", fav=hostile), FACTIONS) == pytest.approx(-0.4)


def test_ei_undefined_without_both_kinds_of_edges():
    st_ = world("ABC", fav={"AB": 0.5})
    for metric in (ei_index, ei_contrast):
        assert metric(st_, {"A": "x", "B": "x", "C": "x"}) is None  # no cross edges
        assert metric(st_, {"A": "x", "B": "y", "C": "z"}) is None  # no within edges
        assert metric(st_, {}) is None


# -- balance (Eq. 6) -----------------------------------------------------------------------


def test_balance_all_positive_triad():
    assert balance(world("ABC")) == pytest.approx(100.0)
    assert balance(world("ABC", status={"AB": A, "BA": A, "BC": A, "CB": A})) == 100.0


def test_balance_one_negative_dyad_is_unbalanced():
    assert balance(world("ABC", status=negative_dyads("AB"))) == pytest.approx(0.0)
    assert balance(world("ABC", status={"AB": E, "BA": R})) == pytest.approx(0.0)


def test_balance_one_sided_hostility_is_not_a_negative_dyad():
    assert balance(world("ABC", status={"AB": R, "CB": E})) == pytest.approx(100.0)


def test_balance_two_negative_dyads_is_balanced():
    assert balance(world("ABC", status=negative_dyads("AB", "AC"))) == pytest.approx(100.0)


def test_balance_three_negative_dyads_is_unbalanced():
    assert balance(world("ABC", status=negative_dyads("AB", "BC", "AC"))) == pytest.approx(0.0)


def test_balance_four_agents_hand_counted():
    # triads ABC (AB-: 1 neg), ABD (AB-: 1), ACD (0), BCD (0) -> 50 %
    assert balance(world("ABCD", status=negative_dyads("AB"))) == pytest.approx(50.0)


def test_balance_undefined_below_three_agents():
    assert balance(world("AB")) is None


def brute_balance(st: WorldState) -> float:
    def negative(i: str, j: str) -> bool:
        s_ij = st.agents[i].relations[j].status in (R, E)
        s_ji = st.agents[j].relations[i].status in (R, E)
        return (-1 if s_ij else 1) + (-1 if s_ji else 1) < 0

    triads = list(itertools.combinations(st.agents, 3))
    ok = sum(sum(negative(u, v) for u, v in itertools.combinations(t, 2)) % 2 == 0 for t in triads)
    return 100.0 * ok / len(triads)


@pytest.mark.parametrize("seed", range(8))
def test_balance_closed_form_matches_enumeration(seed):
    rng = random.Random(seed)
    names = list("ABCDEF")
    for _ in range(40):
        density = rng.random()
        status = {
            i + j: rng.choice([R, E]) if rng.random() < density else rng.choice([N, A])
            for i in names
            for j in names
            if i != j
        }
        st = world(names, status=status)
        assert balance(st) == pytest.approx(brute_balance(st))


@pytest.mark.parametrize("at_once", [1, 7, 1 << 15])
def test_shared_neighbours_counts_every_triangle_thrice_in_chunks_of_any_size(monkeypatch, at_once):
    """Rows wider than one 64-bit word (70 agents), the dyads taken a chunk at a time."""
    import numpy as np

    monkeypatch.setattr(metrics_module, "_DYADS_AT_ONCE", at_once)
    rng = np.random.default_rng(at_once)
    for density in (0.0, 0.1, 0.5, 1.0):
        upper = np.triu(rng.random((70, 70)) < density, 1)
        negative = upper | upper.T
        ints = negative.astype(np.int64)
        assert _shared_neighbours(negative) == int(np.trace(ints @ ints @ ints)) // 2


# -- repair --------------------------------------------------------------------------------


def trajectory(*steps: dict[str, Status]) -> list[WorldState]:
    return [world("ABC", status=s, round_no=k) for k, s in enumerate(steps)]


def test_repair_neutral_rival_neutral_is_repaired():
    assert repair(trajectory({}, {"AB": R}, {})) == pytest.approx(100.0)
    assert repair(trajectory({"AB": A}, {"AB": E}, {"AB": A})) == pytest.approx(100.0)


def test_repair_still_negative_is_not_repaired():
    assert repair(trajectory({}, {"AB": R})) == pytest.approx(0.0)
    assert repair(trajectory({}, {"AB": R}, {"AB": E})) == pytest.approx(0.0)


def test_repair_rival_from_the_start_has_not_deteriorated():
    assert repair(trajectory({"AB": R}, {"AB": R})) is None
    assert repair(trajectory({"AB": R}, {})) is None
    assert repair(trajectory({"AB": E}, {"AB": R}, {})) is None


def test_repair_fall_after_recovery_from_an_initial_rivalry():
    assert repair(trajectory({"AB": R}, {}, {"AB": R})) == pytest.approx(0.0)


def test_repair_mixed_edges():
    states = trajectory(
        {"CA": R},
        {"AB": R, "BC": E, "CA": R},
        {"AB": N, "BC": E, "CA": N},
    )
    # AB fell and recovered, BC fell and stayed, CA never fell
    assert repair(states) == pytest.approx(50.0)


def test_repair_without_states():
    assert repair([]) is None
    assert repair_counts([]) == (0, 0)


def test_repair_counts_pool_across_runs():
    # App. D pools repair over episodes from edge counts, not from percentages
    one = trajectory({}, {"AB": R}, {})  # 1 of 1 repaired
    three = trajectory({}, {"AB": R, "BC": E, "CA": R}, {"BC": E, "CA": R})  # 1 of 3
    assert repair_counts(one) == (1, 1)
    assert repair_counts(three) == (1, 3)
    pooled = [sum(c) for c in zip(repair_counts(one), repair_counts(three), strict=True)]
    assert 100.0 * pooled[0] / pooled[1] == pytest.approx(50.0)  # the mean of % would be 66.7


def test_repair_series_follows_the_run():
    states = trajectory({}, {"AB": R}, {"AB": R, "BA": E}, {"BA": E}, {})
    assert repair_series(states) == [None, 0.0, 0.0, 50.0, 100.0]


# -- compute_metrics -----------------------------------------------------------------------


def test_compute_metrics_bundles_the_round(mini):
    names = ["Ann", "Bob", "Cy"]
    states = [
        world(names, round_no=0),
        world(
            names,
            fav={"AnnBob": -0.6, "BobAnn": -0.4, "BobCy": 0.6, "CyBob": 0.6},
            status={"AnnBob": R, "BobAnn": R},
            emotion={"Ann": 0.2, "Bob": 0.4, "Cy": 0.9},
            round_no=1,
        ),
    ]
    m = compute_metrics(mini, states)
    assert m.round == 1
    assert m.mean_fav == pytest.approx((-0.6 - 0.4 + 0.6 + 0.6) / 6)
    assert m.mean_emotion == pytest.approx(0.5)
    assert m.balance == pytest.approx(0.0)  # one negative dyad Ann-Bob
    assert m.repair == pytest.approx(0.0)  # Ann->Bob and Bob->Ann fell, none recovered
    # factions: board = Ann, members = Bob, Cy: E = -0.25 across, I = 0.6 within
    assert m.ei_index == pytest.approx(-0.85 / 0.35)
    assert m.reciprocity is not None
    assert set(m.as_row()) == {
        "mean_fav",
        "mean_emotion",
        "reciprocity",
        "ei_index",
        "balance",
        "repair",
    }


async def test_simulation_metrics_by_round(mini):
    sim = Simulation.new(mini, seed=1)
    await sim.run(2)
    assert sim.metrics(0).round == 0
    assert sim.metrics().round == 2
    assert sim.metrics(1) == compute_metrics(mini, [r.state for r in sim.records[:2]])
    with pytest.raises(SocialsimError):
        sim.metrics(3)
    with pytest.raises(SocialsimError):
        sim.metrics(-1)


def test_metrics_on_scenario_with_factions():
    sc = parse_scenario(
        {
            "title": "t",
            "agents": [{"name": n, "role": "r"} for n in "ABC"],
            "factions": {"x": ["A", "B"], "y": ["C"]},
        },
        "t",
    )
    st = world("ABC", fav={"AB": 0.4, "BA": 0.2, "AC": -0.2, "CA": -0.4})
    assert compute_metrics(sc, [st]).ei_index == pytest.approx(-0.45 / 0.15)  # -3.0


async def test_metrics_series_equals_metrics_of_each_prefix():
    from engine import Simulation, resolve_scenario
    from engine.core.metrics import metrics_series

    sim = Simulation.new(resolve_scenario("demolition"), seed=4)
    await sim.run()
    states = [r.state for r in sim.records]
    series = metrics_series(sim.scenario, states)
    assert series == [compute_metrics(sim.scenario, states[: k + 1]) for k in range(len(states))]
    assert [m.round for m in series] == list(range(sim.scenario.rounds + 1))
    assert series[0].repair is None  # nothing has deteriorated at round 0
    assert any(m.repair is not None for m in series)
    assert all(0.0 <= (m.balance or 0.0) <= 100.0 for m in series)
    assert all(m.reciprocity is None or -1.0 <= m.reciprocity <= 1.0 for m in series)


# -- numpy against the plain definitions ---------------------------------------------------


def plain_mean_fav(fav: list[list[float]]) -> float:
    n = len(fav)
    cells = [fav[i][j] for i in range(n) for j in range(n) if i != j]
    return math.fsum(cells) / len(cells) if n > 1 else 0.0


def plain_reciprocity(fav: list[list[float]]) -> float | None:
    """Pearson's r over the dyads entered both ways, as statistics.correlation (3.11) has it."""
    xs: list[float] = []
    ys: list[float] = []
    for i, j in itertools.combinations(range(len(fav)), 2):
        xs += [fav[i][j], fav[j][i]]
        ys += [fav[j][i], fav[i][j]]
    if len(xs) < 4 or max(xs) - min(xs) <= 1e-9:
        return None
    mx, my = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = math.fsum((x - mx) * (x - mx) for x in xs)
    syy = math.fsum((y - my) * (y - my) for y in ys)
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def plain_faction_means(
    fav: list[list[float]], names: list[str], faction_of: dict[str, str]
) -> tuple[float, float] | None:
    member = [(k, faction_of[n]) for k, n in enumerate(names) if n in faction_of]
    inside: list[float] = []
    outside: list[float] = []
    for (i, fi), (j, fj) in itertools.permutations(member, 2):
        (inside if fi == fj else outside).append(fav[i][j])
    if not inside or not outside:
        return None
    return statistics.fmean(outside), statistics.fmean(inside)


def matrix_world(fav: list[list[float]], hostile: list[list[bool]]) -> WorldState:
    names = [f"a{k}" for k in range(len(fav))]
    return world(
        names,
        fav={a + b: fav[i][j] for i, a in enumerate(names) for j, b in enumerate(names)},
        status={
            a + b: R if hostile[i][j] else N
            for i, a in enumerate(names)
            for j, b in enumerate(names)
        },
    )


@st.composite
def matrices(draw: st.DrawFn) -> tuple[list[list[float]], list[list[bool]], dict[str, str]]:
    """Favorability matrices of 0-9 agents: continuous, on a coarse grid (ties, constant
    rows), or constant; hostile edges at a drawn density; agents in up to 3 factions."""
    n = draw(st.integers(min_value=0, max_value=9))
    kind = draw(st.sampled_from(["continuous", "grid", "constant"]))
    if kind == "constant":
        value = draw(st.floats(min_value=-1.0, max_value=1.0, allow_nan=False))
        cell = st.just(value)
    elif kind == "grid":
        cell = st.sampled_from([-1.0, -0.5, -0.1, 0.0, 0.3, 0.55, 1.0])
    else:
        cell = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)
    fav = [[draw(cell) if i != j else 0.0 for j in range(n)] for i in range(n)]
    density = draw(st.floats(min_value=0.0, max_value=1.0))
    hostile = [[i != j and draw(st.floats(0.0, 1.0)) < density for j in range(n)] for i in range(n)]
    faction_of = {f"a{k}": f for k in range(n) if (f := draw(st.sampled_from(["x", "y", "z", ""])))}
    return fav, hostile, faction_of


@given(matrices())
def test_numpy_metrics_equal_the_plain_definitions_bit_for_bit(case):
    fav, hostile, faction_of = case
    state = matrix_world(fav, hostile)
    names = list(state.agents)
    assert mean_fav(state) == plain_mean_fav(fav)
    assert reciprocity(state) == plain_reciprocity(fav)
    means = plain_faction_means(fav, names, faction_of)
    assert ei_contrast(state, faction_of) == (None if means is None else means[0] - means[1])
    if len(names) >= 3:
        assert balance(state) == brute_balance(state)


@pytest.mark.parametrize("n", [3, 4, 10, 40])
@pytest.mark.parametrize("value", [-1.0, -0.3, 0.0, 0.7, 1.0])
def test_numpy_reciprocity_of_constant_matrices_is_undefined(n, value):
    fav = [[value if i != j else 0.0 for j in range(n)] for i in range(n)]
    hostile = [[False] * n for _ in range(n)]
    assert reciprocity(matrix_world(fav, hostile)) is None


@pytest.mark.parametrize("seed", range(4))
def test_numpy_metrics_equal_the_plain_definitions_at_scale(seed):
    rng = random.Random(seed)
    n = 60
    fav = [
        [round(rng.uniform(-1, 1), rng.choice([1, 2, 4])) if i != j else 0.0 for j in range(n)]
        for i in range(n)
    ]
    hostile = [[i != j and rng.random() < 0.4 for j in range(n)] for i in range(n)]
    state = matrix_world(fav, hostile)
    assert mean_fav(state) == plain_mean_fav(fav)
    assert reciprocity(state) == plain_reciprocity(fav)
    assert reciprocity(state) == pytest.approx(statistics.correlation(*plain_pairs(fav)), abs=1e-12)
    assert balance(state) == brute_balance(state)


def plain_pairs(fav: list[list[float]]) -> tuple[list[float], list[float]]:
    n = len(fav)
    pairs = [(fav[i][j], fav[j][i]) for i in range(n) for j in range(n) if i != j]
    return [x for x, _ in pairs], [y for _, y in pairs]


def test_metrics_follow_a_state_changed_in_place():
    """A state mutated in place for the next round is read again, not served stale."""
    state = world("ABC", fav={"AB": 0.5})
    assert mean_fav(state) == pytest.approx(0.5 / 6)
    state.agents["A"].relations["B"] = Relation(fav=-0.5, status=R)
    state.agents["B"].relations["A"] = Relation(fav=0.1, status=R)
    state.round = 1
    assert mean_fav(state) == pytest.approx(-0.4 / 6)
    assert balance(state) == pytest.approx(0.0)


async def test_each_rounds_view_carried_from_its_changes_equals_one_read_whole():
    """The simulation carries each state's Edges over from the state before and the round's
    relation changes; that view is the one Edges.of reads from the whole state."""
    from engine import resolve_scenario
    from engine.core.metrics import Edges, favorability

    sim = Simulation.new(resolve_scenario("demolition"), seed=0)
    turned = set()
    while not sim.finished:
        record = await sim.step()
        hostile = [c.status in (R, E) for c in record.relation_changes]
        before = [c.previous_status in (R, E) for c in record.relation_changes]
        turned |= {(b, h) for b, h in zip(before, hostile, strict=True) if b != h}
        carried, whole = favorability(record.state), Edges.of(record.state)
        assert carried is not whole and record.relation_changes
        assert carried.round == whole.round == record.round
        assert carried.names == whole.names
        assert carried.fav.tolist() == whole.fav.tolist()
        assert carried.hostile == whole.hostile
        rows = [3, 0, 2]
        assert carried.hostile_rows(rows).tolist() == [
            [bool(carried.hostile[i] >> j & 1) for j in range(len(carried.names))] for i in rows
        ]
    assert turned == {(False, True), (True, False)}  # edges turned hostile, and made peace


@pytest.mark.parametrize("seed", range(6))
def test_faction_means_are_the_fsum_means_of_each_kind_of_edge(seed):
    """Each kind's sum is taken over the whole matrix, the other kind's edges as zeros: the
    same correctly rounded sums as ``fsum`` over its own edges alone."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    names = [f"A{k}" for k in range(n)]
    fav = np.round(rng.uniform(-1, 1, (n, n)), 4) * rng.choice([1.0, 1e-9, 3.0], (n, n))
    np.fill_diagonal(fav, 0.0)
    factions = rng.choice(["x", "y", "z"], n).tolist()
    faction_of = {a: f for a, f in zip(names, factions, strict=True) if rng.random() < 0.9}
    got = _faction_means(Edges(0, names, fav, [0] * n), faction_of)
    member = [k for k, a in enumerate(names) if a in faction_of]
    pairs = [(i, j) for i in member for j in member if i != j]
    across = [fav[i, j] for i, j in pairs if factions[i] != factions[j]]
    within = [fav[i, j] for i, j in pairs if factions[i] == factions[j]]
    if not across or not within:
        assert got is None
    else:
        assert got == (math.fsum(across) / len(across), math.fsum(within) / len(within))
