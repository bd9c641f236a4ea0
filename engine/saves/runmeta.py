"""What a run is: its metadata, lineage, bookmarks, queued interventions and task outcome,
and the pure logic of forking one run's metadata into a branch's (no file access here)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.limits import MAX_ROUNDS, check_rounds
from ..core.priors import Prior
from ..core.scenario import Archetype, Scenario
from ..core.state import Pending, ScenarioEvent
from ..errors import SaveError
from ..llm.settings import LLMSettings, StructuredMode
from ..minds.spec import DYNAMICS_VERSION, MindSpec, Offline

#: 10: a round's need changes are columns (saves/agentcolumns.py, MovedNeeds);
#: 9: a keyframe's notes and needs are columns (saves/agentcolumns.py); 8: a large
#: round's file is binary: a JSON head and the raw column bytes, zstd'd once
#: (rounds/NNNNNN.round, saves/binround.py; a small one stays JSON);
#: 7: a large round's file is zstd'd (rounds/NNNNNN.json.zst, saves/codec.py; a small one
#: stays gzip'd), a keyframe's repair marks are bit rows; 6: columns packed as arrays
#: (saves/packed.py);
#: 5: a keyframe's state and a round's relation changes are coded columns
#: (saves/columnar.py; runs of format 2 to 4 read as they are); 4: round files carry the id
#: of the run that wrote them and index lines a checksum (runs of format 3 read as they
#: are); 3: round files hold a round's changes, with a keyframe now and then, and a run has
#: an index (saves/roundfile.py, saves/runfiles.py); 2: every round file held the full state.
FORMAT_VERSION = 10
#: A run's total rounds as run.json may hold them.
TotalRounds = Annotated[int, Field(ge=1, le=MAX_ROUNDS)]


class ExperimentLink(BaseModel):
    """Which recasting session, iteration and episode a run belongs to."""

    model_config = ConfigDict(extra="forbid")

    session: str
    task: str
    iteration: int
    episode: int


class TrialLink(BaseModel):
    """Which trial a run belongs to: its seed, and its arm ("" for the common prefix)."""

    model_config = ConfigDict(extra="forbid")

    trial: str
    seed: int
    arm: str = ""


class TaskOutcome(BaseModel):
    """Individual answers, the team answer and the rule-computed utility of one episode."""

    model_config = ConfigDict(extra="forbid")

    task: str
    casting: list[Archetype]
    before: dict[str, list[list[str]]] | None = None
    after: dict[str, list[list[str]]] | None = None
    team_ranking: list[str] | None = None
    proposer: str | None = None
    proposal: dict[str, str] | None = None
    votes: dict[str, bool] | None = None
    settled: bool | None = None
    pareto: bool | None = None
    utility: float = 0.0


class Lineage(BaseModel):
    """A fork point: the run branched from and the round it was branched at."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    round: int


class Snapshot(BaseModel):
    """A user-named bookmark of one round of a run."""

    model_config = ConfigDict(extra="forbid")
    name: str
    round: int
    created: str


class ScheduledEvent(BaseModel):
    """An event queued for a later round (an intervention's plan)."""

    model_config = ConfigDict(extra="forbid")
    round: int
    event: ScenarioEvent


class RunMeta(BaseModel):
    """What a run is: scenario snapshot, seed, model, lineage, queued interventions."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    format_version: int = FORMAT_VERSION
    run_id: str
    name: str = ""
    created: str
    scenario: Scenario
    scenario_ref: str
    seed: int
    model: str = "offline"
    llm: LLMSettings | None = None
    #: The version of the offline model's dynamics the run plays (1: saved before versions
    #: were recorded); read only when the offline model plays.
    dynamics: int = Field(1, ge=1, le=DYNAMICS_VERSION)
    total_rounds: TotalRounds
    parent: Lineage | None = None
    ancestry: list[Lineage] = []
    #: The ids this run's folder had before it was copied or renamed (its earlier round
    #: files carry them).
    aliases: list[str] = []
    pending: Pending = Pending()
    pending_round: int = 0
    snapshots: list[Snapshot] = []
    ablation: bool = False
    scheduled: list[ScheduledEvent] = []
    intervention: str | None = None
    experiment: ExperimentLink | None = None
    #: The trial (engine/studies/experiments/trial.py) the run is a prefix or an arm of.
    trial: TrialLink | None = None
    outcome: TaskOutcome | None = None
    #: The relational prior of the Relational priors paper (None: none given; the No-Prior
    #: control is a Prior).
    prior: Prior | None = None
    #: How each model is asked for structured replies, as ``--structured auto`` resolved it
    #: (model -> schema, json or text); updated after a round that changed it.
    structured_modes: dict[str, StructuredMode] = {}
    #: Where each model's system text went, as ``--system-role auto`` resolved it (model ->
    #: keep, or merge: into the first user turn, for a server that dropped it).
    system_roles: dict[str, Literal["keep", "merge"]] = {}
    #: The requests each endpoint's server said it decodes at once, asked before the run's
    #: first call (endpoint -> slots; 0: it did not say): not asked again on reopen.
    server_slots: dict[str, int] = {}
    #: Agents played by people from the next round on: agent -> player's name.
    players: dict[str, str] = {}

    @property
    def mind(self) -> MindSpec:
        """Which mind plays the run (saved as ``model`` and ``llm``, as in format 2)."""
        return Offline(dynamics=self.dynamics) if self.llm is None else self.llm

    def with_mind(self, spec: MindSpec) -> RunMeta:
        """The same run, played from now on by ``spec``."""
        if isinstance(spec, Offline):
            return self.model_copy(
                update={"model": spec.model, "llm": None, "dynamics": spec.dynamics}
            )
        return self.model_copy(update={"model": spec.model, "llm": spec})


class AgentHead(BaseModel):
    """An agent's name, read without validating the rest of its spec."""

    model_config = ConfigDict(extra="ignore")
    name: str


