"""Relational priors (paper Sec. 3): topologies, sign assignments, rendering, CLI syntax,
and their integration into the run as a fixed prompt layer (never the relations' state;
saves, the LLM system prompt)."""

from __future__ import annotations

from math import comb

import pytest

from engine import SaveStore, Simulation, SocialsimError
from engine.core.columns import AgentView
from engine.core.priors import (
    DEFINITIONS,
    PHRASES,
    Prior,
    explicit_neutral,
    first_signs,
    no_prior,
    parse_prior,
    render,
    sign_assignments,
    sign_index,
    signed_priors,
    topology_edges,
)
from engine.core.scenario import Scenario
from engine.core.state import Decision, Mode
from engine.minds import prompts
from engine.minds.base import AgentContext

FIVE = ["John", "Kate", "Jack", "Emma", "Luke"]
THREE = ["John", "Kate", "Jack"]
MINI = ["Ann", "Bob", "Cy"]


# -- topologies ------------------------------------------------------------------------------


def test_topology_edge_sets_for_five_agents() -> None:
    assert topology_edges(FIVE, "complete") == [
        ("John", "Kate"),
        ("John", "Jack"),
        ("John", "Emma"),
        ("John", "Luke"),
        ("Kate", "Jack"),
        ("Kate", "Emma"),
        ("Kate", "Luke"),
        ("Jack", "Emma"),
        ("Jack", "Luke"),
        ("Emma", "Luke"),
    ]
    assert topology_edges(FIVE, "chain") == [
        ("John", "Kate"),
        ("Kate", "Jack"),
        ("Jack", "Emma"),
        ("Emma", "Luke"),
    ]
    assert topology_edges(FIVE, "star") == [
        ("John", "Kate"),
        ("John", "Jack"),
        ("John", "Emma"),
        ("John", "Luke"),
    ]
    assert topology_edges(FIVE, "tree") == [
        ("John", "Kate"),
        ("John", "Jack"),
        ("Kate", "Emma"),
        ("Kate", "Luke"),
    ]
    # App. Fig. 10: each sparse five-agent topology has four edges.
    assert {len(topology_edges(FIVE, t)) for t in ("chain", "star", "tree")} == {4}


def test_topology_edges_three_agents() -> None:
    assert topology_edges(THREE, "complete") == [
        ("John", "Kate"),
        ("John", "Jack"),
        ("Kate", "Jack"),
    ]
    assert topology_edges(THREE, "tree") == topology_edges(THREE, "star")
    assert topology_edges(["A", "B"], "chain") == [("A", "B")]
    assert topology_edges(["A", "B"], "complete") == [("A", "B")]


@pytest.mark.parametrize(
    ("names", "topology", "match"),
    [
        (["A"], "complete", "at least 2"),
        (["A"], "chain", "at least 2"),
        (["A", "B"], "star", "at least 3"),
        (["A", "B"], "tree", "at least 3"),
        (["A", "B", "C"], "ring", "unknown topology"),
        (["A", "B", "A"], "complete", "distinct"),
    ],
)
def test_topology_misfits_are_refused(names: list[str], topology: str, match: str) -> None:
    with pytest.raises(SocialsimError, match=match):
        topology_edges(names, topology)  # type: ignore[arg-type]


# -- sign assignments ------------------------------------------------------------------------


def test_complete_three_at_one_third_has_three_assignments() -> None:
    signs = sign_assignments(3, 1 / 3)
    assert signs == [(1, -1, -1), (-1, 1, -1), (-1, -1, 1)]


def test_unreachable_positivity_is_an_error() -> None:
    with pytest.raises(SocialsimError, match=r"λ=0.5 not reachable with 3 edges"):
        sign_assignments(3, 0.5)
    with pytest.raises(SocialsimError, match="outside"):
        sign_assignments(3, 1.5)
    with pytest.raises(SocialsimError, match="at least one edge"):
        sign_assignments(0, 1.0)


@pytest.mark.parametrize("n_edges", range(1, 7))
def test_assignment_counts_are_binomial(n_edges: int) -> None:
    for k in range(n_edges + 1):
        signs = sign_assignments(n_edges, k / n_edges)
        assert len(signs) == comb(n_edges, k)
        assert len(set(signs)) == len(signs)
        assert all(s.count(1) == k and len(s) == n_edges for s in signs)


