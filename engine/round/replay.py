"""Re-run a saved run from its record: the recorded LLM exchanges and the recorded turns of
the people who played agents, zero network calls, nobody asked."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass

from ..core.state import ForcedAction
from ..llm.journal import JOURNAL_FILE, Journal
from ..minds import Mind, OfflineMind
from ..minds.human import recorded_answers
from ..minds.spec import Offline
from ..saves.history import History
from ..saves.store import SaveStore
from .simulation import Simulation


@dataclass(frozen=True)
class ReplayResult:
    """The replayed run and the rounds (if any) whose state or actions differ."""

    sim: Simulation
    rounds: int
    diverged: list[int]
    #: Exchanges of the round after the last saved one, carried from the run's journal into
    #: the replay's (its resume serves them, asking the server only the rest).
    journaled: int = 0

    @property
    def identical(self) -> bool:
        return not self.diverged


async def replay_run(
    store: SaveStore,
    run_id: str,
    new_id: str | None = None,
    started: Callable[[Simulation], None] | None = None,
) -> ReplayResult:
    """Replay ``run_id`` into a new saved run, re-applying its interventions round by round;
    an agent a person played in a round is answered with that person's recorded turn.

    The replay is played in a staging folder and moved into the saves folder whole when its
    last round is saved: an interrupted replay (a signal, a kill, the source deleted
    mid-way) leaves no run. ``started`` is told the replay's simulation once it exists (for
    what an interruption reports); the one returned plays the published run, its lock held."""
    meta = store.read_meta(run_id)
    recorded = store.history(run_id, meta)
    spec = meta.mind
    if isinstance(spec, Offline):
        mind: Mind = OfflineMind(meta.seed, spec.dynamics)
    else:
        from ..minds.llm import replay_mind

        # Replaying recorded exchanges costs nothing: the run's caps (perhaps lowered
        # after the recorded rounds were played) must not stop the replay part-way.
        uncapped = spec.model_copy(update={"max_calls": None, "budget_usd": None})
        mind = replay_mind(uncapped, recorded.llm_calls())
        # asked as the run asked: its record may not hold the probes that found each mode
        # (a round that failed after them is played again without them)
        mind.settle(dict(meta.structured_modes), dict(meta.system_roles), {})
    new_id = new_id or store.new_run_id(f"{run_id}-replay"[:40])
    with store.staging(new_id) as staged:
        sim = Simulation.new(
            meta.scenario,
            seed=meta.seed,
            mind=mind,
            store=staged,
            run_id=new_id,
            name=f"replay of {run_id}",
            rounds=meta.total_rounds,
            scenario_ref=meta.scenario_ref,
        )
        try:
            if started is not None:
                started(sim)
            await _play(sim, recorded)
            diverged = [
                old.round
                for old, new in zip(recorded, sim.history, strict=True)
                if old.state != new.state or old.actions != new.actions
            ]
        finally:
            sim.close()
        store.publish(staged, new_id)
    rounds = len(recorded) - 1
    journaled = 0
    source = store.run_dir(run_id)
    if not diverged and Journal(source).count(rounds + 1):  # a partly played round
        shutil.copyfile(source / JOURNAL_FILE, store.run_dir(new_id) / JOURNAL_FILE)
        journaled = Journal(store.run_dir(new_id)).begin(rounds + 1)
    published = Simulation.resume(new_id, store, mind)
    return ReplayResult(sim=published, rounds=rounds, diverged=diverged, journaled=journaled)


async def _play(sim: Simulation, recorded: History) -> None:
    """Play ``recorded``'s rounds again in ``sim``, with its interventions and people."""
    for record in recorded.logs(1):
        for a in record.actions:
            if a.forced:
                sim.force(
                    ForcedAction(
                        agent=a.speaker,
                        mode=a.mode,
                        target=a.target,
                        utterance=a.utterance,
                        urgency=a.urgency,
                        stance=a.stance,
                    )
                )
        for e in record.events:
            if e.source == "injected":
                sim.inject(
                    e.text,
                    e.private_to,
                    valence=e.valence,
                    about=e.about,
                    implicates=e.implicates,
                )
        people = {a.speaker: a.player for a in record.actions if a.actor == "human"}
        if people != sim.meta.players:
            sim.play(people)
        sim.seat(recorded_answers(record.actions))
        await sim.advance()
