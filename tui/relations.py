"""Who feels what about whom, in forms a person reads at any cast size: the agents in
faction order with short faction codes, an agent's strongest ties both ways, and the
selections a matrix can be filtered to (one agent's row and column, one faction). Shared by
the app's matrix and panes and the CLI's matrices; no textual here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine.core.view import StateLike

#: Words a faction code skips ("traders and families" is TF).
SMALL_WORDS = frozenset({"a", "an", "and", "of", "the", "for", "to", "in", "on", "&"})


def faction_order(names: Sequence[str], factions: Mapping[str, Sequence[str]]) -> list[str]:
    """``names`` grouped by faction, factions in the order the scenario lists them and
    members in the cast's order; agents in no faction last."""
    rank = {who: k for k, members in enumerate(factions.values()) for who in members}
    position = {name: k for k, name in enumerate(names)}
    return sorted(names, key=lambda n: (rank.get(n, len(factions)), position[n]))


def faction_codes(factions: Sequence[str]) -> dict[str, str]:
    """A short unique code per faction: the initials of its words (``valley farmers``
    VF), a one-word name's first two letters (``newcomers`` NE); on a clash the first
    letter and a later one (``redevelopment`` RD beside ``residents`` RE), else a number."""
    codes: dict[str, str] = {}
    for faction in factions:
        words = [w for w in faction.replace("_", " ").split() if w.lower() not in SMALL_WORDS]
        words = words or [faction]
        first = "".join(w[0] for w in words) if len(words) > 1 else words[0][:2]
        head = first[0]
        tries = [first, *(head + c for c in "".join(words)[1:] if c.isalnum())]
        tries += [f"{head}{k}" for k in range(2, len(factions) + 2)]
        codes[faction] = next(c for c in (t.upper() for t in tries) if c not in codes.values())
    return codes


@dataclass(frozen=True)
class Tie:
    """One directed edge seen from an agent: the other agent and the favorability."""

    other: str
    fav: float


@dataclass(frozen=True)
class Ties:
    """An agent's strongest ties both ways, strongest first: whom it likes and dislikes
    most (its row), who likes and dislikes it most (its column). Only non-zero ties."""

    likes: tuple[Tie, ...]
    dislikes: tuple[Tie, ...]
    liked_by: tuple[Tie, ...]
    disliked_by: tuple[Tie, ...]

    def top(self, limit: int) -> Ties:
        """The ``limit`` strongest of each kind (as :func:`ties_of` with that limit)."""
        return Ties(
            self.likes[:limit], self.dislikes[:limit], self.liked_by[:limit],
            self.disliked_by[:limit],
        )  # fmt: skip


def ties_of(state: StateLike, agent: str, limit: int = 3) -> Ties:
    """The ``limit`` strongest ties of ``agent`` of each kind (what rounds to 0.00 is none)."""
    out = [Tie(o, r.fav) for o, r in state.agents[agent].relations.items() if o != agent]
    into = [
        Tie(o, a.relations[agent].fav)
        for o, a in state.agents.items()
        if o != agent and agent in a.relations
    ]

    def strongest(ties: list[Tie], sign: int) -> tuple[Tie, ...]:
        picked = [t for t in ties if round(t.fav * sign, 2) > 0]
        return tuple(sorted(picked, key=lambda t: -t.fav * sign)[:limit])

    return Ties(strongest(out, 1), strongest(out, -1), strongest(into, 1), strongest(into, -1))


def short_fav(fav: float) -> str:
    """Four characters: ``+.55``, ``-.05``, ``+1.0``, and `` .00`` for what rounds to 0."""
    if abs(fav) >= 0.995:
        return f"{fav:+.1f}"
    if round(fav, 2) == 0:
        return " .00"
    return f"{fav:+.2f}".replace("0.", ".", 1)


def fav_band(fav: float) -> int:
    """The favorability band a colour (and, without colour, a glyph) stands for: -2 from
    -1 to -.5, -1 to -.1, 0 to +.15, 1 to +.55, 2 above."""
    if fav >= 0.55:
        return 2
    if fav >= 0.15:
        return 1
    if fav > -0.1:
        return 0
    return -1 if fav > -0.5 else -2


#: The band's glyph, sign and size in one cell (for NO_COLOR and plain text).
BAND_GLYPH = {-2: "▼", -1: "▽", 0: "·", 1: "△", 2: "▲"}
#: The bands' boundaries as the legends write them, lowest first.
BAND_EDGES = ("-1", "-.5", "-.1", ".15", ".55", "1")


@dataclass(frozen=True)
class Selection:
    """What a matrix shows: every agent, one agent's row and column (``agent``), or the
    members of one faction (``faction``)."""

    agent: str | None = None
    faction: str | None = None

    def describe(self) -> str:
        if self.agent is not None:
            return f"{self.agent}'s row and column"
        if self.faction is not None:
            return f"faction {self.faction}"
        return "every agent"


def parse_selection(
    text: str, names: Sequence[str], factions: Mapping[str, Sequence[str]]
) -> Selection:
    """An agent's name, a faction's name or code, or their unambiguous start (any case);
    empty (or ``all``) is every agent. Else a ValueError naming what is known."""
    wanted = text.strip().casefold()
    if wanted in ("", "all", "*"):
        return Selection()
    codes = faction_codes(list(factions))
    exact = [Selection(agent=n) for n in names if n.casefold() == wanted]
    exact += [
        Selection(faction=f)
        for f in factions
        if f.casefold() == wanted or codes[f].casefold() == wanted
    ]
    if exact:
        return exact[0]
    found = [Selection(agent=n) for n in names if n.casefold().startswith(wanted)]
    found += [Selection(faction=f) for f in factions if f.casefold().startswith(wanted)]
    if len(found) == 1:
        return found[0]
    if found:
        some = ", ".join(s.agent or s.faction or "" for s in found[:6])
        raise ValueError(f"{text.strip()!r} could be {some}: type more of it.")
    known = f"factions: {', '.join(factions)}" if factions else "this scenario has no factions"
    raise ValueError(f"No agent or faction {text.strip()!r} ({known}).")


def selected_names(
    selection: Selection, names: Sequence[str], factions: Mapping[str, Sequence[str]]
) -> list[str]:
    """The rows a selection shows, in faction order (for an agent: the others)."""
    ordered = faction_order(names, factions)
    if selection.agent is not None:
        return [n for n in ordered if n != selection.agent]
    if selection.faction is not None:
        members = set(factions[selection.faction])
        return [n for n in ordered if n in members]
    return ordered
