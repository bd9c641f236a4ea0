"""The round loop (Sociodrama Sec. 3.3) and the run-control API of engine.Simulation."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable

import pytest

from engine import (
    ALL,
    ForcedAction,
    InterventionError,
    Mode,
    RunFinishedError,
    SaveStore,
    Simulation,
    SocialsimError,
    Status,
    load_library,
)
from engine.core.scenario import Scenario, parse_scenario
from engine.core.state import Action, Decision
from engine.minds.base import AgentContext, RelationJudgement
from engine.minds.spec import OFFLINE
from engine.round.events import (
    AgentDecided,
    AgentSpoke,
    EngineError,
    RoundEnded,
    RoundStarted,
    RunFinished,
    RunPaused,
    StateUpdated,
    TokenStreamed,
)

# -- a test double of the Mind interface ---------------------------------------------------


class ScriptedMind:
    """Follows a fixed plan and records every context the engine hands it."""

    spec = OFFLINE
    label = "scripted test mind"
    judge_mode = "scripted"

    def __init__(self, plan: dict[str, Decision]) -> None:
        self.plan = plan
        #: called once from inside phase 1, like a UI acting while a round is in flight
        self.during: Callable[[], None] | None = None
        #: what the judges return for every agent / triggered edge
        self.emotion_delta = 0.0
        self.judgement = RelationJudgement(delta=0.0)
        self.need_deltas: dict[str, float] = {}
        self.decided: dict[tuple[int, str], AgentContext] = {}
        self.spoke: dict[tuple[int, str], AgentContext] = {}
        self.observed: dict[tuple[int, str], list[Action]] = {}
        self.triggers: dict[tuple[int, str], dict[str, list[Action]]] = {}

    async def decide(self, ctx: AgentContext) -> Decision:
        self.decided[ctx.round, ctx.name] = ctx
        if self.during is not None:
            during, self.during = self.during, None
            during()
        await asyncio.sleep(0)
        return self.plan[ctx.name]

    async def speak(self, ctx: AgentContext, decision: Decision, sink) -> str:
        self.spoke[ctx.round, ctx.name] = ctx
        text = f"{ctx.name} speaks in round {ctx.round}"
        for word in text.split(" "):
            sink(word + " ")
        return text

    async def judge_emotion(self, ctx: AgentContext, observed: list[Action]) -> float:
        self.observed[ctx.round, ctx.name] = observed
        return self.emotion_delta

    async def judge_relations(
        self, ctx: AgentContext, triggers: dict[str, list[Action]]
    ) -> dict[str, RelationJudgement]:
        self.triggers[ctx.round, ctx.name] = triggers
        return {j: self.judgement for j in triggers}

    async def judge_needs(self, ctx, observed) -> dict[str, float]:
        return dict(self.need_deltas)

    def take_calls(self) -> list:
        return []

    def stop_reason(self) -> str | None:
        return None

    def structured_modes(self) -> dict[str, str]:
        return {}

    async def aclose(self) -> None:
        return None


def quartet(rounds: int = 3, events: list[dict] | None = None) -> Scenario:
    return parse_scenario(
        {
            "title": "Quartet",
            "rounds": rounds,
            "agents": [{"name": n, "role": "member"} for n in ("A", "B", "C", "D")],
            "events": events or [],
        },
        "quartet",
    )


PLAN = {
    "A": Decision(urgency=9, mode=Mode.PUBLIC, target=ALL),
    "B": Decision(urgency=8, mode=Mode.PRIVATE, target="C"),
    "C": Decision(urgency=7, mode=Mode.PUBLIC, target="A"),
    "D": Decision(urgency=6, mode=Mode.PUBLIC, target=ALL),
}


def scripted(plan: dict[str, Decision] | None = None) -> ScriptedMind:
    return ScriptedMind(dict(plan or PLAN))


def speakers(actions: list[Action]) -> list[str]:
    return [a.speaker for a in actions]


# -- two-phase generation ------------------------------------------------------------------


async def test_a_run_whose_rounds_never_wait_is_cancelled_between_two_rounds():
    sim = Simulation.new(load_library("tavern"), rounds=200)
    task = asyncio.ensure_future(sim.run())

    def cancel_after_three(event: RoundEnded) -> None:
        if event.round == 3:  # (as Ctrl+C does, from inside the running task)
            task.cancel()

    sim.subscribe(cancel_after_three, only=(RoundEnded,))
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sim.round == 3  # not the 200th: the offline rounds never wait on their own


async def test_order_follows_descending_urgency_with_offline_mind():
    sc = load_library("hospital")
    sim = Simulation.new(sc, seed=4)
    records = await sim.run(5)
    saw_silent = False
    for record in records:
        assert speakers(record.actions) == sc.names  # one action per agent, scenario order
        talking = [a for a in record.actions if a.mode is not Mode.SILENT]
        for a in record.actions:
            if a.mode is Mode.SILENT:
                saw_silent = True
                assert a.order is None
                assert a.utterance == ""
            else:
                assert a.order is not None
                assert a.utterance
        by_order = sorted(talking, key=lambda a: a.order)
        assert [a.order for a in by_order] == list(range(1, len(talking) + 1))
        position = {n: k for k, n in enumerate(sc.names)}
        expected = sorted(talking, key=lambda a: (-a.urgency, position[a.speaker]))
        assert speakers(by_order) == speakers(expected)
    assert saw_silent


async def test_silent_agents_are_skipped_and_not_asked_to_speak():
    plan = {**PLAN, "B": Decision(urgency=10, mode=Mode.SILENT)}
    mind = scripted(plan)
    sim = Simulation.new(quartet(), mind=mind)
    record = await sim.step()
    b = next(a for a in record.actions if a.speaker == "B")
    assert b.order is None
    assert (1, "B") not in mind.spoke
    assert [a.order for a in record.actions] == [1, None, 2, 3]


async def test_phase_one_decides_on_identical_information():
    mind = scripted()
    sim = Simulation.new(quartet(), mind=mind)
    await sim.step()
    await sim.step()
    for name in "ABCD":
        assert mind.decided[1, name].heard == []
        assert mind.decided[2, name].heard == []


async def test_speakers_hear_only_visible_earlier_utterances():
    mind = scripted()
    sim = Simulation.new(quartet(), mind=mind)
    record = await sim.step()
    assert [a.order for a in record.actions] == [1, 2, 3, 4]
    heard = {n: speakers(mind.spoke[1, n].heard) for n in "ABCD"}
    assert heard == {
        "A": [],
        "B": ["A"],
        "C": ["A", "B"],  # B's private message is addressed to C
        "D": ["A", "C"],  # D cannot see B -> C
    }
    # what each agent judges in the update stage: visible actions only
    observed = {n: speakers(mind.observed[1, n]) for n in "ABCD"}
    assert observed == {
        "A": ["A", "C", "D"],
        "B": ["A", "B", "C", "D"],
        "C": ["A", "B", "C", "D"],
        "D": ["A", "C", "D"],
    }
    assert set(mind.triggers[1, "A"]) == {"C", "D"}
    assert set(mind.triggers[1, "D"]) == {"A", "C"}
    assert set(mind.triggers[1, "C"]) == {"A", "B", "D"}


@pytest.mark.parametrize("sign", [1, -1])
async def test_updates_are_clipped_and_applied_to_triggered_edges_only(sign):
    mind = scripted()
    mind.emotion_delta = 5.0 * sign
    mind.judgement = RelationJudgement(delta=-5.0 * sign, summary="big news", importance=7)
    mind.need_deltas = {"self_worth": 50.0 * sign, "no_such_need": 1.0}
    sim = Simulation.new(quartet(), mind=mind)
    before = sim.state
    record = await sim.step()
    after = record.state
    for name in "ABCD":
        change = next(c for c in record.emotion_changes if c.agent == name)
        assert change.delta == pytest.approx(0.3 * sign)
        assert after.agents[name].emotion == pytest.approx(0.5 + 0.3 * sign)
        assert after.agents[name].needs["self_worth"].current == (10.0 if sign > 0 else 0.0)
        assert set(record.need_deltas[name]) == {"self_worth"}
        assert record.need_deltas[name]["self_worth"] == pytest.approx(
            after.agents[name].needs["self_worth"].current
            - before.agents[name].needs["self_worth"].current
        )
        for other in "ABCD".replace(name, ""):
            rel = after.agents[name].relations[other]
            if other in mind.triggers[1, name]:
                assert rel.fav == pytest.approx(-0.3 * sign)
                assert rel.status is (Status.RIVAL if sign > 0 else Status.NEUTRAL)
                assert [(m.round, m.summary, m.importance) for m in rel.memory] == [
                    (1, "big news", 7)
                ]
            else:
                assert rel == before.agents[name].relations[other]
    edges = {(c.source, c.target) for c in record.relation_changes}
    assert edges == {(n, j) for n in "ABCD" for j in mind.triggers[1, n]}
    assert ("A", "B") not in edges  # A cannot see B's private message to C


async def test_judged_status_overrides_thresholds_in_the_round():
    mind = scripted()
    mind.judgement = RelationJudgement(delta=-0.3, status=Status.ALLY, summary="pact")
    sim = Simulation.new(quartet(), mind=mind)
    record = await sim.step()
    change = next(c for c in record.relation_changes if (c.source, c.target) == ("A", "C"))
    assert change.fav == pytest.approx(-0.3)
    assert (change.override, change.status, change.previous_status) == (
        Status.ALLY,
        Status.ALLY,
        Status.NEUTRAL,
    )
    assert record.state.agents["A"].relations["C"].status is Status.ALLY


async def test_memory_is_capped_at_the_scenario_size():
    sc = parse_scenario(
        {
            "title": "Memory",
            "rounds": 6,
            "memory_size": 2,
            "agents": [{"name": n, "role": "member"} for n in ("A", "B", "C", "D")],
        },
        "memory",
    )
    mind = scripted()
    mind.judgement = RelationJudgement(delta=0.0, summary="again", importance=3)
    sim = Simulation.new(sc, mind=mind)
    await sim.run()
    memory = sim.state.agents["A"].relations["C"].memory
    assert [m.round for m in memory] == [5, 6]


@pytest.mark.parametrize(
    "bad",
    [
        Decision(urgency=9, mode=Mode.PRIVATE, target=ALL),
        Decision(urgency=9, mode=Mode.PUBLIC, target=None),
        Decision(urgency=9, mode=Mode.PUBLIC, target="A"),
        Decision(urgency=9, mode=Mode.PRIVATE, target="Zed"),
        Decision(urgency=9, mode=Mode.SILENT, target="B"),
    ],
)
async def test_invalid_mind_decisions_become_silence(bad):
    mind = scripted({**PLAN, "A": bad})
    sim = Simulation.new(quartet(), mind=mind)
    record = await sim.step()
    a = next(x for x in record.actions if x.speaker == "A")
    assert (a.mode, a.target, a.order, a.utterance) == (Mode.SILENT, None, None, "")
    assert (1, "A") not in mind.spoke
    assert speakers(sorted((x for x in record.actions if x.order), key=lambda x: x.order)) == [
        "B",
        "C",
        "D",
    ]


async def test_a_failing_round_leaves_the_run_unchanged(store: SaveStore):
    mind = scripted()
    with Simulation.new(quartet(), mind=mind, store=store, run_id="err") as sim:
        sim.inject("Kept for the retry.")
        seen = []
        sim.subscribe(seen.append)

        def fail() -> None:
            raise SocialsimError("the model is unreachable")

        mind.during = fail
        with pytest.raises(SocialsimError, match="unreachable"):
            await sim.step()
        assert isinstance(seen[-1], EngineError)
        assert (seen[-1].round, seen[-1].message) == (1, "the model is unreachable")
        assert sim.round == 0 and len(sim.records) == 1
        assert store.round_numbers("err") == [0]
        assert [e.text for e in sim.pending.events] == ["Kept for the retry."]
        record = await sim.step()  # the retry plays round 1 with the queued event
        assert record.round == 1
        assert [e.text for e in record.events] == ["Kept for the retry."]


async def test_advance_plays_and_saves_a_round_without_building_its_record(
    store: SaveStore, monkeypatch: pytest.MonkeyPatch
):
    from engine.core.columns import StateColumns

    def refused(self: StateColumns) -> None:
        raise AssertionError("the state was built as models")

    with Simulation.new(quartet(), store=store, run_id="adv", rounds=3) as sim:
        with monkeypatch.context() as patched:
            patched.setattr(StateColumns, "world", refused)
            await sim.advance()
            await sim.advance()
        assert sim.round == 2 and store.round_numbers("adv") == [0, 1, 2]
        record = await sim.step()  # step builds the record it returns
        assert record.round == 3 and set(record.state.agents) == set(quartet().names)


async def test_a_turn_whose_words_were_not_speech_ends_silent_and_is_told():
    class Rejects(ScriptedMind):
        async def speak(self, ctx: AgentContext, decision: Decision, sink) -> str:
            text = await super().speak(ctx, decision, sink)  # its words stream first
            return "" if ctx.name == "B" else text

    sim = Simulation.new(quartet(), mind=Rejects(dict(PLAN)))
    ended: list[AgentSpoke] = []
    sim.subscribe(ended.append, only=(AgentSpoke,))
    record = await sim.step()
    assert [e.action.speaker for e in ended] == ["A", "B", "C", "D"]  # every turn's end
    silenced = ended[1].action
    assert silenced == next(a for a in record.actions if a.speaker == "B")
    assert (silenced.mode, silenced.order, silenced.utterance) == (Mode.SILENT, None, "")
    assert silenced.intent == "(no utterance: silent)"
    assert [e.action.order for e in ended] == [1, None, 2, 3]


async def test_history_shows_only_visible_past_actions():
    mind = scripted()
    sim = Simulation.new(quartet(), mind=mind)
    await sim.step()
    await sim.step()
    for name, expected in {"A": "ACD", "B": "ABCD", "C": "ABCD", "D": "ACD"}.items():
        history = mind.decided[2, name].history
        assert [h.round for h in history] == [1]
        assert speakers(history[0].actions) == list(expected)


async def test_an_earlier_rounds_view_is_read_once_and_shared():
    """Round 1 as an agent saw it is one object in rounds 2 and 3, and agents who saw the
    same acts share one list of them."""
    mind = scripted()
    sim = Simulation.new(quartet(), mind=mind)
    for _ in range(3):
        await sim.step()
    (first,) = mind.decided[2, "B"].history
    assert mind.decided[3, "B"].history[0] is first
    assert mind.decided[3, "C"].history[0].actions is first.actions
    assert mind.decided[3, "A"].history[0].actions is not first.actions


def test_a_decisions_action_is_built_as_validation_builds_it():
    from engine.round.phases import _action

    decision = Decision(urgency=4.5, mode=Mode.PRIVATE, target="B", intent="i", theta=0.3)
    forced = {"A": ForcedAction(agent="A", mode=Mode.PRIVATE, target="B")}
    said = {"utterance": "hi", "order": 2}
    played = {"actor": "human", "player": "pat"}
    silence = {"mode": Mode.SILENT, "target": None, "intent": "(no utterance: silent)"}
    for built, given in (
        (_action("A", decision, forced, {"A": "pat"}), {"forced": True}),
        (_action("A", decision, {}, {"A": "pat"}, said), {"forced": False, **played, **said}),
        (_action("A", decision, {}, {}, silence), {"forced": False, **silence}),
    ):
        valid = Action(speaker="A", **decision.model_dump() | given)
        assert built == valid and list(built.__dict__) == list(Action.model_fields)
        assert built.model_fields_set == valid.model_fields_set
        assert built.model_dump_json() == valid.model_dump_json()


# -- interventions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "forced",
    [
        ForcedAction(agent="Zed", mode=Mode.PUBLIC, target=ALL, utterance="hi"),
        ForcedAction(agent="A", mode=Mode.PRIVATE, target=ALL, utterance="hi"),
        ForcedAction(agent="A", mode=Mode.PUBLIC, target=ALL, utterance=""),
        ForcedAction(agent="A", mode=Mode.PRIVATE, target="B", utterance="   "),
        ForcedAction(agent="A", mode=Mode.PUBLIC, target=None, utterance="hi"),
        ForcedAction(agent="A", mode=Mode.PUBLIC, target="A", utterance="hi"),
        ForcedAction(agent="A", mode=Mode.PUBLIC, target="Zed", utterance="hi"),
        ForcedAction(agent="A", mode=Mode.SILENT, target="B"),
    ],
)
def test_force_rejects_invalid_actions(forced):
    sim = Simulation.new(quartet(), mind=scripted())
    with pytest.raises(InterventionError):
        sim.force(forced)
    assert sim.pending.forced == []


async def test_forced_action_replaces_the_minds_and_is_not_spoken_by_it():
    mind = scripted()
    sim = Simulation.new(quartet(), mind=mind)
    sim.force(ForcedAction(agent="D", mode=Mode.PUBLIC, target="B", utterance="first try"))
    sim.force(ForcedAction(agent="D", mode=Mode.PRIVATE, target="B", utterance="Thank you, B"))
    assert len(sim.pending.forced) == 1
    record = await sim.step()
    d = next(a for a in record.actions if a.speaker == "D")
    assert d.forced
    assert (d.mode, d.target, d.utterance) == (Mode.PRIVATE, "B", "Thank you, B")
    assert d.stance == "support"  # inferred from the utterance
    assert d.order == 1  # forced urgency defaults to 10
    assert (1, "D") not in mind.spoke
    assert (1, "D") not in mind.decided  # forced agents skip phase 1
    assert sim.pending.forced == []
    record2 = await sim.step()
    d2 = next(a for a in record2.actions if a.speaker == "D")
    assert not d2.forced
    assert (d2.mode, d2.target) == (Mode.PUBLIC, ALL)


async def test_inject_adds_an_event_to_the_next_round_only():
    mind = scripted()
    sc = quartet(events=[{"round": 1, "text": "Scripted news."}])
    sim = Simulation.new(sc, mind=mind)
    sim.inject("Public rumour.")
    sim.inject("  A secret for B and C.  ", private_to=["B", "C"])
    record1 = await sim.step()
    assert [(e.text, e.source, e.private_to) for e in record1.events] == [
        ("Scripted news.", "scripted", None),
        ("Public rumour.", "injected", None),
        ("A secret for B and C.", "injected", ["B", "C"]),
    ]
    for name in "ABCD":
        texts = [e.text for e in mind.decided[1, name].events]
        assert texts[:2] == ["Scripted news.", "Public rumour."]
        assert ("A secret for B and C." in texts) == (name in "BC")
        # the speaking context carries the same events
        assert [e.text for e in mind.spoke[1, name].events] == texts
    record2 = await sim.step()
    assert record2.events == []
    assert all(mind.decided[2, n].events == [] for n in "ABCD")
    assert sim.pending.events == []


async def test_interventions_queued_mid_round_apply_to_the_next_round(store: SaveStore):
    mind = scripted()
    with Simulation.new(quartet(), mind=mind, store=store, run_id="mid") as sim:
        sim.inject("Before round 1.")

        def ui() -> None:
            sim.inject("During round 1.")
            sim.force(ForcedAction(agent="B", mode=Mode.PUBLIC, target=ALL, utterance="Late."))

        mind.during = ui
        record1 = await sim.step()
        assert [e.text for e in record1.events] == ["Before round 1."]
        assert not any(a.forced for a in record1.actions)
        assert [e.text for e in sim.pending.events] == ["During round 1."]
        assert [f.agent for f in sim.pending.forced] == ["B"]
    with Simulation.resume("mid", store, mind=scripted()) as sim:
        assert [e.text for e in sim.pending.events] == ["During round 1."]
        record2 = await sim.step()
        assert [e.text for e in record2.events] == ["During round 1."]
        b = next(a for a in record2.actions if a.speaker == "B")
        assert b.forced and b.utterance == "Late."
        assert sim.pending.events == [] and sim.pending.forced == []


@pytest.mark.parametrize(
    ("text", "private_to"), [("", None), ("   ", None), ("news", ["A", "Zed"])]
)
def test_inject_rejects_bad_events(text, private_to):
    sim = Simulation.new(quartet(), mind=scripted())
    with pytest.raises(InterventionError):
        sim.inject(text, private_to=private_to)
    assert sim.pending.events == []


async def test_pending_interventions_survive_resume_and_apply_once(store: SaveStore):
    sc = quartet(rounds=4)
    with Simulation.new(sc, mind=scripted(), store=store, run_id="r1") as sim:
        await sim.step()
        sim.inject("After the break.")
        sim.force(ForcedAction(agent="A", mode=Mode.PUBLIC, target="B", utterance="Listen, B"))
    with Simulation.resume("r1", store, mind=scripted()) as sim:
        assert sim.round == 1
        assert [e.text for e in sim.pending.events] == ["After the break."]
        assert [f.agent for f in sim.pending.forced] == ["A"]
        record = await sim.step()
        assert [e.text for e in record.events] == ["After the break."]
        assert next(a for a in record.actions if a.speaker == "A").utterance == "Listen, B"
        assert sim.pending.events == [] and sim.pending.forced == []
    assert store.read_meta("r1").pending.events == []
    saved = store.read_round("r1", 2)
    assert [e.text for e in saved.events] == ["After the break."]
    with Simulation.resume("r1", store, mind=scripted()) as sim:
        assert sim.pending.events == [] and sim.pending.forced == []
        record = await sim.step()
        assert record.events == []
        assert not any(a.forced for a in record.actions)


async def test_pending_of_a_saved_round_is_not_applied_twice(store: SaveStore):
    # A crash after the round was saved but before the queue was cleared on disk.
    sc = quartet(rounds=4)
    with Simulation.new(sc, mind=scripted(), store=store, run_id="r2") as sim:
        sim.inject("Once only.")
        queued = store.read_meta("r2")
        await sim.step()
    store.write_meta(queued)
    assert store.read_meta("r2").pending.events
    with Simulation.resume("r2", store, mind=scripted()) as sim:
        assert sim.round == 1
        assert sim.pending.events == []
        record = await sim.step()
        assert record.events == []


# -- run control ---------------------------------------------------------------------------


async def test_run_stops_at_pause_on_a_round_boundary(store: SaveStore):
    sc = quartet(rounds=5)
    with Simulation.new(sc, mind=scripted(), store=store, run_id="p") as sim:
        seen = []

        def listener(event) -> None:
            seen.append(event)
            if isinstance(event, RoundEnded) and event.round == 2:
                sim.request_pause()

        sim.subscribe(listener)
        done = await sim.run()
        assert [r.round for r in done] == [1, 2]
        assert sim.round == 2 and not sim.finished
        assert [r.round for r in sim.records] == [0, 1, 2]
        assert isinstance(seen[-1], RunPaused) and seen[-1].round == 2
        assert not any(isinstance(e, RoundStarted) and e.round == 3 for e in seen)
        assert store.round_numbers("p") == [0, 1, 2]
        assert store.read_round("p", 2).state == sim.state
        # a new run() goes on from there
        rest = await sim.run()
        assert [r.round for r in rest] == [3, 4, 5]
        assert sim.finished


async def test_run_with_a_round_budget():
    sim = Simulation.new(quartet(rounds=5), mind=scripted())
    assert [r.round for r in await sim.run(2)] == [1, 2]
    assert [r.round for r in await sim.run()] == [3, 4, 5]
    assert await sim.run() == []


async def test_step_on_a_finished_run_raises():
    sim = Simulation.new(quartet(rounds=2), mind=scripted())
    await sim.run()
    assert sim.finished
    with pytest.raises(RunFinishedError):
        await sim.step()
    assert sim.round == 2 and len(sim.records) == 3
    sim.extend(1)
    assert (await sim.step()).round == 3


# -- progress events -----------------------------------------------------------------------


async def test_events_are_emitted_in_round_order():
    sc = load_library("hospital")
    sim = Simulation.new(sc, seed=2, rounds=2)
    sim.force(ForcedAction(agent="Ruth", mode=Mode.PUBLIC, target=ALL, utterance="I object."))
    events = []
    unsubscribe = sim.subscribe(events.append)
    record = await sim.step()
    n = len(sc.names)

    assert isinstance(events[0], RoundStarted)
    assert [e.text for e in events[0].events] == [e.text for e in record.events]
    decided = events[1 : 1 + n]
    assert all(isinstance(e, AgentDecided) for e in decided)
    # the forced decision at once, then each as it is made (offline: all at once, in order)
    assert [e.agent for e in decided] == ["Ruth", *(name for name in sc.names if name != "Ruth")]
    assert [e.forced for e in decided] == [True] + [False] * (n - 1)
    assert isinstance(events[-2], StateUpdated)
    assert isinstance(events[-1], RoundEnded)
    assert events[-1].record == record
    assert events[-2].emotions == record.emotion_changes
    assert events[-2].relations == record.relation_changes

    # phase 2: per speaker, its tokens then its AgentSpoke, speakers in order
    middle = events[1 + n : -2]
    assert all(isinstance(e, TokenStreamed | AgentSpoke) for e in middle)
    spoken = [e.action for e in middle if isinstance(e, AgentSpoke)]
    talking = sorted((a for a in record.actions if a.order is not None), key=lambda a: a.order)
    assert spoken == talking
    tokens: list[str] = []
    current = None
    for e in middle:
        if isinstance(e, TokenStreamed):
            current = current or e.agent
            assert e.agent == current
            tokens.append(e.text)
        else:
            if e.action.forced:
                assert tokens == []
            else:
                assert current == e.action.speaker
                assert "".join(tokens).strip() == e.action.utterance
            tokens, current = [], None
    assert tokens == []
    assert all(e.round == 1 and e.run_id == sim.run_id for e in events)

    unsubscribe()
    events.clear()
    seen = []
    sim.subscribe(seen.append)
    await sim.step()
    assert events == []
    assert isinstance(seen[-2], RoundEnded) and isinstance(seen[-1], RunFinished)
    assert seen[-1].round == 2


async def test_a_listener_of_some_kinds_gets_only_those_and_no_word_is_made_an_event(
    monkeypatch: pytest.MonkeyPatch,
):
    """``subscribe(only=...)``: the listener gets those kinds; the events of decisions,
    words and turns nobody takes are never built (the CLI's listener costs no event a word)."""
    built: list[str] = []
    for kind in (AgentDecided, TokenStreamed, AgentSpoke):

        def counted(self: object, *args: object, _init=kind.__init__, **kw: object) -> None:
            built.append(type(self).__name__)
            _init(self, *args, **kw)

        monkeypatch.setattr(kind, "__init__", counted)
    sim = Simulation.new(load_library("hospital"), seed=2, rounds=3)
    seen = []
    sim.subscribe(seen.append, only=(RoundStarted, RoundEnded))
    await sim.step()
    assert [type(e) for e in seen] == [RoundStarted, RoundEnded]
    assert built == []
    unsubscribe = sim.subscribe(lambda e: None, only=(TokenStreamed,))
    await sim.step()
    assert set(built) == {"TokenStreamed"}
    assert [type(e) for e in seen][2:] == [RoundStarted, RoundEnded]
    unsubscribe()
    built.clear()
    await sim.step()
    assert built == []


def test_importing_engine_does_not_import_textual():
    code = (
        "import sys, engine, engine.round.simulation, engine.saves.store, engine.core.metrics\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in {'textual', 'tui'})\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


async def test_contexts_and_prompts_carry_the_runs_total_not_the_scenarios():
    from engine.minds import prompts

    mind = scripted()
    sim = Simulation.new(quartet(rounds=3), mind=mind, rounds=5)
    await sim.run(4)
    sim.extend(3)  # 7 rounds now
    await sim.run(1)
    ctx = mind.decided[(5, "A")]
    assert ctx.rounds == 7
    _system, user = prompts.decide(ctx)
    assert "Round 5 of 7." in user["content"]
    assert "of 3." not in user["content"]


@pytest.mark.parametrize(("after", "between"), [(0.0, True), (float("inf"), False)])
async def test_the_turn_loop_lets_other_tasks_run_once_its_turns_took_long_enough(
    monkeypatch, after: float, between: bool
):
    """After ``YIELD_AFTER`` seconds of turns the loop passes control (a UI or a cancel
    gets in mid-phase); turns quicker than that run on without an event-loop pass each."""
    from engine.round import phases

    monkeypatch.setattr(phases, "YIELD_AFTER", after)
    sim = Simulation.new(quartet(), mind=scripted())
    spoken: list[AgentSpoke] = []
    sim.subscribe(spoken.append, only=(AgentSpoke,))
    seen: list[int] = []
    round_ = asyncio.create_task(sim.step())
    while not round_.done():
        seen.append(len(spoken))
        await asyncio.sleep(0)
    await round_
    assert len(spoken) == 4
    assert any(0 < n < 4 for n in seen) is between
