"""Scenario files: the pydantic model, TOML loading and the bundled library."""

from __future__ import annotations

import re
import unicodedata
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import ScenarioError
from .limits import (
    MAX_AGENTS,
    MAX_DEPTH,
    MAX_EVENTS,
    MAX_PERSONA_ITEMS,
    MAX_ROUNDS,
    MAX_SECTION_ITEMS,
    rounds_problem,
)
from .needs import DEFAULT_CURRENT, DEFAULT_EXPECTED, NEEDS, expected_from_traits, parse_trait
from .textsafe import char_name, format_char, name_key, one_line, unsafe_char
from .tomlfile import read_toml


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


def _no_controls(multiline: bool) -> BeforeValidator:
    """Reject control characters (and, unless ``multiline``, tabs and line breaks). Short
    texts found safe are kept, each checked once (a 1,000-agent cast names its agents in
    200,000 relations)."""
    safe: set[str] = set()

    def check(value: object) -> object:
        if not isinstance(value, str) or value in safe:
            return value
        if bad := unsafe_char(value, multiline=multiline):
            raise ValueError(f"control character {char_name(bad)} is not allowed")
        if len(value) <= SAFE_LENGTH and value.__class__ is str:
            if len(safe) >= SAFE_KEPT:
                safe.clear()
            safe.add(value)
        return value

    return BeforeValidator(check)


#: The texts :func:`_no_controls` keeps as found safe: at most this many of each kind, of
#: at most this many characters (a name's longest).
SAFE_KEPT, SAFE_LENGTH = 1 << 16, 40


def _at_most(limit: int, what: str) -> BeforeValidator:
    """Refuse a list or table of more than ``limit`` entries before any entry is read."""

    def check(value: object) -> object:
        if isinstance(value, list | dict) and len(value) > limit:
            raise ValueError(f"{len(value):,} {what}; at most {limit:,} (see docs/formats.md)")
        return value

    return BeforeValidator(check)