@pytest.mark.parametrize(("n_edges", "k"), [(1, 0), (3, 1), (6, 3), (6, 6)])
def test_first_signs_is_the_first_assignment(n_edges: int, k: int) -> None:
    assert first_signs(n_edges, k / n_edges) == sign_assignments(n_edges, k / n_edges)[0]


def test_a_prior_over_a_large_cast_takes_the_first_assignment_without_listing_them() -> None:
    names = [f"A{i}" for i in range(30)]  # 435 edges: C(435, 145) assignments at λ = 1/3
    prior = parse_prior("attitude:complete:1/3", names)
    signs = [s for _, _, s in prior.edges]
    assert signs == [1] * 145 + [-1] * 290
    with pytest.raises(SocialsimError, match="not reachable with 435 edges"):
        parse_prior("attitude:complete:0.5", names)


def test_endpoints() -> None:
    assert sign_assignments(4, 1.0) == [(1, 1, 1, 1)]
    assert sign_assignments(4, 0.0) == [(-1, -1, -1, -1)]


def test_signed_priors_one_per_assignment() -> None:
    priors = signed_priors(THREE, "trust", "complete", 1 / 3)
    assert len(priors) == 3
    assert all(p.control == "signed" and p.relation == "trust" for p in priors)
    assert all(p.positivity == pytest.approx(1 / 3) for p in priors)
    assert priors[0].edges == [("John", "Kate", 1), ("John", "Jack", -1), ("Kate", "Jack", -1)]
    assert len(signed_priors(FIVE, "influence", "chain", 0.5)) == comb(4, 2)


def test_prior_validation() -> None:
    with pytest.raises(ValueError, match="sign"):
        Prior(control="signed", relation="attitude", edges=[("A", "B", 0)])
    with pytest.raises(ValueError, match="positivity"):
        Prior(control="signed", relation="attitude", edges=[("A", "B", 1)], positivity=0.0)
    with pytest.raises(ValueError, match="no-prior"):
        Prior(control="no-prior", relation="trust")
    with pytest.raises(ValueError, match="relation type"):
        Prior(control="explicit-neutral", edges=[("A", "B", 0)])
    with pytest.raises(ValueError, match="twice"):
        Prior(control="signed", relation="trust", edges=[("A", "B", 1), ("B", "A", 1)])
    with pytest.raises(ValueError, match="extra"):
        Prior(control="no-prior", colour="red")  # type: ignore[call-arg]
    filled = Prior(control="signed", relation="trust", edges=[("A", "B", 1), ("A", "C", -1)])
    assert filled.positivity == 0.5
    with pytest.raises(ValueError, match="frozen"):
        filled.topology = "chain"  # type: ignore[misc]


# -- rendering -------------------------------------------------------------------------------


def _edge_lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.startswith("- ") and "none" not in line]


@pytest.mark.parametrize("relation", ["attitude", "trust", "influence"])
@pytest.mark.parametrize("topology", ["complete", "chain", "star", "tree"])
def test_render_has_definition_and_every_edge_once(relation: str, topology: str) -> None:
    prior = signed_priors(FIVE, relation, topology, 0.0)[0]  # type: ignore[arg-type]
    for agent in FIVE:
        block = render(prior, agent)
        assert block is not None
        assert DEFINITIONS[relation] in block
        lines = _edge_lines(block)
        assert len(lines) == len(prior.edges)
        for i, j, _ in prior.edges:
            left = "You" if agent == i else i
            right = "You" if agent == j else j
            mentions = [
                line
                for line in lines
                if f"- {left} and {right} " in line or f"- {right} and {left} " in line
            ]
            assert len(mentions) == 1, (agent, i, j, block)
        assert all(PHRASES[relation][-1] in line for line in lines)


def test_own_edges_come_first() -> None:
    prior = signed_priors(THREE, "attitude", "complete", 1 / 3)[0]
    block = render(prior, "Jack")
    assert block is not None
    assert block.endswith(
        "Your relations:\n"
        "- You and John have a negative attitude toward each other (attitude score -1).\n"
        "- You and Kate have a negative attitude toward each other (attitude score -1).\n"
        "Relations among the others:\n"
        "- John and Kate have a positive attitude toward each other (attitude score +1)."
    )


def test_star_leaf_has_one_own_edge() -> None:
    block = render(signed_priors(FIVE, "trust", "star", 1.0)[0], "Luke")
    assert block is not None
    own = block.split("Your relations:\n")[1].split("Relations among the others:")[0]
    assert own.strip() == "- You and John trust each other (trust score +1)."


