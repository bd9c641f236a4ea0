"""Collaborative tasks of the casting controller: scoring by rule, task files, episodes,
the ablation, and the rule-based diagnosis (Sociodrama Sec. 4).

Everything runs on the offline model; expected values are worked out by hand or by a
brute-force check written here, never by calling the function under test.
"""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path

import pytest
from pydantic import ValidationError

from engine import Archetype, ForcedAction, Mode, SaveStore, ScenarioError, Simulation
from engine.core.scenario import parse_scenario
from engine.saves.runmeta import TaskOutcome
from engine.studies.tasks import rules
from engine.studies.tasks.diagnosis import (
    NOTABLE,
    RunDiagnosis,
    diagnose_offline,
    diagnose_run,
    evidence,
)
from engine.studies.tasks.episode import final_outcome, run_episode, task_scenario
from engine.studies.tasks.scoring import (
    agreements,
    borda,
    borda_points,
    l1_distance,
    package_score,
    pareto_frontier,
    tiers_from_scores,
)
from engine.studies.tasks.spec import AGENTS, Task, load_task, parse_casting, task_ids

A = Archetype
ARCHETYPES = list(Archetype)


def run_json(saves: Path, run_id: str) -> dict:
    """The run's metadata exactly as stored in ``run.json``."""
    doc = json.loads((saves / run_id / "run.json").read_text(encoding="utf-8"))
    (meta,) = doc["run"].values()
    return meta


def l1(ranking: list[str], expert: list[str]) -> int:
    return sum(abs(ranking.index(item) - k) for k, item in enumerate(expert))


def task_data(**changes: object) -> dict:
    """A small valid ranking task as plain data."""
    data: dict = {
        "id": "tiny",
        "title": "Tiny",
        "kind": "ranking",
        "utility": "top1",
        "description": "Pick the better of two options.",
        "rounds": 2,
        "casting": {
            "hetero": ["reserved", "dominant", "analytical", "agreeable"],
            "random": ["balanced"] * 4,
        },
        "roles": {name: "member" for name in AGENTS},
        "items": ["X", "Y"],
        "answer": "Y",
        "facts": [
            {"text": "X looks good on paper", "item": "X", "weight": 1.0},
            {"text": "Y fixed the budget", "item": "Y", "weight": 2.0, "holders": ["Avery"]},
        ],
    }
    data.update(changes)
    return data


# -- scoring -------------------------------------------------------------------------------


def test_borda_points_tied_items_share_the_mean_of_their_positions() -> None:
    # 4 items: positions score 3, 2, 1, 0. b and c tie on positions 1-2 -> (2 + 1) / 2.
    assert borda_points([["a"], ["b", "c"], ["d"]], 4) == {"a": 3, "b": 1.5, "c": 1.5, "d": 0}
    # Three tied at the top share (3 + 2 + 1) / 3 = 2.
    assert borda_points([["a", "b", "c"], ["d"]], 4) == {"a": 2, "b": 2, "c": 2, "d": 0}
    # Everything tied: everyone gets the mean (2 + 1 + 0) / 3 = 1.
    assert borda_points([["a", "b", "c"]], 3) == {"a": 1, "b": 1, "c": 1}


def test_borda_team_ranking_from_hand_computed_totals() -> None:
    items = ["a", "b", "c", "d"]
    rankings = [
        [["a"], ["b"], ["c"], ["d"]],  # a 3, b 2, c 1, d 0
        [["b"], ["a", "c"], ["d"]],  # b 3, a 1.5, c 1.5, d 0
        [["c"], ["b"], ["d"], ["a"]],  # c 3, b 2, d 1, a 0
    ]
    # Totals: a 4.5, b 7, c 5.5, d 1.
    assert borda(rankings, items) == ["b", "c", "a", "d"]


def test_borda_equal_totals_keep_item_order() -> None:
    items = ["d", "a", "c", "b"]
    # a and b swap places between the two voters: a 3 + 2 = 5, b 2 + 3 = 5; c 1 + 1, d 0 + 0.
    rankings = [[["a"], ["b"], ["c"], ["d"]], [["b"], ["a"], ["c"], ["d"]]]
    assert borda(rankings, items) == ["a", "b", "c", "d"]
    assert borda(rankings, ["b", "a", "c", "d"]) == ["b", "a", "c", "d"]
    # A full tie keeps the given item order.
    assert borda([[items]], items) == items


