"""Task files (``scenarios/tasks/*.toml``): ranking tasks and the negotiation."""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...core.scenario import Archetype
from ...errors import ScenarioError

AGENTS = ("Avery", "Blake", "Casey", "Drew")
Casting = Annotated[list[Archetype], Field(min_length=4, max_length=4)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Fact(_Strict):
    """A piece of evidence about an item; ``holders`` empty means everyone knows it."""

    text: str = Field(min_length=1)
    item: str
    weight: float
    holders: list[str] = []


class Issue(_Strict):
    """A negotiation issue with exactly three options."""

    name: str
    options: Annotated[list[str], Field(min_length=3, max_length=3)]


class Negotiator(_Strict):
    """One agent's private scoring table and acceptance threshold."""

    threshold: float
    pitch: list[str] = []
    scores: dict[str, Annotated[list[float], Field(min_length=3, max_length=3)]]


class Castings(_Strict):
    """The Hetero and Random initial castings of Sociodrama Tab. 2."""

    hetero: Casting
    random: Casting


class Task(_Strict):
    """A collaborative task: who knows what, and how the outcome is scored by rule."""

    id: str
    title: str
    kind: Literal["ranking", "negotiation"]
    utility: Literal["top1", "neg-l1", "pareto"]
    description: str
    rounds: int = Field(default=4, ge=1)
    casting: Castings
    roles: dict[str, str]
    items: list[str] = []
    answer: str | None = None
    expert_ranking: list[str] = []
    facts: list[Fact] = []
    issues: list[Issue] = []
    agents: dict[str, Negotiator] = {}

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        if sorted(self.roles) != sorted(AGENTS):
            raise ValueError(f"roles: give one role for each of {', '.join(AGENTS)}")
        for k, fact in enumerate(self.facts):
            if fact.item not in self.items:
                raise ValueError(f"facts.{k}.item: unknown item {fact.item!r}")
            for who in fact.holders:
                if who not in AGENTS:
                    raise ValueError(f"facts.{k}.holders: unknown agent {who!r}")
        if self.utility == "top1" and self.answer not in self.items:
            raise ValueError("answer: must be one of items")
        if self.utility == "neg-l1" and sorted(self.expert_ranking) != sorted(self.items):
            raise ValueError("expert_ranking: must order exactly the items")
        if self.kind == "negotiation":
            if len(self.issues) != 5 or sorted(self.agents) != sorted(AGENTS):
                raise ValueError("a negotiation needs 5 issues and a table for each agent")
            names = sorted(i.name for i in self.issues)
            for who, table in self.agents.items():
                if sorted(table.scores) != names:
                    raise ValueError(f"agents.{who}.scores: score every issue once")
        return self

    def knows(self, agent: str, fact: Fact) -> bool:
        """Whether ``agent`` starts with ``fact``."""
        return not fact.holders or agent in fact.holders


def target(task: Task) -> float:
    """The utility at which recasting stops: perfect accuracy, distance or rate."""
    return 0.0 if task.utility == "neg-l1" else 1.0


def task_ids() -> list[str]:
    """Ids of the bundled tasks."""
    root = resources.files("scenarios") / "tasks"
    return sorted(p.name.removesuffix(".toml") for p in root.iterdir() if p.name.endswith(".toml"))


def load_task(task_id: str) -> Task:
    """A bundled task by id; unknown ids and broken files are one clear error."""
    if task_id not in task_ids():
        raise ScenarioError(f"unknown task {task_id!r}; tasks: {', '.join(task_ids())}")
    resource = resources.files("scenarios") / "tasks" / f"{task_id}.toml"
    try:
        return Task.model_validate(tomllib.loads(resource.read_text(encoding="utf-8")))
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError(f"{resource}: invalid TOML: {err}") from None
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(f"{resource}: {loc}: {first['msg']}") from None


def parse_casting(text: str) -> list[Archetype]:
    """``reserved,dominant,analytical,agreeable`` -> a checked four-archetype casting."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if len(names) != len(AGENTS):
        raise ScenarioError(f"casting {text!r}: give {len(AGENTS)} archetypes, one per agent")
    try:
        return [Archetype(n) for n in names]
    except ValueError:
        known = ", ".join(a.value for a in Archetype)
        raise ScenarioError(f"casting {text!r}: unknown archetype; known: {known}") from None
