"""Scenario files whose names look alike are refused: names are compared as they are shown
(NFKC, case-folded, invisible characters removed), a format character (zero widths,
direction marks, tags) is refused in a name, a relation given twice is refused, and every
string of the model is bounded. Saves written before these rules still read.

A few invisible characters are tried by default; ``-m slow`` tries every format character
Unicode has and bounds every string of every bundled scenario."""

from __future__ import annotations

import copy
import json
import sys
import tomllib
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from engine import Scenario, ScenarioError
from engine.core.limits import MAX_EVENTS, MAX_PERSONA_ITEMS, MAX_SECTION_ITEMS
from engine.core.scenario import MAX_LINE, MAX_PROSE, parse_scenario
from engine.core.textsafe import name_key, unsafe_char

FEW = ["\u200b", "\u00ad", "\u200f"]
#: The issue's list, then LRM, RLM, ALM and U+FFF9.
NAMED = [
    *("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u200e", "\u200f"),
    *("\u061c", "\u180e", "\U000e0041", "\ufff9"),
]
EVERY_FORMAT = [
    chr(c)
    for c in range(sys.maxunicode + 1)
    if unicodedata.category(chr(c)) == "Cf" and unsafe_char(chr(c)) is None
]
LIBRARY = Path(__file__).resolve().parents[2] / "scenarios"


def _refused(data: dict, *fragments: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, "s.toml")
    message = str(caught.value)
    assert message.startswith("s.toml: ") and "\n" not in message, message
    assert unsafe_char(message) is None, message
    for fragment in fragments:
        assert fragment in message, message
    return message


def _renamed(data: dict, old: str, new: str) -> dict:
    """``data`` with agent ``old`` renamed to ``new`` everywhere."""
    return json.loads(json.dumps(data).replace(json.dumps(old), json.dumps(new)))


def _check_format_char(mini_data: dict, char: str) -> None:
    code = f"U+{ord(char):04X}"
    _refused(_renamed(copy.deepcopy(mini_data), "Cy", "Bob" + char), "agents.2.name", code)
    _refused(_renamed(copy.deepcopy(mini_data), "Cy", "C" + char + "y"), "format character")


@pytest.mark.parametrize("char", FEW, ids=[f"U+{ord(c):04X}" for c in FEW])
def test_a_format_character_in_a_name_is_refused(mini_data: dict, char: str):
    _check_format_char(mini_data, char)


@pytest.mark.slow
def test_every_format_character_in_a_name_is_refused(mini_data: dict):
    assert set(NAMED) <= set(EVERY_FORMAT) | {"\u200e", "\u200f"}  # the C0-free ones
    for char in [*NAMED, *EVERY_FORMAT]:
        if unsafe_char(char) is None:  # the bidi overrides are refused as controls already
            _check_format_char(mini_data, char)


LOOKALIKES = {
    "nfc-nfd": ("Zoë", unicodedata.normalize("NFD", "Zoë")),
    "fullwidth": ("Ann2", "Ａnn2"),
    "hangul-filler": ("Dan", "Dan\u3164"),
    "grapheme-joiner": ("Dan", "Da\u034fn"),
    "two-spaces": ("Ann Lee", "Ann  Lee"),
    "circled-digit": ("Ann1", "Ann\u2460"),
}


@pytest.mark.parametrize("case", list(LOOKALIKES))
def test_names_that_look_alike_are_refused(mini_data: dict, case: str):
    first, second = LOOKALIKES[case]
    data = _renamed(_renamed(mini_data, "Ann", first), "Cy", second)
    _refused(data, "agents.2.name", "looks like agent")
    assert name_key(first) == name_key(second)


SCRIPTS = {
    "cyrillic-a": ("Ann", "\u0410nn"),
    "cyrillic-o-e": ("Joe", "J\u043e\u0435"),
    "greek-capitals": ("Kit", "\u039a\u0399\u03a4"),
    "cyrillic-h-p": ("Hope", "\u041do\u0440e"),
}


@pytest.mark.parametrize("case", list(SCRIPTS))
def test_cyrillic_and_greek_look_alikes_are_refused_with_both_names(mini_data: dict, case: str):
    first, second = SCRIPTS[case]
    data = _renamed(_renamed(mini_data, "Ann", first), "Cy", second)
    _refused(data, "agents.2.name", repr(second), f"looks like agent {first!r}")


