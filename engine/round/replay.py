"""Re-run a saved run from its record: the recorded LLM exchanges and the recorded turns of
the people who played agents, zero network calls, nobody asked."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.state import ForcedAction
from ..minds import Mind, OfflineMind
from ..minds.human import recorded_answers
from ..minds.spec import Offline
from ..saves.store import SaveStore
from .simulation import Simulation


@dataclass(frozen=True)
class ReplayResult:
    """The replayed run and the rounds (if any) whose state or actions differ."""

    sim: Simulation
    rounds: int
    diverged: list[int]

    @property
    def identical(self) -> bool:
        return not self.diverged


async def replay_run(store: SaveStore, run_id: str, new_id: str | None = None) -> ReplayResult:
    """Replay ``run_id`` into a new saved run, re-applying its interventions round by round;
    an agent a person played in a round is answered with that person's recorded turn."""
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
    sim = Simulation.new(
        meta.scenario,
        seed=meta.seed,
        mind=mind,
        store=store,
        run_id=new_id or store.new_run_id(f"{run_id}-replay"[:40]),
        name=f"replay of {run_id}",
        rounds=meta.total_rounds,
        scenario_ref=meta.scenario_ref,
    )
    try:
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
            await sim.step()
    except BaseException:
        sim.close()
        raise
    diverged = [
        old.round
        for old, new in zip(recorded, sim.history, strict=True)
        if old.state != new.state or old.actions != new.actions
    ]
    return ReplayResult(sim=sim, rounds=len(recorded) - 1, diverged=diverged)
