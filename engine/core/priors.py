"""Relational priors (paper Sec. 3): signed relation networks rendered into system prompts.

A relational prior ``Π_i(r, G_R)`` (Eq. 1) is a relation type ``r`` (Attitude, Trust or
Influence), an undirected relation network ``G_R = (A, E_R)`` over the agents, and a sign
assignment ``s: E_R -> {-1, +1}`` (Eq. 2). Its positivity is ``λ = |{s_ij = +1}| / |E_R|``
(Eq. 3); for an intermediate λ every sign assignment with that positivity is enumerated
(:func:`sign_assignments`). Two controls sit outside the λ-sweep: No-Prior (the relational
block is omitted) and Explicit-Neutral (every stated edge has ``s_ij = 0``).

Relations are fixed, symmetric and common knowledge (Sec. 3.2): every agent's prompt states
every edge. They are protocol-preserving prompt-level priors (Sec. 3.1): a prior changes the
system prompt only, the same block every round, never who speaks, what is visible or how
outputs are aggregated, and never the evolving relations (favorability and status start
from the scenario). The topology decides which pairs receive relational context, not who
can talk. The offline model reads the signs through :func:`sign_index`.

Topologies and the agent counts they need:

* ``complete`` — every pair; 2 agents or more.
* ``chain`` — consecutive agents ``(0, 1), (1, 2), ...``; 2 agents or more.
* ``star`` — ``names[0]`` is the hub, joined to every other agent; 3 agents or more.
* ``tree`` — binary tree in array order, ``k -> 2k+1, 2k+2``; 3 agents or more.

With 2 agents star and tree would be the single edge of chain and complete, so they are
refused rather than silently meaning the same graph. For 5 agents chain, star and tree all
have 4 edges, as in Relational priors App. Fig. 10.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from ..errors import SocialsimError

RelationType = Literal["attitude", "trust", "influence"]
Topology = Literal["complete", "chain", "star", "tree"]
Control = Literal["signed", "no-prior", "explicit-neutral"]

RELATIONS: tuple[str, ...] = ("attitude", "trust", "influence")
TOPOLOGIES: tuple[str, ...] = ("complete", "chain", "star", "tree")
#: The fewest agents each topology needs (see the module docstring).
MIN_AGENTS = {"complete": 2, "chain": 2, "star": 3, "tree": 3}
#: How close λ·|E| must be to an integer.
TOLERANCE = 1e-9

#: The short definition of each relation type (Relational priors Sec. 3.2).
DEFINITIONS: dict[str, str] = {
    "attitude": "Attitude is the affective orientation between two agents: how much they "
    "like, respect and feel warmly toward each other.",
    "trust": "Trust is the epistemic credibility two agents grant each other: how far each "
    "treats the other's statements, information and intentions as reliable.",
    "influence": "Influence is the mutual responsiveness between two agents: how far each "
    "moves toward, or away from, the other's opinions and proposals.",
}
#: What each sign means for each relation type; the rest of the template never changes.
PHRASES: dict[str, dict[int, str]] = {
    "attitude": {
        1: "have a positive attitude toward each other",
        0: "have a neutral attitude toward each other",
        -1: "have a negative attitude toward each other",
    },
    "trust": {
        1: "trust each other",
        0: "have neutral trust in each other",
        -1: "distrust each other",
    },
    "influence": {
        1: "have a positive influence on each other, each inclined to follow the other's lead",
        0: "have a neutral influence on each other",
        -1: "have a contrarian influence on each other, each inclined to move away from the "
        "other's opinions and proposals",
    },
}


class Prior(BaseModel):
    """One relational prior: a control, a relation type, a topology and signed edges.

    ``edges`` are undirected ``(i, j, sign)`` triples with ``i`` before ``j`` in the agent
    order the prior was built from. ``positivity`` is λ (Eq. 3) for signed priors; when it is
    omitted it is computed from the signs, when given it must match them.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    control: Control
    relation: RelationType | None = None
    topology: Topology = "complete"
    edges: list[tuple[str, str, int]] = []
    positivity: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _fill_positivity(cls, data: Any) -> Any:
        if (
            isinstance(data, dict)
            and data.get("control") == "signed"
            and data.get("positivity") is None
            and data.get("edges")
        ):
            try:
                signs = [int(e[2]) for e in data["edges"]]
            except (TypeError, ValueError, IndexError):
                return data  # the field validation reports the malformed edge
            data = {**data, "positivity": signs.count(1) / len(signs)}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Prior:
        pairs: set[frozenset[str]] = set()
        for i, j, _ in self.edges:
            if i == j:
                raise ValueError(f"edge ({i}, {j}): an agent cannot relate to itself")
            pair = frozenset((i, j))
            if pair in pairs:
                raise ValueError(f"edge ({i}, {j}) is stated twice")
            pairs.add(pair)
        signs = [s for _, _, s in self.edges]
        if self.control == "no-prior":
            if self.relation is not None or self.edges or self.positivity is not None:
                raise ValueError("no-prior has no relation, edges or positivity")
        elif self.relation is None:
            raise ValueError(f"{self.control} needs a relation type")
        elif not self.edges:
            raise ValueError(f"{self.control} needs at least one edge")
        elif self.control == "explicit-neutral":
            if any(s != 0 for s in signs):
                raise ValueError("explicit-neutral edges all have sign 0")
            if self.positivity is not None:
                raise ValueError("λ is not defined for explicit-neutral")
        else:
            if any(s not in (1, -1) for s in signs):
                raise ValueError("signed edges have sign +1 or -1")
            actual = signs.count(1) / len(signs)
            if self.positivity is None or abs(self.positivity - actual) > TOLERANCE:
                raise ValueError(
                    f"positivity {self.positivity} does not match the signs (λ = {actual:g})"
                )
        return self

    @property
    def names(self) -> list[str]:
        """The agents named by the edges, in first-mention order."""
        seen: dict[str, None] = {}
        for i, j, _ in self.edges:
            seen.setdefault(i)
            seen.setdefault(j)
        return list(seen)

    @property
    def label(self) -> str:
        """A short label, e.g. ``attitude/complete λ=0.33 (+,-,-)`` or ``no-prior``."""
        if self.control == "no-prior":
            return "no-prior"
        if self.control == "explicit-neutral":
            return f"neutral {self.relation}/{self.topology}"
        signs = ",".join("+" if s > 0 else "-" for _, _, s in self.edges)
        return f"{self.relation}/{self.topology} λ={self.positivity:.2g} ({signs})"


