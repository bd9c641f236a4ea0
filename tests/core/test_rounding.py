"""round(x, digits) on arrays (engine/core/rounding.py): the same floats as round, bit for bit,
zeros signed."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from engine.core.rounding import rounded

FLOATS = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


def same(a: float, b: float) -> bool:
    return a == b and type(a) is type(b) and math.copysign(1.0, a) == math.copysign(1.0, b)


#: Values at and beside ties of 4 and 6 places, where scaling errs by an ulp.
TIES = st.builds(
    lambda k, digits, nudge: (k + 0.5) / 10**digits + nudge,
    st.integers(-(10**7), 10**7),
    st.sampled_from([4, 6]),
    st.sampled_from([0.0, 1e-17, -1e-17, 5e-13, -5e-13]),
)


@given(
    st.lists(FLOATS | TIES | st.sampled_from([0.0, -0.0, 0.00005, -0.00015, 1e300, math.inf])),
    st.sampled_from([4, 6]),
)
def test_arrays_round_as_round_does_bit_for_bit(values, digits):
    got = rounded(np.array(values, dtype=float), digits).tolist()
    for x, y in zip(values, got, strict=True):
        assert same(y, round(x, digits)), (x, y)


def test_a_matrix_rounds_as_its_values_do():
    values = np.array([[0.00015, 2.675, 0.1], [1.0000005, -0.00045, 3.0]])
    assert rounded(values, 4).tolist() == [[round(x, 4) for x in row] for row in values.tolist()]


def test_the_ties_that_scaling_gets_wrong_are_rounded_by_round():
    # 0.00015 * 1e4 is 1.4999999999999998: half-even on the scaled value would say 0.0001
    values = [0.00015, 2.675, 1.0000005, -0.00045]
    assert rounded(np.array(values), 4).tolist() == [round(x, 4) for x in values]


@given(st.lists(FLOATS | TIES, min_size=1), st.sampled_from([4, 6]))
def test_arrays_of_moderate_values_round_as_round_does(values, digits):
    # every scaled value under 2**52: only those that land on a tie are rounded by round
    got = rounded(np.array(values, dtype=float), digits).tolist()
    for x, y in zip(values, got, strict=True):
        assert same(y, round(x, digits)), (x, y)


def test_millions_of_values_near_ties_round_as_round_does():
    rng = np.random.default_rng(7)
    for digits in (4, 6):
        ties = (rng.integers(-(10**6), 10**6, 200_000) + 0.5) / 10**digits
        values = np.concatenate([ties, np.nextafter(ties, 1.0), np.nextafter(ties, -1.0)])
        values = np.concatenate([values, rng.uniform(-1.0, 1.0, 200_000)])
        expected = [round(x, digits) for x in values.tolist()]
        assert rounded(values, digits).tolist() == expected


@given(st.lists(st.floats(min_value=4.6e9, max_value=1e12) | FLOATS, min_size=1))
def test_values_too_large_to_scale_exactly_round_as_round_does(values):
    got = rounded(np.array(values, dtype=float), 6).tolist()
    for x, y in zip(values, got, strict=True):
        assert same(y, round(x, 6)), (x, y)
