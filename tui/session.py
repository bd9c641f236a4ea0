"""The one app-wide settings object every screen reads."""

from __future__ import annotations

from dataclasses import dataclass, field

from engine import SaveStore, Simulation

from .engine_thread import EngineThread


@dataclass
class Session:
    """The saves folder, the open run, the user's keymap, the thread the run's rounds are
    played on, and the run this launch created (``fresh``: not kept unless it is played or
    named)."""

    store: SaveStore
    sim: Simulation
    keymap: dict[str, str] = field(default_factory=dict)
    engine: EngineThread = field(default_factory=EngineThread)
    fresh: str | None = None

    def discard_unplayed(self) -> bool:
        """Delete the run this launch created if no round of it was played and nothing
        was named or queued in it, nor answered of its first round (a launch quit at once
        leaves no empty run; one quit mid-round keeps its journal for the next open); True
        if it was deleted. Call with its lock released."""
        store, run_id = self.store, self.fresh
        if run_id is None or not store.exists_quietly(run_id):
            return False
        if self.sim.run_id == run_id and self.sim.journaled:
            return False
        meta = store.read_meta(run_id)
        pending = meta.pending.forced or meta.pending.events or meta.scheduled
        if len(store.history(run_id, meta)) > 1 or meta.snapshots or pending:
            return False
        store.delete(run_id)
        return True

    def open(self, sim: Simulation) -> None:
        """Make ``sim`` the open run; the one before is closed (its lock released)."""
        if sim is not self.sim:
            self.sim.close()
        self.sim = sim