SVO = Literal["altruistic", "prosocial", "individualistic", "competitive"]
#: The longest one-line text and prose a scenario may hold (characters).
MAX_LINE = 300
MAX_PROSE = 10_000
#: One-line text (names, roles, labels) and prose (descriptions, events, talking points);
#: neither may hold control characters, prose may hold tabs and line breaks.
Line = Annotated[str, Field(max_length=MAX_LINE), _no_controls(multiline=False)]
Text = Annotated[str, Field(max_length=MAX_PROSE), _no_controls(multiline=True)]
#: Numbers are strict: ``rounds = true`` or ``rounds = "3"`` is an error, not 1 or 3.
Int = Annotated[int, Field(strict=True)]
Bool = Annotated[bool, Field(strict=True)]
Unit = Annotated[float, Field(ge=0.0, le=1.0, strict=True)]
Signed = Annotated[float, Field(ge=-1.0, le=1.0, strict=True)]
NeedValue = Annotated[float, Field(ge=0.0, le=10.0, strict=True)]
Name = Annotated[
    str,
    Field(min_length=1, max_length=40, pattern=r"^[^\s].*[^\s]$|^[^\s]$"),
    _no_controls(multiline=False),
]
#: A scenario id: lower-case letters, digits, ``_`` and ``-`` (empty: none given).
Slug = Annotated[str, Field(max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$|^$")]
Round = Annotated[int, Field(ge=1, le=MAX_ROUNDS, strict=True)]
Scale = Annotated[int, Field(ge=0, le=100, strict=True)]
#: Lists as long as a person writes them (:mod:`engine.core.limits`).
Persona = Annotated[list[Line], _at_most(MAX_PERSONA_ITEMS, "entries")]
Prose = Annotated[list[Text], _at_most(MAX_PERSONA_ITEMS, "entries")]
Names = Annotated[list[Name], _at_most(MAX_AGENTS, "names")]


#: Words that address every agent or none: no agent may be named (or look like) one.
RESERVED_NAMES = frozenset({"all", "none"})

#: The validation context key that applies the rules of scenario files (see
#: :meth:`Scenario._file_rules`).
FILE_RULES = "scenario_file"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


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
    role: Line = Field(min_length=1)
    archetype: Archetype = Archetype.BALANCED
    traits: Persona = []
    boundary: Text = ""
    goal: Text = ""
    emotion: Unit = 0.5
    private_info: Prose = []
    talking_points: Prose = []
    evidence: Prose = []
    needs: Annotated[dict[Line, NeedSpec], _at_most(len(NEEDS), "needs")] = {}
    svo: SVO = "prosocial"
    model: Line | None = Field(default=None, min_length=1)

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

    round: Round
    text: Text = Field(min_length=1)
    private_to: Annotated[Names, Field(min_length=1)] | None = None
    tone: Tone = "neutral"
    about: Names = []


class ScheduleStep(_Strict):
    """Where and when a round takes place (the game master advances along these)."""

    time: Line = Field(min_length=1)
    location: Line = Field(min_length=1)


class Rule(_Strict):
    """A scenario norm the game master enforces; ``cues`` are words that break it."""

    text: Text = Field(min_length=1)
    cues: Persona = []

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: object) -> object:
        return {"text": data} if isinstance(data, str) else data


class Criterion(_Strict):
    """A behaviour the Rater scores from the transcript (EduMirror dual-track measurement)."""

    name: Line = Field(min_length=1)
    description: Text = Field(min_length=1)
    scale_min: Scale = 1
    scale_max: Scale = 5
    #: Words that, in an agent's utterances, count as evidence for the behaviour
    #: (the offline rater's rule); the LLM rater reads the description.
    cues: Persona = []

    @model_validator(mode="after")
    def _scale(self) -> Criterion:
        if self.scale_max <= self.scale_min:
            raise ValueError("scale_max must be greater than scale_min")
        return self


class LikertItem(_Strict):
    """One questionnaire item; reverse-scored items count scale_max + scale_min - answer."""

    text: Text = Field(min_length=1)
    reverse: Bool = False
    #: The needs this item reflects (the offline surveyor answers from them).
    needs: Persona = []


class Questionnaire(_Strict):
    """A Likert questionnaire defined in a scenario file."""

    title: Line = Field(min_length=1)
    scale_min: Annotated[int, Field(ge=0, le=10, strict=True)] = 1
    scale_max: Annotated[int, Field(ge=2, le=11, strict=True)] = 4
    labels: Annotated[list[Line], _at_most(MAX_SECTION_ITEMS, "labels")] = []
    items: Annotated[list[LikertItem], _at_most(MAX_SECTION_ITEMS, "items")] = Field(min_length=1)

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


Events = Annotated[list[EventSpec], _at_most(MAX_EVENTS, "events")]


class Intervention(_Strict):
    """A ready-made branch: events injected from a round on (e.g. a teacher strategy)."""

    description: Text = Field(min_length=1)
    events: Events = Field(min_length=1)


class Scenario(_Strict):
    """A validated scenario: agents, relations, factions, events and rules."""

    id: Slug = ""
    title: Line = Field(min_length=1)
    description: Text = ""
    conflict: Int = Field(default=1, ge=1, le=5)
    rounds: Int = 9
    memory_size: Int = Field(default=5, ge=1, le=100)
    agents: list[AgentSpec] = Field(min_length=2)
    relations: list[RelationSpec] = []
    factions: Annotated[dict[Name, Names], _at_most(MAX_SECTION_ITEMS, "factions")] = {}
    events: Events = []
    theory: Text = ""
    measurements: Annotated[list[Line], _at_most(MAX_SECTION_ITEMS, "measurements")] = []
    rules: Annotated[list[Rule], _at_most(MAX_SECTION_ITEMS, "rules")] = []
    schedule: Annotated[list[ScheduleStep], _at_most(MAX_ROUNDS, "steps")] = []
    narrator: Literal["scripted", "llm"] = "scripted"
    criteria: Annotated[list[Criterion], _at_most(MAX_SECTION_ITEMS, "criteria")] = []
    questionnaires: Annotated[
        dict[Line, Questionnaire], _at_most(MAX_SECTION_ITEMS, "questionnaires")
    ] = {}
    interventions: Annotated[
        dict[Line, Intervention], _at_most(MAX_SECTION_ITEMS, "interventions")
    ] = {}

    @field_validator("rounds")
    @classmethod
    def _rounds(cls, rounds: int) -> int:
        problem = rounds_problem(rounds)
        if problem:
            raise ValueError(problem)
        return rounds

    @field_validator("agents", mode="before")
    @classmethod
    def _cast_size(cls, agents: object) -> object:
        if isinstance(agents, list) and len(agents) > MAX_AGENTS:
            raise ValueError(
                f"{len(agents):,} agents; a scenario has at most {MAX_AGENTS:,} "
                "(see docs/formats.md)"
            )
        return agents

    @model_validator(mode="before")
    @classmethod
    def _relation_count(cls, data: object) -> object:
        """At most one relation from each agent to each other, counted before any is read."""
        if isinstance(data, dict):
            agents, relations = data.get("agents"), data.get("relations")
            if isinstance(agents, list) and isinstance(relations, list):
                most = min(len(agents), MAX_AGENTS) * (min(len(agents), MAX_AGENTS) - 1)
                if len(relations) > most:
                    raise ValueError(
                        f"relations: {len(relations):,} relations for {len(agents):,} agents; "
                        f"at most {most:,} (one from each agent to each other)"
                    )
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        names = [a.name for a in self.agents]
        seen: set[str] = set()
        folded: dict[str, str] = {}
        for i, name in enumerate(names):
            key = name.casefold()
            if key in folded:
                same = "" if folded[key] == name else f" (as {folded[key]!r}, ignoring case)"
                raise ValueError(f"agents.{i}.name: duplicate agent name {name!r}{same}")
            if key in RESERVED_NAMES:
                raise ValueError(f"agents.{i}.name: {name!r} is reserved")
            folded[key] = name
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

    @model_validator(mode="after")
    def _file_rules(self, info: ValidationInfo) -> Scenario:
        """Rules for scenario files (:func:`parse_scenario`), not for the snapshots in
        saves written before they held: no format character in a name, no two names
        that look alike, no relation given twice."""
        if not (info.context or {}).get(FILE_RULES):
            return self
        named = [(f"agents.{i}.name", a.name) for i, a in enumerate(self.agents)]
        named += [(f"factions.{f}", f) for f in self.factions]
        for where, name in named:
            if bad := format_char(name):
                raise ValueError(
                    f"{where}: format character {char_name(bad)} "
                    f"({unicodedata.name(bad, 'unnamed')}) is not allowed in a name"
                )
        looks: dict[str, str] = {}
        for i, spec in enumerate(self.agents):
            if (word := name_key(spec.name)) in RESERVED_NAMES:
                raise ValueError(
                    f"agents.{i}.name: {one_line(repr(spec.name))} looks like the reserved "
                    f"word {word!r} (names are compared as they are shown)"
                )
            twin = looks.setdefault(name_key(spec.name), spec.name)
            if twin != spec.name:
                raise ValueError(
                    f"agents.{i}.name: {one_line(repr(spec.name))} looks like agent "
                    f"{one_line(repr(twin))} (names are compared as they are shown)"
                )
        given: dict[tuple[str, str], int] = {}
        for i, rel in enumerate(self.relations):
            first = given.setdefault((rel.source, rel.target), i)
            if first != i:
                raise ValueError(
                    f"relations.{i}: a second relation from {rel.source!r} to {rel.target!r} "
                    f"(relations.{first} gives it)"
                )
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


def _loc_part(part: object) -> str:
    """A field name or key as an error names it (quoted when empty or holding control
    characters)."""
    text = str(part)
    return repr(text) if unsafe_char(text) or not text else text


def _given(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(_loc_part(p) for p in first["loc"])
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = "unknown field"
    given = first.get("input")
    if first["type"] not in {"missing", "value_error"} and not isinstance(given, dict | list):
        msg += f" (got {_given(given)})"
    if loc and re.match(r"^[\w-]+(\.[\w-]+)*: ", msg):  # a validator named a nested field
        return f"{loc}.{msg}"
    return f"{loc}: {msg}" if loc else msg


def _too_deep(data: object) -> str | None:
    """The path of the first value nested deeper than MAX_DEPTH tables and arrays (sought,
    path by path, only once a walk level by level has found one: the walk makes no path,
    and a 1,000-agent cast's 200,000 relations are tables of plain values)."""
    level: list[Any] = [data]
    depth = 0
    while level and depth <= MAX_DEPTH:
        level = [
            child
            for value in level
            for child in (value.values() if isinstance(value, dict) else value)
            if isinstance(child, dict | list)
        ]
        depth += 1
    if not level:
        return None
    stack: list[tuple[object, tuple[str, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict | list):
            if len(path) > MAX_DEPTH:
                return ".".join(_loc_part(p) for p in path)
            pairs = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend((v, (*path, str(k))) for k, v in pairs)
    return None


def parse_scenario(data: dict, source: str, default_id: str = "") -> Scenario:
    """Validate raw scenario data; errors name ``source`` and the field."""
    source = one_line(source)
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario is a table of fields")
    deep = _too_deep(data)
    if deep is not None:
        raise ScenarioError(f"{source}: {deep}: nested deeper than {MAX_DEPTH} levels")
    if default_id and "id" not in data:
        data = {**data, "id": default_id}
    try:
        return Scenario.model_validate(data, context={FILE_RULES: True})
    except ValidationError as err:
        extra = f" (and {err.error_count() - 1} more)" if err.error_count() > 1 else ""
        raise ScenarioError(f"{source}: {_describe(err)}{extra}") from None


def load_scenario_file(path: Path) -> Scenario:
    """Load and validate a scenario TOML file."""
    data = read_toml(path)
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
