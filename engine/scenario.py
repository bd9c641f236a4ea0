"""Scenario files: the pydantic model, TOML loading and the bundled library."""

from __future__ import annotations

import re
import tomllib
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .errors import ScenarioError
from .needs import DEFAULT_CURRENT, DEFAULT_EXPECTED, NEEDS, expected_from_traits, parse_trait


class Archetype(StrEnum):
    """The persona library of Sociodrama Sec. 4."""

    BALANCED = "balanced"
    DOMINANT = "dominant"
    ANALYTICAL = "analytical"
    AGREEABLE = "agreeable"
    RESERVED = "reserved"


class Status(StrEnum):
    """Categorical relationship status (Sociodrama Sec. 3.1)."""

    NEUTRAL = "neutral"
    ALLY = "ally"
    RIVAL = "rival"
    ENEMY = "enemy"


SVO = Literal["altruistic", "prosocial", "individualistic", "competitive"]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
Signed = Annotated[float, Field(ge=-1.0, le=1.0)]
NeedValue = Annotated[float, Field(ge=0.0, le=10.0)]
Name = Annotated[str, Field(min_length=1, max_length=40, pattern=r"^[^\s].*[^\s]$|^[^\s]$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class NeedSpec(_Strict):
    """Current and expected value of one need, on the 0-10 scale (expected: from the
    agent's traits for value-driven agents, else 8)."""

    current: NeedValue = DEFAULT_CURRENT
    expected: NeedValue | None = None


class AgentSpec(_Strict):
    """One agent's time-invariant persona and initial state.

    ``kind = "value-driven"`` makes the agent an EduMirror agent (EduMirror Sec. 3.3): its
    expected need values come from trait adjectives with degree adverbs (Tab. 9), and it
    plans by generating three candidate actions and picking the most need-consistent one.
    """

    name: Name
    kind: Literal["social", "value-driven"] = "social"
    role: str = Field(min_length=1)
    archetype: Archetype = Archetype.BALANCED
    traits: list[str] = []
    boundary: str = ""
    goal: str = ""
    emotion: Unit = 0.5
    private_info: list[str] = []
    talking_points: list[str] = []
    evidence: list[str] = []
    needs: dict[str, NeedSpec] = {}
    svo: SVO = "prosocial"
    model: str | None = Field(default=None, min_length=1)

    @field_validator("needs")
    @classmethod
    def _known_needs(cls, needs: dict[str, NeedSpec]) -> dict[str, NeedSpec]:
        unknown = sorted(set(needs) - set(NEEDS))
        if unknown:
            raise ValueError(f"unknown need {unknown[0]!r}; known needs: {', '.join(NEEDS)}")
        return needs

    @model_validator(mode="after")
    def _value_traits(self) -> AgentSpec:
        if self.kind == "value-driven":
            for k, trait in enumerate(self.traits):
                try:
                    parse_trait(trait)
                except ValueError as err:
                    raise ValueError(f"traits.{k}: {err}") from None
        return self

    def need(self, name: str) -> tuple[float, float]:
        """(current, expected) of a need: the file's values, the traits (value-driven
        agents, Tab. 9), or the defaults."""
        spec = self.needs.get(name, NeedSpec())
        expected = spec.expected
        if expected is None and self.kind == "value-driven":
            expected = expected_from_traits(self.traits).get(name)
        return spec.current, DEFAULT_EXPECTED if expected is None else expected


class RelationSpec(_Strict):
    """An initial directed relation: how ``from`` regards ``to``."""

    source: Name = Field(alias="from")
    target: Name = Field(alias="to")
    fav: Signed = 0.0
    status: Status | None = None


Tone = Literal["neutral", "supportive", "protective", "punitive", "hostile"]


class EventSpec(_Strict):
    """A scripted scenario event; ``private_to`` limits who sees it. ``tone`` and ``about``
    tell the offline model how the event bears on the named agents (an LLM reads the text)."""

    round: int = Field(ge=1)
    text: str = Field(min_length=1)
    private_to: Annotated[list[Name], Field(min_length=1)] | None = None
    tone: Tone = "neutral"
    about: list[Name] = []


class ScheduleStep(_Strict):
    """Where and when a round takes place (the game master advances along these)."""

    time: str = Field(min_length=1)
    location: str = Field(min_length=1)


class Rule(_Strict):
    """A scenario norm the game master enforces; ``cues`` are words that break it."""

    text: str = Field(min_length=1)
    cues: list[str] = []

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: object) -> object:
        return {"text": data} if isinstance(data, str) else data


class Criterion(_Strict):
    """A behaviour the Rater scores from the transcript (EduMirror dual-track measurement)."""

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    scale_min: int = 1
    scale_max: int = 5
    #: Words that, in an agent's utterances, count as evidence for the behaviour
    #: (the offline rater's rule); the LLM rater reads the description.
    cues: list[str] = []


class LikertItem(_Strict):
    """One questionnaire item; reverse-scored items count scale_max + scale_min - answer."""

    text: str = Field(min_length=1)
    reverse: bool = False
    #: The needs this item reflects (the offline surveyor answers from them).
    needs: list[str] = []


class Questionnaire(_Strict):
    """A Likert questionnaire defined in a scenario file."""

    title: str = Field(min_length=1)
    scale_min: int = 1
    scale_max: int = Field(default=4, ge=2, le=11)
    labels: list[str] = []
    items: list[LikertItem] = Field(min_length=1)

    @model_validator(mode="after")
    def _items(self) -> Questionnaire:
        if self.scale_max <= self.scale_min:
            raise ValueError("scale_max must be greater than scale_min")
        for k, item in enumerate(self.items):
            unknown = sorted(set(item.needs) - set(NEEDS))
            if unknown:
                raise ValueError(f"items.{k}.needs: unknown need {unknown[0]!r}")
        if self.labels and len(self.labels) != self.scale_max - self.scale_min + 1:
            raise ValueError("labels: give one label per scale point")
        return self


class Intervention(_Strict):
    """A ready-made branch: events injected from a round on (e.g. a teacher strategy)."""

    description: str = Field(min_length=1)
    events: list[EventSpec] = Field(min_length=1)


class Scenario(_Strict):
    """A validated scenario: agents, relations, factions, events and rules."""

    id: str = Field(default="", pattern=r"^[a-z0-9][a-z0-9_-]*$|^$")
    title: str = Field(min_length=1)
    description: str = ""
    conflict: int = Field(default=1, ge=1, le=5)
    rounds: int = Field(default=9, ge=1, le=10_000)
    memory_size: int = Field(default=5, ge=1, le=100)
    agents: list[AgentSpec] = Field(min_length=2)
    relations: list[RelationSpec] = []
    factions: dict[str, list[Name]] = {}
    events: list[EventSpec] = []
    theory: str = ""
    measurements: list[str] = []
    rules: list[Rule] = []
    schedule: list[ScheduleStep] = []
    narrator: Literal["scripted", "llm"] = "scripted"
    criteria: list[Criterion] = []
    questionnaires: dict[str, Questionnaire] = {}
    interventions: dict[str, Intervention] = {}

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        names = [a.name for a in self.agents]
        seen: set[str] = set()
        for i, name in enumerate(names):
            if name in seen:
                raise ValueError(f"agents.{i}.name: duplicate agent name {name!r}")
            if name.lower() in {"all", "none"}:
                raise ValueError(f"agents.{i}.name: {name!r} is reserved")
            seen.add(name)
        for i, rel in enumerate(self.relations):
            for key, who in (("from", rel.source), ("to", rel.target)):
                if who not in seen:
                    raise ValueError(f"relations.{i}.{key}: unknown agent {who!r}")
            if rel.source == rel.target:
                raise ValueError(f"relations.{i}: an agent cannot relate to itself")
        member_of: dict[str, str] = {}
        for faction, members in self.factions.items():
            for who in members:
                if who not in seen:
                    raise ValueError(f"factions.{faction}: unknown agent {who!r}")
                if who in member_of:
                    raise ValueError(
                        f"factions.{faction}: {who!r} is already in faction {member_of[who]!r}"
                    )
                member_of[who] = faction
        for key, plan in self.interventions.items():
            for k, event in enumerate(plan.events):
                for field, names in (
                    ("private_to", event.private_to or []),
                    ("about", event.about),
                ):
                    for who in names:
                        if who not in seen:
                            raise ValueError(
                                f"interventions.{key}.events.{k}.{field}: unknown agent {who!r}"
                            )
        for i, event in enumerate(self.events):
            if event.round > self.rounds:
                raise ValueError(
                    f"events.{i}.round: round {event.round} is beyond rounds = {self.rounds}"
                )
            for field, names in (("private_to", event.private_to or []), ("about", event.about)):
                for who in names:
                    if who not in seen:
                        raise ValueError(f"events.{i}.{field}: unknown agent {who!r}")
        return self

    @property
    def names(self) -> list[str]:
        """Agent names in scenario order."""
        return [a.name for a in self.agents]

    def agent(self, name: str) -> AgentSpec:
        """The persona of the named agent."""
        for spec in self.agents:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def faction_of(self) -> dict[str, str]:
        """Map agent name to faction name, for agents in a faction."""
        return {who: f for f, members in self.factions.items() for who in members}

    def events_for(self, round_no: int) -> list[EventSpec]:
        """The scripted events of one round."""
        return [e for e in self.events if e.round == round_no]


def _describe(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
    given = first.get("input")
    if first["type"] not in {"missing", "value_error"} and not isinstance(given, dict | list):
        msg += f" (got {given!r})"
    if loc and re.match(r"^[\w-]+(\.[\w-]+)*: ", msg):  # a validator named a nested field
        return f"{loc}.{msg}"
    return f"{loc}: {msg}" if loc else msg


def parse_scenario(data: dict, source: str, default_id: str = "") -> Scenario:
    """Validate raw scenario data; errors name ``source`` and the field."""
    if default_id and "id" not in data:
        data = {**data, "id": default_id}
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        extra = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        raise ScenarioError(f"{source}: {_describe(err)}{extra}") from None


def load_scenario_file(path: Path) -> Scenario:
    """Load and validate a scenario TOML file."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read scenario file ({err.strerror})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ScenarioError(f"{path}: not a UTF-8 text file") from None
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError(f"{path}: invalid TOML: {err}") from None
    slug = path.stem.lower().replace(" ", "-")
    return parse_scenario(data, str(path), default_id=slug if _is_slug(slug) else "")


_SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def _is_slug(text: str) -> bool:
    return bool(_SLUG.fullmatch(text))


def library_ids() -> list[str]:
    """Ids of the scenarios bundled in the ``scenarios`` package, sorted."""
    root = resources.files("scenarios")
    return sorted(p.name.removesuffix(".toml") for p in root.iterdir() if p.name.endswith(".toml"))


def load_library(scenario_id: str) -> Scenario:
    """Load a bundled scenario by id."""
    if not _is_slug(scenario_id):
        raise ScenarioError(f"unknown scenario {scenario_id!r}")
    resource = resources.files("scenarios") / f"{scenario_id}.toml"
    if not resource.is_file():
        known = ", ".join(library_ids())
        raise ScenarioError(f"unknown scenario {scenario_id!r}; library ids: {known}")
    with resources.as_file(resource) as path:
        return load_scenario_file(path)


def resolve_scenario(ref: str) -> Scenario:
    """A scenario from a library id or a path to a TOML file."""
    path = Path(ref)
    if ref.endswith(".toml") or path.is_file() or "/" in ref:
        if not path.exists():
            raise ScenarioError(f"{ref}: no such scenario file")
        return load_scenario_file(path)
    return load_library(ref)


def scenario_json_schema() -> dict:
    """The JSON Schema of the scenario format."""
    return Scenario.model_json_schema(by_alias=True)