def test_tiers_from_scores_groups_equal_scores_best_first() -> None:
    items = ["p", "q", "r", "s", "t"]
    scores = {"p": 1.0, "q": 3.0, "r": 1.0, "s": -2.0}  # t missing: scores 0
    assert tiers_from_scores(items, scores) == [["q"], ["p", "r"], ["t"], ["s"]]
    assert tiers_from_scores(items, {}) == [items]
    assert tiers_from_scores(["b", "a"], {"a": 2.0, "b": 2.0}) == [["b", "a"]]


def test_l1_distance_on_hand_made_rankings() -> None:
    expert = [f"item{k}" for k in range(15)]
    assert l1_distance(expert, expert) == 0
    assert l1_distance(list(reversed(expert)), expert) == 112
    swapped = expert.copy()
    swapped[6], swapped[7] = swapped[7], swapped[6]
    assert l1_distance(swapped, expert) == 2
    # Moving the first item to the end: it moves 14, the other 14 items move 1 each.
    assert l1_distance(expert[1:] + expert[:1], expert) == 28


def brute_force_frontier(tables: list[list[list[float]]]) -> set[tuple[int, ...]]:
    """Packages that no other package weakly improves for all and strictly for one."""
    n_issues, n_options = len(tables[0]), len(tables[0][0])
    packages = list(itertools.product(range(n_options), repeat=n_issues))

    def total(table: list[list[float]], package: tuple[int, ...]) -> float:
        return sum(table[i][o] for i, o in enumerate(package))

    frontier = set()
    for a in packages:
        sa = [total(t, a) for t in tables]
        beaten = False
        for b in packages:
            sb = [total(t, b) for t in tables]
            if all(y >= x for x, y in zip(sa, sb, strict=True)) and any(
                y > x for x, y in zip(sa, sb, strict=True)
            ):
                beaten = True
                break
        if not beaten:
            frontier.add(a)
    return frontier


TWO_AGENTS = [
    [[3, 2, 0], [0, 1, 2]],  # agent 1
    [[0, 2, 1], [2, 1, 0]],  # agent 2
]
THREE_AGENTS = [
    [[5, 0, 0], [0, 0, 4]],
    [[0, 5, 0], [1, 1, 1]],
    [[1, 1, 1], [4, 0, 0]],
]


@pytest.mark.parametrize("tables", [TWO_AGENTS, THREE_AGENTS], ids=["two", "three"])
def test_pareto_frontier_matches_a_brute_force_dominance_check(tables) -> None:
    assert len(agreements(2)) == 9
    frontier = pareto_frontier(tables)
    assert frontier == brute_force_frontier(tables)
    assert frontier and frontier < set(agreements(2))


def test_pareto_frontier_hand_checked_cases() -> None:
    # Scores (agent 1, agent 2) of the nine packages (issue 0 option, issue 1 option):
    #   (0,0) 3,2  (0,1) 4,1  (0,2) 5,0  (1,0) 2,4  (1,1) 3,3  (1,2) 4,2
    #   (2,0) 0,3  (2,1) 1,2  (2,2) 2,1
    # (0,0) < (1,1), (0,1) < (1,2), and every (2,_) is beaten by (1,0).
    assert [package_score(TWO_AGENTS[0], (0, 1)), package_score(TWO_AGENTS[1], (0, 1))] == [4, 1]
    assert pareto_frontier(TWO_AGENTS) == {(0, 2), (1, 2), (1, 1), (1, 0)}
    # Agents that agree on everything: the single best package is the whole frontier.
    same = [[[1, 2, 3], [3, 2, 1]]] * 3
    assert pareto_frontier(same) == {(2, 0)}
    # Ties: two packages scoring the same for everyone do not dominate each other.
    flat = [[[1, 1, 0], [0, 0, 0]]] * 2
    assert pareto_frontier(flat) == {(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)}


def test_bundled_negotiation_has_243_agreements_and_a_frontier() -> None:
    negotiations = [t for t in map(load_task, task_ids()) if t.kind == "negotiation"]
    if not negotiations:
        pytest.skip("no negotiation task bundled yet")
    for task in negotiations:
        tables = [[task.agents[n].scores[i.name] for i in task.issues] for n in AGENTS]
        assert len(agreements(len(task.issues))) == 243
        frontier = pareto_frontier(tables)
        assert frontier
        assert frontier == brute_force_frontier(tables)