class ScenarioHead(BaseModel):
    """A scenario's id, title and cast, read without validating the rest of it."""

    model_config = ConfigDict(extra="ignore")
    id: str = ""
    title: str = ""
    agents: list[AgentHead] = []


class RunHead(BaseModel):
    """What ``list`` shows of a run, read from run.json without validating the rest."""

    model_config = ConfigDict(extra="ignore")
    format_version: int
    run_id: str = ""
    name: str = ""
    created: str = ""
    scenario: ScenarioHead = ScenarioHead()
    #: Checked within the round cap once the format version is known to be readable.
    total_rounds: int = 0
    model: str = "offline"
    parent: Lineage | None = None
    ancestry: list[Lineage] = []
    aliases: list[str] = []
    trial: TrialLink | None = None
    snapshots: list[Snapshot] = []

    @classmethod
    def of(cls, meta: RunMeta) -> RunHead:
        """The head of run metadata ``meta``."""
        scenario = meta.scenario
        return cls(
            format_version=meta.format_version,
            run_id=meta.run_id,
            name=meta.name,
            created=meta.created,
            scenario=ScenarioHead(
                id=scenario.id,
                title=scenario.title,
                agents=[AgentHead(name=a.name) for a in scenario.agents],
            ),
            total_rounds=meta.total_rounds,
            model=meta.model,
            parent=meta.parent,
            ancestry=meta.ancestry,
            aliases=meta.aliases,
            trial=meta.trial,
            snapshots=meta.snapshots,
        )


def now_iso() -> str:
    """Current UTC time, ISO 8601, seconds precision."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def fork(
    meta: RunMeta,
    at_round: int,
    new_id: str,
    *,
    name: str = "",
    scenario: Scenario | None = None,
    intervention: str | None = None,
    rounds: int | None = None,
) -> RunMeta:
    """The metadata of a branch of ``meta`` at ``at_round``.

    ``intervention`` names one of the scenario's ready-made interventions: its events are
    scheduled from the fork on (its round 1 is the first round after the fork). ``rounds``
    plans that many rounds after the fork (never fewer than the parent's). A branch at the
    parent's current round carries the interventions queued for its next round, if the
    branch has that round.
    """
    total = meta.total_rounds
    if rounds is not None:
        total = check_rounds(max(total, at_round + check_rounds(rounds)))
    carried = meta.pending_round == at_round + 1 and at_round < total
    plans = meta.scenario.interventions
    if intervention is not None and intervention not in plans:
        known = ", ".join(plans) or "none in this scenario"
        raise SaveError(f"--intervention {intervention!r}: unknown; known: {known}")
    scheduled = [s for s in meta.scheduled if s.round <= at_round]
    if intervention is not None:
        scheduled += [
            ScheduledEvent(
                round=at_round + e.round,
                event=ScenarioEvent(
                    text=e.text,
                    private_to=e.private_to,
                    source="injected",
                    tone=e.tone,
                    about=e.about,
                ),
            )
            for e in plans[intervention].events
        ]
    parent = Lineage(run_id=meta.run_id, round=at_round)
    return meta.model_copy(
        update={
            "format_version": FORMAT_VERSION,
            "run_id": new_id,
            "name": name or f"{meta.name or meta.run_id} @ {at_round}",
            "created": now_iso(),
            "parent": parent,
            "ancestry": [*meta.ancestry, parent],
            "total_rounds": total,
            "pending": meta.pending if carried else Pending(),
            "pending_round": at_round + 1 if carried else 0,
            "snapshots": [s for s in meta.snapshots if s.round <= at_round],
            "scenario": scenario or meta.scenario,
            "outcome": None,
            "experiment": None,
            "trial": None,
            "scheduled": scheduled,
            "intervention": intervention or meta.intervention,
        }
    )