def _make(**fields: Any) -> Prior:
    """A Prior, with pydantic's complaint turned into one SocialsimError line."""
    try:
        return Prior(**fields)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        msg = first["msg"].removeprefix("Value error, ")
        raise SocialsimError(f"relational prior: {where + ': ' if where else ''}{msg}") from None


def topology_edges(names: Sequence[str], topology: Topology) -> list[tuple[str, str]]:
    """The undirected edges of a topology over ``names`` (order matters: hub, tree root).

    complete: every pair ``(names[a], names[b])``, ``a < b``; chain: consecutive pairs;
    star: ``names[0]`` with each other agent; tree: ``names[k]`` with ``names[2k+1]`` and
    ``names[2k+2]``. Raises SocialsimError for an unknown topology, duplicate names, or too
    few agents (2 for complete and chain, 3 for star and tree).
    """
    names = list(names)
    if topology not in MIN_AGENTS:
        raise SocialsimError(f"unknown topology {topology!r}; choose from {', '.join(TOPOLOGIES)}")
    if len(set(names)) != len(names):
        raise SocialsimError(f"topology {topology}: agent names must be distinct")
    if len(names) < MIN_AGENTS[topology]:
        raise SocialsimError(
            f"topology {topology} needs at least {MIN_AGENTS[topology]} agents, got {len(names)}"
        )
    n = len(names)
    if topology == "complete":
        return [(names[a], names[b]) for a, b in combinations(range(n), 2)]
    if topology == "chain":
        return [(names[k], names[k + 1]) for k in range(n - 1)]
    if topology == "star":
        return [(names[0], names[k]) for k in range(1, n)]
    return [(names[(c - 1) // 2], names[c]) for c in range(1, n)]


def sign_assignments(n_edges: int, positivity: float) -> list[tuple[int, ...]]:
    """Every sign assignment of ``n_edges`` edges with positivity λ (Eq. 3).

    λ·|E| must be an integer (within 1e-9); the ``C(|E|, λ|E|)`` assignments come in
    lexicographic order of the positive positions, so the first puts the positives on the
    first edges (:func:`first_signs`).
    """
    k = positives(n_edges, positivity)
    return [
        tuple(1 if e in chosen else -1 for e in range(n_edges))
        for chosen in map(set, combinations(range(n_edges), k))
    ]


def positives(n_edges: int, positivity: float) -> int:
    """How many of ``n_edges`` edges are positive at λ (λ·|E|, which must be whole)."""
    if n_edges < 1:
        raise SocialsimError(f"a relation network needs at least one edge, got {n_edges}")
    if not 0.0 <= positivity <= 1.0 or math.isnan(positivity):
        raise SocialsimError(f"λ={positivity:g} is outside [0, 1]")
    exact = positivity * n_edges
    k = round(exact)
    if abs(exact - k) > TOLERANCE:
        raise SocialsimError(
            f"λ={positivity:g} not reachable with {n_edges} edges "
            f"(λ·{n_edges} must be a whole number)"
        )
    return k


def first_signs(n_edges: int, positivity: float) -> tuple[int, ...]:
    """The first of :func:`sign_assignments` (positives on the first edges), without
    listing the others (``C(|E|, λ|E|)`` of them: millions at 8 agents, complete)."""
    k = positives(n_edges, positivity)
    return (1,) * k + (-1,) * (n_edges - k)


def signed_priors(
    names: Sequence[str], relation: RelationType, topology: Topology, positivity: float
) -> list[Prior]:
    """One signed prior per sign assignment of the topology at positivity λ."""
    _check_relation(relation)
    edges = topology_edges(names, topology)
    return [
        _signed(relation, topology, edges, signs, positivity)
        for signs in sign_assignments(len(edges), positivity)
    ]


def _signed(
    relation: str,
    topology: str,
    edges: Sequence[tuple[str, str]],
    signs: Sequence[int],
    positivity: float | None = None,
) -> Prior:
    """A signed prior: one sign per edge of the topology, in :func:`topology_edges` order."""
    return _make(
        control="signed",
        relation=relation,
        topology=topology,
        positivity=positivity,
        edges=[(i, j, s) for (i, j), s in zip(edges, signs, strict=True)],
    )


def no_prior() -> Prior:
    """The No-Prior control: no relational block."""
    return Prior(control="no-prior")


def explicit_neutral(names: Sequence[str], relation: RelationType, topology: Topology) -> Prior:
    """The Explicit-Neutral control: every edge of the topology stated with sign 0."""
    _check_relation(relation)
    edges = topology_edges(names, topology)
    return _make(
        control="explicit-neutral",
        relation=relation,
        topology=topology,
        edges=[(i, j, 0) for i, j in edges],
    )


def _check_relation(relation: str) -> None:
    if relation not in RELATIONS:
        raise SocialsimError(
            f"unknown relation type {relation!r}; choose from {', '.join(RELATIONS)}"
        )


def _sentence(relation: str, sign: int, left: str, right: str) -> str:
    score = f"{sign:+d}" if sign else "0"
    return f"- {left} and {right} {PHRASES[relation][sign]} ({relation} score {score})."


def render(prior: Prior, agent: str) -> str | None:
    """The relational block of ``agent``'s system prompt (Relational priors Sec. 3.3); None for
    No-Prior.

    A fixed template: header, the relation type's definition, the score scale, then one
    sentence per edge — the agent's own edges first ("You and Kate ..."), then the edges
    among the others ("Kate and Jack ..."), since relations are common knowledge. Only the
    definition and the per-sign phrase depend on the relation type; every edge appears once.
    """
    if prior.control == "no-prior" or prior.relation is None:
        return None
    relation = prior.relation
    own = [(i, j, s) for i, j, s in prior.edges if agent in (i, j)]
    rest = [(i, j, s) for i, j, s in prior.edges if agent not in (i, j)]
    lines = [
        "Relations between the agents (known to every agent):",
        f"Relation type: {relation.capitalize()}. {DEFINITIONS[relation]}",
        "Each stated relation is mutual and has a score: +1 is the most positive, 0 is "
        "neutral, -1 is the most negative. Pairs not listed have no stated relation.",
        "Your relations:",
    ]
    lines += [_sentence(relation, s, "You", j if i == agent else i) for i, j, s in own] or [
        "- none stated."
    ]
    lines.append("Relations among the others:")
    lines += [_sentence(relation, s, i, j) for i, j, s in rest] or ["- none stated."]
    return "\n".join(lines)


def sign_index(prior: Prior | None) -> dict[str, dict[str, int]]:
    """Every agent's stated peers and the signs of those edges, both directions (empty for
    None or No-Prior; all 0 for Explicit-Neutral)."""
    index: dict[str, dict[str, int]] = {}
    for i, j, s in prior.edges if prior is not None else []:
        index.setdefault(i, {})[j] = s
        index.setdefault(j, {})[i] = s
    return index


def check_agents(prior: Prior, names: Sequence[str]) -> None:
    """Raise SocialsimError if the prior names an agent that is not among ``names``."""
    unknown = [n for n in prior.names if n not in names]
    if unknown:
        raise SocialsimError(
            f"relational prior: unknown agent {unknown[0]!r}; agents: {', '.join(names)}"
        )


_SIGNS = re.compile(r"^[+-]1?(,[+-]1?)*$")
_SYNTAX = "none | neutral:REL:TOPO | REL:TOPO:λ | REL:TOPO:+,-,..."


def _positivity(text: str) -> float:
    try:
        return float(Fraction(text)) if "/" in text else float(text)
    except (ValueError, ZeroDivisionError):
        raise SocialsimError(f"--prior: λ {text!r} is not a number such as 0.5 or 1/3") from None


def parse_prior(text: str, names: Sequence[str]) -> Prior:
    """A prior from CLI syntax over the agents ``names``.

    ``none`` (No-Prior); ``neutral:REL:TOPO`` (Explicit-Neutral); ``REL:TOPO:λ`` (λ as a
    decimal or a fraction such as ``1/3``; the first sign assignment, positives on the first
    edges); ``REL:TOPO:+,-,...`` (one sign per edge, in :func:`topology_edges` order).
    """
    raw = text
    text = re.sub(r"\s+", "", text or "").lower()
    if text in ("none", "no-prior"):
        return no_prior()
    parts = text.split(":")
    bad = f"--prior {raw!r}: expected {_SYNTAX}"
    if len(parts) != 3 or not all(parts):
        raise SocialsimError(bad)
    if parts[0] == "neutral":
        _, relation, topology = parts
        _check_relation(relation)
        return explicit_neutral(names, relation, _topology(topology))  # type: ignore[arg-type]
    relation, topology, value = parts
    _check_relation(relation)
    topo = _topology(topology)
    edges = topology_edges(names, topo)
    if _SIGNS.fullmatch(value):
        signs = [1 if tok.startswith("+") else -1 for tok in value.split(",")]
        if len(signs) != len(edges):
            listed = ", ".join(f"{i}-{j}" for i, j in edges)
            raise SocialsimError(
                f"--prior {raw!r}: {len(signs)} sign(s) for {len(edges)} edge(s) ({listed})"
            )
        return _signed(relation, topo, edges, signs)
    lam = _positivity(value)
    return _signed(relation, topo, edges, first_signs(len(edges), lam), lam)


def _topology(text: str) -> Topology:
    if text not in TOPOLOGIES:
        raise SocialsimError(f"unknown topology {text!r}; choose from {', '.join(TOPOLOGIES)}")
    return text  # type: ignore[return-value]
