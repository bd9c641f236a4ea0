"""Shared fixtures: a small scenario, a temporary saves folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import SaveStore, Scenario
from engine.scenario import parse_scenario

MINI = {
    "id": "mini",
    "title": "Mini committee",
    "description": "A three-person committee argues over a leaking roof.",
    "rounds": 5,
    "memory_size": 3,
    "agents": [
        {
            "name": "Ann",
            "role": "chair",
            "archetype": "dominant",
            "talking_points": ["we vote tonight", "the budget is fixed"],
        },
        {
            "name": "Bob",
            "role": "treasurer",
            "archetype": "reserved",
            "private_info": ["the account is overdrawn"],
            "talking_points": ["the numbers are worse than they look"],
        },
        {
            "name": "Cy",
            "role": "member",
            "archetype": "agreeable",
            "talking_points": ["we should hear everyone", "the roof cannot wait"],
        },
    ],
    "relations": [
        {"from": "Ann", "to": "Bob", "fav": -0.3},
        {"from": "Bob", "to": "Cy", "fav": 0.6, "status": "ally"},
    ],
    "factions": {"board": ["Ann"], "members": ["Bob", "Cy"]},
    "events": [
        {"round": 1, "text": "The hall roof leaks again."},
        {"round": 2, "text": "Bob receives the bank statement.", "private_to": ["Bob"]},
    ],
}


@pytest.fixture
def mini_data() -> dict:
    """Raw data of a small valid scenario (a fresh deep copy per test)."""
    import copy

    return copy.deepcopy(MINI)


@pytest.fixture
def mini(mini_data: dict) -> Scenario:
    """A small valid three-agent scenario."""
    return parse_scenario(mini_data, "mini")


@pytest.fixture
def store(tmp_path: Path) -> SaveStore:
    """A save store in a temporary folder."""
    return SaveStore(tmp_path / "saves")
