"""Start-up: the app module and its first frame load nothing an offline run does not draw.

Each check runs in a fresh interpreter (this process has imported everything already) and
reads ``sys.modules``: the LLM client, the plotting and statistics libraries and the screens
opened by a key are loaded when first used, not before the first paint.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tui.warm import MODULES

ROOT = Path(__file__).resolve().parents[2]

#: Loaded only by what uses them: an LLM run, the plots screen, the labelling statistics,
#: the export, a task's episode.
HEAVY = (
    "litellm",
    "openai",
    "httpx",
    "engine.llm.transport",
    "engine.llm.client",
    "plotext",
    "textual_plotext",
    "statsmodels",
    "scipy",
    "krippendorff",
    "pandas",
    "pyarrow",
    "networkx",
    "engine.reports.export",
    "engine.reports.card",
    "engine.studies.tasks.spec",
    "engine.studies.tasks.episode",
)
#: Screens and dialogs a key opens.
SCREENS = tuple(
    f"tui.screens.{name}"
    for name in (
        "diff",
        "forms",
        "help",
        "jump",
        "label",
        "metrics",
        "play",
        "plots",
        "recast",
        "runs",
        "spend",
        "trial",
    )
)

#: The heavy modules the warm-up loads after the first frame (the screens the keys open
#: import them); the others are loaded only by an LLM run, the labelling statistics or a
#: report.
WARMED = (
    "plotext",
    "textual_plotext",
    "engine.reports.export",
    "engine.reports.card",
    "engine.studies.tasks.spec",
    "engine.studies.tasks.episode",
)
NEVER_WARMED = (*(m for m in HEAVY if m not in WARMED), "engine.reports.html")

IMPORT_ONLY = "import sys, json, tui.app; print(json.dumps(sorted(sys.modules)))"

FIRST_FRAME = """
import asyncio, json, sys
from pathlib import Path
import tui.screens.main as main_screen
from tui.app import build_app

first = []  # the modules loaded when the first frame was drawn
warm = main_screen.warm_imports

def recorded():
    first.extend(sorted(sys.modules))
    warm()

main_screen.warm_imports = recorded

async def main():
    app = build_app("tavern", saves=Path(sys.argv[1]))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for _ in range(500):  # the warm-up starts once the first frame is drawn
            if first:
                break
            await pilot.pause(0.01)
        await app.workers.wait_for_complete()
        print(json.dumps({"round": app.sim.round, "first": first, "modules": sorted(sys.modules)}))

asyncio.run(main())
"""


def loaded(code: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return json.loads(out.splitlines()[-1])


def test_importing_the_app_loads_no_heavy_module() -> None:
    modules = set(loaded(IMPORT_ONLY))
    assert "tui.app" in modules and "tui.screens.main" in modules  # the probe works
    assert modules.isdisjoint((*HEAVY, *SCREENS, "numpy")), sorted(
        modules & {*HEAVY, *SCREENS, "numpy"}
    )


def test_first_frame_of_a_new_run_plays_no_round_and_loads_no_heavy_module(
    tmp_path: Path,
) -> None:
    """The first frame waits for no heavy module; then the modules the keys open are
    imported on a worker thread, so no key's first press waits for its import."""
    seen = loaded(FIRST_FRAME, str(tmp_path))
    first, after = set(seen["first"]), set(seen["modules"])
    assert seen["round"] == 0  # the first round waits for n or r
    assert "textual.pilot" in first  # the probe ran the app
    assert first.isdisjoint((*HEAVY, *SCREENS)), sorted(first & {*HEAVY, *SCREENS})
    assert after >= set(MODULES), sorted(set(MODULES) - after)
    assert after.isdisjoint(NEVER_WARMED), sorted(after & set(NEVER_WARMED))
