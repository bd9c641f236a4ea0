"""The bundled 32-agent scenario (``village-assembly``): a village of factions that loads,
runs offline with its factions in play, and opens in the app at 80×24 without an agent
silently missing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cast import screen_text

from engine import Simulation, resolve_scenario
from tui.app import build_app
from tui.screens.jump import JumpScreen
from tui.widgets.deck import AgentDeck, AgentStrip
from tui.widgets.matrix import FavMatrix


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


def test_the_village_has_32_agents_each_in_one_faction() -> None:
    village = resolve_scenario("village-assembly")
    assert len(village.names) == 32
    members = [name for names in village.factions.values() for name in names]
    assert sorted(members) == sorted(village.names)  # everyone, once
    assert len(village.factions) == 7
    assert set(village.interventions) == {"mediation", "land-swap"}


def test_the_village_runs_offline_with_its_factions_in_play() -> None:
    sim = Simulation.new(resolve_scenario("village-assembly"), seed=3)
    asyncio.run(sim.run(3))
    assert sim.round == 3
    for r in range(4):
        assert sim.metrics(r).ei_index is not None  # factions: E-I is defined
    spoken = {a.speaker for r in sim.records[1:] for a in r.actions if a.utterance}
    assert len(spoken) > 16  # most of the village takes part


async def test_the_village_at_80x24_shows_where_every_agent_is(saves: Path) -> None:
    app = build_app("village-assembly", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.sim.round == 1
        deck = app.query_one(AgentDeck)
        assert deck.pages == 32  # one pane a page at 80 columns
        assert app.query_one(AgentStrip).render().plain.startswith("1/32 [Agnes]")
        notes = str(app.query_one("#matrix-notes").render())
        assert "of 32" in notes  # the matrix says which rows and columns are in view
        matrix = app.query_one(FavMatrix)
        rows, cols = matrix.in_view()
        assert 0 < len(rows) < 32 and 0 < len(cols) < 32
        await pilot.press("slash", *"sebast")
        assert isinstance(app.screen, JumpScreen)
        await pilot.press("enter")
        await pilot.pause()
        assert deck.shown_agents() == ["Sebastian"]
        assert any("Sebastian" in line for line in screen_text(app))
