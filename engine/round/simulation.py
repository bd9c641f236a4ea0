"""The round loop of Sociodrama Sec. 3.3 and the run-control API around it."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import TYPE_CHECKING

from filelock import FileLock

from ..core.changes import RoundChanges
from ..core.columns import StateColumns
from ..core.exchanges import RoundUsage, degraded_line
from ..core.limits import check_rounds
from ..core.metrics import Metrics, RepairCounter, round_metrics
from ..core.pages import small_pages
from ..core.played import PastActs, PlayedRound
from ..core.priors import Prior, check_agents
from ..core.rules import HISTORY_WINDOW, initial_columns
from ..core.scenario import Scenario
from ..core.state import Pending, RoundRecord, ScenarioEvent, WorldState
from ..errors import (
    BudgetError,
    DegradedRunError,
    RunFinishedError,
    SaveError,
    SocialsimError,
)
from ..llm.prefix import SharedPrefixes
from ..llm.progress import Calls
from ..llm.settings import LLMSettings
from ..minds import AgentContext, Mind, make_mind
from ..minds.base import PastRound, TalksToServers
from ..minds.human import Ask, HumanMind
from ..minds.spec import OFFLINE, MindSpec, Offline
from ..saves.history import History, HistoryView
from ..saves.roundfile import (
    KEYFRAME_EVERY,
    IndexEntry,
    PackedMarks,
    RoundFile,
    RoundSummary,
    round_file,
)
from ..saves.runfiles import RunFiles
from ..saves.runmeta import (
    FORMAT_VERSION,
    ExperimentLink,
    Lineage,
    RunMeta,
    now_iso,
)
from ..saves.store import SaveStore
from . import phases
from .control import RunControl
from .events import EngineError, Notice, RoundEnded, RoundStarted, RunFinished, RunPaused, SimEvent
from .gamemaster import narrate, scripted_narration
from .holding import Holding
from .interventions import without
from .plan import CallPlan

if TYPE_CHECKING:
    pass

#: Rounds a saved run holds in memory; older ones are read from the save when asked.
HELD_ROUNDS = HISTORY_WINDOW + 1

Listener = Callable[[SimEvent], None]


class Simulation(RunControl, Holding):
    """One run: its scenario, mind, history and (optionally) its save. A saved run holds
    its current state and at most its last :data:`HELD_ROUNDS` rounds in memory (a reopened
    run, those since its last keyframe); :attr:`history` reads older rounds from the save
    when asked."""

    def __init__(
        self,
        meta: RunMeta,
        history: History,
        counter: RepairCounter,
        mind: Mind,
        store: SaveStore | None = None,
        lock: FileLock | None = None,
        files: RunFiles | None = None,
        columns: StateColumns | None = None,
    ) -> None:
        small_pages()  # a large cast's rounds make many large arrays: see engine.core.pages
        self.meta = meta
        self.history = history
        self._columns = columns or history.columns(-1, meta.scenario.memory_size)
        self.mind = mind
        self.store = store
        self._counter = counter
        self._files = files
        self._lock = lock
        #: (listener, the kinds of event it takes: None for every kind)
        self._listeners: list[tuple[Listener, tuple[type[SimEvent], ...] | None]] = []
        #: Whether a listener takes each kind of event asked about (kept until one comes or goes).
        self._wanted: dict[type[SimEvent], bool] = {}
        self._pause = False
        self._ask: Ask | None = None
        #: The interventions a round in flight took (``None`` between rounds).
        self._taken: Pending | None = None
        #: :func:`~engine.round.phases.past_round`'s rounds, by round number.
        self._past: dict[int, tuple[PastActs, dict[str, PastRound]]] = {}
        #: The total of rounds the save records (an extension is written with its first round).
        self._saved_total = meta.total_rounds
        #: The LLM calls of the round being played (see :mod:`engine.llm.progress`).
        self.progress = Calls()
        self._prefixes = SharedPrefixes()  # the prompts sent here, for their shared prefix
        #: The last round this process played, as played (None before it plays one).
        self.played: PlayedRound | None = None
        if meta.pending_round <= self.round:
            self.meta = meta.model_copy(update={"pending": Pending(), "pending_round": 0})
        self._open_journal(mind, self.meta, files.folder if files else None)

    # -- construction ------------------------------------------------------------------

    @classmethod
    def new(
        cls,
        scenario: Scenario,
        *,
        seed: int = 0,
        mind: MindSpec | Mind = OFFLINE,
        store: SaveStore | None = None,
        run_id: str | None = None,
        name: str = "",
        rounds: int | None = None,
        scenario_ref: str = "",
        ablation: bool = False,
        experiment: ExperimentLink | None = None,
        prior: Prior | None = None,
    ) -> Simulation:
        """Start a run at round 0; with a store it is saved (and locked) at once. ``mind``
        is which mind plays (a spec), or an already built mind (tests, replay).

        ``ablation`` is Sociodrama's "w/o social dynamics": fixed speaking order and no
        emotion, relation or need updates. ``prior`` is a relational prior (Relational priors
        paper): a fixed layer every agent's context carries, rendered into its system prompt
        the same way every round; it never touches the relations' state (round 0 is the
        scenario's) nor the protocol.
        """
        if rounds is not None:
            check_rounds(rounds)
        if prior is not None:
            check_agents(prior, scenario.names)
        if run_id is None:
            run_id = store.new_run_id(scenario.id or "run") if store else "unsaved"
        meta = RunMeta(
            run_id=run_id,
            name=name,
            created=now_iso(),
            scenario=scenario,
            scenario_ref=scenario_ref or scenario.id,
            seed=seed,
            ablation=ablation,
            experiment=experiment,
            total_rounds=rounds or scenario.rounds,
            prior=prior,
        )
        # The mind first: a bad model string or a missing key leaves no run folder behind.
        brain = make_mind(mind, seed) if isinstance(mind, Offline | LLMSettings) else mind
        meta = meta.with_mind(brain.spec)
        columns = initial_columns(scenario, scenario.memory_size)
        first = PlayedRound(0, [], [], RoundChanges.none(0, columns.names), columns)
        counter = RepairCounter(len(columns.names))
        metrics = round_metrics(scenario, columns, counter)
        if store is None:
            history = History.in_memory(first, RoundSummary(round=0, metrics=metrics))
            return cls(meta, history, counter, brain, columns=columns)
        marks = PackedMarks.of(counter, columns.names)
        entry = store.create(meta, round_file(first, metrics, marks))
        lock = store.lock(run_id)
        files = store.files(run_id, meta)
        files.index_complete = True
        history = History.saved(files, [entry], [first], HELD_ROUNDS)
        return cls(meta, history, counter, brain, store, lock, files, columns)

    @classmethod
    def resume(
        cls,
        run_id: str,
        store: SaveStore,
        mind: MindSpec | Mind | None = None,
        meta: RunMeta | None = None,
    ) -> Simulation:
        """Reopen a saved run where it stopped (takes its lock). ``mind``: a spec replaces
        the run's (new caps, say) from now on; a built mind plays it as it is. ``meta``:
        the run's metadata as just written (a branch), read if not given."""
        meta = store.read_meta(run_id) if meta is None else meta
        lock = store.lock(run_id)
        try:
            files = store.files(run_id, meta)
            entries = files.load_index(meta.scenario)
            files.verify(entries)  # nothing is written into a damaged run
            window, counter = files.tail(entries, HELD_ROUNDS, meta.scenario)
            history = History.saved(files, entries, window, HELD_ROUNDS)
            if isinstance(mind, Offline | LLMSettings):
                if mind != meta.mind:
                    meta = meta.with_mind(mind)
                    store.write_meta(meta)
                mind = None
            recorded = list(history.llm_calls()) if meta.llm is not None else []
            if mind is None:
                mind = make_mind(meta.mind, meta.seed)
                mind.count_recorded(recorded)  # caps count the whole run, not this process
            sim = cls(meta, history, counter, mind, store, lock, files)
            sim._prefixes.tokens(recorded)  # as a process that played them would have seen
        except BaseException:
            lock.release()
            raise
        return sim

    async def aclose(self) -> None:
        """Close the mind's network clients, then release the lock."""
        await self.mind.aclose()
        self.close()

    def close(self) -> None:
        """Release the run's lock; the save already holds every finished round."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- read-only view ----------------------------------------------------------------

    @property
    def records(self) -> History:
        """The run's rounds: :attr:`history` under the name it had when it was a list."""
        return self.history

    @property
    def round(self) -> int:
        """Rounds finished so far."""
        return len(self.history) - 1

    @property
    def state(self) -> WorldState:
        """State after the last finished round."""
        return self.history[-1].state

    @property
    def finished(self) -> bool:
        return self.round >= self.meta.total_rounds

    @property
    def lineage(self) -> list[Lineage]:
        """Fork points from the root run down to this run's parent."""
        return self.meta.ancestry

    def metrics(self, round_no: int | None = None) -> Metrics:
        """Sociodrama App. D metrics at a round (default: the latest)."""
        upto = self.round if round_no is None else round_no
        if not 0 <= upto <= self.round:
            raise SocialsimError(f"round {upto} is outside 0..{self.round}")
        return self.history.metrics(upto)

    # -- control -----------------------------------------------------------------------

    def subscribe(
        self, listener: Listener, only: tuple[type[SimEvent], ...] | None = None
    ) -> Callable[[], None]:
        """Receive progress events (``only``: of these kinds; an agent's decision, words
        and turn are made into events only while a listener takes them); returns a
        function that unsubscribes."""
        entry = (listener, only)
        self._listeners.append(entry)
        self._wanted.clear()

        def unsubscribe() -> None:
            self._listeners.remove(entry)
            self._wanted.clear()

        return unsubscribe

    def _emit(self, event: SimEvent) -> None:
        for listener, only in list(self._listeners):
            if only is None or isinstance(event, only):
                listener(event)

    def _wants(self, kind: type[SimEvent]) -> bool:
        """Whether a listener takes events of ``kind`` (asked for every word spoken)."""
        wanted = self._wanted.get(kind)
        if wanted is None:
            wanted = any(only is None or issubclass(kind, only) for _, only in self._listeners)
            self._wanted[kind] = wanted
        return wanted

    def request_pause(self) -> None:
        """Stop :meth:`run` after the round in flight (a safe point)."""
        self._pause = True

    def extend(self, rounds: int) -> None:
        """Plan ``rounds`` more rounds beyond the current one. The save records the new
        total with the next round's file and index line (a failed round leaves the save as
        it was), or with the first intervention queued for it."""
        check_rounds(rounds)
        total = check_rounds(
            max(self.meta.total_rounds, self.round + rounds),
            f"--rounds {rounds} after round {self.round}",
        )
        self.meta = self.meta.model_copy(update={"total_rounds": total})

    def seat(self, ask: Ask | None) -> None:
        """Where the turns of agents played by people are asked: ``ask`` gets each
        :class:`~engine.minds.human.Turn` (the app shows a form; a script answers it)."""
        self._ask = ask

    def branch(
        self,
        at_round: int | None = None,
        run_id: str | None = None,
        name: str = "",
        scenario: Scenario | None = None,
        intervention: str | None = None,
        rounds: int | None = None,
    ) -> Simulation:
        """A new saved run forked at ``at_round`` (default: now), opened and locked;
        ``scenario`` replaces the personas from the fork on (a recast), ``intervention``
        schedules one of the scenario's ready-made interventions from the fork on, and
        ``rounds`` plans that many rounds after the fork. A branch at the current round
        carries the interventions queued here, if its next round comes."""
        if self.store is None:
            raise SaveError("branch: this run is not saved")
        at = self.round if at_round is None else at_round
        child = self.store.branch(
            self.run_id,
            at,
            new_id=run_id,
            name=name,
            scenario=scenario,
            intervention=intervention,
            rounds=rounds,
            meta=self.meta,
        )
        return Simulation.resume(child.run_id, self.store, self.mind, child)

    async def run(self, rounds: int | None = None) -> HistoryView:
        """Step until finished, paused, or ``rounds`` rounds are done; the rounds played, read
        like :attr:`history` (a saved run's older ones from the save, not held)."""
        first = self.round + 1
        self._pause = False
        while not self.finished and (rounds is None or self.round + 1 - first < rounds):
            if self._pause:
                self._pause = False
                self._emit(RunPaused(run_id=self.run_id, round=self.round))
                break
            # The loop's turn between rounds: a cancel (Ctrl+C, SIGTERM) is taken here,
            # also in a run whose rounds never wait (the offline model's, a small cast's).
            await asyncio.sleep(0)
            await self._advance()
            reason = None if self.finished else self.mind.stop_reason()
            if reason:
                self._emit(RunPaused(run_id=self.run_id, round=self.round, reason=reason))
                break
        return self.history[first:]

    # -- the round -----------------------------------------------------------------------

    async def step(self) -> RoundRecord:
        """Run one round (context, phase 1, phase 2, updates) and autosave it; its record."""
        return (await self._advance()).record()

    async def advance(self) -> None:
        """:meth:`step` for a caller that does not read the round: no record is built (the
        whole state as models, at 100 agents dearer than the round)."""
        await self._advance()

    async def _advance(self) -> PlayedRound:
        """Play one round and autosave it; the round as played (its record not built)."""
        reason = self.mind.stop_reason()
        if reason:
            raise BudgetError(f"run {self.run_id!r} {reason}; raise the cap to go on")
        if self.finished:
            raise RunFinishedError(
                f"run {self.run_id!r} finished at round {self.round}/{self.total_rounds}; "
                "extend it or branch it to go on"
            )
        players = self.meta.players
        if players and self._ask is None:
            who = ", ".join(f"{a} ({p})" for a, p in players.items())
            raise SocialsimError(
                f"run {self.run_id!r}: {who} played by people; play it in the app "
                f"(socialsim tui {self.run_id})"
            )
        taken = self.pending
        # An offline round is a burst of acyclic objects: collect after it (LLM rounds wait
        # on the network, rounds with people on them; leave the GC alone).
        collecting = gc.isenabled() and self.meta.llm is None and not players
        if collecting:
            gc.disable()
        self._taken = taken
        last = self.history.usage(-1) if self.round else None
        self._begin_journal()
        try:
            with self.progress.round(self.round + 1, last.calls if last else None):
                played = await self._play_round(taken)
            self._record_round(played)
        except SocialsimError as err:
            self.mind.take_calls()  # the failed round's exchanges are not kept
            self._emit(EngineError(run_id=self.run_id, round=self.round + 1, message=str(err)))
            raise
        except asyncio.CancelledError:  # a person's turn withdrawn, or the app quit
            self.mind.take_calls()  # played again from its start (answers: the journal's)
            self._note_structured_modes()  # what it found of its servers: not asked again
            raise
        finally:
            self._taken = None
            if collecting:
                gc.enable()
        # The rounds held make no cyclic garbage: keep the cyclic GC from rescanning them.
        gc.freeze()
        self._note_structured_modes()
        if taken.forced or taken.events or self.pending is not taken:
            # Interventions queued while the round ran are kept for the next one.
            self._set_pending(without(self.pending, [*taken.forced, *taken.events]))
        self._emit(RoundEnded(run_id=self.run_id, round=played.round, played=played))
        if self.finished:
            self._emit(RunFinished(run_id=self.run_id, round=played.round))
        self._stop_if_degraded(played)
        return played

    def _record_round(self, played: PlayedRound) -> None:
        """Add the round's LLM exchanges and metrics; save it (if saved) and keep it."""
        if calls := self.mind.take_calls():
            usage = RoundUsage.of(calls, self.mind.judge_mode, self._prefixes.tokens(calls))
            played.llm_calls, played.usage = calls, usage
        old, names = self._counter, played.after.names
        counter = RepairCounter(len(names), old.fell, old.was_friendly)
        metrics = round_metrics(self.scenario, played.after, counter)
        if self._files is not None:
            keyframe = played.round % KEYFRAME_EVERY == 0
            marks = PackedMarks.of(counter, names) if keyframe else None
            file = round_file(played, metrics, marks)
            summary: RoundSummary = self._save(self._files, file)
        else:
            summary = RoundSummary(round=played.round, metrics=metrics, usage=played.usage)
        self.history.append(played, summary)
        self._counter, self._columns, self.played = counter, played.after, played
        self._drop_journal()

    def _save(self, files: RunFiles, file: RoundFile) -> IndexEntry:
        """Write the round's file (a keyframe every :data:`KEYFRAME_EVERY` rounds); the first
        a process writes completes the index first, and moves a format-2 run to format 3."""
        if not files.index_complete:
            files.write_index(self.history.index_entries())
        if self.meta.format_version < FORMAT_VERSION:
            self.meta = self.meta.model_copy(update={"format_version": FORMAT_VERSION})
            self._save_meta()
        entry = files.write(file)
        if self._saved_total != self.meta.total_rounds:  # an extension: commit it last
            saved, self._saved_total = self._saved_total, self.meta.total_rounds
            try:
                self._save_meta()
            except SaveError:
                self._saved_total = saved
                files.discard(entry)
                raise
        return entry

    # -- degraded rounds (issue 11) -----------------------------------------------------

    def _stop_if_degraded(self, record: PlayedRound) -> None:
        """Raise :class:`DegradedRunError` after a saved round in which more than half of
        the structured answers fell back, unless the settings tolerate it."""
        settings = self.meta.llm
        if settings is not None and not settings.tolerate_fallbacks:
            line = degraded_line(record, settings.api_base)
            if line is not None:
                raise DegradedRunError(line)

    def contexts(self, t: int, events: list[ScenarioEvent]) -> dict[str, AgentContext]:
        """Context assembly (Sociodrama Sec. 3.3): what each agent may know in round ``t``."""
        past = self.history.recent(HISTORY_WINDOW) if t > 1 else []
        return phases.agent_contexts(
            self.scenario,
            self._columns,
            past,
            t,
            events,
            self.total_rounds,
            self.meta.prior,
            self._past,
        )

    async def _play_round(self, pending: Pending) -> PlayedRound:
        scenario, run_id = self.scenario, self.run_id
        t = self.round + 1
        minds = self._turn_mind()
        forced = {f.agent: f for f in pending.forced}
        plan = CallPlan(minds, scenario.names, self.progress.last_round(), not self.meta.ablation)
        deciders = [n for n in scenario.names if n not in forced]
        last = self.history.latest()
        told = scenario.narrator == "llm" and scripted_narration(scenario, t, last) is not None
        self.progress.phase("narrate", plan.narrate(told, deciders))
        narration = await narrate(scenario, t, last, self.mind)
        events = phases.round_events(scenario, t, narration, self.meta.scheduled, pending)
        self._emit(RoundStarted(run_id=run_id, round=t, events=events))
        contexts = self.contexts(t, events)
        meta = self.meta
        stage = phases.Stage(
            run_id,
            t,
            scenario,
            self._columns,
            meta.ablation,
            meta.players,
            self._emit,
            self._wants,
        )
        self.progress.phase("decide", plan.decide(deciders))
        # who tells notices after each phase (a protocol's check: once a round)
        talks = self.mind if isinstance(self.mind, TalksToServers) else None
        decisions = await phases.decide(stage, minds, contexts, forced)
        if talks is not None:
            self._say_notices(t, talks)
        self.progress.phase("speak", plan.speak(decisions, forced))
        actions = await phases.take_turns(stage, minds, contexts, decisions, forced)
        if talks is not None:
            self._say_notices(t, talks)
        self.progress.phase("judge", plan.judge(actions))
        played = await phases.judge_and_apply(stage, self.mind, contexts, events, actions)
        if talks is not None:
            self._say_notices(t, talks)
        return played

    def _say_notices(self, t: int, mind: TalksToServers) -> None:
        """Emit what the mind says the user must read at once, after each phase."""
        for line in mind.take_notices():
            self._emit(Notice(run_id=self.run_id, round=t, message=line))

    def _turn_mind(self) -> Mind:
        """Who is asked for turns: the mind, and the people seated for the agents they play."""
        if not self.meta.players or self._ask is None:
            return self.mind
        return HumanMind(self.mind, self.meta.players, self._ask)
