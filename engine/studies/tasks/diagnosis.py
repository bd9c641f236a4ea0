"""Diagnose a run from its transcript, outcome and S/R trajectories (Sociodrama Sec. 4).

Per agent: keep, or recast to another archetype, with a one-sentence rationale and the
trajectory evidence behind it. The offline diagnosis reads the trajectories by rule; an
LLM judge model diagnoses from the transcript and the same evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, create_model

from ...core.columns import StateColumns
from ...core.scenario import Archetype, Scenario
from ...core.state import Action, Mode
from ...minds import Mind, Question
from ...round.simulation import Simulation
from ...saves.history import History
from ...saves.runmeta import TaskOutcome
from .episode import task_of
from .spec import target

#: A memory of an exchange above small talk (the judge's importance, 1-10): being told a
#: fact, backed or attacked, as opposed to being addressed with the rest of the group.
NOTABLE = 3


class Evidence(BaseModel):
    """What the controller knows of one agent after a run: the transcript (turns, attacks)
    and, when the run recorded them, the S and R trajectories. Under the ablation nothing
    is recorded, so the trajectory fields are None: no evidence, not evidence of calm."""

    model_config = ConfigDict(extra="forbid")

    turns: int
    rounds: int
    attacks: int
    opposed_by: int
    emotion_start: float | None = None
    emotion_end: float | None = None
    emotion_low: float | None = None
    #: How much the agent's words registered with the others: the mean, over the others,
    #: of the highest importance (1-10) their relation memories gave an exchange with it.
    registered: float | None = None
    outgoing_fav: float | None = None
    incoming_fav: float | None = None
    incoming_change: float | None = None

    @property
    def traced(self) -> bool:
        """Whether the run recorded S and R trajectories (not under the ablation)."""
        return self.registered is not None

    @property
    def quiet(self) -> bool:
        """Spoke in at most half the rounds."""
        return self.turns <= self.rounds // 2

    def line(self) -> str:
        """Readable summary for screens and prompts."""
        said = f"spoke {self.turns}/{self.rounds} rounds; attacked {self.attacks}×, opposed " + (
            f"{self.opposed_by}×"
        )
        if not self.traced:
            return f"{said}; no S or R trajectories recorded"
        return (
            f"{said}; S {self.emotion_start:.2f}→{self.emotion_end:.2f} (low "
            f"{self.emotion_low:.2f}); registered {self.registered:.1f}/10 with the others; "
            f"fav out {self.outgoing_fav:+.2f}, in {self.incoming_fav:+.2f} "
            f"({self.incoming_change:+.2f})"
        )


class Proposal(BaseModel):
    """Keep an agent's archetype (``archetype`` None) or recast it."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    current: Archetype
    archetype: Archetype | None = None
    rationale: str
    evidence: Evidence


def evidence(scenario: Scenario, records: History) -> dict[str, Evidence]:
    """Evidence for every agent of a run: its transcript, and its S and R trajectories if
    the run recorded any emotion or relation update. ``records`` is read once, round by
    round, as columns: no model of a state or an edge is built (at 300 agents and 30 rounds
    building them took 100 s)."""
    names = scenario.names
    spoken: list[Action] = []
    emotions: dict[str, list[float]] = {name: [] for name in names}
    peak: dict[tuple[str, str], int] = {}  # (listener, agent): the most important memory
    traced = False
    first = last = None
    for log, state, changes in records.values(memory=False):
        first = state if first is None else first
        last = state
        at = state.index
        for name, trace in emotions.items():
            trace.append(state.emotion[at[name]])
        if first is state:  # round 0: the start, before anything was said or changed
            continue
        spoken += (a for a in log.actions if a.mode is not Mode.SILENT)
        traced = traced or bool(changes.source.size or changes.emotions)
        edges = zip(
            changes.source.tolist(),
            changes.target.tolist(),
            changes.importance.tolist(),
            strict=True,
        )
        for i, j, importance in edges:
            edge = (changes.names[i], changes.names[j])
            peak[edge] = max(peak.get(edge, 1), importance)
    assert first is not None and last is not None, "a run has round 0 at least"
    out = {}
    for name in names:
        others = [n for n in names if n != name]
        transcript = {
            "turns": sum(1 for a in spoken if a.speaker == name),
            "rounds": len(emotions[name]) - 1,
            "attacks": sum(1 for a in spoken if a.speaker == name and a.stance == "oppose"),
            "opposed_by": sum(1 for a in spoken if a.target == name and a.stance == "oppose"),
        }
        if not traced:
            out[name] = Evidence(**transcript)
            continue
        trace = emotions[name]
        out[name] = Evidence(
            **transcript,
            emotion_start=trace[0],
            emotion_end=trace[-1],
            emotion_low=min(trace),
            registered=sum(peak.get((o, name), 1) for o in others) / len(others),
            outgoing_fav=_mean_fav(last, name, others, outgoing=True),
            incoming_fav=_mean_fav(last, name, others),
            incoming_change=_mean_fav(last, name, others) - _mean_fav(first, name, others),
        )
    return out


