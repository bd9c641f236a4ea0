"""One task episode: build the scenario from a casting, play it, score the outputs by rule.

Ranking tasks: every agent ranks the items before and after the discussion; the team answer
is the Borda count of the final rankings. The negotiation: after the discussion the most
active speaker proposes a package and everyone votes. Each answer is a question to the
run's mind: the offline model answers by rule from who spoke, who heard it and whom the
listener trusts (:mod:`.rules`); an LLM answers seeing what the agent saw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, PrivateAttr, create_model, field_validator

from ...core.columns import AgentView
from ...core.scenario import Archetype, Scenario, parse_scenario
from ...core.state import Mode, RoundRecord
from ...minds import AgentContext, Mind, Question, prompts
from ...minds.base import PastRound
from ...minds.spec import OFFLINE, MindSpec
from ...round.simulation import Simulation
from ...saves.runmeta import ExperimentLink, TaskOutcome
from ...saves.store import SaveStore
from . import REF_PREFIX, rules, task_ref
from .scoring import Tiers, borda, l1_distance, pareto_frontier
from .spec import AGENTS, Task

A = TypeVar("A", bound=BaseModel)
TRAITS = {
    Archetype.BALANCED: ["fair-minded", "steady"],
    Archetype.DOMINANT: ["assertive", "confident", "impatient"],
    Archetype.ANALYTICAL: ["methodical", "evidence-driven"],
    Archetype.AGREEABLE: ["warm", "accommodating"],
    Archetype.RESERVED: ["quiet", "cautious"],
}


def task_scenario(task: Task, casting: Sequence[Archetype]) -> Scenario:
    """The four-agent scenario of a task under a casting; private knowledge never changes."""
    agents = []
    for name, archetype in zip(AGENTS, casting, strict=True):
        if task.kind == "ranking":
            shared = [f.text for f in task.facts if not f.holders]
            own = [f.text for f in task.facts if name in f.holders]
            goal = f"help the group agree on the best of: {', '.join(task.items[:6])}"
        else:
            # A negotiator's pitch is both what it argues and what it must get across.
            shared = own = list(task.agents[name].pitch)
            goal = "reach an agreement on all five issues that you can accept"
        agents.append(
            {
                "name": name,
                "role": task.roles[name],
                "archetype": archetype.value,
                "traits": TRAITS[archetype],
                "goal": goal,
                "talking_points": shared or [goal],
                "evidence": own,
            }
        )
    return parse_scenario(
        {
            "id": task.id,
            "title": task.title,
            "description": task.description,
            "rounds": task.rounds,
            "agents": agents,
            "events": [
                {"round": 1, "text": task.description},
                {
                    "round": task.rounds,
                    "text": "Last round of discussion before the final decision.",
                },
            ],
        },
        f"task {task.id}",
    )


# -- outcomes --------------------------------------------------------------------------------


def score(task: Task, outcome: TaskOutcome) -> float:
    """The task's utility, by rule (Sociodrama Sec. 4)."""
    if task.utility == "top1":
        return 1.0 if outcome.team_ranking and outcome.team_ranking[0] == task.answer else 0.0
    if task.utility == "neg-l1":
        return -float(l1_distance(outcome.team_ranking or [], task.expert_ranking))
    return 1.0 if outcome.settled and outcome.pareto else 0.0


def _negotiation_outcome(
    task: Task,
    proposer: str,
    package: tuple[int, ...],
    votes: dict[str, bool],
    base: dict[str, Any],
) -> TaskOutcome:
    tables = [[task.agents[n].scores[i.name] for i in task.issues] for n in AGENTS]
    outcome = TaskOutcome(
        **base,
        proposer=proposer,
        proposal={i.name: i.options[o] for i, o in zip(task.issues, package, strict=True)},
        votes=votes,
        settled=all(votes.values()),
        pareto=tuple(package) in pareto_frontier(tables),
    )
    return outcome