def test_template_is_fixed_across_relation_types() -> None:
    """Only the definition, the per-sign phrase and the relation's name differ."""
    blocks = {}
    for relation in ("attitude", "trust", "influence"):
        prior = Prior(
            control="signed",
            relation=relation,  # type: ignore[arg-type]
            edges=[("John", "Kate", 1), ("John", "Jack", -1), ("Kate", "Jack", 1)],
        )
        block = render(prior, "Kate")
        assert block is not None
        block = block.replace(DEFINITIONS[relation], "<DEF>")
        # longest first: "distrust each other" contains "trust each other"
        for sign, phrase in sorted(PHRASES[relation].items(), key=lambda kv: -len(kv[1])):
            block = block.replace(phrase, f"<PHRASE{sign}>")
        blocks[relation] = block.replace(relation.capitalize(), "<REL>").replace(relation, "<rel>")
    assert blocks["attitude"] == blocks["trust"] == blocks["influence"]


def test_no_prior_renders_nothing() -> None:
    assert render(no_prior(), "John") is None
    assert sign_index(no_prior()) == sign_index(None) == {}


def test_explicit_neutral_says_neutral() -> None:
    for relation in ("attitude", "trust", "influence"):
        prior = explicit_neutral(THREE, relation, "complete")  # type: ignore[arg-type]
        assert prior.positivity is None
        block = render(prior, "John")
        assert block is not None
        lines = _edge_lines(block)
        assert len(lines) == 3
        assert all("neutral" in line and "score 0)" in line for line in lines)


def test_sign_index_both_directions() -> None:
    prior = Prior(
        control="signed",
        relation="attitude",
        topology="chain",
        edges=[("John", "Kate", 1), ("Kate", "Jack", -1)],
    )
    assert sign_index(prior) == {
        "John": {"Kate": 1},
        "Kate": {"John": 1, "Jack": -1},
        "Jack": {"Kate": -1},
    }
    neutral = sign_index(explicit_neutral(THREE, "trust", "complete"))
    assert {s for peers in neutral.values() for s in peers.values()} == {0}


# -- CLI syntax ------------------------------------------------------------------------------


def test_parse_prior_forms() -> None:
    assert parse_prior("none", THREE) == no_prior()
    assert parse_prior("neutral:attitude:complete", THREE) == explicit_neutral(
        THREE, "attitude", "complete"
    )
    assert (
        parse_prior("attitude:complete:1", THREE)
        == signed_priors(THREE, "attitude", "complete", 1.0)[0]
    )
    third = parse_prior("trust:complete:1/3", THREE)
    assert third == signed_priors(THREE, "trust", "complete", 1 / 3)[0]
    explicit = parse_prior("attitude:chain:+,-", THREE)
    assert explicit.edges == [("John", "Kate", 1), ("Kate", "Jack", -1)]
    assert explicit.positivity == 0.5
    assert parse_prior(" Influence : Star : +1,-1 ", THREE).edges == [
        ("John", "Kate", 1),
        ("John", "Jack", -1),
    ]
    assert parse_prior("attitude:chain:0", THREE).positivity == 0.0


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "expected"),
        ("attitude", "expected"),
        ("attitude:complete", "expected"),
        ("love:complete:1", "unknown relation type"),
        ("attitude:ring:1", "unknown topology"),
        ("attitude:complete:0.5", "not reachable"),
        ("attitude:complete:x", "not a number"),
        ("attitude:complete:+,-", "2 sign"),
        ("neutral:attitude:ring", "unknown topology"),
        ("attitude:tree:+", "at least 3"),
    ],
)
def test_parse_prior_errors(text: str, match: str) -> None:
    names = ["A", "B"] if "tree" in text else THREE
    with pytest.raises(SocialsimError, match=match):
        parse_prior(text, names)


# -- integration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "attitude:complete:+,-,+",
        "trust:complete:0",
        "influence:complete:1",
        "neutral:trust:complete",
        "trust:chain:-,-",
    ],
)
def test_a_prior_never_changes_round_zero(mini: Scenario, text: str) -> None:
    """Relational priors Sec. 3.1: a prompt-level layer, not a starting favorability."""
    plain = Simulation.new(mini)
    primed = Simulation.new(mini, prior=parse_prior(text, MINI))
    assert primed.records[0].state == plain.records[0].state
    assert primed.state.agents["Ann"].relations["Bob"].fav == -0.3  # the scenario's


