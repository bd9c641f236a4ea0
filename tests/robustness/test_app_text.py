"""Text typed or pasted into the app's dialogs is checked as the command line checks it:
a control character or an over-long text is an inline error, the dialog stays open and
nothing is queued or saved."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Label

from engine import SaveStore
from engine.core.limits import MAX_TEXT_CHARS
from tui.app import build_app
from tui.screens.forms import ForceForm, InjectForm, TextForm

SIZE = (100, 30)
BAD = {
    "escape": ("Ann\x1b[31mRED\x1b]0;PWNED\x07", "U+001B"),
    "bidi": ("pay \u202eevil", "U+202E"),
    "too-long": ("x" * (MAX_TEXT_CHARS + 1), f"longer than {MAX_TEXT_CHARS:,}"),
}


async def _refused(app, pilot, field: str, text: str, fragment: str, form: type) -> None:
    app.screen.query_one(field, Input).value = text
    await pilot.press("enter")
    await pilot.pause()
    assert isinstance(app.screen, form)
    message = str(app.screen.query_one(".error", Label).content)
    assert fragment in message, message
    assert "\x1b" not in message and "\n" not in message


@pytest.mark.parametrize("case", list(BAD))
async def test_an_injected_event_with_bad_text_is_refused_inline(
    saves: Path, hermetic_app: None, case: str
) -> None:
    text, fragment = BAD[case]
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await _refused(app, pilot, "#text", text, fragment, InjectForm)
        assert "event: " in str(app.screen.query_one(".error", Label).content)
        assert app.sim.pending.events == []
        assert SaveStore(saves).read_meta(app.sim.run_id).pending.events == []
        app.screen.query_one("#text", Input).value = "The lights go out"  # fixed: accepted
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, InjectForm)
        assert [e.text for e in app.sim.pending.events] == ["The lights go out"]


@pytest.mark.parametrize("case", list(BAD))
async def test_a_forced_utterance_with_bad_text_is_refused_inline(
    saves: Path, hermetic_app: None, case: str
) -> None:
    text, fragment = BAD[case]
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        await _refused(app, pilot, "#utterance", text, fragment, ForceForm)
        assert "utterance: " in str(app.screen.query_one(".error", Label).content)
        assert app.sim.pending.forced == []
        assert SaveStore(saves).read_meta(app.sim.run_id).pending.forced == []


async def test_a_snapshot_name_with_a_control_character_is_refused(
    saves: Path, hermetic_app: None
) -> None:
    app = build_app("tavern", saves=saves)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await _refused(app, pilot, "#value", "a\x07b", "U+0007", TextForm)
        assert app.sim.meta.snapshots == []