async def final_outcome(
    task: Task, sim: Simulation, before: dict[str, Tiers] | None, casting: Sequence[Archetype]
) -> TaskOutcome:
    """Individual answers after the discussion, asked of the run's mind, and the
    rule-computed utility."""
    base: dict[str, Any] = {"task": task.id, "casting": list(casting), "before": before}
    if task.kind == "ranking":
        after = await _rankings(task, sim, before=False)
        outcome = TaskOutcome(
            **base, after=after, team_ranking=borda(list(after.values()), task.items)
        )
    else:
        proposer = rules.proposer(sim)
        asked = await sim.mind.ask(_proposal_question(task, sim, proposer))
        package = tuple(i.options.index(getattr(asked, i.name)) for i in task.issues)
        votes = {
            n: (await sim.mind.ask(_vote_question(task, sim, n, proposer, package))).accept
            for n in AGENTS
        }
        outcome = _negotiation_outcome(task, proposer, package, votes, base)
    return outcome.model_copy(update={"utility": score(task, outcome)})


async def run_episode(
    task: Task,
    casting: Sequence[Archetype],
    *,
    seed: int = 0,
    mind: MindSpec | Mind = OFFLINE,
    store: SaveStore | None = None,
    name: str = "",
    ablation: bool = False,
    experiment: ExperimentLink | None = None,
) -> tuple[Simulation, TaskOutcome]:
    """Play one episode to its last round, then score it; the outcome is saved with the run.

    ``mind`` plays it (a spec, or a built mind) and gives the agents' final answers."""
    scenario = task_scenario(task, casting)
    sim = Simulation.new(
        scenario,
        seed=seed,
        mind=mind,
        store=store,
        name=name,
        scenario_ref=task_ref(task.id),
        ablation=ablation,
        experiment=experiment,
    )
    try:
        before = await _rankings(task, sim, before=True) if task.kind == "ranking" else None
        await sim.run()
        outcome = await final_outcome(task, sim, before, casting)
        sim.record_outcome(outcome)
        await sim.mind.aclose()
    finally:
        sim.close()
    return sim, outcome


# -- the agents' answers -----------------------------------------------------------------------


def _context(sim: Simulation, agent: str, records: Sequence[RoundRecord]) -> AgentContext:
    """What ``agent`` knows after ``records``: its state then and every turn it observed."""
    last = records[-1]
    history = [
        PastRound(
            round=r.round,
            events=[e for e in r.events if e.visible_to(agent)],
            actions=[
                a for a in r.actions if a.mode is Mode.PUBLIC or agent in (a.speaker, a.target)
            ],
        )
        for r in records[1:]
    ]
    return AgentContext(
        scenario=sim.scenario,
        persona=sim.scenario.agent(agent),
        view=AgentView.of(last.state, agent),
        round=last.round,
        events=[],
        total_rounds=sim.total_rounds,
        history=history,
        prior=sim.meta.prior,
    )


def _question(
    sim: Simulation,
    agent: str,
    purpose: str,
    text: str,
    schema: type[A],
    offline: Callable[[], A],
    fallback: Callable[[], A] | None = None,
    records: Sequence[RoundRecord] | None = None,
) -> Question[A]:
    """A question to ``agent`` seeing what it saw (by the end of ``records``: the whole run
    unless given)."""
    return Question(
        purpose=purpose,
        key=f"final:{purpose}:{agent}",
        agent=agent,
        messages=lambda: prompts.ask(_context(sim, agent, records or sim.records), text),
        schema=schema,
        offline=offline,
        fallback=fallback,
    )


class _Ranking(BaseModel):
    """A ranking, best first. The offline rule may tie items (its tiers); a model never does."""

    ranking: list[str]
    _tiers: Tiers | None = PrivateAttr(default=None)

    def tiers(self) -> Tiers:
        """The ranking as tiers."""
        return self._tiers or [[i] for i in self.ranking]


async def _rankings(task: Task, sim: Simulation, *, before: bool) -> dict[str, Tiers]:
    """Every agent's ranking, before the discussion (from round 0) or after it. Offline: by
    the facts it holds and, after the discussion, the facts it heard; a failed model ranks
    in file order."""
    items = tuple(task.items)
    ranking: Any = list[Literal[items]]  # type: ignore[valid-type]
    schema = create_model(
        "Ranking",
        __base__=_Ranking,
        ranking=(ranking, Field(min_length=len(items))),
        __validators__={"_perm": field_validator("ranking")(_permutation(items))},
    )
    text = f"Rank ALL the options, best first, using everything you know: {', '.join(items)}."

    def question(agent: str) -> Question[_Ranking]:
        def by_facts() -> _Ranking:
            tiers = rules.ranking(task, None if before else sim, agent)
            answer = schema(ranking=[i for tier in tiers for i in tier])
            answer._tiers = tiers
            return answer

        return _question(
            sim,
            agent,
            "rank",
            text,
            schema,
            by_facts,
            lambda: schema(ranking=list(items)),
            sim.records[:1] if before else None,
        )

    return {agent: (await sim.mind.ask(question(agent))).tiers() for agent in AGENTS}