def _mean_fav(state: StateColumns, name: str, others: list[str], outgoing: bool = False) -> float:
    """The mean favorability of ``others`` toward ``name`` (``outgoing``: of ``name``
    toward them), summed in ``others``' order."""
    at = state.index
    k = at[name]
    line = (state.fav[k] if outgoing else state.fav[:, k]).tolist()
    return sum(line[at[o]] for o in others) / len(others)


def diagnose_offline(
    scenario: Scenario, records: History, outcome: TaskOutcome | None, reached: bool
) -> list[Proposal]:
    """Rule-based diagnosis from the transcript, the outcome and, when recorded, the S and
    R trajectories. The controller knows each agent's archetype and whether its role holds
    private knowledge, not what that knowledge is: whose knowledge failed to reach the team
    it reads from the trajectories (who withdrew, whose words registered with the others)."""
    proofs = evidence(scenario, records)
    proposals = []
    for spec in scenario.agents:
        ev = proofs[spec.name]
        new, why = _rule(spec.name, spec.archetype, bool(spec.evidence), ev, outcome, reached)
        proposals.append(
            Proposal(
                agent=spec.name, current=spec.archetype, archetype=new, rationale=why, evidence=ev
            )
        )
    return proposals


def _rule(
    name: str,
    arch: Archetype,
    holder: bool,
    ev: Evidence,
    outcome: TaskOutcome | None,
    reached: bool,
) -> tuple[Archetype | None, str]:
    if reached:
        return None, f"The team reached its target; keep {name} {arch.value}."
    spoke = f"{name} spoke in {ev.turns} of {ev.rounds} rounds"
    if ev.traced and holder and arch is not Archetype.ANALYTICAL:
        assert ev.emotion_low is not None and ev.emotion_start is not None
        fell = ev.emotion_low <= ev.emotion_start - 0.1
        if ev.quiet and fell:
            return Archetype.ANALYTICAL, (
                f"{spoke} and its S fell from {ev.emotion_start:.2f} to {ev.emotion_low:.2f}: "
                "it withdrew with its knowledge; an analytical persona keeps its evidence on "
                "the table."
            )
        assert ev.registered is not None
        if ev.quiet and ev.registered >= NOTABLE:
            return Archetype.BALANCED, (
                f"{spoke}; what it said registered with the others ({ev.registered:.1f}/10), "
                "so its words carry: a balanced persona takes a fuller part."
            )
        if ev.registered < NOTABLE:
            return Archetype.ANALYTICAL, (
                f"{spoke}, and nothing it said registered with the others beyond small talk "
                f"({ev.registered:.1f}/10): its knowledge never reached the team; an "
                "analytical persona voices its evidence."
            )
    if not ev.traced and ev.quiet and arch is not Archetype.BALANCED:
        return Archetype.BALANCED, (
            f"{spoke}; with no S or R trajectories to tell withdrawal from neutral silence, "
            "a balanced persona takes a fuller part in the discussion."
        )
    hostile = ev.traced and (
        (ev.outgoing_fav or 0.0) <= -0.1
        or (not ev.quiet and ev.turns >= ev.rounds and (ev.incoming_change or 0.0) < -0.05)
    )
    if arch is Archetype.DOMINANT and (hostile or 2 * ev.attacks >= ev.rounds):
        why = (
            f"turned hostile (mean outgoing fav {ev.outgoing_fav:+.2f})"
            if hostile
            else f"attacked the others {ev.attacks}×"
        )
        return Archetype.BALANCED, (
            f"{spoke} and {why}: a balanced persona leaves room for others."
        )
    if outcome is not None and outcome.votes is not None:
        if outcome.votes.get(name) is False and arch in (Archetype.DOMINANT, Archetype.RESERVED):
            return Archetype.AGREEABLE, (
                f"{name} rejected the final package: an agreeable persona looks for a deal "
                "the others can accept."
            )
        if (
            outcome.proposer == name
            and outcome.settled
            and not outcome.pareto
            and arch is not Archetype.ANALYTICAL
        ):
            return Archetype.ANALYTICAL, (
                f"{name} proposed a package that leaves value on the table: an analytical "
                "persona searches the trade-offs."
            )
    if (ev.incoming_change or 0.0) <= -0.15 and arch is not Archetype.BALANCED:
        return Archetype.BALANCED, (
            f"Others cooled toward {name} ({ev.incoming_change:+.2f}): a balanced persona "
            "repairs the relationships."
        )
    return None, f"{spoke} without a failure pattern; keep."