@pytest.mark.parametrize(
    "name", ["\uff41\uff4c\uff4c", "\u0410ll", "\uff2e\uff2f\uff2e\uff25", "\u0391LL"]
)
def test_a_name_that_looks_like_a_reserved_word_is_refused(mini_data: dict, name: str):
    word = "none" if name.startswith("\uff2e") else "all"
    _refused(_renamed(mini_data, "Cy", name), "agents.2.name", f"reserved word {word!r}")


def test_names_of_other_scripts_stay_apart(mini_data: dict):
    data = _renamed(_renamed(mini_data, "Ann", "\u0410\u043d\u044f"), "Cy", "Ana")  # Аня, Ana
    assert parse_scenario(data, "s.toml").names[2] == "Ana"


def test_a_relation_given_twice_is_refused(mini_data: dict):
    mini_data["relations"].append({"from": "Ann", "to": "Bob", "fav": 0.9})
    _refused(mini_data, "relations.2: a second relation from 'Ann' to 'Bob' (relations.0")
    mini_data["relations"][2] = {"from": "Bob", "to": "Ann", "fav": 0.9}  # the other way
    assert len(parse_scenario(mini_data, "s.toml").relations) == 3


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        (("id",), "a" * 65, "at most 64"),
        (("factions", ""), ["Ann"], "factions.''.[key]: String should have at least 1"),
        (("factions", "b" * 41), ["Ann"], "factions"),
        (("agents", 0, "role"), "r" * (MAX_LINE + 1), f"at most {MAX_LINE}"),
        (("description",), "d" * (MAX_PROSE + 1), f"at most {MAX_PROSE:,}"),
        (("events", 0, "text"), "e" * (MAX_PROSE + 1), "events.0.text"),
    ],
    ids=["id", "empty-faction", "long-faction", "role", "description", "event"],
)
def test_every_string_is_bounded(mini_data: dict, path: tuple, value: Any, fragment: str):
    *parents, last = path
    target = mini_data
    for key in parents:
        target = target[key]
    if parents == ["factions"]:
        target.clear()
    target[last] = value
    _refused(mini_data, fragment.replace(",", "") if "at most" in fragment else fragment)


@pytest.mark.parametrize(
    ("path", "limit"),
    [
        (("agents", 0, "traits"), MAX_PERSONA_ITEMS),
        (("agents", 1, "talking_points"), MAX_PERSONA_ITEMS),
        (("agents", 2, "private_info"), MAX_PERSONA_ITEMS),
        (("events",), MAX_EVENTS),
        (("rules",), MAX_SECTION_ITEMS),
    ],
    ids=lambda p: ".".join(map(str, p)) if isinstance(p, tuple) else None,
)
def test_every_list_is_bounded_before_its_entries_are_read(
    mini_data: dict, path: tuple, limit: int
):
    """One entry too many is refused with the limit in the error, and without reading any
    entry: entries that are not even valid give the count, not their own error."""
    *parents, last = path
    target = mini_data
    for key in parents:
        target = target[key]
    target[last] = [0] * (limit + 1)
    _refused(mini_data, ".".join(map(str, path)), f"{limit + 1:,}", f"at most {limit:,}")


def test_relations_are_at_most_one_from_each_agent_to_each_other(mini_data: dict):
    mini_data["relations"] = [{"from": "Ann", "to": "Bob"}] * 7  # 3 agents: 6 pairs
    _refused(mini_data, "relations: 7 relations for 3 agents; at most 6")


def _strings(value: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _strings(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _strings(v, (*path, i))]
    return [path] if isinstance(value, str) else []


@pytest.mark.slow
@pytest.mark.parametrize("file", sorted(LIBRARY.glob("*.toml")), ids=lambda p: p.stem)
def test_every_string_of_every_bundled_scenario_is_bounded(file: Path):
    data = tomllib.loads(file.read_text(encoding="utf-8"))
    parse_scenario(data, str(file))  # the file as shipped passes
    for path in _strings(data):
        broken = copy.deepcopy(data)
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = "x" * (MAX_PROSE + 1)
        with pytest.raises(ScenarioError):
            parse_scenario(broken, str(file))


def test_a_saved_snapshot_from_before_the_rules_still_reads(mini_data: dict):
    """A save holds its scenario as validated then: only files get the new rules."""
    mini_data = _renamed(mini_data, "Cy", "Bob\u200b")
    mini_data["relations"] = [{"from": "Ann", "to": "Bob"}, {"from": "Ann", "to": "Bob"}]
    mini_data["factions"] = {}
    mini_data["events"] = []
    snapshot = Scenario.model_validate(mini_data)
    assert snapshot.names == ["Ann", "Bob", "Bob\u200b"]
    _refused(mini_data, "format character U+200B")
