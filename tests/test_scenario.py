"""Scenario validation: one clear ScenarioError naming the source and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import ScenarioError, load_library, load_scenario_file, resolve_scenario
from engine.scenario import library_ids, parse_scenario

GOOD_TOML = """\
title = "Two friends"
rounds = 3

[[agents]]
name = "Ann"
role = "host"

[[agents]]
name = "Bob"
role = "guest"
"""


def error_of(data: dict, source: str = "mini") -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, source)
    return one_line(info.value)


def one_line(err: ScenarioError) -> str:
    text = str(err)
    assert "\n" not in text
    assert "pydantic" not in text.lower()
    assert "validation error" not in text.lower()
    return text


def file_error(path: Path) -> str:
    with pytest.raises(ScenarioError) as info:
        load_scenario_file(path)
    return one_line(info.value)


def test_valid_scenario_loads(mini):
    assert mini.names == ["Ann", "Bob", "Cy"]
    assert mini.faction_of() == {"Ann": "board", "Bob": "members", "Cy": "members"}


def test_valid_file_loads_with_slug_id(tmp_path: Path):
    path = tmp_path / "two-friends.toml"
    path.write_text(GOOD_TOML, encoding="utf-8")
    sc = load_scenario_file(path)
    assert sc.id == "two-friends"
    assert sc.names == ["Ann", "Bob"]
    assert resolve_scenario(str(path)) == sc


@pytest.mark.parametrize(
    "text",
    [
        'title = "x\n',
        "title = \n",
        "[[agents]\nname = 'Ann'\n",
        'title = "a"\ntitle = "b"\n',
    ],
)
def test_broken_toml(tmp_path: Path, text: str):
    path = tmp_path / "broken.toml"
    path.write_text(text, encoding="utf-8")
    msg = file_error(path)
    assert msg.startswith(f"{path}: invalid TOML")


def test_not_utf8(tmp_path: Path):
    path = tmp_path / "latin.toml"
    path.write_bytes('title = "caf\xe9"\n'.encode("latin-1"))
    msg = file_error(path)
    assert msg.startswith(str(path)) and "UTF-8" in msg


def test_missing_file(tmp_path: Path):
    path = tmp_path / "nope.toml"
    msg = file_error(path)
    assert msg.startswith(str(path))
    with pytest.raises(ScenarioError, match="no such scenario file"):
        resolve_scenario(str(path))


def test_file_errors_name_the_file_and_field(tmp_path: Path):
    path = tmp_path / "bad.toml"
    path.write_text(
        GOOD_TOML + '\n[[relations]]\nfrom = "Ann"\nto = "Zed"\nfav = 0.2\n', encoding="utf-8"
    )
    msg = file_error(path)
    assert msg == f"{path}: relations.0.to: unknown agent 'Zed'"


def test_unknown_agent_in_relation(mini_data):
    mini_data["relations"].append({"from": "Zed", "to": "Ann"})
    assert error_of(mini_data) == "mini: relations.2.from: unknown agent 'Zed'"


def test_self_relation(mini_data):
    mini_data["relations"].append({"from": "Ann", "to": "Ann"})
    msg = error_of(mini_data)
    assert msg.startswith("mini: relations.2") and "itself" in msg


def test_unknown_agent_in_event_private_to(mini_data):
    mini_data["events"][1]["private_to"] = ["Bob", "Zed"]
    assert error_of(mini_data) == "mini: events.1.private_to: unknown agent 'Zed'"


def test_unknown_agent_in_faction(mini_data):
    mini_data["factions"]["members"].append("Zed")
    assert error_of(mini_data) == "mini: factions.members: unknown agent 'Zed'"


def test_agent_in_two_factions(mini_data):
    mini_data["factions"]["board"].append("Cy")
    msg = error_of(mini_data)
    assert msg.startswith("mini: factions.") and "'Cy'" in msg and "already" in msg


def test_duplicate_agent_name(mini_data):
    mini_data["agents"][2]["name"] = "Ann"
    assert error_of(mini_data) == "mini: agents.2.name: duplicate agent name 'Ann'"


@pytest.mark.parametrize("name", ["all", "None"])
def test_reserved_agent_name(mini_data, name):
    mini_data["agents"][0]["name"] = name
    mini_data["relations"] = []
    mini_data["factions"] = {}
    msg = error_of(mini_data)
    assert msg.startswith("mini: agents.0.name") and "reserved" in msg


@pytest.mark.parametrize("fav", [1.5, -1.01])
def test_out_of_range_fav(mini_data, fav):
    mini_data["relations"][0]["fav"] = fav
    msg = error_of(mini_data)
    assert msg.startswith("mini: relations.0.fav: ")
    assert repr(fav) in msg


@pytest.mark.parametrize("emotion", [1.2, -0.1])
def test_out_of_range_emotion(mini_data, emotion):
    mini_data["agents"][1]["emotion"] = emotion
    msg = error_of(mini_data)
    assert msg.startswith("mini: agents.1.emotion: ")
    assert repr(emotion) in msg


def test_out_of_range_need(mini_data):
    mini_data["agents"][0]["needs"] = {"self_worth": {"current": 11, "expected": 8}}
    msg = error_of(mini_data)
    assert msg.startswith("mini: agents.0.needs.self_worth.current: ")


def test_unknown_need(mini_data):
    mini_data["agents"][0]["needs"] = {"hunger": {"current": 3}}
    msg = error_of(mini_data)
    assert msg.startswith("mini: agents.0")
    assert "unknown need 'hunger'" in msg


def test_unknown_field(mini_data):
    mini_data["agents"][1]["mood"] = "grumpy"
    assert error_of(mini_data).startswith("mini: agents.1.mood: unknown field")


def test_unknown_top_level_field(mini_data):
    mini_data["colour"] = "blue"
    assert error_of(mini_data).startswith("mini: colour: unknown field")


def test_unknown_archetype(mini_data):
    mini_data["agents"][0]["archetype"] = "heroic"
    msg = error_of(mini_data)
    assert msg.startswith("mini: agents.0.archetype: ") and "'heroic'" in msg


def test_missing_required_field(mini_data):
    del mini_data["agents"][0]["role"]
    assert error_of(mini_data) == "mini: agents.0.role: Field required"


def test_event_round_beyond_rounds(mini_data):
    mini_data["events"][1]["round"] = 7
    assert error_of(mini_data) == "mini: events.1.round: round 7 is beyond rounds = 5"


def test_several_errors_are_counted_not_listed(mini_data):
    mini_data["agents"][0]["mood"] = "x"
    mini_data["agents"][1]["emotion"] = 3
    msg = error_of(mini_data)
    assert msg.startswith("mini: agents.")
    assert msg.endswith("(and 1 more)")


def test_unknown_library_id():
    with pytest.raises(ScenarioError) as info:
        load_library("no-such-scenario")
    msg = one_line(info.value)
    assert "'no-such-scenario'" in msg
    assert "hospital" in msg  # the known ids are listed
    with pytest.raises(ScenarioError, match="unknown scenario"):
        resolve_scenario("no-such-scenario")


@pytest.mark.parametrize("bad", ["../engine/scenario", "", "Hospital!", ".hidden"])
def test_library_id_must_be_a_plain_slug(bad):
    with pytest.raises(ScenarioError) as info:
        load_library(bad)
    assert "unknown scenario" in one_line(info.value)


def test_library_scenarios_load():
    ids = library_ids()
    assert "hospital" in ids
    for scenario_id in ids:
        assert load_library(scenario_id).id == scenario_id


# -- regressions of engine bugs found by these tests (fixed in engine/scenario.py) ---------


def test_non_ascii_file_name_does_not_break_a_valid_scenario(tmp_path: Path):
    # _is_slug used str.isalnum(), so "café" became a default id that failed the id pattern
    path = tmp_path / "café.toml"
    path.write_text(GOOD_TOML, encoding="utf-8")
    sc = load_scenario_file(path)
    assert sc.names == ["Ann", "Bob"]


async def test_event_with_empty_private_to_is_rejected_or_public(mini_data):
    # private_to = [] used to make a scripted event visible to nobody
    from engine import Simulation

    mini_data["events"][0]["private_to"] = []
    try:
        sc = parse_scenario(mini_data, "mini")
    except ScenarioError as err:
        assert one_line(err).startswith("mini: events.0.private_to")
        return
    record = await Simulation.new(sc, seed=1).step()
    assert all(record.events[0].visible_to(n) for n in sc.names)
