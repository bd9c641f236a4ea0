"""The study families' registry: each family states its options and is found by name."""

from __future__ import annotations

import pytest

from engine.errors import SocialsimError
from engine.studies.families import FAMILIES, family
from engine.studies.sweep import Condition, conditions


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_family_names_a_team_of_each_size_it_allows(name):
    kind = family(name)
    assert kind.name == name
    for n in kind.team_sizes:
        names = kind.agent_names(n)
        assert len(names) == n == len(set(names))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_familys_contrasts_are_on_metrics_its_table_shows(name):
    kind = family(name)
    assert set(kind.contrast_ratios()) <= set(kind.metrics)


def test_an_unknown_family_is_one_line_naming_the_choices():
    with pytest.raises(SocialsimError, match=r"'chess': choose govsim or debate"):
        family("chess")
    with pytest.raises(SocialsimError, match="choose"):
        Condition(task="chess", control="no-prior")


def test_the_sweep_plays_a_cell_of_each_family_from_the_registry():
    cells = conditions("govsim", ["trust"], ["complete"], [1.0], 1, ["offline"])
    assert {c.task for c in cells} == {"govsim"}
    assert cells[0].agents == 3
