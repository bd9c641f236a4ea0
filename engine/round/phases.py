"""A round's three phases (Sociodrama Sec. 3.3): every agent decides at once, the speakers
take their turns, and each agent judges what it observed while the rules apply the judgements."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from ..core.changes import RoundChanges
from ..core.columns import AgentView, StateColumns
from ..core.limits import MAX_UTTERANCE_CHARS
from ..core.played import PastActs, PlayedRound
from ..core.priors import Prior
from ..core.rules import (
    HISTORY_WINDOW,
    can_observe,
    observed_by,
    read_acts,
    relation_triggers,
    speaking_order,
    validate_action,
)
from ..core.scenario import Scenario
from ..core.state import (
    ALL,
    Action,
    Decision,
    ForcedAction,
    Mode,
    Pending,
    ScenarioEvent,
)
from ..errors import InterventionError
from ..minds import AgentContext, Mind
from ..minds.base import (
    DecidesAtOnce,
    Judgements,
    PastRound,
    RoundJudgements,
    RuleJudge,
    no_sink,
)
from ..saves.runmeta import ScheduledEvent
from .events import AgentDecided, AgentSpoke, SimEvent, StateUpdated, TokenStreamed
from .updates import round_changes


@dataclass(frozen=True)
class Stage:
    """What the phases of round ``t`` share: the run, the state it starts from, and where
    progress events go (an event built only while ``wants`` its kind: a listener takes it)."""

    run_id: str
    t: int
    scenario: Scenario
    columns: StateColumns
    ablation: bool
    players: Mapping[str, str]
    emit: Callable[[SimEvent], None]
    wants: Callable[[type[SimEvent]], bool]


def round_events(
    scenario: Scenario,
    t: int,
    narration: ScenarioEvent | None,
    scheduled: Iterable[ScheduledEvent],
    pending: Pending,
) -> list[ScenarioEvent]:
    """Round ``t``'s events: the game master's narration, the scenario's events for the
    round, the interventions scheduled for it and those queued."""
    return (
        ([narration] if narration else [])
        + [
            ScenarioEvent(text=e.text, private_to=e.private_to, tone=e.tone, about=e.about)
            for e in scenario.events_for(t)
        ]
        + [s.event for s in scheduled if s.round == t]
        + list(pending.events)
    )


def agent_contexts(
    scenario: Scenario,
    state: StateColumns,
    past: Iterable[PastActs],
    t: int,
    events: list[ScenarioEvent],
    total_rounds: int,
    prior: Prior | None,
    cache: dict[int, tuple[PastActs, dict[str, PastRound]]],
) -> dict[str, AgentContext]:
    """Context assembly (Sociodrama Sec. 3.3): what each agent may know in round ``t``, with
    what it observed of the ``past`` rounds (``cache``: :func:`past_round`'s, by round)."""
    names = scenario.names
    seen = [past_round(r, names, cache) for r in past if r.round > 0]
    index = state.index
    return {
        spec.name: AgentContext(
            scenario=scenario,
            persona=spec,
            view=AgentView(state, index[spec.name]),
            round=t,
            events=[e for e in events if e.visible_to(spec.name)],
            total_rounds=total_rounds,
            history=[by_agent[spec.name] for by_agent in seen],
            prior=prior,
        )
        for spec in scenario.agents
    }


def past_round(
    record: PastActs,
    names: Sequence[str],
    held: dict[int, tuple[PastActs, dict[str, PastRound]]],
) -> dict[str, PastRound]:
    """What each agent observed of an earlier round, read once while the round is in the
    contexts' window and kept in ``held`` (the agents' minds see the same objects from round
    to round, and agents who observed the same acts one list of them)."""
    kept = held.get(record.round)
    if kept is None or kept[0] is not record:
        lists: dict[tuple[int, ...], list[Action]] = {}
        shared: dict[int, list[Action]] = {}  # by list object: most agents share the public one
        actions = {}
        for me, seen in observed_by(record.actions, names).items():
            one = shared.get(id(seen))
            if one is None:
                one = shared[id(seen)] = lists.setdefault(tuple(map(id, seen)), seen)
            actions[me] = one
        kept = held[record.round] = (
            record,
            {
                me: PastRound(
                    round=record.round,
                    events=[e for e in record.events if e.visible_to(me)],
                    actions=actions[me],
                )
                for me in names
            },
        )
        for old in [k for k in held if k <= record.round - HISTORY_WINDOW]:
            del held[old]
    return kept[1]


async def decide(
    stage: Stage, minds: Mind, contexts: dict[str, AgentContext], forced: dict[str, ForcedAction]
) -> dict[str, Decision]:
    """Phase 1: every agent decides at once, on identical information; forced ones are given."""
    names, t = stage.scenario.names, stage.t
    known = frozenset(names)

    def decided(name: str, decision: Decision) -> Decision:
        """The valid decision, told to the listeners (an event built only for one)."""
        valid = _valid(name, decision, names, known)
        if stage.wants(AgentDecided):
            stage.emit(
                AgentDecided(
                    run_id=stage.run_id, round=t, agent=name, decision=valid, forced=name in forced
                )
            )
        return valid

    raw: dict[str, Decision] = {
        name: decided(
            name,
            Decision(
                urgency=f.urgency,
                mode=f.mode,
                target=f.target,
                stance=f.stance or "neutral",
                intent="forced by the user",
            ),
        )
        for name, f in forced.items()
    }
    free = [n for n in names if n not in forced]
    if isinstance(minds, DecidesAtOnce):  # one call decides for everyone
        together = await minds.decide_all([contexts[n] for n in free])
        raw |= {n: decided(n, d) for n, d in zip(free, together, strict=True)}
    else:  # each decision told as its reply arrives

        async def decide_one(name: str) -> Decision:
            return decided(name, await minds.decide(contexts[name]))

        raw.update(zip(free, await asyncio.gather(*map(decide_one, free)), strict=True))
    return {name: raw[name] for name in names}


async def take_turns(
    stage: Stage,
    minds: Mind,
    contexts: dict[str, AgentContext],
    decisions: dict[str, Decision],
    forced: dict[str, ForcedAction],
) -> dict[str, Action]:
    """Phase 2: speakers in descending urgency, each hearing the earlier turns it can observe
    (a speaker's action is made once it has spoken)."""
    names, players, t = stage.scenario.names, stage.players, stage.t
    actions: dict[str, Action] = {}
    spoken: list[Action] = []
    public: list[Action] = []  # what everyone hears
    private: set[str] = set()  # the parties to private turns, who hear more
    if stage.ablation:  # fixed speaking order: scenario order, silent skipped
        turns = [n for n in names if decisions[n].mode is not Mode.SILENT]
    else:
        turns = speaking_order(decisions, names)
    yielded = perf_counter()
    for me in turns:
        if me in forced:
            text = forced[me].utterance
        else:
            heard = [a for a in spoken if can_observe(a, me)] if me in private else public[:]
            ctx = contexts[me].hearing(heard)

            def sink(piece: str, me: str = me) -> None:
                if stage.wants(TokenStreamed):  # an event a word: built only for a listener
                    stage.emit(TokenStreamed(run_id=stage.run_id, round=t, agent=me, text=piece))

            words = sink if stage.wants(TokenStreamed) else no_sink
            text = (await minds.speak(ctx, decisions[me], words))[:MAX_UTTERANCE_CHARS]
        if text.strip():
            said = {"utterance": text.strip(), "order": len(spoken) + 1}
            action = actions[me] = _action(me, decisions[me], forced, players, said)
            spoken.append(action)
            if action.mode is Mode.PUBLIC:
                public.append(action)
            else:
                private.update((me, action.target or ""))
        else:  # a failed or empty utterance (words that were not speech) is silence
            silence = {"mode": Mode.SILENT, "target": None, "intent": "(no utterance: silent)"}
            action = actions[me] = _action(me, decisions[me], forced, players, silence)
        if stage.wants(AgentSpoke):  # the turn is over, its words streamed or not
            stage.emit(AgentSpoke(run_id=stage.run_id, round=t, action=action))
        if perf_counter() - yielded >= YIELD_AFTER:  # others' turn on the loop
            await asyncio.sleep(0)
            yielded = perf_counter()
    return {
        n: actions[n] if n in actions else _action(n, decisions[n], forced, players) for n in names
    }


#: Seconds of turns after which the turn loop lets the event loop's other tasks run (a
#: mind that never waits, as the offline one, would hold the loop for the whole phase; a
#: pass of the loop after every turn costs as much as an offline turn at 100 agents).
YIELD_AFTER = 0.005


async def judge_and_apply(
    stage: Stage,
    mind: Mind,
    contexts: dict[str, AgentContext],
    events: list[ScenarioEvent],
    actions: dict[str, Action],
) -> PlayedRound:
    """Phase 3: each agent judges only what it observed; the rules clip and apply it."""
    names, t, before = stage.scenario.names, stage.t, stage.columns
    spoken = sorted((a for a in actions.values() if a.order), key=lambda a: a.order or 0)
    if stage.ablation:  # no emotion, relation or need updates
        changes = RoundChanges.none(t, before.names)
    else:
        observed = observed_by(spoken, names)
        ctxs = [contexts[n].hearing(observed[n]) for n in names]
        if isinstance(mind, RuleJudge):  # rules never wait: no coroutine per judge
            judged = mind.judge_round(ctxs, read_acts(spoken))
        else:  # one concurrent wave: U_S, U_R and the needs judge do not depend on each other
            count = len(ctxs)
            results: list[Any] = await asyncio.gather(
                *(mind.judge_emotion(c, observed[c.name]) for c in ctxs),
                *(mind.judge_relations(c, relation_triggers(c.name, spoken, names)) for c in ctxs),
                *(mind.judge_needs(c, observed[c.name]) for c in ctxs),
            )
            moods, verdicts, needs = (results[k * count : (k + 1) * count] for k in range(3))
            judged = RoundJudgements.of(
                [
                    Judgements(d_s, {o: j.edge() for o, j in d_r.items()}, d_n)
                    for d_s, d_r, d_n in zip(moods, verdicts, needs, strict=True)
                ],
                before.index,
            )
        thetas = [actions[n].theta for n in names]
        changes = round_changes(before, t, stage.scenario.memory_size, judged, thetas)
    after = before.apply(changes)
    if not stage.ablation:
        stage.emit(StateUpdated(run_id=stage.run_id, round=t, changes=changes))
    return PlayedRound(t, events, [actions[n] for n in names], changes, after)


def _action(
    speaker: str,
    decision: Decision,
    forced: Mapping[str, ForcedAction],
    players: Mapping[str, str],
    turn: Mapping[str, Any] | None = None,
) -> Action:
    """The action of a decision, with what its ``turn`` made of it (the utterance and its
    order, or silence); a person playing the agent is its actor unless the user forced its
    action."""
    fields: dict[str, Any] = {
        "speaker": speaker,
        "urgency": decision.urgency,
        "mode": decision.mode,
        "target": decision.target,
        "intent": decision.intent,
        "stance": decision.stance,
        "forced": speaker in forced,
        "theta": decision.theta,
    }
    if speaker in players and speaker not in forced:
        fields |= {"actor": "human", "player": players[speaker]}
    return Action(**fields | dict(turn or {}))


def _valid(name: str, decision: Decision, names: Sequence[str], known: frozenset[str]) -> Decision:
    """A decision with an invalid mode/target combination becomes silence (``known``: the
    names, for the common cases checked at once)."""
    mode, target = decision.mode, decision.target
    if (
        (mode is Mode.SILENT and target is None)
        or (mode is Mode.PUBLIC and target == ALL)
        or (mode is not Mode.SILENT and target not in (name, ALL) and target in known)
    ):
        return decision
    try:
        validate_action(name, decision.mode, decision.target, names)
    except InterventionError:
        return Decision(
            urgency=decision.urgency, mode=Mode.SILENT, intent="(invalid action dropped)"
        )
    return decision
