"""Diagnose a run from its transcript, outcome and S/R trajectories (seed 000 Sec. 4).

Per agent: keep, or recast to another archetype, with a one-sentence rationale and the
trajectory evidence behind it. The offline diagnosis reads the trajectories by rule; an
LLM run is diagnosed by its judge model from the same evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, create_model

from ..scenario import Archetype, Scenario
from ..state import Mode, RoundRecord
from ..runmeta import TaskOutcome


class Evidence(BaseModel):
    """Trajectory facts about one agent over a run."""

    model_config = ConfigDict(extra="forbid")

    turns: int
    rounds: int
    emotion_start: float
    emotion_end: float
    emotion_low: float
    unshared: int
    opposed_by: int
    outgoing_fav: float
    incoming_fav: float
    incoming_change: float

    def line(self) -> str:
        """Readable summary for screens and prompts."""
        return (
            f"spoke {self.turns}/{self.rounds} rounds; S {self.emotion_start:.2f}→"
            f"{self.emotion_end:.2f} (low {self.emotion_low:.2f}); {self.unshared} facts "
            f"never voiced; opposed {self.opposed_by}×; fav out {self.outgoing_fav:+.2f}, "
            f"in {self.incoming_fav:+.2f} ({self.incoming_change:+.2f})"
        )


class Proposal(BaseModel):
    """Keep an agent's archetype (``archetype`` None) or recast it."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    current: Archetype
    archetype: Archetype | None = None
    rationale: str
    evidence: Evidence


def evidence(scenario: Scenario, records: Sequence[RoundRecord]) -> dict[str, Evidence]:
    """Trajectory evidence for every agent of a run."""
    said = " ".join(a.utterance.lower() for r in records for a in r.actions)
    first, last = records[0].state, records[-1].state
    out = {}
    for spec in scenario.agents:
        name = spec.name
        emotions = [r.state.agents[name].emotion for r in records]
        others = [n for n in scenario.names if n != name]

        def incoming(state, name=name, others=others) -> float:
            return sum(state.agents[o].relations[name].fav for o in others) / len(others)

        out[name] = Evidence(
            turns=sum(
                1
                for r in records
                for a in r.actions
                if a.speaker == name and a.mode is not Mode.SILENT
            ),
            rounds=len(records) - 1,
            emotion_start=emotions[0],
            emotion_end=emotions[-1],
            emotion_low=min(emotions),
            unshared=sum(1 for e in spec.evidence if e.rstrip(". ").lower() not in said),
            opposed_by=sum(
                1 for r in records for a in r.actions if a.target == name and a.stance == "oppose"
            ),
            outgoing_fav=sum(last.agents[name].relations[o].fav for o in others) / len(others),
            incoming_fav=incoming(last),
            incoming_change=incoming(last) - incoming(first),
        )
    return out


def diagnose_offline(
    scenario: Scenario, records: Sequence[RoundRecord], outcome: TaskOutcome | None, reached: bool
) -> list[Proposal]:
    """Rule-based diagnosis reading the trajectories."""
    proofs = evidence(scenario, records)
    proposals = []
    for spec in scenario.agents:
        ev = proofs[spec.name]
        new, why = _rule(spec.name, spec.archetype, ev, outcome, reached)
        proposals.append(
            Proposal(
                agent=spec.name, current=spec.archetype, archetype=new, rationale=why, evidence=ev
            )
        )
    return proposals


