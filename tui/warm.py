"""The modules the main screen's keys import on first use (their dialogs and screens, the
export), imported on a worker thread as idle work, :data:`WARM_AFTER` seconds after the
first screen is drawn: the app opens without them (they are ~0.3 s of CPU), and a key's
first press then waits for no import (measured here: the plots' and the recast's ~65 ms
each, the export's ~50 ms, the forms' ~27 ms). A key pressed sooner imports its own."""

from __future__ import annotations

import importlib

#: Seconds after the first screen is drawn: the screen's own work (the transcripts read
#: after it) comes first.
WARM_AFTER = 2.0
#: Imported in this order, the most used first.
MODULES = (
    "tui.screens.forms",
    "tui.screens.help",
    "tui.screens.runs",
    "engine.reports.export",
    "tui.screens.recast",
    "tui.screens.diff",
    "tui.screens.plots",
    "tui.screens.metrics",
    "tui.screens.jump",
    "tui.screens.play",
)


def warm_imports() -> None:
    """Import :data:`MODULES` (on a worker thread: a key pressed meanwhile that needs one
    waits only for the rest of that module's import)."""
    for name in MODULES:
        importlib.import_module(name)