def _proposal_question(task: Task, sim: Simulation, proposer: str) -> Question[BaseModel]:
    """The final package, one option per issue. Offline: the package best for the
    proposer's weighting of the tables, by whose pitch it heard and whom it trusts; a failed
    model proposes the middle options."""
    fields: dict[str, Any] = {i.name: (Literal[tuple(i.options)], ...) for i in task.issues}
    schema: type[BaseModel] = create_model("Proposal", **fields)

    def package(picks: Sequence[int]) -> BaseModel:
        return schema(**{i.name: i.options[o] for i, o in zip(task.issues, picks, strict=True)})

    return _question(
        sim,
        proposer,
        "propose",
        "Propose the final agreement: one option per issue that the whole group can accept.",
        schema,
        lambda: package(rules.proposal(task, sim, proposer)),
        lambda: package([1] * len(task.issues)),
    )


class _Vote(BaseModel):
    accept: bool


_VoteOut = create_model("Vote", __base__=_Vote)


def _vote_question(
    task: Task, sim: Simulation, agent: str, proposer: str, package: tuple[int, ...]
) -> Question[_Vote]:
    """Accept ``proposer``'s package or not. Offline: whether it reaches the agent's
    threshold on its own table, less its goodwill toward the proposer; a failed model
    rejects."""
    table = task.agents[agent]
    terms = "; ".join(
        f"{i.name}: {i.options[o]}" for i, o in zip(task.issues, package, strict=True)
    )
    mine = "; ".join(
        f"{i.name} {dict(zip(i.options, table.scores[i.name], strict=True))}" for i in task.issues
    )
    return _question(
        sim,
        agent,
        "vote",
        f"Final proposal, from {proposer}: {terms}. Your private points: {mine}; you need "
        f"at least {table.threshold:g} in total. Do you accept?",
        _VoteOut,
        lambda: _VoteOut(accept=rules.accepts(task, sim, agent, proposer, package)),
        lambda: _VoteOut(accept=False),
    )


def _permutation(items: tuple[str, ...]):
    def check(value: list[str]) -> list[str]:
        if sorted(value) != sorted(items):
            raise ValueError("rank every option exactly once")
        return value

    return check


# -- recasting a saved run ---------------------------------------------------------------------


def task_of(scenario_ref: str) -> Task | None:
    """The task a run plays (its scenario_ref is ``task:<id>``), if any."""
    from .spec import load_task

    if not scenario_ref.startswith(REF_PREFIX):
        return None
    return load_task(scenario_ref.removeprefix(REF_PREFIX))


def recast_scenario(sim: Simulation, casting: dict[str, Archetype]) -> Scenario:
    """The run's scenario with new archetypes; private knowledge and roles unchanged."""
    task = task_of(sim.meta.scenario_ref)
    if task is not None:
        return task_scenario(task, [casting.get(a.name, a.archetype) for a in sim.scenario.agents])
    agents = [
        a.model_copy(update={"archetype": casting.get(a.name, a.archetype)})
        for a in sim.scenario.agents
    ]
    return sim.scenario.model_copy(update={"agents": agents})


async def finish_task_run(sim: Simulation) -> TaskOutcome | None:
    """Score a finished task run that has no outcome yet (a run played in the app)."""
    task = task_of(sim.meta.scenario_ref)
    if task is None or not sim.finished or sim.meta.outcome is not None:
        return None
    casting = [a.archetype for a in sim.scenario.agents]
    before = await _rankings(task, sim, before=True) if task.kind == "ranking" else None
    outcome = await final_outcome(task, sim, before, casting)
    sim.record_outcome(outcome)
    return outcome