# -- task files ------------------------------------------------------------------------------


def test_bundled_tasks_include_the_two_ranking_tasks() -> None:
    assert {"student-council", "nasa-moon"} <= set(task_ids())


@pytest.mark.parametrize("task_id", task_ids())
def test_every_bundled_task_loads(task_id: str) -> None:
    task = load_task(task_id)
    assert task.id == task_id
    assert sorted(task.roles) == sorted(AGENTS)
    assert len(task.casting.hetero) == len(task.casting.random) == 4
    assert len(set(task.casting.hetero)) == 4  # hetero: four distinct archetypes
    scenario = task_scenario(task, task.casting.hetero)
    assert scenario.names == list(AGENTS)


def test_unknown_task_id_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError, match="unknown task 'no-such-task'"):
        load_task("no-such-task")


def test_parse_casting() -> None:
    assert parse_casting("reserved, dominant,analytical ,agreeable") == [
        A.RESERVED,
        A.DOMINANT,
        A.ANALYTICAL,
        A.AGREEABLE,
    ]
    with pytest.raises(ScenarioError, match="unknown archetype"):
        parse_casting("reserved,oops,analytical,agreeable")
    with pytest.raises(ScenarioError, match="give 4 archetypes"):
        parse_casting("reserved,dominant,analytical")
    with pytest.raises(ScenarioError, match="give 4 archetypes"):
        parse_casting("")


def test_task_validation() -> None:
    assert Task.model_validate(task_data()).answer == "Y"
    bad_item = task_data(facts=[{"text": "Z is great", "item": "Z", "weight": 1.0}])
    with pytest.raises(ValidationError, match="unknown item 'Z'"):
        Task.model_validate(bad_item)
    bad_holder = task_data(
        facts=[{"text": "Y is great", "item": "Y", "weight": 1.0, "holders": ["Zed"]}]
    )
    with pytest.raises(ValidationError, match="unknown agent 'Zed'"):
        Task.model_validate(bad_holder)
    with pytest.raises(ValidationError, match="answer"):
        Task.model_validate(task_data(answer="Q"))
    with pytest.raises(ValidationError, match="roles"):
        Task.model_validate(task_data(roles={"Avery": "member"}))


# -- episodes --------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", task_ids())
def test_private_knowledge_is_the_same_under_every_casting(task_id: str) -> None:
    task = load_task(task_id)

    def knowledge(casting) -> dict[str, tuple]:
        scenario = task_scenario(task, casting)
        return {
            a.name: (a.role, a.goal, tuple(a.evidence), tuple(a.talking_points))
            for a in scenario.agents
        }

    reference = knowledge(task.casting.hetero)
    for casting in [task.casting.random, *([a] * 4 for a in ARCHETYPES)]:
        assert knowledge(casting) == reference
        assert [a.archetype for a in task_scenario(task, casting).agents] == list(casting)
    if task.kind == "ranking":
        for name in AGENTS:
            own = [f.text for f in task.facts if name in f.holders]
            assert list(task_scenario(task, task.casting.random).agent(name).evidence) == own


async def test_run_episode_top1_plays_all_rounds_and_saves_the_outcome(tmp_path: Path) -> None:
    saves = tmp_path / "saves"
    task = load_task("student-council")
    sim, outcome = await run_episode(task, task.casting.hetero, seed=3, store=SaveStore(saves))
    assert sim.round == task.rounds == 4 and sim.finished
    assert sorted(p.name for p in (saves / sim.run_id / "rounds").iterdir()) == [
        f"{k:06d}.json.gz" for k in range(5)
    ]
    saved = run_json(saves, sim.run_id)
    assert saved["scenario_ref"] == "task:student-council"
    assert TaskOutcome.model_validate(saved["outcome"]) == outcome
    assert outcome.casting == task.casting.hetero
    assert set(outcome.before) == set(outcome.after) == set(AGENTS)
    assert sorted(outcome.team_ranking) == sorted(task.items)
    assert outcome.utility == (1.0 if outcome.team_ranking[0] == task.answer else 0.0)
    # Before the talk everyone sees only shared facts plus its own: only Avery, who holds
    # most of the hidden profile, ranks Cole first (see the table in the task file).
    firsts = {n: outcome.before[n][0] for n in AGENTS}
    assert firsts == {"Avery": ["Cole"], "Blake": ["Alex"], "Casey": ["Alex"], "Drew": ["Alex"]}


