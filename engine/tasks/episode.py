"""One task episode: build the scenario from a casting, play it, score the outputs by rule.

Ranking tasks: every agent ranks the items before and after the discussion; the team answer
is the Borda count of the final rankings. The negotiation: after the discussion the most
active speaker proposes a package and everyone votes. With the offline model, an agent's
ranking or vote follows from the facts it holds or heard (facts heard from someone it
distrusts count half); with an LLM, each agent is asked, seeing what it saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model, field_validator

from ..minds.base import AgentContext, PastRound
from ..scenario import Archetype, Scenario, parse_scenario
from ..simulation import Simulation
from ..state import Mode
from ..store import SaveStore
from ..runmeta import ExperimentLink, TaskOutcome
from .scoring import (
    Tiers,
    agreements,
    borda,
    l1_distance,
    package_score,
    pareto_frontier,
    tiers_from_scores,
)
from .spec import AGENTS, Task

DISTRUST_AT = -0.3
TRAITS = {
    Archetype.BALANCED: ["fair-minded", "steady"],
    Archetype.DOMINANT: ["assertive", "confident", "impatient"],
    Archetype.ANALYTICAL: ["methodical", "evidence-driven"],
    Archetype.AGREEABLE: ["warm", "accommodating"],
    Archetype.RESERVED: ["quiet", "cautious"],
}
#: How much a proposer weighs its own table against the others' (negotiation, offline).
SELF_WEIGHT = {
    Archetype.DOMINANT: 3.0,
    Archetype.BALANCED: 1.5,
    Archetype.ANALYTICAL: 1.2,
    Archetype.AGREEABLE: 0.8,
    Archetype.RESERVED: 1.2,
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


# -- what each agent knows ---------------------------------------------------------------------


def _heard(sim: Simulation, agent: str) -> list[tuple[str, str]]:
    """(speaker, utterance) of every turn ``agent`` observed, own turns included."""
    out = []
    for record in sim.records[1:]:
        for a in record.actions:
            if a.mode is Mode.PUBLIC or (a.mode is Mode.PRIVATE and agent in (a.speaker, a.target)):
                out.append((a.speaker, a.utterance.lower()))
    return out


def fact_weights(task: Task, sim: Simulation | None, agent: str) -> dict[str, float]:
    """Item scores from the facts ``agent`` holds and, after a run, the facts it heard."""
    trust = sim.state.agents[agent].relations if sim else {}
    heard = _heard(sim, agent) if sim else []
    scores = dict.fromkeys(task.items, 0.0)
    for fact in task.facts:
        if task.knows(agent, fact):
            scores[fact.item] += fact.weight
            continue
        speakers = [s for s, text in heard if fact.text.rstrip(". ").lower() in text]
        if speakers:
            believed = any(s == agent or trust[s].fav > DISTRUST_AT for s in speakers)
            scores[fact.item] += fact.weight * (1.0 if believed else 0.5)
    return scores


def _ranking(task: Task, sim: Simulation | None, agent: str) -> Tiers:
    return tiers_from_scores(task.items, fact_weights(task, sim, agent))


def _heard_pitch(task: Task, sim: Simulation, agent: str, other: str) -> bool:
    pitches = [p.lower() for p in task.agents[other].pitch]
    return any(s == other and any(p in text for p in pitches) for s, text in _heard(sim, agent))


def _offline_proposal(task: Task, sim: Simulation, proposer: str) -> tuple[int, ...]:
    tables = {n: [task.agents[n].scores[i.name] for i in task.issues] for n in AGENTS}
    rels = sim.state.agents[proposer].relations
    weights = {}
    for name in AGENTS:
        if name == proposer:
            weights[name] = SELF_WEIGHT[sim.scenario.agent(name).archetype]
            continue
        known = 1.0 if _heard_pitch(task, sim, proposer, name) else 0.3
        weights[name] = known * (0.5 if rels[name].fav <= DISTRUST_AT else 1.0)
    return max(
        agreements(len(task.issues)),
        key=lambda a: sum(w * package_score(tables[n], a) for n, w in weights.items()),
    )


def _proposer(sim: Simulation) -> str:
    turns = dict.fromkeys(AGENTS, 0)
    for record in sim.records[1:]:
        for a in record.actions:
            if a.mode is Mode.PUBLIC:
                turns[a.speaker] += 1
    return max(AGENTS, key=lambda n: turns[n])


# -- outcomes --------------------------------------------------------------------------------


def score(task: Task, outcome: TaskOutcome) -> float:
    """The task's utility, by rule (seed 000 Sec. 4)."""
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
    """Individual answers after the discussion and the rule-computed utility."""
    base: dict[str, Any] = {"task": task.id, "casting": list(casting), "before": before}
    asker = _LLMAsker(sim) if sim.meta.llm is not None else None
    if task.kind == "ranking":
        if asker:
            after = {n: [[i] for i in await asker.rank(task, n)] for n in AGENTS}
        else:
            after = {n: _ranking(task, sim, n) for n in AGENTS}
        outcome = TaskOutcome(
            **base, after=after, team_ranking=borda(list(after.values()), task.items)
        )
    else:
        proposer = _proposer(sim)
        if asker:
            package = await asker.propose(task, proposer)
            votes = {n: await asker.vote(task, n, package) for n in AGENTS}
        else:
            package = _offline_proposal(task, sim, proposer)
            votes = {
                n: package_score([task.agents[n].scores[i.name] for i in task.issues], package)
                >= task.agents[n].threshold
                for n in AGENTS
            }
        outcome = _negotiation_outcome(task, proposer, package, votes, base)
    return outcome.model_copy(update={"utility": score(task, outcome)})


