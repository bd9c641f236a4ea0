"""The main screen at the sizes a researcher works at (80×24 over SSH, 100×30, 160×48) with
5 and 30 agents: re-wrapping transcripts, room for them, scrollback, focus mode, finding an
agent, the strip, the header and footer at 80 columns, the event strip, tasks by id, and
what must not happen (stale toasts, keys under the size notice, ``-0.00``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from cast import THIRTY, record_layouts, screen_text
from rich.text import Text
from textual.widgets._footer import FooterKey

from engine import ForcedAction, Metrics, Mode, OfflineMind, SaveStore, Simulation, resolve_scenario
from engine.core.needs import NEEDS
from engine.core.scenario import ScenarioError
from engine.core.state import AgentState, NeedState
from engine.studies.tasks.spec import AGENTS
from tui import cli, messages
from tui.app import SocialsimApp, build_app
from tui.report import metrics_block
from tui.screens.jump import JumpScreen, rank
from tui.session import Session
from tui.widgets.agent_pane import AgentPane, emotion_line, needs_detail
from tui.widgets.deck import AgentDeck, AgentStrip
from tui.widgets.feed import RoundFeed as EventBar
from tui.widgets.header import RunHeader, short_id
from tui.widgets.needs import HEIGHT, NeedBars
from tui.widgets.run_view import LIVE_AFTER
from tui.widgets.style import mood_glyph, signed


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def step(pilot, rounds: int = 1) -> None:
    for _ in range(rounds):
        await pilot.press("n")
        await settle(pilot)


def pane(app: SocialsimApp, name: str) -> AgentPane:
    return app.query_one(f"#pane-{app.sim.scenario.names.index(name)}", AgentPane)


def words(text: str) -> str:
    return " ".join(text.split())


def last_utterance(app: SocialsimApp, name: str) -> str:
    """What ``name`` said last (public or private), from the saved rounds."""
    said = [
        a.utterance
        for r in app.sim.records[1:]
        for a in r.actions
        if a.speaker == name and a.mode is not Mode.SILENT
    ]
    assert said, f"{name} never spoke"
    return said[-1]


def footer_keys(app: SocialsimApp) -> list[tuple[str, str]]:
    """(key shown, description) of the footer's keys, left to right."""
    keys = app.screen.query(FooterKey)
    return [(k.key_display, k.description) for k in sorted(keys, key=lambda k: k.region.x)]


# -- transcripts: re-wrapped on every resize, room at 80×24, scrollback ------------------------