async def test_run_episode_neg_l1_utility_is_minus_the_distance_to_the_expert() -> None:
    task = load_task("nasa-moon")
    for seed in (0, 1):
        _, outcome = await run_episode(task, task.casting.hetero, seed=seed)
        assert outcome.utility == -l1(outcome.team_ranking, task.expert_ranking)
        assert outcome.utility <= 0


async def test_run_episode_negotiation_utility_is_a_settled_pareto_package() -> None:
    negotiations = [t for t in map(load_task, task_ids()) if t.kind == "negotiation"]
    if not negotiations:
        pytest.skip("no negotiation task bundled yet")
    task = negotiations[0]
    tables = [[task.agents[n].scores[i.name] for i in task.issues] for n in AGENTS]
    sim, outcome = await run_episode(task, task.casting.hetero, seed=0)
    package = tuple(i.options.index(outcome.proposal[i.name]) for i in task.issues)
    totals = {n: package_score(t, package) for n, t in zip(AGENTS, tables, strict=True)}
    # Each voter's threshold moves by its goodwill toward the proposer: GOODWILL points per
    # unit of its final favorability (none toward itself).
    relations = {n: sim.state.agents[n].relations for n in AGENTS}
    goodwill = {
        n: 0.0 if n == outcome.proposer else rules.GOODWILL * relations[n][outcome.proposer].fav
        for n in AGENTS
    }
    assert outcome.votes == {n: totals[n] + goodwill[n] >= task.agents[n].threshold for n in AGENTS}
    assert outcome.settled == all(outcome.votes.values())
    assert outcome.pareto == (package in brute_force_frontier(tables))
    assert outcome.utility == (1.0 if outcome.settled and outcome.pareto else 0.0)


async def test_hidden_profile_pooling_matters() -> None:
    """Avery holds the hidden profile: analytical Avery shares it, reserved Avery mostly not."""
    task = load_task("student-council")
    seeds = range(8)

    async def mean_utility(avery: Archetype) -> float:
        casting = [avery, A.DOMINANT, A.ANALYTICAL, A.AGREEABLE]
        utilities = [(await run_episode(task, casting, seed=s))[1].utility for s in seeds]
        return statistics.fmean(utilities)

    analytical, reserved = await mean_utility(A.ANALYTICAL), await mean_utility(A.RESERVED)
    assert analytical > reserved
    assert analytical >= 0.75


# -- ablation --------------------------------------------------------------------------------


async def test_ablation_fixed_order_and_frozen_social_state(tmp_path: Path) -> None:
    saves = tmp_path / "saves"
    task = load_task("student-council")
    sim, outcome = await run_episode(
        task, task.casting.hetero, seed=1, store=SaveStore(saves), ablation=True
    )
    assert sim.meta.ablation and run_json(saves, sim.run_id)["ablation"] is True
    names = sim.scenario.names
    first = sim.records[0].state.agents
    for record in sim.records[1:]:
        by_name = {a.speaker: a for a in record.actions}
        voiced = [n for n in names if by_name[n].mode is not Mode.SILENT]
        spoken = sorted((a for a in record.actions if a.order), key=lambda a: a.order)
        assert [a.speaker for a in spoken] == voiced
        assert [a.order for a in spoken] == list(range(1, len(voiced) + 1))
        assert record.state.agents == first  # emotions, relations and needs as in round 0
        assert record.emotion_changes == [] and record.relation_changes == []
    assert sim.round == task.rounds
    assert outcome.team_ranking and run_json(saves, sim.run_id)["outcome"]["utility"] == (
        outcome.utility
    )


async def test_without_ablation_the_social_state_moves() -> None:
    """Control for the ablation test: the same episode with dynamics does change state."""
    task = load_task("student-council")
    sim, _ = await run_episode(task, task.casting.hetero, seed=1)
    assert any(r.state.agents != sim.records[0].state.agents for r in sim.records[1:])


# -- social dynamics in the offline answers -------------------------------------------------


def tiny_sim(*, ablation: bool = False, relations: list[dict] | None = None) -> Simulation:
    """The tiny task (Avery alone holds "Y fixed the budget", weight 2) with given starting
    relations; nobody has spoken yet."""
    task = Task.model_validate(task_data())
    scenario = task_scenario(task, [A.BALANCED] * 4)
    if relations:
        scenario = scenario.model_validate(
            {**scenario.model_dump(by_alias=True), "relations": relations}
        )
    return Simulation.new(scenario, seed=0, rounds=3, ablation=ablation)