async def run_episode(
    task: Task,
    casting: Sequence[Archetype],
    *,
    seed: int = 0,
    model: str = "offline",
    llm: Any = None,
    store: SaveStore | None = None,
    name: str = "",
    ablation: bool = False,
    experiment: ExperimentLink | None = None,
) -> tuple[Simulation, TaskOutcome]:
    """Play one episode to its last round, then score it; the outcome is saved with the run."""
    scenario = task_scenario(task, casting)
    sim = Simulation.new(
        scenario,
        seed=seed,
        model=model,
        llm=llm,
        store=store,
        name=name,
        scenario_ref=f"task:{task.id}",
        ablation=ablation,
        experiment=experiment,
    )
    try:
        before = None
        if task.kind == "ranking":
            if sim.meta.llm is not None:
                asker = _LLMAsker(sim)
                before = {n: [[i] for i in await asker.rank(task, n)] for n in AGENTS}
            else:
                before = {n: _ranking(task, None, n) for n in AGENTS}
        await sim.run()
        outcome = await final_outcome(task, sim, before, casting)
        sim.record_outcome(outcome)
        await sim.mind.aclose()
    finally:
        sim.close()
    return sim, outcome


# -- LLM answers -----------------------------------------------------------------------------


class _LLMAsker:
    """Asks LLM agents for their ranking, proposal and vote, seeing what they saw."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = sim.mind.client  # type: ignore[attr-defined]

    def _context(self, agent: str) -> AgentContext:
        sim = self.sim
        history = [
            PastRound(
                round=r.round,
                events=[e for e in r.events if e.visible_to(agent)],
                actions=[
                    a for a in r.actions if a.mode is Mode.PUBLIC or agent in (a.speaker, a.target)
                ],
            )
            for r in sim.records[1:]
        ]
        return AgentContext(
            scenario=sim.scenario,
            persona=sim.scenario.agent(agent),
            state=sim.state.agents[agent],
            round=sim.round,
            events=[],
            history=history,
        )

    async def _ask(
        self, agent: str, purpose: str, task_text: str, schema: type[BaseModel], default: BaseModel
    ) -> Any:
        from ..minds import prompts

        ctx = self._context(agent)
        messages = prompts.ask(ctx, purpose, task_text)
        return await self.client.structured(
            key=f"final:{purpose}:{agent}",
            purpose=purpose,
            agent=agent,
            model=self.sim.meta.llm.model_for(agent),
            messages=messages,
            schema=schema,
            default=default,
        )

    async def rank(self, task: Task, agent: str) -> list[str]:
        items = tuple(task.items)
        schema = create_model(
            "Ranking",
            ranking=(list[Literal[items]], Field(min_length=len(items))),  # type: ignore[valid-type]
            __validators__={"_perm": field_validator("ranking")(_permutation(items))},
        )
        out = await self._ask(
            agent,
            "rank",
            f"Rank ALL the options, best first, using everything you know: {', '.join(items)}.",
            schema,
            schema(ranking=list(items)),
        )
        return list(out.ranking)

    async def propose(self, task: Task, agent: str) -> tuple[int, ...]:
        fields = {i.name: (Literal[tuple(i.options)], ...) for i in task.issues}  # type: ignore[valid-type]
        schema = create_model("Proposal", **fields)
        default = schema(**{i.name: i.options[1] for i in task.issues})
        out = await self._ask(
            agent,
            "propose",
            "Propose the final agreement: one option per issue that the whole group can accept.",
            schema,
            default,
        )
        return tuple(i.options.index(getattr(out, i.name)) for i in task.issues)

    async def vote(self, task: Task, agent: str, package: tuple[int, ...]) -> bool:
        terms = "; ".join(
            f"{i.name}: {i.options[o]}" for i, o in zip(task.issues, package, strict=True)
        )
        table = task.agents[agent]
        mine = "; ".join(
            f"{i.name} {dict(zip(i.options, table.scores[i.name], strict=True))}"
            for i in task.issues
        )
        schema = create_model("Vote", accept=(bool, ...))
        out = await self._ask(
            agent,
            "vote",
            f"Final proposal: {terms}. Your private points: {mine}; you need "
            f"at least {table.threshold:g} in total. Do you accept?",
            schema,
            schema(accept=False),
        )
        return bool(out.accept)


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

    return (
        load_task(scenario_ref.removeprefix("task:")) if scenario_ref.startswith("task:") else None
    )


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
    before = (
        {n: _ranking(task, None, n) for n in AGENTS}
        if task.kind == "ranking" and sim.meta.llm is None
        else None
    )
    outcome = await final_outcome(task, sim, before, casting)
    sim.record_outcome(outcome)
    return outcome
