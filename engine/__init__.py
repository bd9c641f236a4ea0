"""The socialsim simulation engine: pure Python, no UI imports.

Public API::

    from engine import Simulation, SaveStore, resolve_scenario
    sim = Simulation.new(resolve_scenario("tavern"), seed=1, store=SaveStore("saves"))
    await sim.step()
"""

from .errors import (
    InterventionError,
    RunFinishedError,
    RunLockedError,
    SaveError,
    ScenarioError,
    SocialsimError,
)
from .events import SimEvent
from .metrics import Metrics, compute_metrics
from .minds import Mind, OfflineMind, make_mind
from .scenario import (
    Archetype,
    Scenario,
    Status,
    library_ids,
    load_library,
    load_scenario_file,
    resolve_scenario,
    scenario_json_schema,
)
from .simulation import Simulation
from .state import ALL, Action, ForcedAction, Mode, RoundRecord, ScenarioEvent, WorldState
from .store import FORMAT_VERSION, RunListing, RunMeta, SaveStore, default_saves_dir

__all__ = [
    "ALL",
    "FORMAT_VERSION",
    "Action",
    "Archetype",
    "ForcedAction",
    "InterventionError",
    "Metrics",
    "Mind",
    "Mode",
    "OfflineMind",
    "RoundRecord",
    "RunFinishedError",
    "RunListing",
    "RunLockedError",
    "RunMeta",
    "SaveError",
    "SaveStore",
    "Scenario",
    "ScenarioError",
    "ScenarioEvent",
    "SimEvent",
    "Simulation",
    "SocialsimError",
    "Status",
    "WorldState",
    "compute_metrics",
    "default_saves_dir",
    "library_ids",
    "load_library",
    "load_scenario_file",
    "make_mind",
    "resolve_scenario",
    "scenario_json_schema",
]
