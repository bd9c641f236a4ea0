"""A run's process keeps numpy from asking for huge pages (engine/core/pages.py)."""

from __future__ import annotations

import numpy as np
import pytest

from engine import Simulation, load_library

switch = getattr(getattr(np, "_core", np), "multiarray", None)
_set = getattr(switch, "_set_madvise_hugepage", None)


@pytest.mark.skipif(_set is None, reason="this numpy has no huge page switch")
def test_a_simulation_turns_numpys_huge_pages_off():
    _set(True)
    try:
        Simulation.new(load_library("tavern"), seed=1)
        assert _set(True) is False  # (it returns the setting it replaces)
    finally:
        _set(False)
