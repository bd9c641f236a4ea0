"""A person playing an agent: the mind whose phase-1 and phase-2 turns are asked of a human.

:class:`HumanMind` hands each turn of a played agent to ``ask`` as a :class:`Turn` and
awaits it. A turn carries the agent's own view (its :class:`AgentContext`: persona, private
information, relations, what it has seen, and in phase 2 the round's earlier utterances it
heard); whoever answers it (the app's forms, a test's script, a replay of the record) calls
:meth:`Turn.decide` or :meth:`Turn.say`, from any thread. The engine imports no UI: ``ask``
is the seam. Everything else (the judge, questions, usage) is the base mind's, so a
person's agent is judged like any other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel

from ..core.exchanges import LLMCall
from ..core.lexicon import infer_stance
from ..core.limits import MAX_UTTERANCE_CHARS
from ..core.rules import validate_action
from ..core.scenario import Scenario
from ..core.state import ALL, Action, Decision, Mode, Stance
from ..core.textsafe import one_line, strip_controls, unsafe_char
from ..errors import InterventionError
from .base import (
    AgentContext,
    Mind,
    PlansCalls,
    RelationJudgement,
    TalksToServers,
    TokenSink,
)
from .question import Question
from .spec import MindSpec

A = TypeVar("A", bound=BaseModel)
Phase = Literal["decide", "speak"]
#: The longest intent and utterance a person may give (characters).
MAX_INTENT = 300
MAX_UTTERANCE = MAX_UTTERANCE_CHARS
#: A player's name: one line, this long at most.
MAX_PLAYER = 40


class Turn:
    """One question to a person: the phase-1 choice (``decide``) or the phase-2 utterance
    (``speak``, with ``decision`` the choice made in phase 1) of the agent ``ctx`` describes.

    Made on the loop that plays the round; :meth:`decide`, :meth:`say` and :meth:`withdraw`
    may be called from any thread. Withdrawing cancels the round (it is not saved; played
    again from its start, the turn is asked again).
    """

    def __init__(
        self, phase: Phase, player: str, ctx: AgentContext, decision: Decision | None = None
    ) -> None:
        self.phase = phase
        self.player = player
        self.ctx = ctx
        self.decision = decision
        self._loop = asyncio.get_running_loop()
        self._future: asyncio.Future[Decision | str] = self._loop.create_future()

    @property
    def agent(self) -> str:
        """The played agent's name."""
        return self.ctx.name

    def decide(
        self,
        urgency: float | str,
        mode: Mode | str,
        target: str | None = None,
        intent: str = "",
        stance: Stance | None = None,
    ) -> None:
        """Answer phase 1; a bad answer raises :class:`InterventionError` (one line to show
        the person) and leaves the turn open."""
        if self.phase != "decide":
            raise InterventionError(f"{self.agent}: this turn asks for an utterance")
        self._settle(human_decision(self.ctx, urgency, mode, target, intent, stance))

    def say(self, text: str) -> None:
        """Answer phase 2; an empty or overlong utterance raises :class:`InterventionError`."""
        if self.phase != "speak":
            raise InterventionError(f"{self.agent}: this turn asks for a decision")
        self._settle(human_utterance(self.agent, text))

    def withdraw(self) -> None:
        """Give up the turn: the round waiting for it is cancelled."""
        self._loop.call_soon_threadsafe(self._future.cancel)

    def _settle(self, answer: Decision | str) -> None:
        self._loop.call_soon_threadsafe(self._resolve, answer)

    def _resolve(self, answer: Decision | str) -> None:
        if not self._future.done():  # a second answer (a double Enter) is ignored
            self._future.set_result(answer)

    async def answer(self) -> Decision | str:
        """Wait for the person."""
        return await self._future


Ask = Callable[[Turn], object]


def human_decision(
    ctx: AgentContext,
    urgency: float | str,
    mode: Mode | str,
    target: str | None,
    intent: str,
    stance: Stance | None = None,
) -> Decision:
    """A person's phase-1 choice as a :class:`Decision`, checked as a forced action is: an
    urgency from 0 to 10, a target the mode allows, a one-line intent without control
    characters. The stance, unless given, is read from the intent."""
    me = ctx.name
    try:
        level = float(urgency)
    except ValueError:
        raise InterventionError(f"{me}: urgency must be a number from 0 to 10") from None
    if not 0.0 <= level <= 10.0:
        raise InterventionError(f"{me}: urgency must be from 0 to 10 (got {level:g})")
    try:
        how = Mode(mode)
    except ValueError:
        raise InterventionError(f"{me}: mode must be public, private or silent") from None
    aim = None if how is Mode.SILENT else (target or (ALL if how is Mode.PUBLIC else None))
    validate_action(me, how, aim, ctx.scenario.names)
    said = " ".join(strip_controls(intent).split())
    if len(said) > MAX_INTENT:
        raise InterventionError(f"{me}: the intent is longer than {MAX_INTENT} characters")
    return Decision(
        urgency=level,
        mode=how,
        target=aim,
        intent=said,
        stance=stance or infer_stance(said),
    )


