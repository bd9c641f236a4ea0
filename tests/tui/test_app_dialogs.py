"""The dialogs follow the usual conventions: Enter submits (from any field), Space ticks a
box or opens a list, Esc cancels; choices the engine would refuse are not offered.

Pilot tests drive the real app (:func:`tui.app.build_app`); the snapshots show each dialog
alone on a bare app at 80×24, 100×30 and 160×48, so they change only with the dialog.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App
from textual.screen import Screen
from textual.widgets import DataTable, Input, Label, OptionList, Select

from engine import Archetype, Mode, SaveStore
from engine.studies.tasks.diagnosis import Evidence, Proposal
from engine.studies.tasks.episode import run_episode
from engine.studies.tasks.spec import load_task
from tui.app import SocialsimApp, build_app
from tui.screens.forms import ForceForm, InjectForm, TextForm, TickList, target_choices
from tui.screens.recast import RecastScreen
from tui.screens.runs import RunBrowser

SIZE = (100, 30)
SIZES = pytest.mark.parametrize(
    "size", [(80, 24), (100, 30), (160, 48)], ids=["80x24", "100x30", "160x48"]
)
NAMES = ["Edmund", "Nell", "Silas", "Greta", "Callum"]


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


def run_json(app: SocialsimApp) -> bytes:
    return (app.session.store.run_dir(app.sim.run_id) / "run.json").read_bytes()


def folders(saves: Path) -> set[str]:
    return {p.name for p in saves.iterdir() if not p.name.startswith(".")}


def error_text(screen: Screen) -> str:
    return str(screen.query_one(".error", Label).content)


def offered(select: Select) -> list[str]:
    """The entries a drop-down list offers, read from its open menu."""
    menu = select.query_one(OptionList)
    return [str(menu.get_option_at_index(k).prompt) for k in range(menu.option_count)]


async def type_text(pilot, text: str) -> None:
    await pilot.press(*("space" if c == " " else c for c in text))


# -- inject ---------------------------------------------------------------------------------


async def test_enter_in_the_tick_list_submits_the_inject_dialog(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        form = app.screen
        assert isinstance(form, InjectForm)
        await type_text(pilot, "Storm")
        # past the valence, the implicated and the touched to who sees it: tick 1st and 3rd
        await pilot.press("tab", "tab", "tab", "tab", "space", "down", "down", "space")
        assert isinstance(app.focused, TickList)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, InjectForm)
        (event,) = app.sim.pending.events
        assert event.text == "Storm" and event.private_to == ["Edmund", "Silas"]
        assert SaveStore(saves).read_meta(app.sim.run_id).pending.events == [event]


async def test_space_ticks_and_unticks_a_recipient(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        ticks = app.screen.query_one("#private", TickList)
        ticks.focus()
        await pilot.press("space")
        assert ticks.selected == ["Edmund"]
        await pilot.press("space")
        assert ticks.selected == []
        app.screen.query_one("#text", Input).value = "The lights go out"
        await pilot.press("enter")
        await pilot.pause()
        (event,) = app.sim.pending.events
        assert event.private_to is None  # nobody ticked: everyone sees it


async def test_tick_boxes_differ_by_glyph_without_colour(
    saves: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        assert app.no_color
        await pilot.press("e")
        ticks = app.screen.query_one(TickList)
        ticks.select("Nell")
        await pilot.pause()
        lines = [ticks.render_line(y).text for y in range(len(NAMES))]
        assert lines[0].startswith("[ ] Edmund")
        assert lines[1].startswith("[x] Nell")
        assert all(line.startswith("[ ] ") for k, line in enumerate(lines) if k != 1)


# -- Esc cancels ----------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "form"), [("e", InjectForm), ("f", ForceForm), ("b", TextForm)])
async def test_escape_cancels_without_a_trace(saves: Path, key: str, form: type) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        before, runs = run_json(app), folders(saves)
        await pilot.press(key)
        assert isinstance(app.screen, form)
        await type_text(pilot, "1")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, form)
        assert app.sim.pending.events == [] and app.sim.pending.forced == []
        assert run_json(app) == before and folders(saves) == runs


# -- force ----------------------------------------------------------------------------------


def test_target_choices_are_only_the_valid_ones() -> None:
    values = [v for _, v in target_choices(NAMES, "Nell", Mode.PRIVATE)]
    assert values == ["Edmund", "Silas", "Greta", "Callum"]
    values = [v for _, v in target_choices(NAMES, "Nell", Mode.PUBLIC)]
    assert values == ["all", "Edmund", "Silas", "Greta", "Callum"]


async def test_force_offers_no_invalid_private_target(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        form = app.screen
        assert isinstance(form, ForceForm)
        agent = form.query_one("#agent", Select)
        mode, target = form.query_one("#mode", Select), form.query_one("#target", Select)
        assert app.focused is agent and agent.value == "Edmund"
        # Public: everyone or another agent, never the agent itself.
        target.focus()
        await pilot.press("space")
        assert offered(target) == ["everyone (all)", "Nell", "Silas", "Greta", "Callum"]
        await pilot.press("escape")  # closes the menu, not the dialog
        assert app.screen is form and target.value == "all"
        # Private, chosen with the keys: neither everyone nor Edmund is offered.
        mode.focus()
        await pilot.press("space", "down", "enter")
        await pilot.pause()
        assert mode.value == "private" and app.screen is form
        assert target.value == "Nell"  # "all" is no longer a choice
        target.focus()
        await pilot.press("space")
        assert offered(target) == ["Nell", "Silas", "Greta", "Callum"]
        await pilot.press("down", "enter")  # from Nell to Silas
        await pilot.pause()
        assert target.value == "Silas"
        # Another agent: the list follows and keeps the target while it is allowed.
        agent.value = "Greta"
        await pilot.pause()
        target.focus()
        await pilot.press("space")
        assert offered(target) == ["Edmund", "Nell", "Silas", "Callum"]
        await pilot.press("escape")
        assert target.value == "Silas"
        agent.value = "Silas"
        await pilot.pause()
        assert target.value == "Edmund"  # Silas cannot address himself


async def test_force_silence_has_no_target(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        form = app.screen
        form.query_one("#mode", Select).value = "silent"
        await pilot.pause()
        assert form.query_one("#target", Select).disabled
        form.query_one("#mode", Select).value = "public"
        await pilot.pause()
        assert not form.query_one("#target", Select).disabled


async def test_enter_on_a_list_submits_the_force_dialog(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        form = app.screen
        await pilot.press("enter")  # on the agent list, nothing said yet: an inline error
        await pilot.pause()
        assert app.screen is form and "needs an utterance" in error_text(form)
        form.query_one("#utterance", Input).value = "Let us sell."
        form.query_one("#target", Select).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, ForceForm)
        (forced,) = app.sim.pending.forced
        assert (forced.agent, forced.target, forced.utterance) == ("Edmund", "all", "Let us sell.")


# -- branch ---------------------------------------------------------------------------------


async def test_the_branch_round_is_typed_not_erased(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(3):
            await pilot.press("n")
            await app.workers.wait_for_complete()
        await pilot.pause()
        parent = app.sim.run_id
        await pilot.press("b")
        field = app.screen.query_one("#value", Input)
        assert field.value == "" and field.placeholder == "3 (Enter keeps it)"
        await type_text(pilot, "1")
        assert field.value == "1"
        await pilot.press("enter")
        await pilot.pause()
        assert app.sim.run_id != parent
        assert app.sim.meta.parent is not None and app.sim.meta.parent.round == 1


async def test_the_browser_branch_round_starts_empty(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(2):
            await pilot.press("n")
            await app.workers.wait_for_complete()
        await pilot.press("o")
        await pilot.pause()
        await app.workers.wait_for_complete()  # the runs are listed on a worker thread
        await pilot.pause()
        browser = app.screen
        assert isinstance(browser, RunBrowser)
        browser.query_one(DataTable).move_cursor(row=list(browser.rows).index(app.sim.run_id))
        await pilot.press("b")
        await pilot.pause()
        field = app.screen.query_one("#value", Input)
        assert field.value == "" and field.placeholder == "2 (Enter keeps it)"
        await pilot.press("enter")  # the default: the run's last round
        await pilot.pause()
        assert app.screen is browser
        (child,) = folders(saves) - {app.sim.run_id}
        assert SaveStore(saves).read_meta(child).parent.round == 2


# -- recast ---------------------------------------------------------------------------------


async def test_recast_opens_on_the_first_proposal(saves: Path) -> None:
    task = load_task("student-council")
    sim, _ = await run_episode(task, task.casting.hetero, seed=2, store=SaveStore(saves))
    app = build_app(sim.run_id, saves=saves)
    async with app.run_test(size=(120, 50)) as pilot:
        await pilot.press("c")
        await app.workers.wait_for_complete()  # the diagnosis is read off the UI thread
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RecastScreen)
        first = screen.proposals[0].agent
        table = screen.query_one(DataTable)
        assert app.focused is table and table.cursor_row == 0
        assert screen.query_one("#choice", Select).value == screen.choices[first]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RecastScreen)


# -- snapshots ------------------------------------------------------------------------------


class Host(App[None]):
    """A bare app showing one dialog."""

    def __init__(self, dialog: Screen) -> None:
        super().__init__()
        self.dialog = dialog

    def on_mount(self) -> None:
        self.push_screen(self.dialog)


def never(*_: object) -> str | None:
    return "not applied in a snapshot"


def proposals() -> list[Proposal]:
    """A fixed diagnosis of four agents (two kept, two recast)."""
    facts = Evidence(
        turns=2,
        rounds=4,
        emotion_start=0.5,
        emotion_end=0.41,
        emotion_low=0.38,
        registered=1.3,
        attacks=0,
        opposed_by=1,
        outgoing_fav=0.05,
        incoming_fav=-0.02,
        incoming_change=-0.04,
    )
    return [
        Proposal(
            agent="Avery",
            current=Archetype.RESERVED,
            archetype=Archetype.ANALYTICAL,
            rationale="Held three facts nobody heard; an analytical voice would table them.",
            evidence=facts,
        ),
        Proposal(agent="Blake", current=Archetype.DOMINANT, rationale="Led well.", evidence=facts),
        Proposal(
            agent="Casey",
            current=Archetype.ANALYTICAL,
            archetype=Archetype.BALANCED,
            rationale="Argued every point; a balanced voice would settle sooner.",
            evidence=facts,
        ),
        Proposal(
            agent="Drew", current=Archetype.AGREEABLE, rationale="Kept peace.", evidence=facts
        ),
    ]


@SIZES
def test_inject_dialog_snapshot(snap_compare, size: tuple[int, int]) -> None:
    async def fill(pilot) -> None:
        await type_text(pilot, "The cellar floods")
        await pilot.press("tab", "tab", "tab", "down", "space")  # Nell is touched

    assert snap_compare(Host(InjectForm(NAMES, never)), terminal_size=size, run_before=fill)


@SIZES
def test_force_dialog_snapshot(snap_compare, size: tuple[int, int]) -> None:
    async def fill(pilot) -> None:
        form = pilot.app.screen
        form.query_one("#agent", Select).value = "Greta"
        form.query_one("#mode", Select).value = "private"
        await pilot.pause()
        form.query_one("#utterance", Input).value = "I will sign if you do"
        await pilot.pause()

    assert snap_compare(Host(ForceForm(NAMES, never)), terminal_size=size, run_before=fill)


@SIZES
def test_branch_dialog_snapshot(snap_compare, size: tuple[int, int]) -> None:
    form = TextForm(
        "Branch the run",
        never,
        default="4",
        hint="Fork after which round? (0..4) Optionally add an intervention: curfew.",
    )
    assert snap_compare(Host(form), terminal_size=size)


@SIZES
def test_recast_dialog_snapshot(snap_compare, size: tuple[int, int]) -> None:
    screen = RecastScreen(proposals(), "student-council run: utility 0 (missed)", never)
    assert snap_compare(Host(screen), terminal_size=size)