def test_no_prior_changes_nothing(mini: Scenario) -> None:
    plain = Simulation.new(mini)
    control = Simulation.new(mini, prior=no_prior())
    assert control.state == plain.state
    assert control.meta.prior == no_prior() and plain.meta.prior is None


def test_prior_with_unknown_agent_is_refused(mini: Scenario) -> None:
    with pytest.raises(SocialsimError, match="unknown agent 'John'"):
        Simulation.new(mini, prior=signed_priors(THREE, "trust", "complete", 1.0)[0])


def test_prior_is_saved_and_reloaded(mini: Scenario, store: SaveStore) -> None:
    prior = signed_priors(MINI, "influence", "complete", 2 / 3)[1]
    with Simulation.new(mini, store=store, prior=prior) as sim:
        run_id = sim.run_id
    meta = store.read_meta(run_id)
    assert meta.prior == prior
    assert store.read_round(run_id, 0).state.agents["Ann"].relations["Bob"].fav == -0.3
    with Simulation.resume(run_id, store) as again:
        assert again.contexts(1, [])["Cy"].prior == prior


async def test_contexts_carry_the_prior(mini: Scenario) -> None:
    prior = signed_priors(MINI, "attitude", "complete", 1.0)[0]
    sim = Simulation.new(mini, prior=prior)
    assert all(ctx.prior == prior for ctx in sim.contexts(1, []).values())
    await sim.step()
    assert sim.round == 1


@pytest.mark.parametrize("relation", ["attitude", "trust", "influence"])
async def test_explicit_neutral_plays_as_no_prior_offline(mini: Scenario, relation: str) -> None:
    """Explicit-Neutral states every edge with score 0: no sign for the offline model to act
    on, so it plays the very same rounds as No-Prior (only an LLM's prompt differs)."""
    plain = Simulation.new(mini, seed=3, prior=no_prior())
    neutral = Simulation.new(
        mini,
        seed=3,
        prior=explicit_neutral(MINI, relation, "complete"),  # type: ignore[arg-type]
    )
    await plain.run(4)
    await neutral.run(4)
    for a, b in zip(plain.records, neutral.records, strict=True):
        assert a.actions == b.actions
        assert a.state == b.state


# -- the LLM system prompt -------------------------------------------------------------------


def _ctx(scenario: Scenario, prior: Prior | None) -> AgentContext:
    sim = Simulation.new(scenario, prior=prior)
    return AgentContext(
        scenario=scenario,
        persona=scenario.agent("Ann"),
        view=AgentView.of(sim.state, "Ann"),
        round=1,
        events=[],
        prior=prior,
    )


def test_system_prompt_contains_the_block(mini: Scenario) -> None:
    prior = signed_priors(MINI, "trust", "complete", 1 / 3)[2]
    ctx = _ctx(mini, prior)
    block = render(prior, "Ann")
    assert block is not None
    system = prompts.decide(ctx)[0]["content"]
    assert system.endswith("\n\n" + block)
    assert system.startswith("Scenario: Mini committee.")
    assert "You and Bob distrust each other (trust score -1)." in system
    assert "Bob and Cy trust each other (trust score +1)." in system
    decision = Decision(urgency=5, mode=Mode.PUBLIC, target="all")
    assert prompts.speak(ctx, decision)[0]["content"].endswith(block)
    # the judges' prompts are not the agent's: no relational block there
    assert DEFINITIONS["trust"] not in prompts.emotion(ctx, [])[0]["content"]


def test_prompts_without_prior_are_unchanged(mini: Scenario) -> None:
    ctx = _ctx(mini, None)
    expected = (
        "Scenario: Mini committee. A three-person committee argues over a leaking roof.\n\n"
        "You are Ann, chair.\n"
        "Traits: not specified.\n"
        f"Style (dominant): {prompts.ARCHETYPE_STYLE[mini.agent('Ann').archetype]}\n"
        "Points you care about: we vote tonight; the budget is fixed\n"
        f"Others present: {', '.join(ctx.others)}."
    )  # no relational block closes it; the purpose's instructions are the user message's
    assert prompts.decide(ctx)[0]["content"] == expected
    control = _ctx(mini, no_prior())
    assert prompts.decide(control) == prompts.decide(ctx)
    decision = Decision(urgency=5, mode=Mode.PUBLIC, target="all")
    assert prompts.speak(control, decision) == prompts.speak(ctx, decision)
