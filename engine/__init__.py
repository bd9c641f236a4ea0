"""The socialsim simulation engine: pure Python, no UI imports.

Public API (names load lazily, so ``import engine.errors`` stays cheap)::

    from engine import Simulation, SaveStore, resolve_scenario
    sim = Simulation.new(resolve_scenario("tavern"), seed=1, store=SaveStore("saves"))
    await sim.step()
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "errors": (
        "DegradedRunError",
        "InterventionError",
        "RunFinishedError",
        "RunLockedError",
        "SaveError",
        "ScenarioError",
        "SocialsimError",
    ),
    "round.events": ("SimEvent",),
    "saves.history": ("History",),
    "core.metrics": ("Metrics", "compute_metrics"),
    "minds": ("Mind", "OfflineMind", "make_mind"),
    "core.scenario": (
        "Archetype",
        "Scenario",
        "Status",
        "library_ids",
        "load_library",
        "load_scenario_file",
        "resolve_scenario",
        "scenario_json_schema",
    ),
    "round.simulation": ("Simulation",),
    "core.state": (
        "ALL",
        "Action",
        "Decision",
        "ForcedAction",
        "Mode",
        "RoundRecord",
        "ScenarioEvent",
        "WorldState",
    ),
    "saves.runmeta": ("FORMAT_VERSION", "RunMeta"),
    "saves.store": ("RunListing", "SaveStore", "default_saves_dir"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)  # built from _EXPORTS, the one list of names


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
