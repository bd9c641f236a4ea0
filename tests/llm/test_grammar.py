"""A schema as a grammar-enforcing server is sent it: bounded numbers as their steps."""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.llm.grammar import MOST_STEPS, stepped, steps
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


@pytest.mark.parametrize(
    "model", [_observer_schema(("Ann", "Bo")), _plan_schema(("Ann", "Bo"))], ids=["judge", "plan"]
)
def test_every_bounded_number_of_a_minds_schema_is_sent_as_its_steps(model: Any) -> None:
    """The batched judge's (emotion, edges, importance, needs in anyOf) and the planner's
    (urgency, imagined needs under $defs) schemas: each bounded number gets an enum from
    its minimum to its maximum; the schema the reply is read against is not changed."""
    schema = schema_of(model)
    before = copy.deepcopy(schema)
    sent = stepped(schema)
    assert schema == before
    nodes = _bounded(sent, [])
    assert len(nodes) >= 3 and len(nodes) == len(_bounded(before, []))
    for node in nodes:
        assert node["enum"][0] == node["minimum"] and node["enum"][-1] == node["maximum"]
        assert len(node["enum"]) <= MOST_STEPS + 1
    # nothing else moved: without the enums, the sent schema is the original
    for node in nodes:
        del node["enum"]
    assert sent == before


def test_a_number_bounded_on_one_side_or_given_its_values_is_left_as_it_is() -> None:
    schema = {
        "type": "object",
        "properties": {
            "at_least": {"type": "number", "minimum": 0},
            "chosen": {"type": "number", "minimum": 0, "maximum": 1, "enum": [0, 1]},
            "many": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2}},
        },
    }
    sent = stepped(schema)
    assert sent["properties"]["at_least"] == {"type": "number", "minimum": 0}
    assert sent["properties"]["chosen"]["enum"] == [0, 1]
    assert sent["properties"]["many"]["items"]["enum"] == [0, 1, 2]