class _Decision(BaseModel):
    agent: str
    action: Literal["keep", "recast"]
    archetype: str | None = None
    rationale: str


class _Diagnosis(BaseModel):
    decisions: list[_Decision]


async def diagnose(
    mind: Mind,
    scenario: Scenario,
    records: History,
    outcome: TaskOutcome | None,
    reached: bool,
    key: str,
) -> list[Proposal]:
    """Keep or recast each agent, asked of ``mind``'s judge: the offline mind reads the
    trajectories by rule (:func:`diagnose_offline`); a judge model reads transcript, outcome
    and trajectories, and an agent it leaves out gets the rule's proposal."""
    rule = diagnose_offline(scenario, records, outcome, reached)
    out = await mind.ask(_diagnosis_question(scenario, records, outcome, reached, key, rule))
    chosen = {d.agent: d for d in out.decisions}
    proposals = []
    for spec, fallback in zip(scenario.agents, rule, strict=True):
        d = chosen.get(spec.name)
        if d is None:
            proposals.append(fallback)
            continue
        new = Archetype(d.archetype) if d.action == "recast" and d.archetype else None
        proposals.append(
            Proposal(
                agent=spec.name,
                current=spec.archetype,
                archetype=None if new == spec.archetype else new,
                rationale=d.rationale,
                evidence=fallback.evidence,
            )
        )
    return proposals


def _diagnosis_question(
    scenario: Scenario,
    records: History,
    outcome: TaskOutcome | None,
    reached: bool,
    key: str,
    rule: list[Proposal],
) -> Question[_Diagnosis]:
    """The judge's diagnosis of a run; offline, the rule's proposals (``rule``)."""
    archetypes = tuple(a.value for a in Archetype)
    agent: Any = Literal[tuple(scenario.names)]
    archetype: Any = Literal[archetypes] | None
    decision = create_model(
        "AgentDecision", __base__=_Decision, agent=(agent, ...), archetype=(archetype, None)
    )
    schema = create_model("Diagnosis", __base__=_Diagnosis, decisions=(list[decision], ...))

    def messages() -> list[dict[str, str]]:
        proofs = {p.agent: p.evidence for p in rule}
        transcript = "\n".join(
            f"R{r.round} {a.speaker}"
            + (f" →{a.target}" if a.target and a.target != "all" else "")
            + f" [{a.mode.value}]: {a.utterance}"
            for r in records.logs(1, relations=False)
            for a in r.actions
            if a.mode is not Mode.SILENT
        )
        lines = [
            f"- {s.name} ({s.archetype.value}): {proofs[s.name].line()}" for s in scenario.agents
        ]
        result = (
            "unknown"
            if outcome is None
            else f"utility {outcome.utility:g}"
            + (" (target reached)" if reached else " (below target)")
        )
        return [
            {
                "role": "system",
                "content": "You are the casting controller "
                "of a multi-agent team. From the transcript, the outcome and the emotional and "
                "relational trajectories, decide per agent whether to keep its persona or recast "
                f"it to one of: {', '.join(archetypes)}. Localise failures to agents (suppressed "
                "information, unhelpful dominance, withdrawal after dismissal) and give a "
                "one-sentence rationale each.",
            },
            {
                "role": "user",
                "content": f"Outcome: {result}\nTrajectories:\n"
                + "\n".join(lines)
                + f"\nTranscript:\n{transcript}",
            },
        ]

    def by_rule() -> _Diagnosis:
        return schema(
            decisions=[
                decision(
                    agent=p.agent,
                    action="recast" if p.archetype else "keep",
                    archetype=p.archetype.value if p.archetype else None,
                    rationale=p.rationale,
                )
                for p in rule
            ]
        )

    return Question(
        purpose="diagnose",
        key=key,
        agent="controller",
        messages=messages,
        schema=schema,
        offline=by_rule,
        judge=True,
    )


@dataclass(frozen=True)
class RunDiagnosis:
    """A saved run's rule-based diagnosis, as the app offers it for recasting."""

    headline: str
    proposals: list[Proposal]


def diagnose_run(sim: Simulation) -> RunDiagnosis:
    """Diagnose a run where it stands, by rule from its S and R trajectories (its task
    target decides whether the outcome, if any, was reached)."""
    outcome = sim.meta.outcome
    task = task_of(sim.meta.scenario_ref)
    reached = outcome is not None and task is not None and outcome.utility >= target(task)
    result = "" if outcome is None else f" — utility {outcome.utility:g}"
    return RunDiagnosis(
        headline=f"Diagnosis of {sim.run_id} after round {sim.round}{result} "
        "(rule-based, from the S and R trajectories)",
        proposals=diagnose_offline(sim.scenario, sim.records, outcome, reached),
    )
