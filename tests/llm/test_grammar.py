"""A schema as a grammar-enforcing server is sent it: bounded numbers as their steps."""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.llm.grammar import MOST_STEPS, grammar_schema, steps
from engine.llm.parsing import schema_of
from engine.minds.llm import _observer_schema, _plan_schema


@pytest.mark.parametrize(
    ("low", "high", "integer", "expected"),
    [
        (-0.3, 0.3, False, [-0.3, -0.25, -0.2, -0.15, -0.1, -0.05, 0, 0.05, 0.1, 0.15, 0.2,
                            0.25, 0.3]),
        (0, 10, False, [k / 2 if k % 2 else k // 2 for k in range(21)]),
        (-2, 2, False, [-2, -1.8, -1.6, -1.4, -1.2, -1, -0.8, -0.6, -0.4, -0.2, 0, 0.2, 0.4,
                        0.6, 0.8, 1, 1.2, 1.4, 1.6, 1.8, 2]),
        (1, 10, True, list(range(1, 11))),
        (0, 100, True, None),  # more integers than steps: left to the bounds
        (0, 1 / 3, False, None),  # a bound off every round step
        (1, 1, False, None),
    ],
)  # fmt: skip
def test_a_range_is_cut_into_round_steps(
    low: float, high: float, integer: bool, expected: list[float] | None
) -> None:
    assert steps(low, high, integer) == expected


@given(
    st.integers(-1000, 1000),
    st.integers(1, 1000),
    st.sampled_from([1, 0.1, 0.01, 0.05, 0.25, 2.5]),
)
def test_steps_land_on_both_bounds_evenly(start: int, width: int, unit: float) -> None:
    low, high = start * unit, (start + width) * unit
    got = steps(low, high, False)
    if got is None:
        return
    assert len(got) <= MOST_STEPS + 1
    assert math.isclose(got[0], low, abs_tol=1e-9) and math.isclose(got[-1], high, abs_tol=1e-9)
    gaps = [b - a for a, b in itertools.pairwise(got)]
    assert all(math.isclose(g, gaps[0], rel_tol=1e-6) for g in gaps)
    assert all(isinstance(v, int) for v in got if float(v).is_integer())


def _bounded(node: Any, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every number or integer node of a schema bounded on both sides."""
    if isinstance(node, dict):
        if node.get("type") in ("number", "integer") and {"minimum", "maximum"} <= node.keys():
            found.append(node)
        for value in node.values():
            _bounded(value, found)
    elif isinstance(node, list):
        for value in node:
            _bounded(value, found)
    return found


def test_the_plans_bounded_numbers_are_sent_as_their_steps_and_nothing_else_moves() -> None:
    """The planner's urgencies and imagined needs (under $defs, in anyOf): each bounded
    number gets an enum from its minimum to its maximum; the schema the reply is read
    against is not changed."""
    schema = schema_of(_plan_schema(("Ann", "Bo")))
    before = copy.deepcopy(schema)
    sent = copy.deepcopy(grammar_schema(schema))
    assert schema == before
    assert grammar_schema(schema) is grammar_schema(schema) == sent  # (made once a schema)
    nodes = _bounded(sent, [])
    assert len(nodes) >= 3 and len(nodes) == len(_bounded(before, []))
    for node in nodes:
        assert node["enum"][0] == node["minimum"] and node["enum"][-1] == node["maximum"]
        assert len(node["enum"]) <= MOST_STEPS + 1
        del node["enum"]
    assert sent == before


def test_the_batched_judge_is_sent_one_judgement_for_each_agent_in_order() -> None:
    """Its judgements, exactly one per agent named in ``target``, are sent as that many
    objects, each with its target first and fixed, its change and importance as steps: a
    grammar then cannot judge one agent twice and leave another out."""
    schema = schema_of(_observer_schema(("Ann", "Bo", "Cy")))
    sent = grammar_schema(schema)
    judgements = sent["properties"]["judgements"]
    assert "items" not in judgements and judgements["minItems"] == judgements["maxItems"] == 3
    each = judgements["prefixItems"]
    assert [e["properties"]["target"] for e in each] == [{"const": n} for n in ("Ann", "Bo", "Cy")]
    for edge in each:
        assert next(iter(edge["properties"])) == "target" and "target" in edge["required"]
        assert edge["properties"]["delta_fav"]["enum"][:2] == [-0.3, -0.25]
        assert edge["properties"]["importance"]["enum"] == list(range(1, 11))
    assert sent["properties"]["delta"]["enum"][-1] == 0.3
    assert schema == schema_of(_observer_schema(("Ann", "Bo", "Cy")))  # (not changed)


def test_a_list_is_one_each_only_when_its_length_is_one_fields_values() -> None:
    item = {
        "type": "object",
        "properties": {"who": {"enum": ["a", "b"]}, "kind": {"enum": ["x", "y", "z"]}},
        "required": ["who", "kind"],
    }
    exact = {"type": "array", "items": item, "minItems": 2, "maxItems": 2}
    assert [p["properties"]["who"] for p in grammar_schema(exact)["prefixItems"]] == [
        {"const": "a"},
        {"const": "b"},
    ]
    for loose in ({**exact, "maxItems": 3}, {**exact, "minItems": 4, "maxItems": 4}):
        assert grammar_schema(loose) == loose  # no length, or no field with that many values
    both = {**item, "properties": {"who": {"enum": ["a", "b"]}, "kind": {"enum": ["x", "y"]}}}
    assert grammar_schema({**exact, "items": both})["items"] == both  # two such fields


def test_a_number_bounded_on_one_side_or_given_its_values_is_left_as_it_is() -> None:
    schema = {
        "type": "object",
        "properties": {
            "at_least": {"type": "number", "minimum": 0},
            "chosen": {"type": "number", "minimum": 0, "maximum": 1, "enum": [0, 1]},
            "many": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2}},
        },
    }
    sent = grammar_schema(schema)
    assert sent["properties"]["at_least"] == {"type": "number", "minimum": 0}
    assert sent["properties"]["chosen"]["enum"] == [0, 1]
    assert sent["properties"]["many"]["items"]["enum"] == [0, 1, 2]