async def play(sim: Simulation, *turns: ForcedAction) -> None:
    """One round in which only ``turns`` are taken; everyone else keeps quiet."""
    for name in AGENTS:
        sim.force(
            next((t for t in turns if t.agent == name), ForcedAction(agent=name, mode=Mode.SILENT))
        )
    await sim.step()


def says(agent: str, text: str, *, to: str | None = None) -> ForcedAction:
    mode = Mode.PRIVATE if to else Mode.PUBLIC
    return ForcedAction(agent=agent, mode=mode, target=to or "all", utterance=text)


BUDGET = "Y fixed the budget."


async def test_a_silent_holders_fact_never_reaches_the_team_ranking() -> None:
    task = Task.model_validate(task_data())
    casting = [A.BALANCED] * 4
    silent = tiny_sim()
    await play(silent)
    await play(silent)
    quiet = await final_outcome(task, silent, None, casting)
    # Nobody but Avery knows that Y fixed the budget: X (shared fact, 1.0) leads for the
    # three others, and the Borda count is X 3 + 0, Y 0 + 1: X.
    assert {n: quiet.after[n][0] for n in AGENTS} == {
        "Avery": ["Y"], "Blake": ["X"], "Casey": ["X"], "Drew": ["X"]
    }  # fmt: skip
    assert quiet.team_ranking == ["X", "Y"] and quiet.utility == 0.0
    # Control: the same holder says it (twice, so the others know her) and the team finds Y.
    voiced = tiny_sim()
    await play(voiced, says("Avery", BUDGET))
    await play(voiced, says("Avery", "I stand by what I said."))
    heard = await final_outcome(task, voiced, None, casting)
    assert all(heard.after[n][0] == ["Y"] for n in AGENTS)
    assert heard.team_ranking == ["Y", "X"] and heard.utility == 1.0


async def test_only_observed_turns_move_a_ranking() -> None:
    task = Task.model_validate(task_data())
    sim = tiny_sim()
    await play(sim, says("Avery", BUDGET, to="Blake"))
    y = {n: rules.fact_weights(task, sim, n)["Y"] for n in AGENTS}
    assert y["Avery"] == 2.0  # her own fact
    assert 0.0 < y["Blake"] < 2.0  # confided to him, by someone he barely knows
    assert y["Casey"] == y["Drew"] == 0.0  # they never heard it


async def test_a_strangers_claim_counts_half_and_familiarity_raises_it() -> None:
    """The ablation registers no exchanges, so every claim stays a stranger's; with the
    social dynamics each round the listener registers the speaker makes her familiar."""
    task = Task.model_validate(task_data())
    frozen, full = tiny_sim(ablation=True), tiny_sim()
    for sim in (frozen, full):
        await play(sim, says("Avery", BUDGET))
    stranger = rules.fact_weights(task, frozen, "Blake")["Y"]
    assert stranger == 2.0 * rules.STRANGER == 1.0
    once = rules.fact_weights(task, full, "Blake")["Y"]
    assert once > stranger
    for sim in (frozen, full):  # two more rounds in which Avery speaks, the fact not again
        await play(sim, says("Avery", "I stand by what I said."))
        await play(sim, says("Avery", "Please weigh it."))
    assert rules.fact_weights(task, frozen, "Blake")["Y"] == stranger
    assert rules.fact_weights(task, full, "Blake")["Y"] > once
    assert rules.fact_weights(task, full, "Blake")["Y"] == pytest.approx(2.0, abs=0.1)


async def test_an_allys_claim_moves_a_listener_more_than_a_rivals() -> None:
    task = Task.model_validate(task_data())

    async def y_for_blake(fav: float) -> float:
        sim = tiny_sim(relations=[{"from": "Blake", "to": "Avery", "fav": fav}])
        await play(sim, says("Avery", BUDGET))
        return rules.fact_weights(task, sim, "Blake")["Y"]

    ally, neutral, rival = await y_for_blake(0.6), await y_for_blake(0.0), await y_for_blake(-0.4)
    assert ally > neutral > rival > 0.0
    # Heard twice (from two speakers) a claim counts more than heard once.
    sim = tiny_sim(relations=[{"from": "Casey", "to": "Blake", "fav": 0.6}])
    await play(sim, says("Avery", BUDGET))
    once = rules.fact_weights(task, sim, "Casey")["Y"]
    await play(sim, says("Blake", f"Avery told us: {BUDGET}"))
    assert rules.fact_weights(task, sim, "Casey")["Y"] > once


