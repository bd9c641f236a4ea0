"""SVG snapshots of the main screen (pytest-textual-snapshot).

The run id is fixed and the saves path never appears on the main screen, so the
screenshots are stable. Update them with ``pytest tests/tui/test_app_snapshots.py
--snapshot-update`` after an intended change to the layout, and review the SVGs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import SaveStore, Simulation, resolve_scenario
from tui.app import SocialsimApp
from tui.session import Session


def make_app(saves: Path) -> SocialsimApp:
    """A new tavern run with a fixed id and seed, offline mind."""
    store = SaveStore(saves)
    sim = Simulation.new(resolve_scenario("tavern"), seed=0, store=store, run_id="snapshot-run")
    return SocialsimApp(Session(store, sim))


async def step_once(pilot) -> None:
    # Let the deck settle on its page size first: a RichLog wraps lines at the width it
    # has when they are written and never re-wraps them.
    await pilot.pause()
    await pilot.pause()
    await pilot.press("n")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    assert pilot.app.sim.round == 1


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_main_screen_after_one_step(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:
    app = make_app(tmp_path / "saves")
    assert snap_compare(app, terminal_size=size, run_before=step_once)
    assert app.sim.round == 1
    assert (tmp_path / "saves" / "snapshot-run" / "rounds" / "000001.json.gz").is_file()
