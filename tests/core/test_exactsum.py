"""``math.fsum`` of an array without a float per value (engine/core/exactsum.py): the same
float, bit for bit, however the values' magnitudes mix."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.core.exactsum import exact_sum

VALUES = st.floats(min_value=-4.0, max_value=4.0, allow_nan=False) | st.sampled_from(
    [0.0, -0.0, 5e-324, -5e-324, 1e-300, 2.0**-60, 1.0, -1.0, 0.1, 1e-16]
)


def same(a: float, b: float) -> bool:
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@given(st.lists(VALUES, max_size=300))
def test_the_sum_is_fsums(values):
    assert same(exact_sum(np.array(values, dtype=float)), math.fsum(values))


@given(st.lists(st.floats(allow_nan=False, width=64), max_size=50))
def test_any_floats_sum_as_fsum_does(values):
    try:
        expected = math.fsum(values)
    except (OverflowError, ValueError) as err:  # an overflow, inf - inf: fsum's failures
        with pytest.raises(type(err)):
            exact_sum(np.array(values, dtype=float))
        return
    assert same(exact_sum(np.array(values, dtype=float)), expected)


def test_cancelling_values_leave_what_a_float_sum_loses():
    values = [1.0, 1e-17, -1.0] * 1000
    assert exact_sum(np.array(values)) == math.fsum(values) == 1e-14
    assert sum(values) != math.fsum(values)


@given(st.integers(min_value=-(2**1100), max_value=2**1100), st.integers(200, 2200))
def test_a_total_scaled_down_rounds_once(total, shift):
    """The scaled total is the correctly rounded fraction, subnormal results included."""
    from fractions import Fraction

    from engine.core.exactsum import _divided

    assert same(_divided(total, shift), float(Fraction(total, 1 << shift)))
