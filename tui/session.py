"""The one app-wide settings object every screen reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine import SaveStore, Simulation

from .engine_thread import EngineThread


@dataclass
class Session:
    """The saves folder, the open run, the user's keymap, where exports go by default, and
    the thread the run's rounds are played on."""

    store: SaveStore
    sim: Simulation
    keymap: dict[str, str] = field(default_factory=dict)
    export_root: Path = Path("exports")
    engine: EngineThread = field(default_factory=EngineThread)

    def open(self, sim: Simulation) -> None:
        """Make ``sim`` the open run; the one before is closed (its lock released)."""
        if sim is not self.sim:
            self.sim.close()
        self.sim = sim