def human_utterance(agent: str, text: str) -> str:
    """A person's utterance: control characters stripped (line breaks kept), not empty, at
    most :data:`MAX_UTTERANCE` characters."""
    said = strip_controls(text).strip()
    if not said:
        raise InterventionError(f"{agent}: type what to say (or choose silent in phase 1)")
    if len(said) > MAX_UTTERANCE:
        raise InterventionError(f"{agent}: the utterance is longer than {MAX_UTTERANCE} characters")
    return said


def check_players(players: Mapping[str, str], names: Iterable[str]) -> dict[str, str]:
    """``players`` (agent -> player's name) if every agent is in the run and every name is
    one printable line; the player's name defaults to the agent's."""
    known = list(names)
    checked = {}
    for agent, player in players.items():
        if agent not in known:
            raise InterventionError(
                f"--play {one_line(agent)!r}: no such agent; agents: {', '.join(known)}"
            )
        who = player.strip() or agent
        bad = unsafe_char(who)
        if bad is not None or len(who) > MAX_PLAYER:
            raise InterventionError(
                f"--play {agent}: a player's name is one line of at most {MAX_PLAYER} characters"
            )
        checked[agent] = who
    return checked


def recorded_answers(actions: Iterable[Action]) -> Ask:
    """An ``ask`` that answers each turn with what its person answered in the record (a
    replay): the decision and the utterance of the agent's recorded human action."""
    recorded = {a.speaker: a for a in actions if a.actor == "human"}

    def ask(turn: Turn) -> None:
        a = recorded.get(turn.agent)
        if a is None:
            raise InterventionError(f"replay: round {turn.ctx.round} has no turn of {turn.agent}")
        if turn.phase == "decide":
            turn.decide(a.urgency, a.mode, a.target, a.intent, a.stance)
        else:
            turn.say(a.utterance)

    return ask


class HumanMind:
    """The :class:`Mind` of agents played by people: their turns are asked through ``ask``;
    every other agent's turns, and all judging, are ``base``'s."""

    def __init__(self, base: Mind, players: Mapping[str, str], ask: Ask) -> None:
        self.base = base
        self.players = dict(players)
        self._ask = ask

    async def _turn(self, turn: Turn) -> Decision | str:
        self._ask(turn)
        return await turn.answer()

    @property
    def spec(self) -> MindSpec:
        return self.base.spec

    @property
    def label(self) -> str:
        return f"{self.base.label}, {len(self.players)} played by people"

    @property
    def judge_mode(self) -> str:
        return self.base.judge_mode

    async def ask(self, question: Question[A]) -> A:
        return await self.base.ask(question)

    async def decide(self, ctx: AgentContext) -> Decision:
        """Phase 1: the person's urgency, mode, target and intent."""
        player = self.players.get(ctx.name)
        if player is None:
            return await self.base.decide(ctx)
        answer = await self._turn(Turn("decide", player, ctx))
        assert isinstance(answer, Decision)
        return answer

    async def speak(self, ctx: AgentContext, decision: Decision, sink: TokenSink) -> str:
        """Phase 2: the person's utterance, typed with the round's earlier ones in view."""
        player = self.players.get(ctx.name)
        if player is None:
            return await self.base.speak(ctx, decision, sink)
        answer = await self._turn(Turn("speak", player, ctx, decision))
        assert isinstance(answer, str)
        sink(answer)
        return answer

    def planned_calls(self, purpose: str, agents: Sequence[str], edges: int = 0) -> int:
        """``base``'s calls, but for the turns people take."""
        if not isinstance(self.base, PlansCalls):
            return 0
        if purpose in ("decide", "speak"):
            agents = [a for a in agents if a not in self.players]
        return self.base.planned_calls(purpose, agents, edges)

    async def judge_emotion(self, ctx: AgentContext, observed: list[Action]) -> float:
        return await self.base.judge_emotion(ctx, observed)

    async def judge_relations(
        self, ctx: AgentContext, triggers: dict[str, list[Action]]
    ) -> dict[str, RelationJudgement]:
        return await self.base.judge_relations(ctx, triggers)

    async def judge_needs(self, ctx: AgentContext, observed: list[Action]) -> dict[str, float]:
        return await self.base.judge_needs(ctx, observed)

    def take_calls(self) -> list[LLMCall]:
        return self.base.take_calls()

    def stop_reason(self) -> str | None:
        return self.base.stop_reason()

    def structured_modes(self) -> dict[str, str]:
        return self.base.structured_modes()

    def take_notices(self) -> list[str]:
        return self.base.take_notices() if isinstance(self.base, TalksToServers) else []

    def system_roles(self) -> dict[str, str]:
        return self.base.system_roles() if isinstance(self.base, TalksToServers) else {}

    def server_slots(self) -> dict[str, int]:
        return self.base.server_slots() if isinstance(self.base, TalksToServers) else {}

    def count_recorded(self, calls: Iterable[LLMCall]) -> None:
        self.base.count_recorded(calls)

    async def narrate(self, scenario: Scenario, round_no: int, scene: str) -> str:
        return await self.base.narrate(scenario, round_no, scene)

    async def aclose(self) -> None:
        await self.base.aclose()