def test_allies_accept_below_their_threshold_and_rivals_ask_for_more() -> None:
    task = load_task("solar-negotiation")
    tables = {n: [task.agents[n].scores[i.name] for i in task.issues] for n in AGENTS}

    def package_worth(voter: str, low: float, high: float) -> tuple[int, ...]:
        return next(a for a in agreements(5) if low <= package_score(tables[voter], a) < high)

    relations = [
        {"from": "Blake", "to": "Avery", "fav": 0.6},  # ally: concedes 6 points
        {"from": "Drew", "to": "Avery", "fav": -0.3},  # rival: asks for 3 more
    ]
    scenario = task_scenario(task, task.casting.hetero)
    warm = Simulation.new(
        scenario.model_validate({**scenario.model_dump(by_alias=True), "relations": relations})
    )
    cold = Simulation.new(scenario)
    short = package_worth(
        "Blake", task.agents["Blake"].threshold - 5, task.agents["Blake"].threshold
    )
    assert rules.accepts(task, warm, "Blake", "Avery", short)
    assert not rules.accepts(task, cold, "Blake", "Avery", short)
    enough = package_worth("Drew", task.agents["Drew"].threshold, task.agents["Drew"].threshold + 3)
    assert rules.accepts(task, cold, "Drew", "Avery", enough)
    assert not rules.accepts(task, warm, "Drew", "Avery", enough)


SEEDS = range(10)


async def mean_utility(task: Task, casting: list[Archetype], *, ablation: bool) -> float:
    outcomes = [(await run_episode(task, casting, seed=s, ablation=ablation))[1] for s in SEEDS]
    return statistics.fmean(o.utility for o in outcomes)


@pytest.mark.parametrize("initial", ["hetero", "random"])
async def test_ablation_scores_below_the_full_model_on_most_tasks(initial: str) -> None:
    """Sociodrama Tab. 3: w/o social dynamics (fixed order, no state updates) the team does
    worse. Mean utility over a fixed seed range, per task, on the initial casting."""
    below = []
    for task_id in task_ids():
        task = load_task(task_id)
        casting = getattr(task.casting, initial)
        full = await mean_utility(task, casting, ablation=False)
        if await mean_utility(task, casting, ablation=True) < full:
            below.append(task_id)
    assert len(below) >= 3, below


# -- diagnosis -------------------------------------------------------------------------------


async def _silent_avery(*, ablation: bool) -> Simulation:
    """A student-council run (hetero casting) in which Avery never speaks; with this seed,
    dominant Blake and agreeable Drew talk every round without voicing a fact."""
    task = load_task("student-council")
    sim = Simulation.new(task_scenario(task, task.casting.hetero), seed=3, ablation=ablation)
    for _ in range(task.rounds):
        sim.force(ForcedAction(agent="Avery", mode=Mode.SILENT))
        await sim.step()
    return sim


async def test_silent_holder_is_recast_to_analytical_from_the_trajectories() -> None:
    """Nothing Avery said registered with the others (R): her knowledge never reached the
    team, so the controller casts the persona that voices evidence."""
    sim = await _silent_avery(ablation=False)
    proofs = evidence(sim.scenario, sim.records)
    avery = proofs["Avery"]
    assert avery.traced and avery.turns == 0 and avery.rounds == 4
    assert avery.registered == 1.0  # the others' memories of her: nothing above presence
    assert proofs["Casey"].registered is not None and proofs["Casey"].registered >= NOTABLE
    proposals = {p.agent: p for p in diagnose_offline(sim.scenario, sim.records, None, False)}
    assert proposals["Avery"].archetype is A.ANALYTICAL
    assert "0 of 4 rounds" in proposals["Avery"].rationale
    # Her S fell while she kept silent (offline dynamics 2): withdrawn with her knowledge.
    assert "withdrew with its knowledge" in proposals["Avery"].rationale
    assert proposals["Avery"].evidence == avery
    assert "registered 1.0/10" in avery.line()
    # The analytical agent already pools its facts: nothing to change there.
    assert proposals["Casey"].archetype is None


