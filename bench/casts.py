"""Casts nobody here chose: scenarios generated from a seed, for the benches and the memory
test (issue 24). Everything is drawn from ``random.Random(seed)``: each agent's archetype,
emotion, talking points and secrets; which pairs start with a relation (a fifth of them),
its favorability and status; the factions (two to four, of drawn sizes); and the events (on
average one every 4 rounds, some private, some naming agents with a tone).

    python bench/casts.py 100 --seed 3 --rounds 60 > cast.toml   # a scenario file
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ARCHETYPES = ("balanced", "dominant", "analytical", "agreeable", "reserved")
STATUSES = ("neutral", "ally", "rival", "enemy")
TONES = ("neutral", "supportive", "protective", "punitive", "hostile")
POINTS = (
    "the budget cannot stretch to cover everyone this year",
    "we promised the families a decision before the end of the month",
    "the safety report was never shared with the whole group",
    "nobody asked the people who actually do the work",
    "the last compromise fell apart within a week",
    "we have the data, we just refuse to read it",
    "trust has to be earned back, not demanded",
    "the deadline was set by people who will not be here to live with it",
    "a smaller first step would let us test the idea safely",
    "our reputation depends on getting this right the first time",
)
SECRETS = (
    "I already told the board I would vote yes.",
    "I have been offered a job by the other side.",
    "I made the mistake that started all this.",
)
NEWS = (
    "News arrives that {who} spoke to the press.",
    "{who} is seen leaving the director's office.",
    "A letter signed by {who} is read aloud.",
    "Rumours say {who} will resign.",
)
FACTIONS = ("red", "blue", "green", "gold")
#: Share of the ordered pairs that start with a relation.
RELATION_SHARE = 0.2
#: Rounds between events, on average.
EVENT_EVERY = 4


def cast_data(n_agents: int, seed: int, rounds: int = 20, memory_size: int = 5) -> dict:
    """Raw scenario data (what a scenario file holds) of ``n_agents`` agents drawn from
    ``seed``, ``rounds`` rounds long."""
    rng = random.Random(f"cast-{n_agents}-{seed}")
    names = [f"A{k:04d}" for k in range(1, n_agents + 1)]
    agents = []
    for k, name in enumerate(names):
        agent: dict = {
            "name": name,
            "role": f"member {k + 1}",
            "archetype": rng.choice(ARCHETYPES),
            "emotion": round(rng.uniform(0.2, 0.8), 2),
            "talking_points": rng.sample(POINTS, rng.randint(2, 6)),
        }
        if rng.random() < 0.25:
            agent["private_info"] = [rng.choice(SECRETS)]
        agents.append(agent)
    relations = []
    for a in names:
        for b in names:
            if a != b and rng.random() < RELATION_SHARE:
                relation: dict = {"from": a, "to": b, "fav": round(rng.uniform(-0.9, 0.9), 2)}
                if rng.random() < 0.2:
                    relation["status"] = rng.choice(STATUSES)
                relations.append(relation)
    shuffled = rng.sample(names, n_agents)
    count = min(rng.randint(2, 4), n_agents)
    cuts = sorted(rng.sample(range(1, n_agents), count - 1))
    bounds = [0, *cuts, n_agents]
    factions = {FACTIONS[k]: sorted(shuffled[bounds[k] : bounds[k + 1]]) for k in range(count)}
    events = []
    for r in range(1, rounds + 1):
        if rng.random() >= 1 / EVENT_EVERY:
            continue
        who = rng.choice(names)
        event: dict = {"round": r, "text": rng.choice(NEWS).format(who=who)}
        if rng.random() < 0.3:
            event["private_to"] = rng.sample(names, min(rng.randint(1, 5), n_agents))
        if rng.random() < 0.5:
            event["tone"] = rng.choice(TONES)
            event["about"] = [who]
        events.append(event)
    return {
        "id": f"cast-{n_agents}-{seed}",
        "title": f"Generated cast of {n_agents} (seed {seed})",
        "conflict": rng.randint(1, 5),
        "rounds": rounds,
        "memory_size": memory_size,
        "agents": agents,
        "relations": relations,
        "factions": factions,
        "events": events,
    }


def _value(value: object) -> str:
    """A TOML value of a string, number or list of them (JSON's escapes are TOML's)."""
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(value)


def to_toml(data: dict) -> str:
    """The scenario file of ``data`` as :func:`cast_data` makes it."""
    lines = [f"{key} = {_value(data[key])}" for key in ("id", "title", "conflict", "rounds")]
    lines.append(f"memory_size = {data['memory_size']}")
    lines += ["", "[factions]"]
    lines += [f"{name} = {_value(members)}" for name, members in data["factions"].items()]
    for table in ("agents", "relations", "events"):
        for row in data[table]:
            lines += ["", f"[[{table}]]"]
            lines += [f"{json.dumps(key)} = {_value(value)}" for key, value in row.items()]
    return "\n".join(lines) + "\n"


def write_cast(path: Path, n_agents: int, seed: int, rounds: int = 20) -> Path:
    """Write the scenario file of :func:`cast_data` to ``path``."""
    path.write_text(to_toml(cast_data(n_agents, seed, rounds)), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Print a generated scenario file (TOML).")
    parser.add_argument("agents", type=int, help="agents in the cast (2 or more)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    if args.agents < 2:
        parser.error("a cast has at least 2 agents")
    sys.stdout.write(to_toml(cast_data(args.agents, args.seed, args.rounds)))


if __name__ == "__main__":
    main()
