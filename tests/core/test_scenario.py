"""Scenario validation: one clear ScenarioError naming the source and the field."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from engine import ScenarioError, load_library, load_scenario_file, resolve_scenario
from engine.core.scenario import library_ids, parse_scenario

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


# -- regressions of engine bugs found by these tests (fixed in engine/core/scenario.py) ---------


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


# -- hardening (issue 14): limits, control characters, strict types, hostile files ---------

ESC = "Ann\u001b[31mRED\u001b]0;PWNED\u0007x"


def _set(data: dict, path: str, value: object) -> None:
    """Set the field at a dotted ``path`` (list indexes as numbers) of raw scenario data."""
    *parents, last = path.split(".")
    node: object = data
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]  # type: ignore[index]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value  # type: ignore[index]


TEXT_FIELDS = [
    "title",
    "description",
    "agents.0.name",
    "agents.0.role",
    "agents.0.talking_points.0",
    "agents.1.private_info.0",
    "agents.0.goal",
    "events.0.text",
    "relations.0.from",
    "factions.board.0",
]


@pytest.mark.parametrize("field", TEXT_FIELDS)
@pytest.mark.parametrize("char", ["\u001b", "\u0007", "\u009b", "\r", "\u202e", "\x00"])
def test_control_characters_are_rejected_in_every_text_field(mini_data, field, char):
    _set(mini_data, field, f"A{char}b")
    msg = error_of(mini_data)
    assert msg.startswith(f"mini: {field}: control character U+{ord(char):04X}"), msg
    assert char not in msg


def test_the_escape_injection_name_of_the_issue_is_rejected(mini_data):
    mini_data["agents"][0]["name"] = ESC
    assert error_of(mini_data) == "mini: agents.0.name: control character U+001B is not allowed"


def test_texts_found_safe_are_kept_but_never_let_a_control_character_through(mini_data):
    prose = copy.deepcopy(mini_data)
    _set(prose, "description", "first line\n\tsecond line")
    parse_scenario(prose, "mini")  # kept as safe prose, which is no safe line
    _set(mini_data, "agents.0.role", "first line\n\tsecond line")
    assert error_of(mini_data).startswith("mini: agents.0.role: control character U+000A")


def test_the_texts_kept_as_safe_are_bounded(mini_data, monkeypatch):
    import engine.core.scenario as scenario_module

    monkeypatch.setattr(scenario_module, "SAFE_KEPT", 3)  # (kept texts dropped often)
    for _ in range(3):
        assert parse_scenario(copy.deepcopy(mini_data), "mini").names
    mini_data["agents"][0]["name"] = ESC
    assert "control character U+001B" in error_of(mini_data)


@pytest.mark.parametrize("field", ["description", "agents.0.talking_points.0", "events.0.text"])
def test_prose_may_hold_line_breaks_and_tabs(mini_data, field):
    _set(mini_data, field, "first line\n\tsecond line")
    parse_scenario(mini_data, "mini")


@pytest.mark.parametrize("field", ["title", "agents.0.role", "agents.0.name"])
def test_one_line_fields_may_not_hold_line_breaks(mini_data, field):
    _set(mini_data, field, "two\nlines")
    msg = error_of(mini_data)
    assert msg.startswith(f"mini: {field}: "), msg


def test_a_dict_key_with_control_characters_is_quoted_in_one_line(mini_data):
    mini_data["factions"]["bo\nard"] = mini_data["factions"].pop("board")
    msg = error_of(mini_data)
    assert msg.startswith("mini: factions.'bo\\nard'"), msg


def test_an_unknown_key_with_a_line_break_is_one_line(tmp_path: Path):
    path = tmp_path / "key.toml"
    path.write_text(GOOD_TOML.replace("rounds = 3", 'rounds = 3\n"a\\nb" = 1'), encoding="utf-8")
    assert file_error(path) == f"{path}: 'a\\nb': unknown field (got 1)"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("rounds", True),
        ("rounds", "3"),
        ("rounds", 3.0),
        ("memory_size", False),
        ("conflict", "2"),
        ("agents.0.emotion", True),
        ("agents.0.emotion", "0.5"),
        ("relations.0.fav", True),
        ("events.0.round", "1"),
    ],
)
def test_numbers_are_strict(mini_data, field, value):
    _set(mini_data, field, value)
    msg = error_of(mini_data)
    assert msg.startswith(f"mini: {field}: Input should be a valid"), msg


def test_an_integer_is_a_valid_float(mini_data):
    mini_data["agents"][0]["emotion"] = 1
    mini_data["relations"][0]["fav"] = 0
    sc = parse_scenario(mini_data, "mini")
    assert sc.agents[0].emotion == 1.0


def test_likert_reverse_is_a_strict_boolean(mini_data):
    mini_data["questionnaires"] = {
        "q": {"title": "Q", "items": [{"text": "I feel safe", "reverse": "yes"}]}
    }
    assert error_of(mini_data).startswith("mini: questionnaires.q.items.0.reverse: Input")


@pytest.mark.parametrize("other", ["ann", "ANN", "Ann"])
def test_agent_names_are_unique_ignoring_case(mini_data, other):
    mini_data["agents"][1]["name"] = other
    msg = error_of(mini_data)
    assert msg.startswith(f"mini: agents.1.name: duplicate agent name {other!r}"), msg


@pytest.mark.parametrize(("rounds", "ok"), [(10_000, True), (10_001, False), (10**23, False)])
def test_rounds_bound(mini_data, rounds, ok):
    mini_data["rounds"] = rounds
    if ok:
        assert parse_scenario(mini_data, "mini").rounds == rounds
    else:
        assert error_of(mini_data) == (
            f"mini: rounds: a run has 1 to 10,000 rounds (got {rounds:,})"
        )


def _cast(n: int) -> list[dict]:
    return [{"name": f"A{k:04d}", "role": "member"} for k in range(n)]


def test_the_agent_limit(mini_data):
    from engine.core.limits import MAX_AGENTS

    mini_data.update(agents=_cast(MAX_AGENTS), relations=[], factions={}, events=[])
    assert len(parse_scenario(mini_data, "mini").agents) == MAX_AGENTS
    mini_data["agents"] = _cast(MAX_AGENTS + 1)
    assert error_of(mini_data) == (
        f"mini: agents: {MAX_AGENTS + 1:,} agents; a scenario has at most {MAX_AGENTS:,} "
        "(see docs/formats.md)"
    )


def test_huge_numbers_are_range_errors_not_crashes(mini_data):
    mini_data["memory_size"] = 10**30
    assert error_of(mini_data).startswith("mini: memory_size: Input should be less than")
    mini_data["memory_size"] = 3
    mini_data["criteria"] = [{"name": "c", "description": "d", "scale_max": 10**20}]
    assert error_of(mini_data).startswith("mini: criteria.0.scale_max: Input should be less")


def test_a_utf8_bom_is_accepted(tmp_path: Path):
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD_TOML.encode())
    assert load_scenario_file(path).names == ["Ann", "Bob"]


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 5000 + "]" * 5000,
        "x = " + "{a = " * 3000 + "1" + "}" * 3000,
        "x." + ".".join(["a"] * 5000) + " = 1",
        "x = " + "[" * 21 + "]" * 21,
    ],
    ids=["arrays", "inline-tables", "dotted-keys", "just-over"],
)
def test_deep_nesting_is_one_line(tmp_path: Path, text: str):
    path = tmp_path / "deep.toml"
    path.write_text(text + "\n" + GOOD_TOML, encoding="utf-8")
    msg = file_error(path)
    assert msg.startswith(f"{path}: ") and msg.endswith("nested deeper than 20 levels"), msg


def test_too_deep_names_the_first_value_too_deep_among_many_tables():
    """Many shallow tables (a large cast's relations) pass; one too deep among them is
    named by its path, the first the walk meets."""
    deep: list = []
    inner = deep
    for _ in range(19):
        inner.append([])
        inner = inner[0]
    shallow = [{"from": "Ann", "to": "Bob", "fav": 0.5}] * 1000
    data = {"relations": [*shallow, {"x": [0]}], "agents": [{"notes": deep}]}
    assert parse_error(data) == "agents.0.notes" + ".0" * 18 + ": nested deeper than 20 levels"
    data["agents"] = [{"notes": deep[0][0]}]  # its innermost list at depth 20: allowed
    assert "nested deeper" not in parse_error(data)


def parse_error(data: dict) -> str:
    """What :func:`parse_scenario` raises for ``data`` (without its source)."""
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data, "cast.toml")
    return str(err.value).removeprefix("cast.toml: ")


def test_nesting_at_the_limit_reaches_validation(tmp_path: Path):
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 20 + "]" * 20 + "\n" + GOOD_TOML, encoding="utf-8")
    assert file_error(path) == f"{path}: x: unknown field"


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "folder"])
def test_only_regular_files_are_read(tmp_path: Path, kind: str):
    import os

    path = tmp_path / "odd.toml"
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    msg = file_error(path)
    assert msg.startswith(f"{path}: "), msg
    assert "regular file" in msg or "Is a directory" in msg


def test_an_oversized_file_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import engine.core.tomlfile

    monkeypatch.setattr(engine.core.tomlfile, "MAX_SCENARIO_BYTES", 1024)
    path = tmp_path / "big.toml"
    path.write_text(GOOD_TOML + f'description = "{"x" * 2000}"\n', encoding="utf-8")
    assert file_error(path) == f"{path}: larger than 0 MB, the limit for a scenario file"