async def test_without_trajectories_the_ablation_gives_generic_advice() -> None:
    """The ablation records no S or R: the same silence can be withdrawal, neutral silence
    or knowledge that never got through, so the controller falls back on taking part more
    (balanced), and it cannot tell a talker that echoed the common view from an informant."""
    full = await _silent_avery(ablation=False)
    ablated = await _silent_avery(ablation=True)
    proofs = evidence(ablated.scenario, ablated.records)
    assert not any(p.traced for p in proofs.values())
    assert proofs["Avery"].turns == 0 and "no S or R trajectories" in proofs["Avery"].line()
    with_r = {p.agent: p for p in diagnose_offline(full.scenario, full.records, None, False)}
    without = {p.agent: p for p in diagnose_offline(ablated.scenario, ablated.records, None, False)}
    assert with_r["Avery"].archetype is A.ANALYTICAL
    assert without["Avery"].archetype is A.BALANCED
    assert "no S or R trajectories" in without["Avery"].rationale
    # Talkers whose words never registered beyond small talk are found only with R.
    echoed = [n for n, p in with_r.items() if n != "Avery" and p.archetype is A.ANALYTICAL]
    assert echoed == ["Drew"]
    assert all(without[n].archetype is None for n in echoed)


HOSTILE = {
    "id": "hostile",
    "title": "Hostile chair",
    "description": "A committee meets under a chair who despises everyone.",
    "rounds": 3,
    "agents": [
        {"name": "Rex", "role": "chair", "archetype": "dominant"},
        {"name": "Ida", "role": "member", "archetype": "balanced"},
        {"name": "Jon", "role": "member", "archetype": "balanced"},
    ],
    "relations": [
        {"from": "Rex", "to": "Ida", "fav": -0.7},
        {"from": "Rex", "to": "Jon", "fav": -0.7},
    ],
}


async def test_hostile_dominant_agent_is_recast_to_balanced() -> None:
    sim = Simulation.new(parse_scenario(HOSTILE, "hostile"), seed=2)
    await sim.run()
    proofs = evidence(sim.scenario, sim.records)
    assert proofs["Rex"].outgoing_fav <= -0.1  # the trajectory really is hostile
    proposals = {p.agent: p for p in diagnose_offline(sim.scenario, sim.records, None, False)}
    assert proposals["Rex"].archetype is A.BALANCED
    assert "hostile" in proposals["Rex"].rationale
    assert proposals["Ida"].archetype is None and proposals["Jon"].archetype is None


async def test_reached_target_keeps_everyone() -> None:
    task = load_task("student-council")
    casting = [A.RESERVED, A.DOMINANT, A.ANALYTICAL, A.AGREEABLE]
    sim = Simulation.new(task_scenario(task, casting), seed=0)
    for _ in range(task.rounds):
        sim.force(ForcedAction(agent="Avery", mode=Mode.SILENT))
        await sim.step()
    proposals = diagnose_offline(sim.scenario, sim.records, None, True)
    assert [p.agent for p in proposals] == list(AGENTS)
    assert all(p.archetype is None for p in proposals)
    assert all("reached its target" in p.rationale for p in proposals)


async def test_diagnose_run_headline_and_target_of_a_task_run() -> None:
    task = load_task("student-council")
    for seed, utility, reached in ((0, 1.0, True), (2, 0.0, False)):
        sim, outcome = await run_episode(task, task.casting.hetero, seed=seed)
        assert outcome.utility == utility
        diagnosis = diagnose_run(sim)
        assert isinstance(diagnosis, RunDiagnosis)
        assert diagnosis.headline == (
            f"Diagnosis of unsaved after round 4 — utility {utility:g} "
            "(rule-based, from the S and R trajectories)"
        )
        assert diagnosis.proposals == diagnose_offline(sim.scenario, sim.records, outcome, reached)
        kept = all("reached its target" in p.rationale for p in diagnosis.proposals)
        assert kept == reached


async def test_diagnose_run_of_a_run_without_a_task(tmp_path: Path) -> None:
    store = SaveStore(tmp_path / "saves")
    sim = Simulation.new(parse_scenario(HOSTILE, "hostile"), seed=2, store=store, run_id="h")
    try:
        await sim.run(2)
        diagnosis = diagnose_run(sim)
    finally:
        sim.close()
    assert diagnosis.headline == (
        "Diagnosis of h after round 2 (rule-based, from the S and R trajectories)"
    )
    assert diagnosis.proposals == diagnose_offline(sim.scenario, sim.records, None, False)
    assert [p.agent for p in diagnosis.proposals] == ["Rex", "Ida", "Jon"]


