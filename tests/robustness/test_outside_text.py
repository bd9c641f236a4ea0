"""Text from outside (model replies, error messages quoting them, file names) never reaches
a terminal raw: exports escape control characters in every text cell (``llm_calls.csv``'s
``error`` among them), the app's warning strip, stop line, notifications and dialogs show
it escaped and never as markup. A list cell (``private_to``) quotes a name holding the
``;`` separator, so ``["A;B"]`` and ``["A", "B"]`` export differently."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path

import pytest
from textual.widgets import Label, Static

from engine import Mode, Simulation
from engine.core.exchanges import LLMCall, RoundUsage
from engine.core.textsafe import list_cell, unsafe_char
from engine.reports.export import export_run
from robustness.scenario_mutations import to_toml
from tui.app import build_app
from tui.screens.forms import Form, TextForm
from tui.widgets.agent_pane import event_line, turn_line
from tui.widgets.header import fallback_text, stopped_text

HOSTILE = "\x1b]0;PWNED\x07\x1b[31mred\x9b31m\u202egnp [bold]x[/]"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def _hostile_round(mini) -> tuple[Simulation, list]:
    """A one-round offline run whose round carries failed LLM calls quoting ``HOSTILE``."""
    sim = Simulation.new(mini, seed=1)
    asyncio.run(sim.step())
    calls = [
        LLMCall(
            key=f"r0001:decide:{name}",
            purpose="decide",
            agent=name,
            model="openai/stub",
            messages=[],
            error=f"openai/stub: intent: Input should be {HOSTILE}",
            structured="json_schema",
            outcome="fallback",
        )
        for name in sim.scenario.names
    ]
    last = sim.records[-1].model_copy(
        update={"llm_calls": calls, "usage": RoundUsage.of(calls, "batched")}
    )
    return sim, [*sim.records[:-1], last]


def test_the_error_column_of_llm_calls_is_escaped(mini, tmp_path: Path):
    sim, records = _hostile_round(mini)
    export_run(sim.meta, records, tmp_path / "csv")
    for table in (tmp_path / "csv").glob("*.csv"):
        text = table.read_text(encoding="utf-8")
        assert not any(c in text for c in RAW), table.name
    with (tmp_path / "csv" / "llm_calls.csv").open(newline="") as handle:
        errors = [row["error"] for row in csv.DictReader(handle)]
    assert len(errors) == 3
    shown = "Input should be \\x1b]0;PWNED\\x07\\x1b[31mred\\x9b31m\\u202egnp [bold]x[/]"
    assert all(e.endswith(shown) for e in errors), errors


def test_the_warning_strip_and_the_stop_line_are_escaped(mini):
    sim, records = _hostile_round(mini)
    strip = fallback_text(records[-1])
    assert strip is not None and unsafe_char(strip.plain) is None
    assert "\\x1b]0;PWNED\\x07" in strip.plain and "[bold]x[/]" in strip.plain
    stop = stopped_text(sim, f"degraded: {HOSTILE}\nsecond line")
    assert unsafe_char(stop.plain) is None and "\\nsecond line" in stop.plain


async def test_notifications_and_dialogs_show_outside_text_escaped(saves: Path, hermetic_app: None):
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=(100, 30)) as pilot:
        app.notify(f"cannot read saves/{HOSTILE}/run.json", title=HOSTILE)
        await pilot.pause()
        (note,) = list(app._notifications)
        assert unsafe_char(note.message) is None and unsafe_char(note.title) is None
        assert "[bold]x[/]" in note.message and not note.markup
        app.push_screen(TextForm(f"Rename {HOSTILE}", lambda value: HOSTILE))
        await pilot.pause()
        form = app.screen
        assert isinstance(form, Form)
        title = form.query_one(".title", Static).render()
        assert unsafe_char(str(title)) is None and "[bold]x[/]" in str(title)
        await pilot.press("enter")
        await pilot.pause()
        error = str(form.query_one(".error", Label).render())
        assert unsafe_char(error) is None and "\\x1b]0;PWNED" in error and "[bold]x[/]" in error


def test_a_saved_utterance_or_event_with_control_characters_is_shown_without_them(mini):
    """A save file written by hand (the engine strips replies before saving) still cannot
    drive the terminal through the agent panes."""
    _, records = _hostile_round(mini)
    record = records[-1]
    spoken = next(a for a in record.actions if a.utterance)
    for mode in (Mode.PUBLIC, Mode.PRIVATE):
        action = spoken.model_copy(update={"utterance": HOSTILE, "mode": mode})
        line = turn_line(1, action, spoken.speaker)
        assert unsafe_char(line.plain) is None and "[bold]x[/]" in line.plain
    event = record.events[0].model_copy(update={"text": HOSTILE})
    assert unsafe_char(event_line(1, event).plain) is None


@pytest.fixture
def semicolons(tmp_path: Path, mini_data: dict) -> Path:
    """Agents ``A``, ``B`` and ``A;B``; an event private to ``A;B``, one to ``A`` and ``B``."""
    names = {"Ann": "A", "Bob": "B", "Cy": "A;B"}
    for agent in mini_data["agents"]:
        agent["name"] = names[agent["name"]]
    mini_data["relations"] = []
    mini_data["factions"] = {}
    mini_data["events"] = [
        {"round": 1, "text": "one", "private_to": ["A;B"]},
        {"round": 2, "text": "two", "private_to": ["A", "B"]},
        {"round": 2, "text": "three", "private_to": ['say "hi";A']}.copy(),
    ]
    mini_data["agents"].append({"name": 'say "hi";A', "role": "guest"})
    path = tmp_path / "semi.toml"
    path.write_text(to_toml(mini_data), encoding="utf-8")
    return path


def test_a_name_holding_the_separator_is_quoted_in_list_cells(
    socialsim, semicolons: Path, tmp_path: Path
):
    assert socialsim("run", str(semicolons), "--rounds", "2", "--run-id", "s", "-q").code == 0
    assert socialsim("export", "s", "--out", str(tmp_path / "csv")).code == 0
    with (tmp_path / "csv" / "events.csv").open(newline="") as handle:
        cells = {row["text"]: row["private_to"] for row in csv.DictReader(handle)}
    assert cells == {"one": '"A;B"', "two": "A;B", "three": '"say ""hi"";A"'}
    parsed = {text: next(csv.reader([cell], delimiter=";")) for text, cell in cells.items()}
    assert parsed == {"one": ["A;B"], "two": ["A", "B"], "three": ['say "hi";A']}
    assert list_cell([]) == "" and list_cell(["A"]) == "A"