async def test_transcripts_rewrap_on_every_resize(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await step(pilot, 2)
        said = words(last_utterance(app, "Edmund"))
        transcript = pane(app, "Edmund").transcript
        for size in [(100, 30), (80, 24), (160, 48), (100, 30)]:
            await pilot.resize_terminal(*size)
            await pilot.pause()
            width = transcript.scrollable_content_region.width
            shown = transcript.visible_lines()
            assert said in words(" ".join(shown)), size  # the whole latest utterance
            assert max(len(line) for line in shown) <= width
            # Wrapped at this width, not at an earlier one: some line uses most of it.
            assert max(len(line) for line in shown) > width - 16, size


async def test_a_reader_scrolled_back_stays_on_the_same_turn_across_a_resize(saves: Path):
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await step(pilot, 4)
        transcript = pane(app, "Edmund").transcript
        await pilot.press("pageup", "pageup", "pageup")
        await pilot.pause()
        assert transcript.scroll_y < transcript.max_scroll_y
        top = transcript.visible_lines()[0]
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        first = transcript.visible_lines()[0]
        entry = next(e.plain for e in transcript.entries if words(first) in words(e.plain))
        assert words(top)[:20] in words(entry) or words(entry)[:20] in words(top)


async def test_80x24_gives_the_transcript_the_room(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        edmund = pane(app, "Edmund")
        for _ in range(4):  # the turn that first overflows the pane is shown too
            await step(pilot)
            said = words(last_utterance(app, "Edmund"))
            assert said in words(" ".join(edmund.transcript.visible_lines()))
        assert edmund.query_one(NeedBars).detail == "summary"
        assert edmund.query_one(NeedBars).region.height == 5  # one line per category
        assert edmund.transcript.region.height >= 9
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert edmund.query_one(NeedBars).detail == "full"
        assert edmund.transcript.region.height >= 18  # two lines under the gauge: the ties


def test_needs_detail_leaves_the_transcript_its_room() -> None:
    assert needs_detail(15) == "summary"
    assert needs_detail(HEIGHT["compact"] + 16) == "compact"
    assert needs_detail(HEIGHT["full"] + 20) == "full"
    assert needs_detail(HEIGHT["full"] + 19) == "compact"


async def test_pageup_scrolls_the_transcripts_back_and_pagedown_follows_again(saves: Path):
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await step(pilot, 4)
        edmund = pane(app, "Edmund")
        transcript = edmund.transcript
        assert transcript.scroll_y == transcript.max_scroll_y > 0
        assert str(edmund.border_subtitle) == "PgUp ↑ older  dominant"  # says how to go back
        await pilot.press("pageup")
        await pilot.pause()
        assert transcript.scroll_y < transcript.max_scroll_y
        assert str(edmund.border_subtitle) == "PgDn ↓ newer  dominant"
        back = transcript.scroll_y
        await step(pilot)  # new turns do not pull a reader away from what they read
        assert transcript.scroll_y == back
        for _ in range(20):
            await pilot.press("pagedown")
        await pilot.pause()
        assert transcript.scroll_y == transcript.max_scroll_y
        assert str(edmund.border_subtitle) == "PgUp ↑ older  dominant"
        await step(pilot)  # at the bottom again: it follows
        assert transcript.scroll_y == transcript.max_scroll_y
        said = words(last_utterance(app, "Edmund"))
        assert said in words(" ".join(transcript.visible_lines()))
        # Discoverable: help names the keys and what they do.
        await pilot.press("question_mark")
        rows = dict((label, keys) for keys, label in app.screen.rows)
        assert rows["Scroll: scroll the transcripts back"] == "PgUp"


async def test_streamed_tokens_wrap_and_clear_when_the_turn_ends(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        edmund = pane(app, "Edmund")
        edmund.stream("a long streamed sentence that needs " * 3)
        await pilot.pause()
        shown = edmund.transcript.visible_lines()
        assert shown[0].startswith("… a long streamed") and len(shown) > 2 and shown[2]
        await step(pilot)
        assert edmund.transcript.live is None
        assert "streamed" not in " ".join(edmund.transcript.visible_lines())


# -- focus mode, finding an agent, the strip ---------------------------------------------------


async def test_z_shows_one_agent_full_size_and_back(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await step(pilot)
        deck = app.query_one(AgentDeck)
        await pilot.press("right_square_bracket")  # the page of Nell
        await pilot.pause()
        assert deck.shown_agents() == ["Nell"]
        await pilot.press("z")
        await pilot.pause()
        assert deck.shown_agents() == ["Nell"]
        assert not app.query_one("#side").display
        nell = pane(app, "Nell")
        assert nell.region.width >= 98 and nell.region.height >= 20
        await pilot.press("right_square_bracket")  # steps one agent
        await pilot.pause()
        assert deck.shown_agents() == ["Silas"]
        await pilot.press("z")
        await pilot.pause()
        assert app.query_one("#side").display
        assert "Silas" in deck.shown_agents()


async def test_focus_at_160_columns_puts_the_needs_beside_the_transcript(
    saves: Path, thirty: Path
) -> None:
    app = build_app(str(thirty), saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await step(pilot)
        await pilot.press("z")
        await pilot.pause()
        (name,) = app.query_one(AgentDeck).shown_agents()
        shown = pane(app, name)
        bars, transcript = shown.query_one(NeedBars), shown.transcript
        assert shown.region.width >= 158 and shown.has_class("-wide")
        assert bars.detail == "full"  # every need with its numbers, beside the transcript
        assert bars.region.right <= transcript.region.x
        # The pane's lines above it: role, gauge and the two lines of ties.
        assert transcript.region.width >= 100 and transcript.region.height >= 36
        await pilot.press("z")  # back to the pages: stacked again
        await pilot.pause()
        assert not shown.has_class("-wide")
        assert transcript.region.y >= bars.region.bottom


async def test_a_page_key_right_after_z_pages_by_the_width_pages_have(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await step(pilot)
        deck = app.query_one(AgentDeck)
        assert deck.per_page == 1
        await pilot.press("z")
        await pilot.pause()
        main = app.main
        main.action_focus_agent()  # z and ] before the layout (keys typed fast, over SSH)
        main.action_page(1)
        await pilot.pause()
        assert deck.shown_agents() == ["Nell"]  # the next page, not the one after


async def test_focus_at_80_columns_keeps_the_needs_above(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await step(pilot)
        await pilot.press("z")
        await pilot.pause()
        edmund = pane(app, "Edmund")
        assert not edmund.has_class("-wide")
        assert edmund.transcript.region.y >= edmund.query_one(NeedBars).region.bottom


async def test_the_strip_says_each_mood_without_colour(
    saves: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await step(pilot, 2)
        assert app.no_color
        strip = app.query_one(AgentStrip).render().plain
        for name, agent in app.sim.state.agents.items():
            assert f"{name}{mood_glyph(agent.emotion)}" in strip
    assert {mood_glyph(v) for v in (0.1, 0.35, 0.5, 0.8)} == {"▼", "▽", "■", "▲"}


async def test_the_strip_in_colour_has_no_mood_glyphs(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await step(pilot)
        assert not app.no_color
        strip = app.query_one(AgentStrip).render().plain
        assert not set(strip) & {"▼", "▽", "■", "▲"}


async def test_slash_finds_an_agent_by_fuzzy_name(saves: Path, thirty: Path) -> None:
    app = build_app(str(thirty), saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("slash")
        assert isinstance(app.screen, JumpScreen)
        await pilot.press(*"mxln")
        await pilot.press("enter")
        await pilot.pause()
        deck = app.query_one(AgentDeck)
        assert deck.shown_agents() == ["Maximilian"]
        assert "[Maximilian]" in app.query_one(AgentStrip).render().plain
        await pilot.press("slash")
        await pilot.press("escape")
        await pilot.pause()
        assert deck.shown_agents() == ["Maximilian"]


def test_rank_puts_the_best_match_first() -> None:
    assert rank("maxi", list(THIRTY))[:2] == ["Maximilian", "Maxine"]
    assert rank("chna", list(THIRTY))[0] == "Christina"
    assert rank("", ["B", "A"]) == ["B", "A"]
    assert rank("zzz", ["Ann"]) == []


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 48)], ids=["80", "100", "160"])
async def test_the_strip_follows_the_page(saves: Path, thirty: Path, size) -> None:
    app = build_app(str(thirty), saves=saves)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        deck, strip = app.query_one(AgentDeck), app.query_one(AgentStrip)
        for _ in range(6):
            await pilot.press("right_square_bracket")
        await pilot.pause()
        shown = deck.shown_agents()
        assert shown[0] == THIRTY[6 * deck.per_page]
        line = strip.render().plain
        assert line.startswith(f"{deck.page_number + 1}/{deck.pages} ")
        for name in shown:
            assert f"[{name}]" in line
        assert len(line) <= strip.size.width
        # Out-of-sight agents are counted on both sides: none is silently missing.
        before, after = re.search(r"‹(\d+)", line), re.search(r"(\d+)›", line)
        named = [n for n in THIRTY if re.search(rf"\b{n}\b", line)]
        hidden = int(before[1]) if before else 0
        assert hidden + len(named) + (int(after[1]) if after else 0) == 30


async def test_only_the_pages_shown_are_mounted(saves: Path, thirty: Path) -> None:
    """A cast of hundreds opens fast: the first screen mounts the first page's panes; a
    page turned to is mounted then, with what its agents said meanwhile."""
    app = build_app(str(thirty), saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await step(pilot)
        deck = app.query_one(AgentDeck)
        mounted = lambda: [p.spec.name for p in app.query(AgentPane)]  # noqa: E731
        assert mounted() == deck.shown_agents() == list(THIRTY[: deck.per_page])
        later = deck.panes[deck.per_page]
        assert later.parent is None and later.transcript.entries  # kept while not mounted
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert mounted() == list(THIRTY[: 2 * deck.per_page])
        assert later.display and later.transcript.visible_lines()[0].startswith("R1 ")


async def test_a_click_on_a_name_in_the_strip_shows_that_agent(saves: Path, thirty: Path):
    app = build_app(str(thirty), saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        strip = app.query_one(AgentStrip)
        line = strip.render().plain
        name = next(n for n in THIRTY[1:] if re.search(rf"(?<!\[)\b{n}\b", line))
        await pilot.click(AgentStrip, offset=(1 + line.index(name) + 1, 0))
        await pilot.pause()
        assert app.query_one(AgentDeck).shown_agents() == [name]
        line = strip.render().plain
        await pilot.click(AgentStrip, offset=(1 + line.index("›") - 1, 0))  # the "n›" marker
        await pilot.pause()
        assert app.query_one(AgentDeck).shown_agents() != [name]


# -- header and footer at 80 columns -----------------------------------------------------------


async def test_the_header_keeps_parent_at_round_at_80_columns(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await step(pilot, 2)
        parent = app.sim.run_id
        child = app.sim.branch(1)
        app.main.open_run(child)
        await pilot.pause()
        await pilot.pause()
        header = app.query_one(RunHeader)
        top, bottom = header.render().plain.splitlines()
        assert len(bottom) <= header.size.width
        assert f"{short_id(parent)}@1" in bottom and short_id(child.run_id) in bottom
        assert "round 1/9" in top
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        bottom = app.query_one(RunHeader).render().plain.splitlines()[1]
        assert f"⑂ from {parent}@1" in bottom and app.sim.mind.label in bottom


def test_short_id_keeps_scenario_and_suffix() -> None:
    assert short_id("tavern-20261130-091456-eddd") == "tavern…eddd"
    assert short_id("arm-b") == "arm-b"
    assert short_id("a-very-long-custom-run-name") == "a-very-…run-name"


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 48)], ids=["80", "100", "160"])
async def test_the_footer_fits_and_always_shows_help_and_quit(saves: Path, size) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.pause()
        keys = footer_keys(app)
        assert ("?", "Help") in keys and ("q", "Quit") in keys
        assert [k for k, _ in keys[:4]] == ["n", "r", "f", "e"]
        assert all(k.region.right <= size[0] for k in app.screen.query(FooterKey))


async def test_the_footer_shows_a_remapped_key(saves: Path, tmp_path: Path) -> None:
    keymap = tmp_path / "keys.toml"
    keymap.write_text('[keys]\nstep = "j"\nhelp = "h"\n', encoding="utf-8")
    app = build_app("tavern", saves=saves, keymap_file=keymap)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        keys = footer_keys(app)
        assert keys[0] == ("j", "Step") and ("h", "Help") in keys
        assert ("n", "Step") not in keys


async def test_the_palette_names_keys_as_typed(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        commands = {c.title.split(":")[0]: c.help for c in app.get_system_commands(app.screen)}
        assert commands["Help"].endswith("(key: ?)")
        assert commands["Find"].endswith("(key: /)")
        assert commands["Prev agents"].endswith("(key: [)")
        assert not any("question_mark" in h or "slash" in h for h in commands.values())


@pytest.mark.parametrize(
    ("typed", "action"),
    [
        ("persona", "recast"),
        ("recast", "recast"),
        ("inject", "inject"),
        ("event", "inject"),
        ("force", "force"),
        ("branch", "branch"),
        ("fork", "branch"),
        ("export", "export"),
        ("csv", "export"),
    ],
)
async def test_the_palette_finds_every_mission_action_by_a_users_words(saves, typed, action):
    """Issue 41: the palette's best match for the word a user types is the action."""
    from textual.fuzzy import Matcher

    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        by_title = {c.title: c for c in app.get_system_commands(app.screen)}
        matcher = Matcher(typed)
        best = max(by_title, key=matcher.match)
        assert matcher.match(best) > 0
        called: list[str] = []
        app.screen.run_action = lambda name: called.append(name)  # type: ignore[method-assign]
        by_title[best].callback()
        assert called == [action], best


# -- the event strip ---------------------------------------------------------------------------


def test_the_folded_strip_counts_events_not_lines():
    """Issue 41: "+2" counted the lines the strip hid; it counts the events not shown whole
    and, apart, the round's logged entries."""
    from rich.text import Text

    from tui.widgets.feed import hidden_text

    one, three = [Text("a")], [Text("b"), Text("c"), Text("d")]
    assert hidden_text([one, three, one], 1, 0) == "+2 events"  # 4 lines hidden, 2 events
    assert hidden_text([one, three], 4, 5) == "5 from the round"
    assert hidden_text([three], 1, 1) == "+1 event, 1 from the round"


async def test_the_event_strip_expands_to_every_line(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(80, 24)) as pilot:
        await step(pilot)
        long = "The brewery's solicitor sends a letter " * 4
        app.sim.inject(long.strip(), None)
        app.sim.inject("Nell finds the deeds.", ["Nell"])
        app.main.query_one("#main").refresh_view()
        await pilot.pause()
        bar = app.query_one(EventBar)
        assert bar.region.height == 1
        assert "(i: all)" in bar.render().plain
        await pilot.press("i")
        await pilot.pause()
        text = bar.render().plain
        # every line: the events, the queued, the round's log; half the screen, scrolled
        frame = app.query_one("#feed")
        assert frame.region.height == 24 // 2 < bar.region.height == len(text.splitlines())
        assert frame.max_scroll_y > 0 and "R1 judged" in text
        assert words(long) in words(text)
        assert "next R2 event (private to Nell): Nell finds the deeds." in words(text)
        await pilot.press("i")
        await pilot.pause()
        assert bar.region.height == 1


async def test_the_live_strip_opens_only_once_a_round_has_lasted(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        bar = app.query_one(EventBar)
        rest = bar.region.height
        app.main.running = True  # as while a round is in flight
        await pilot.pause(LIVE_AFTER / 2)
        assert not bar.live and bar.region.height == rest
        await pilot.pause(LIVE_AFTER)
        assert bar.live
        app.main.running = False
        await pilot.pause()
        assert not bar.live and bar.region.height == rest
        app.main.running = True  # a quick round: over before the strip would open
        await pilot.pause()
        app.main.running = False
        await pilot.pause(LIVE_AFTER + 0.2)
        assert not bar.live


async def test_a_full_live_strip_takes_lines_without_laying_the_screen_out(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        bar = app.query_one(EventBar)
        bar.live = True
        bar.start(1, [])
        layouts = record_layouts(bar)
        cap, laid_out = bar.folded_lines(), []
        for k in range(3 * cap):
            before = len(layouts)
            bar.note(Text(f"R1 line {k}"))
            laid_out.append(any(layouts[before:]))  # what the line itself asked for
            await pilot.pause()
            assert bar.region.height == min(k + 1, cap)
        assert all(laid_out[:cap]) and not any(laid_out[cap + 1 :])
        assert f"R1 line {3 * cap - 1}" in bar.render().plain


async def test_a_pending_forced_action_is_spelled_out(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.sim.force(
            ForcedAction(agent="Edmund", mode=Mode.PRIVATE, target="Nell", utterance="Sell.")
        )
        app.main.query_one("#main").refresh_view()
        await pilot.press("i")
        assert (
            'next R1 forced Edmund: private to Nell "Sell."'
            in app.query_one(EventBar).render().plain
        )


# -- tasks by id -------------------------------------------------------------------------------


async def test_a_task_id_opens_an_episode_of_the_task(saves: Path) -> None:
    app = build_app("student-council", saves=saves)
    assert app.sim.meta.scenario_ref == "task:student-council"
    assert app.sim.scenario.names == list(AGENTS)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert "Student" in app.query_one(RunHeader).render().plain
        await step(pilot)
        assert app.sim.round == 1


@pytest.mark.parametrize(
    "options", [[], ["--model", "openai/stub", "--api-base", "http://127.0.0.1:9/v1"]]
)
def test_socialsim_tui_accepts_a_task_id(
    monkeypatch: pytest.MonkeyPatch, saves: Path, options: list[str]
) -> None:
    captured: list[SocialsimApp] = []
    monkeypatch.setattr(SocialsimApp, "run", lambda self, *a, **k: captured.append(self))
    argv = ["socialsim", "tui", "task:nasa-moon", "--saves", str(saves), *options]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code in (0, None)
    (app,) = captured
    app.sim.close()
    assert app.sim.meta.scenario_ref == "task:nasa-moon"
    assert SaveStore(saves).read_meta(app.sim.run_id).scenario_ref == "task:nasa-moon"
    assert app.sim.meta.model == (options[1] if options else "offline")


def test_an_unknown_id_names_the_tasks_too(saves: Path) -> None:
    with pytest.raises(ScenarioError, match=r"tasks: .*student-council"):
        build_app("student-counsel", saves=saves)
    assert not saves.exists() or not any(saves.iterdir())


# -- what must not happen ----------------------------------------------------------------------


async def test_a_stale_pause_toast_goes_when_the_run_goes_on(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.main.post_message(messages.RunPaused(1, ""))
        await pilot.pause()
        assert any("Paused after round 1" in n.message for n in app._notifications)
        await step(pilot)
        assert not any("Paused" in n.message for n in app._notifications)


async def test_keys_do_nothing_under_the_size_notice(saves: Path) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        await pilot.press("n", "z", "slash", "question_mark", "o")
        await settle(pilot)
        assert app.sim.round == 0 and app.screen is app.main
        assert [d for _, d in footer_keys(app)] == ["Quit"]
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await step(pilot)
        assert app.sim.round == 1


def test_no_negative_zero() -> None:
    assert signed(-0.001) == "0.00" and signed(-0.005) == "-0.01" and signed(0.2) == "+0.20"
    state = AgentState(emotion=0.5, needs={}, relations={})
    assert "0.00" not in emotion_line(state, -0.001).plain
    assert "-0.04" in emotion_line(state, -0.04).plain
    block = metrics_block(
        Metrics(
            round=1,
            mean_fav=-0.0004,
            mean_emotion=0.5,
            reciprocity=None,
            ei_index=-0.001,
            balance=-0.0,
            repair=None,
        )
    ).plain
    assert "-0.00" not in block and "-0%" not in block and block.count("0.00") == 2


async def test_no_negative_zero_on_screen_over_a_whole_run(saves: Path) -> None:
    app = build_app("demolition", saves=saves)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        while not app.sim.finished:
            await step(pilot)
            text = "\n".join(screen_text(app))
            assert "-0.00" not in text and "-.00" not in text


def test_needs_read_without_colour() -> None:
    needs = {n: NeedState(current=7.9, expected=8.0) for n in NEEDS}
    needs["self_worth"] = NeedState(current=3.0, expected=8.0)  # a large gap
    needs["sense_of_control"] = NeedState(current=6.5, expected=8.0)  # a small one
    bars = NeedBars(needs)
    for detail, met in (("compact", 11), ("full", 11)):
        bars.detail = detail
        plain = bars.render().plain
        assert (plain.count("✓"), plain.count("!"), plain.count("✗")) == (met, 1, 1)
    bars.detail = "summary"
    lines = bars.render().plain.splitlines()
    assert lines[0].startswith("SAF") and lines[0].endswith("✓")
    assert lines[2].startswith("EST") and lines[2].endswith("✗ self-worth")
    assert lines[3].endswith("! control")


# -- snapshots (the plain main screen at these sizes: tests/tui/test_app_matrix.py) ---------------


def snapshot_app(saves: Path, scenario: str | Path) -> SocialsimApp:
    store = SaveStore(saves)
    spec = resolve_scenario(str(scenario))
    sim = Simulation.new(spec, seed=0, store=store, run_id="snapshot-run")
    assert isinstance(sim.mind, OfflineMind)
    return SocialsimApp(Session(store, sim))


async def _events_open(pilot) -> None:
    """Tavern after three rounds, a private event queued, the event strip expanded."""
    await pilot.pause()
    await step(pilot, 3)
    pilot.app.sim.inject("Nell finds the deeds in the cellar.", ["Nell"])
    pilot.app.main.query_one("#main").refresh_view()
    await pilot.press("i")
    await pilot.pause()


async def _focused(pilot) -> None:
    """Thirty agents after a round, Maximilian found with / and shown full-size."""
    await pilot.pause()
    await step(pilot)
    await pilot.press("slash", *"maxim", "enter", "z")
    await pilot.pause()


async def _feed_live(pilot) -> None:
    """Tavern's round 2 as the feed shows it while a round is played (folded: its latest
    lines, whatever panes fit): its decisions and words, a private one marked."""
    await pilot.pause()
    await step(pilot, 2)
    pilot.app.main.running = True  # as while the round is in flight, for a while
    await pilot.pause(LIVE_AFTER + 0.2)


SIZES = [(80, 24), (100, 30), (160, 48)]
CASES = {"events-open": ("tavern", _events_open), "feed-live": ("tavern", _feed_live)}


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "100x30", "160x48"])
@pytest.mark.parametrize("case", ["events-open", "feed-live", "thirty-focused"])
def test_main_screen_snapshot(snap_compare, saves: Path, thirty: Path, case: str, size) -> None:
    if case in CASES:
        scenario, before = CASES[case]
        app = snapshot_app(saves, scenario)
    else:
        app, before = snapshot_app(saves, thirty), _focused
    assert snap_compare(app, terminal_size=size, run_before=before)
