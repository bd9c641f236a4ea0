"""The favorability matrix on the main screen: 5 and 30 agents at 80×24, 100×30 and 160×48.

Every agent reachable by scrolling, sticky headers, full names and the exact value under
the cursor, the width it is given used, the prior overlay, the glyph legend and snapshots.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cast import THIRTY, screen_text, write_cast
from textual.widgets import Static

from engine import SaveStore, Simulation, Status, resolve_scenario
from tui.app import SocialsimApp, build_app
from tui.session import Session
from tui.widgets.matrix import (
    FavMatrix,
    Layout,
    abbreviate,
    choose_layout,
    short_fav,
    signed,
)
from tui.widgets.style import STATUS_GLYPH

SIZES = [(80, 24), (100, 30), (160, 48)]
SIZE_IDS = ["80x24", "100x30", "160x48"]


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


def grid_lines(matrix: FavMatrix) -> list[str]:
    """The grid as drawn now (header lines first), only what is in view."""
    grid = matrix.grid
    return [grid.render_line(y).text for y in range(grid.scrollable_content_region.height)]


def row_cells(matrix: FavMatrix) -> dict[str, list[str]]:
    """Each row in view by agent name: its cells as drawn (faction code and │ left out)."""
    assert matrix.layout_ is not None
    names = set(matrix.state.agents)
    rows = {}
    for line in grid_lines(matrix)[matrix.layout_.header_lines :]:
        tokens = line.replace("│", " ").split()
        while tokens and tokens[0] not in names:
            tokens.pop(0)  # the faction's code, the row's number
        if tokens:
            rows[tokens[0]] = tokens[1:]
    return rows


def cell_text(matrix: FavMatrix) -> str:
    return str(matrix.query_one("#matrix-cell", Static).content)


def notes_text(matrix: FavMatrix) -> str:
    return str(matrix.query_one("#matrix-notes", Static).content)


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


# -- layout rules ---------------------------------------------------------------------------------


def test_abbreviations_are_never_ambiguous() -> None:
    names = ["Christopher", "Christina", "Maximilian", "Maxine", "Bo"]
    cut = abbreviate(names, 5)
    assert len(set(cut)) == len(names)
    assert cut == ["Chr…1", "Chr…2", "Max…3", "Max…4", "Bo"]  # alike cuts keep their number
    assert abbreviate(["Maximilian", "Bo"], 5) == ["Maxi…", "Bo"]
    assert abbreviate(names, 12) == names  # full names when they fit


def test_layouts_prefer_values_then_glyphs() -> None:
    five = ["Edmund", "Nell", "Silas", "Greta", "Callum"]
    wide = choose_layout(five, 38)
    assert wide.density == "values" and wide.col_labels == tuple(five)
    assert choose_layout(five, 30).density == "glyphs"
    many = choose_layout(THIRTY, 78)
    assert many.density == "glyphs" and many.header_lines == 2 and many.width <= 78
    narrow = choose_layout(THIRTY, 38)  # nothing fits: numbers on one line, scrolled
    assert narrow.width > 38 and narrow.header_lines == 1
    assert narrow.row_labels[1] == " 2 Bartholomew"


def test_no_minus_zero() -> None:
    assert short_fav(-0.001) == " .00" and short_fav(0.004) == " .00"
    assert short_fav(-0.38) == "-.38" and short_fav(1.0) == "+1.0"
    assert signed(-0.00001, 4) == "+0.0000" and signed(-0.25, 4) == "-0.2500"


# -- 30 agents ----------------------------------------------------------------------------------


async def test_thirty_agents_at_80x24_all_reachable_with_sticky_headers(
    saves: Path, thirty: Path
) -> None:
    app = build_app(str(thirty), saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        matrix = app.query_one(FavMatrix)
        assert app.focused is matrix.grid
        rows, cols = matrix.in_view()
        assert 0 < len(rows) < 30 and 0 < len(cols) < 30
        note = notes_text(matrix)
        assert f"rows 1-{rows.stop} of 30" in note and f"cols 1-{cols.stop} of 30" in note
        header = grid_lines(matrix)[0]
        seen_rows: set[str] = set()
        for k in range(30):  # down the first column: every row comes into view
            assert matrix.cursor_pair()[0] == THIRTY[k]
            lines = grid_lines(matrix)
            assert lines[0] == header  # the column header stays on top
            seen_rows.update(m.group(1) for ln in lines[1:] if (m := re.match(r"\s*\d+ (\S+)", ln)))
            assert THIRTY[k] in seen_rows and k in matrix.in_view()[0]
            await pilot.press("down")
        assert seen_rows == set(THIRTY)  # full names, none dropped
        assert matrix.cursor_pair()[0] == "Bo" and "-30 of 30 · cols" in notes_text(matrix)
        labels = [ln[:15] for ln in grid_lines(matrix)[1:]]
        seen_cols: set[int] = set()
        await pilot.press("end")
        for _ in range(30):  # along the last row, right to left: every column comes into view
            lines = grid_lines(matrix)
            assert [ln[:15] for ln in lines[1:]] == labels  # the row labels stay left
            seen_cols.update(int(n) for n in lines[0][15:].split())
            await pilot.press("left")
        assert seen_cols == set(range(1, 31))
        assert matrix.in_view()[1].start == 0


async def test_cursor_shows_full_names_and_exact_value(saves: Path, thirty: Path) -> None:
    app = build_app(str(thirty), saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        matrix = app.query_one(FavMatrix)
        matrix.move_to("Maximilian", "Christopher")
        await pilot.pause()
        rel = app.sim.state.agents["Maximilian"].relations["Christopher"]
        text = cell_text(matrix)
        assert "Maximilian → Christopher" in text
        assert f"{rel.fav:+.4f} {rel.status.value}" in text
        assert matrix.in_view()[0].start <= 13 < matrix.in_view()[0].stop  # scrolled to it
        await pilot.press("right")
        assert matrix.cursor_pair() == ("Maximilian", "Christina")
        assert "Maximilian → Christina" in cell_text(matrix)
        await pilot.press("right", "right")  # Leopold, then Maximilian itself
        assert cell_text(matrix).startswith("Maximilian (itself)")


async def test_thirty_agents_at_160x48_use_the_width(saves: Path, thirty: Path) -> None:
    app = build_app(str(thirty), saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        matrix = app.query_one(FavMatrix)
        assert matrix.region.width >= 76  # half the screen, not 38 columns
        assert matrix.in_view()[1] == range(30)  # every column in view at once
        assert matrix.layout_ is not None and matrix.layout_.header_lines == 2
        header = grid_lines(matrix)[:2]
        assert header[1].split()[:3] == ["1", "2", "3"] and header[0].split()[:2] == ["1", "1"]
        await pilot.resize_terminal(80, 24)  # live resize: back to scrolling
        await pilot.pause()
        assert matrix.region.width <= 40 and len(matrix.in_view()[1]) < 30
        assert "of 30" in notes_text(matrix)


def rows_in_note(matrix: FavMatrix, total: int) -> int:
    """N of the range note ``rows 1-N of total``."""
    found = re.search(rf"rows 1-(\d+) of {total}", notes_text(matrix))
    assert found is not None, notes_text(matrix)
    return int(found.group(1))


def metrics_text(app: SocialsimApp) -> str:
    return str(app.query_one("#metrics-line", Static).content)


async def test_village_assembly_at_80x24_keeps_eight_rows_in_a_compact_panel(saves: Path) -> None:
    app = build_app("village-assembly", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        matrix = app.query_one(FavMatrix)
        assert rows_in_note(matrix, 32) >= 8  # two with the full panel
        assert "sticky" not in notes_text(matrix)
        metrics = metrics_text(app).splitlines()
        assert len(metrics) == 2
        assert metrics[0].startswith("Fav ") and " recip " in metrics[0]
        assert metrics[1].startswith("E-I ") and " bal " in metrics[1] and " repair " in metrics[1]
        assert "\n" not in cell_text(matrix)
        assert cell_text(matrix).startswith("Agnes → Walter  +")
        matrix.move_to("Winifred", "Sebastian")  # the two longest names fit one line
        await pilot.pause()
        rel = app.sim.state.agents["Winifred"].relations["Sebastian"]
        assert cell_text(matrix) == f"Winifred → Sebastian  {signed(rel.fav, 4)} {rel.status}"


async def test_village_assembly_at_160x48_keeps_the_full_panel(saves: Path) -> None:
    app = build_app("village-assembly", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("n")
        await settle(pilot)
        matrix = app.query_one(FavMatrix)
        assert "sticky: " in notes_text(matrix)
        full = metrics_text(app)
        for name in ("mean Fav", "mean S", "reciprocity", "E-I index", "balance", "repair"):
            assert name in full
        await pilot.resize_terminal(80, 24)  # live: compact
        await pilot.pause()
        assert "sticky" not in notes_text(matrix) and len(metrics_text(app).splitlines()) == 2
        assert rows_in_note(matrix, 32) >= 8
        await pilot.resize_terminal(160, 48)  # and full again
        await pilot.pause()
        assert "sticky: " in notes_text(matrix) and metrics_text(app) == full


# -- 5 agents -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_five_agents_values_under_full_names(saves: Path, size: tuple[int, int]) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=size) as pilot:
        await pilot.press("n")
        await settle(pilot)
        matrix = app.query_one(FavMatrix)
        layout = matrix.layout_
        assert isinstance(layout, Layout) and layout.density == "values"
        lines = grid_lines(matrix)
        assert [part.strip() for part in lines[0].split("│")] == ["", "sell", "keep", "-"]
        # Faction order (sell, keep, then Silas in none), full names: never cut.
        assert lines[1].split() == ["Edmund", "Greta", "Nell", "Callum", "Silas"]
        rows, cols = matrix.in_view()
        assert cols == range(5)  # every column in view, under its full name
        if size != (80, 24):  # at 80x24 the rows may need scrolling, and then say so
            assert rows == range(5) and "of 5" not in notes_text(matrix)
        elif rows != range(5):
            assert f"rows 1-{rows.stop} of 5" in notes_text(matrix)
        state = app.sim.state
        row = row_cells(matrix)
        fav = state.agents["Nell"].relations["Edmund"]
        assert row["Nell"][0] == short_fav(fav.fav).strip() + STATUS_GLYPH[fav.status]
        visible = "\n".join(screen_text(app))
        # The metrics stay on screen under the matrix (at 80x24 on two compact lines).
        assert re.search(r"(mean Fav +|Fav )-?\d\.\d\d", visible), visible


# -- the glyph legend, sticky statuses, NO_COLOR -------------------------------------------------


def _with_relations(sim: Simulation, edits: dict[tuple[str, str], tuple[float, Status]]):
    state = sim.state.model_copy(deep=True)
    for (i, j), (fav, status) in edits.items():
        rel = state.agents[i].relations[j]
        state.agents[i].relations[j] = rel.model_copy(update={"fav": fav, "status": status})
    return state


async def test_sticky_status_gets_a_legend_line(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        matrix = app.query_one(FavMatrix)
        plain = _with_relations(
            app.sim,
            {
                (i, j): (0.0, Status.NEUTRAL)
                for i in app.sim.scenario.names
                for j in app.sim.scenario.names
                if i != j
            },
        )
        matrix.show(plain, set())
        await pilot.pause()
        assert "sticky" not in notes_text(matrix)
        assert "+.38" not in "\n".join(grid_lines(matrix))
        warm_rival = _with_relations(app.sim, {("Edmund", "Nell"): (0.38, Status.RIVAL)})
        matrix.show(warm_rival, {("Edmund", "Nell")})
        await pilot.pause()
        assert "+.38~" in grid_lines(matrix)[2]  # under the faction and name lines
        note = notes_text(matrix)
        assert (
            note.splitlines()[-1]
            == "sticky: +.38~ is still rival (status moves at +.55, -.10, -.50 or by an event)"
        )
        matrix.move_to("Edmund", "Nell")
        await pilot.pause()
        assert "+0.3800 rival" in cell_text(matrix)
        assert row_cells(matrix)["Edmund"][2] == "+.38~"


@pytest.mark.parametrize("agents", [5, 30])
async def test_no_color_cells_carry_sign_and_size(
    saves: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agents: int
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    scenario = "tavern" if agents == 5 else str(write_cast(tmp_path / "c.toml", THIRTY))
    app = build_app(scenario, saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.no_color
        names = app.sim.scenario.names
        matrix = app.query_one(FavMatrix)
        statuses = {
            (names[0], names[1]): (0.7, Status.ALLY),
            (names[0], names[2]): (-0.3, Status.RIVAL),
            (names[0], names[3]): (-0.8, Status.ENEMY),
            (names[0], names[4]): (0.1, Status.NEUTRAL),
        }
        matrix.show(_with_relations(app.sim, statuses), set())
        await pilot.pause()
        first = row_cells(matrix)[names[0]]
        if agents == 5:  # values: signed, with the status glyph; columns in faction order
            assert first == ["—", "-.80x", "+.70+", "+.10·", "-.30~"]  # Greta, Nell, Callum, Silas
        else:  # glyphs: the band of the value, sign and size, in place of the status
            assert first[:5] == ["\\", "▲", "▽", "▼", "·"]
            assert "glyph = fav" in notes_text(matrix) and "fav -1 ▼ -.5 ▽" in notes_text(matrix)
        cursor = matrix.grid.get_component_rich_style("grid--cursor")
        assert cursor.underline and cursor.bold  # the cursor shows without colour too


# -- the relational-prior overlay ----------------------------------------------------------------


async def test_prior_overlay_shows_the_fixed_signs_and_toggles(saves: Path) -> None:
    # tavern: Edmund, Nell, Silas, Greta, Callum; chain edges E-N +, N-S -, S-G +, G-C -
    app = build_app("tavern", saves=saves, prior="trust:chain:+,-,+,-")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        title = app.query_one("#side-title", Static)
        matrix = app.query_one(FavMatrix)

        def rows() -> dict[str, list[str]]:
            return row_cells(matrix)

        # Columns in faction order: Edmund, Greta (sell), Nell, Callum (keep), Silas.
        assert rows()["Edmund"][2] != "+1"  # favorability first: the scenario's
        await pilot.press("P")
        assert matrix.overlay and "trust/chain λ=0.5" in str(title.content)
        overlay = rows()
        assert overlay["Edmund"] == ["—", "·", "+1", "·", "·"]
        assert overlay["Nell"] == ["+1", "·", "—", "·", "-1"]
        assert overlay["Greta"] == ["·", "—", "·", "-1", "+1"]
        assert "prior + pos" in notes_text(matrix)
        assert "Edmund → Greta  prior not stated" in cell_text(matrix)
        matrix.move_to("Edmund", "Nell")
        await pilot.pause()
        assert "Edmund → Nell  prior +1 positive" in cell_text(matrix)
        await pilot.press("n")
        await settle(pilot)
        assert app.sim.round == 1 and rows() == overlay  # fixed: a round changes nothing
        await pilot.press("P")
        assert not matrix.overlay and str(title.content).startswith("favorability")
        rel = app.sim.state.agents["Edmund"].relations["Nell"]
        assert rows()["Edmund"][2] == short_fav(rel.fav).strip() + STATUS_GLYPH[rel.status]


async def test_prior_overlay_without_a_prior_says_so(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("P")
        await pilot.pause()
        matrix = app.query_one(FavMatrix)
        assert "none" in str(app.query_one("#side-title", Static).content)
        cells = {c for row in row_cells(matrix).values() for c in row}
        assert cells == {"·", "—"}


# -- snapshots ------------------------------------------------------------------------------------


def snapshot_app(saves: Path, scenario: str | Path) -> SocialsimApp:
    store = SaveStore(saves)
    sim = Simulation.new(resolve_scenario(str(scenario)), seed=0, store=store, run_id="matrix-run")
    return SocialsimApp(Session(store, sim))


@pytest.mark.parametrize("agents", [5, 30])
@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_matrix_snapshot(snap_compare, tmp_path: Path, size: tuple[int, int], agents: int) -> None:
    """After two rounds, the cursor moved two cells right and four down."""
    scenario = "tavern" if agents == 5 else write_cast(tmp_path / "thirty.toml", THIRTY)
    app = snapshot_app(tmp_path / "saves", scenario)

    async def play(pilot) -> None:
        await pilot.pause()
        for _ in range(2):
            await pilot.press("n")
            await settle(pilot)
        await pilot.press(*["right"] * 2, *["down"] * 4)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=play)


async def test_a_wide_grid_makes_only_the_cells_in_view_and_marks_the_cursor() -> None:
    """A row of a large cast holds hundreds of cells: drawing it makes those in view only,
    and the cursor's cell, once scrolled to, is made and marked."""
    from rich.segment import Segment
    from textual.app import App

    from tui.widgets.grid import Grid, LazyCells

    made: list[tuple[int, int]] = []

    def row(r: int) -> LazyCells:
        def cell(k: int) -> Segment:
            made.append((r, k))
            return Segment(f" {r % 10}{k % 10}")

        return LazyCells(300, cell)

    class Wide(App[None]):
        def compose(self):
            yield Grid()

    app = Wide()
    async with app.run_test(size=(40, 10)) as pilot:
        grid = app.query_one(Grid)
        grid.set_content([], [Segment("r ")] * 5, [row(r) for r in range(5)], [3] * 300)
        await pilot.pause()
        assert made and max(k for _, k in made) < 14  # 38 columns in view: 13 cells
        grid.move_cursor(2, 250)
        await pilot.pause()
        assert (2, 250) in made and len({k for _, k in made}) < 30
        line = grid.render_line(2)
        marked = [s for s in line if s.style and s.style.underline and s.text.strip() == "20"]
        assert marked  # the cursor's cell, underlined
    cells = row(0)
    assert cells[-1] is cells[299] and list(cells[298:]) == [cells[298], cells[299]]
    with pytest.raises(IndexError):
        cells[300]
