"""Relations a person reads at any cast size (issue 26): each pane's strongest ties both
ways, the matrix in faction order with its legend, filtered to one agent or one faction,
and where the keys go (z, Tab), with village-assembly (32 agents) at 80×24 and 160×48."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static

from engine import SaveStore, Simulation, resolve_scenario
from tui.app import SocialsimApp, build_app
from tui.relations import (
    Selection,
    faction_codes,
    faction_order,
    parse_selection,
    short_fav,
    ties_of,
)
from tui.screens.forms import TextForm
from tui.session import Session
from tui.widgets.agent_pane import AgentPane, ties_lines
from tui.widgets.deck import AgentDeck
from tui.widgets.matrix import FavMatrix

VILLAGE = "village-assembly"
SIZES = [(80, 24), (160, 48)]
SIZE_IDS = ["80x24", "160x48"]


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def text_of(widget: Static) -> str:
    return str(widget.content)


def grid_lines(matrix: FavMatrix) -> list[str]:
    grid = matrix.grid
    return [grid.render_line(y).text for y in range(grid.scrollable_content_region.height)]


def notes(matrix: FavMatrix) -> str:
    return text_of(matrix.query_one("#matrix-notes", Static))


# -- the pure parts ---------------------------------------------------------------------------


def test_faction_order_codes_and_selections() -> None:
    village = resolve_scenario(VILLAGE)
    ordered = faction_order(village.names, village.factions)
    members = [m for group in village.factions.values() for m in group]
    assert ordered == members  # the village is listed by faction already
    assert faction_order(["C", "A", "B"], {"x": ["B"], "y": ["C"]}) == ["B", "C", "A"]
    codes = faction_codes(list(village.factions))
    assert codes["valley farmers"] == "VF" and codes["traders and families"] == "TF"
    assert codes["newcomers"] == "NE" and codes["northwater"] == "NO"
    assert len(set(codes.values())) == len(codes)
    assert faction_codes(["residents", "redevelopment"]) == {
        "residents": "RE",
        "redevelopment": "RD",
    }
    names, factions = village.names, village.factions
    assert parse_selection("agnes", names, factions) == Selection(agent="Agnes")
    assert parse_selection("PC", names, factions) == Selection(faction="parish council")
    assert parse_selection("chapel", names, factions) == Selection(faction="chapel elders")
    assert parse_selection("", names, factions) == Selection()
    with pytest.raises(ValueError, match="could be"):
        parse_selection("valley", names, factions)  # valley farmers, valley trust
    with pytest.raises(ValueError, match="No agent or faction"):
        parse_selection("nobody", names, factions)


def test_ties_are_the_strongest_both_ways(store: SaveStore) -> None:
    sim = Simulation.new(resolve_scenario(VILLAGE), seed=0, store=store)
    try:
        state = sim.state
        ties = ties_of(state, "Agnes", 3)
        out = {o: r.fav for o, r in state.agents["Agnes"].relations.items()}
        into = {o: a.relations["Agnes"].fav for o, a in state.agents.items() if o != "Agnes"}
        assert [t.fav for t in ties.likes] == sorted(
            (v for v in out.values() if v >= 0.005), reverse=True
        )[:3]
        assert [t.fav for t in ties.dislikes] == sorted(v for v in out.values() if v <= -0.005)[:3]
        assert ties.liked_by[0].fav == max(into.values())
        assert ties.disliked_by[0].fav == min(into.values()) < 0
        wide = ties_lines(state, "Agnes", 120).plain.splitlines()
        top = ties.likes[0]
        assert (
            wide[0].startswith(f"likes {top.other} {short_fav(top.fav)}") and "dislikes" in wide[0]
        )
        assert wide[1].startswith("liked by ") and "disliked by" in wide[1]
        narrow = ties_lines(state, "Agnes", 36).plain.splitlines()
        assert narrow[0].startswith("→ ") and narrow[1].startswith("← ")
        assert all(len(line) <= 36 for line in narrow)
    finally:
        sim.close()


# -- the panes --------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_each_pane_and_focus_mode_list_the_strongest_ties(saves: Path, size) -> None:
    app = build_app(VILLAGE, saves=saves)
    async with app.run_test(size=size) as pilot:
        await pilot.press("n")
        await settle(pilot)
        state = app.sim.state
        for pane in app.query(AgentPane):
            if not pane.display:
                continue
            shown = text_of(pane.query_one(".ties", Static)).splitlines()
            ties = ties_of(state, pane.spec.name, 3)
            assert len(shown) == 2
            assert f"{ties.likes[0].other} {short_fav(ties.likes[0].fav)}" in shown[0]
            assert f"{ties.liked_by[0].other} {short_fav(ties.liked_by[0].fav)}" in shown[1]
        await pilot.press("z")  # focus mode: the matrix steps aside, the ties stay, in words
        await pilot.pause()
        deck = app.query_one(AgentDeck)
        pane = deck.panes[deck.agent_index]
        lines = text_of(pane.query_one(".ties", Static)).splitlines()
        assert lines[0].startswith("likes ") and lines[1].startswith("liked by ")
        if size == (160, 48):
            assert lines[0].count(" +") >= 2  # room for more than one tie of a kind


# -- the matrix -------------------------------------------------------------------------------


async def test_matrix_in_faction_order_with_codes_and_a_colour_legend(saves: Path) -> None:
    app = build_app(VILLAGE, saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        matrix = app.query_one(FavMatrix)
        lines = grid_lines(matrix)
        assert lines[0].split("│")[1].startswith("VF") and "│TF" in lines[0]
        assert matrix.in_view()[1] == range(32)  # every column in view at 160 columns
        rows = [ln.split("│")[0].split() for ln in lines[matrix.layout_.header_lines :]]
        assert rows[0] == ["VF", "1", "Agnes"] and rows[7] == ["TF", "8", "Rafael"]
        note = notes(matrix)
        assert "fav -1 █ -.5 █ -.1 █ .15 █ .55 █ 1" in note
        assert "VF valley farmers" in note and "NO northwater" in note


async def test_filter_to_one_agent_and_one_faction_and_back(saves: Path) -> None:
    app = build_app(VILLAGE, saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        matrix = app.query_one(FavMatrix)
        await pilot.press("F")
        form = app.screen
        assert isinstance(form, TextForm)
        form.query_one("#value", Input).value = "walter"
        await pilot.press("enter")
        await pilot.pause()
        assert matrix.selection == Selection(agent="Walter")
        assert len(matrix.names) == 31 and "Walter" not in matrix.names
        state = app.sim.state
        header = grid_lines(matrix)[0].split()
        assert header == ["Walter→", "→Walter"]
        assert matrix.cursor_pair() == ("Walter", "Agnes")  # its regard for the first other
        await pilot.press("right")
        assert matrix.cursor_pair() == ("Agnes", "Walter")  # and the other's for it
        rel = state.agents["Agnes"].relations["Walter"]
        assert f"{rel.fav:+.4f}" in text_of(matrix.query_one("#matrix-cell", Static))
        assert "Walter's row and column (F: all)" in notes(matrix)
        await pilot.press("F")  # filtered: F shows every agent again
        await pilot.pause()
        assert matrix.selection == Selection() and len(matrix.names) == 32
        await pilot.press("F")
        form = app.screen
        form.query_one("#value", Input).value = "nobody"
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is form  # refused inline, with what there is
        assert "No agent or faction" in " ".join(text_of(s) for s in form.query(Static))
        form.query_one("#value", Input).value = "parish council"
        await pilot.press("enter")
        await pilot.pause()
        assert matrix.names == ("Winifred", "Leonard", "Fiona", "Desmond")
        assert app.focused is matrix.grid


async def test_z_twice_and_tab_keep_the_arrows_on_the_matrix_with_a_visible_ring(
    saves: Path,
) -> None:
    app = build_app(VILLAGE, saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        matrix = app.query_one(FavMatrix)
        side = app.query_one("#side")
        assert app.focused is matrix.grid and side.styles.border_top[0] == "double"
        await pilot.press("z", "z")
        await pilot.pause()
        assert app.focused is matrix.grid
        before = matrix.cursor_pair()
        await pilot.press("down")
        assert matrix.cursor_pair() != before
        await pilot.press("tab")  # to a transcript: its pane gets the ring, the matrix not
        await pilot.pause()
        pane = app.focused.parent.parent
        assert isinstance(pane, AgentPane) and pane.styles.border_top[0] == "double"
        assert side.styles.border_top[0] != "double"
        await pilot.press("tab")  # the side panel itself takes no focus: back on the grid
        await pilot.pause()
        assert app.focused is matrix.grid
        await pilot.press("down")
        assert matrix.cursor_pair()[0] == "Bethan"


async def test_help_keeps_brackets_and_explains_theta_and_every_metric(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        shown = " ".join(text_of(s) for s in app.screen.query(Static))
        assert "z shows one agent full-size ([ and ] step through the agents)" in shown
        for words in ("θ", "mean Fav", "mean S", "reciprocity", "E-I index", "balance", "repair"):
            assert words in shown
        assert "(0-100%)" in shown and "task's score" in shown


# -- snapshots --------------------------------------------------------------------------------


def village_app(saves: Path) -> SocialsimApp:
    store = SaveStore(saves)
    sim = Simulation.new(resolve_scenario(VILLAGE), seed=0, store=store, run_id="village-run")
    return SocialsimApp(Session(store, sim))


@pytest.mark.parametrize("view", ["all", "agent", "focus"])
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_village_relations_snapshot(snap_compare, tmp_path: Path, size, view: str) -> None:
    """Two rounds played; the whole matrix, Agnes's row and column (F), or focus mode (z)."""

    async def play(pilot) -> None:
        await pilot.pause()
        for _ in range(2):
            await pilot.press("n")
            await settle(pilot)
        if view == "agent":
            await pilot.press("F", "enter")  # the form offers the agent on screen: Agnes
            await pilot.pause()
        elif view == "focus":
            await pilot.press("z")
        await pilot.pause()

    assert snap_compare(village_app(tmp_path / "saves"), terminal_size=size, run_before=play)