def _rule(
    name: str, arch: Archetype, ev: Evidence, outcome: TaskOutcome | None, reached: bool
) -> tuple[Archetype | None, str]:
    if reached:
        return None, f"The team reached its target; keep {name} {arch.value}."
    fell = ev.emotion_low <= ev.emotion_start - 0.1
    if ev.unshared and (fell or ev.turns <= ev.rounds // 2) and arch is not Archetype.ANALYTICAL:
        mood = f" and S fell from {ev.emotion_start:.2f} to {ev.emotion_low:.2f}" if fell else ""
        return Archetype.ANALYTICAL, (
            f"{name} held {ev.unshared} facts nobody heard and spoke in only {ev.turns} of "
            f"{ev.rounds} rounds{mood}: an analytical persona voices its evidence."
        )
    if ev.unshared >= 2 and arch in (Archetype.AGREEABLE, Archetype.DOMINANT):
        return Archetype.ANALYTICAL, (
            f"{name} spoke in {ev.turns} of {ev.rounds} rounds yet never voiced {ev.unshared} "
            "of its facts, echoing the common view: an analytical persona pools them."
        )
    hostile = ev.outgoing_fav <= -0.1 or (ev.turns >= ev.rounds and ev.incoming_change < -0.05)
    if arch is Archetype.DOMINANT and hostile:
        return Archetype.BALANCED, (
            f"{name} spoke in {ev.turns} of {ev.rounds} rounds and turned hostile (mean "
            f"outgoing fav {ev.outgoing_fav:+.2f}): a balanced persona leaves room for others."
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
    if ev.incoming_change <= -0.15 and arch is not Archetype.BALANCED:
        return Archetype.BALANCED, (
            f"Others cooled toward {name} ({ev.incoming_change:+.2f}): a balanced persona "
            "repairs the relationships."
        )
    return None, (
        f"{name} took part ({ev.turns}/{ev.rounds} rounds, S {ev.emotion_end:.2f}) "
        "without a failure pattern; keep."
    )


async def diagnose_llm(
    mind: Any,
    scenario: Scenario,
    records: Sequence[RoundRecord],
    outcome: TaskOutcome | None,
    reached: bool,
    key: str,
) -> list[Proposal]:
    """The judge model reads transcript, outcome and trajectories and proposes changes."""
    proofs = evidence(scenario, records)
    names = tuple(scenario.names)
    archetypes = tuple(a.value for a in Archetype)
    decision = create_model(
        "AgentDecision",
        agent=(Literal[names], ...),  # type: ignore[valid-type]
        action=(Literal["keep", "recast"], ...),
        archetype=(Literal[archetypes] | None, None),  # type: ignore[valid-type]
        rationale=(str, ...),
    )
    schema = create_model("Diagnosis", decisions=(list[decision], ...))
    transcript = "\n".join(
        f"R{r.round} {a.speaker}"
        + (f" →{a.target}" if a.target and a.target != "all" else "")
        + f" [{a.mode.value}]: {a.utterance}"
        for r in records[1:]
        for a in r.actions
        if a.mode is not Mode.SILENT
    )
    lines = [f"- {s.name} ({s.archetype.value}): {proofs[s.name].line()}" for s in scenario.agents]
    result = (
        "unknown"
        if outcome is None
        else f"utility {outcome.utility:g}"
        + (" (target reached)" if reached else " (below target)")
    )
    messages = [
        {
            "role": "system",
            "content": "[socialsim:diagnose]\nYou are the casting controller "
            "of a multi-agent team. From the transcript, the outcome and the emotional and "
            "relational trajectories, decide per agent whether to keep its persona or recast it "
            f"to one of: {', '.join(archetypes)}. Localise failures to agents (suppressed "
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
    out = await mind.client.structured(
        key=key,
        purpose="diagnose",
        agent="controller",
        model=mind.settings.judge,
        messages=messages,
        schema=schema,
        default=None,
    )
    fallback = {p.agent: p for p in diagnose_offline(scenario, records, outcome, reached)}
    if out is None:
        return list(fallback.values())
    chosen = {d.agent: d for d in out.decisions}
    proposals = []
    for spec in scenario.agents:
        d = chosen.get(spec.name)
        if d is None:
            proposals.append(fallback[spec.name])
            continue
        new = Archetype(d.archetype) if d.action == "recast" and d.archetype else None
        proposals.append(
            Proposal(
                agent=spec.name,
                current=spec.archetype,
                archetype=None if new == spec.archetype else new,
                rationale=d.rationale,
                evidence=proofs[spec.name],
            )
        )
    return proposals
