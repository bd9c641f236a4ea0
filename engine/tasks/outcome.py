"""What a task episode produced, saved with its run, and the link to a recasting session."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ..scenario import Archetype


class ExperimentLink(BaseModel):
    """Which recasting session, iteration and episode a run belongs to."""

    model_config = ConfigDict(extra="forbid")

    session: str
    task: str
    iteration: int
    episode: int


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