async def reopened(tmp_path: Path, rounds: int) -> Simulation:
    """The hostile scenario played ``rounds`` rounds into a save, then reopened (only its
    last rounds in memory)."""
    store = SaveStore(tmp_path / "saves")
    sim = Simulation.new(
        parse_scenario(HOSTILE, "hostile"), seed=2, store=store, run_id="h", rounds=rounds
    )
    await sim.run()
    sim.close()
    return Simulation.resume("h", store)


async def test_the_diagnosis_of_a_saved_run_reads_each_round_once(
    tmp_path: Path, monkeypatch
) -> None:
    """Reopened (only its last rounds in memory), a run is diagnosed from one pass over its
    rounds: each round file is read once, not once an agent."""
    from cast import count_reads

    from engine.round.simulation import HELD_ROUNDS

    sim = await reopened(tmp_path, 40)
    try:
        reads = count_reads(monkeypatch)
        diagnose_run(sim)
    finally:
        sim.close()
    assert len(reads) == len(set(reads))  # each round file once, not once an agent
    assert set(range(41 - HELD_ROUNDS)) <= set(reads) <= set(range(41))  # the unheld all


async def test_negotiation_votes_and_proposer_rules() -> None:
    """Rejecting dominant/reserved voters become agreeable; a proposer of a settled but
    dominated package becomes analytical, unless it already is (no fake recast)."""
    task = load_task("student-council")  # any four-agent run will do for the trajectories
    sim = Simulation.new(task_scenario(task, [A.BALANCED] * 4), seed=0)
    await sim.run(2)
    base = {"task": "deal", "casting": [A.BALANCED] * 4, "proposal": {}}
    rejected = TaskOutcome(
        **base,
        proposer="Casey",
        votes={"Avery": False, "Blake": True, "Casey": True, "Drew": True},
        settled=False,
        pareto=True,
    )
    dominated = TaskOutcome(
        **base,
        proposer="Casey",
        votes=dict.fromkeys(AGENTS, True),
        settled=True,
        pareto=False,
    )
    for casey in (A.DOMINANT, A.ANALYTICAL):
        casting = [A.RESERVED, A.BALANCED, casey, A.BALANCED]
        played = task_scenario(task, casting)  # a negotiation holds no private evidence
        agents = [a.model_copy(update={"evidence": []}) for a in played.agents]
        scenario = played.model_copy(update={"agents": agents})
        first = {p.agent: p for p in diagnose_offline(scenario, sim.records, rejected, False)}
        assert first["Avery"].archetype is A.AGREEABLE
        assert "rejected" in first["Avery"].rationale
        second = {p.agent: p for p in diagnose_offline(scenario, sim.records, dominated, False)}
        if casey is A.DOMINANT:
            assert second["Casey"].archetype is A.ANALYTICAL
        else:
            assert second["Casey"].archetype is None
        assert all(p.archetype != p.current for p in second.values())


async def test_the_diagnosis_builds_no_model_of_a_state_or_an_edge(
    tmp_path: Path, monkeypatch
) -> None:
    """A saved run is diagnosed from its rounds' columns: no state's or changed edge's
    model is built (at 300 agents and 30 rounds building them took 100 s), and the result
    is the one read from the built records before."""
    from engine.core.changes import RoundChanges
    from engine.core.columns import StateColumns

    sim = await reopened(tmp_path, 12)
    scenario = sim.scenario
    records = list(sim.records)  # built here, before the diagnosis
    try:

        def refused(*_: object, **__: object) -> None:
            raise AssertionError("a model was built")

        with monkeypatch.context() as patch:
            patch.setattr(StateColumns, "world", refused)
            patch.setattr(RoundChanges, "relation_changes", refused)
            diagnosis = diagnose_run(sim)
    finally:
        sim.close()
    turns = {
        n: sum(
            1
            for r in records[1:]
            for a in r.actions
            if a.speaker == n and a.mode is not Mode.SILENT
        )
        for n in scenario.names
    }
    ends = {n: records[-1].state.agents[n].emotion for n in scenario.names}
    assert {p.agent: (p.evidence.turns, p.evidence.emotion_end) for p in diagnosis.proposals} == {
        n: (turns[n], ends[n]) for n in scenario.names
    }
