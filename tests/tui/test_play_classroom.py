"""The README's classroom example (EduMirror): a teacher plays Ms. Hale (Helen) in
``bullying`` from round 0 of a baseline run and compares the outcome with the AI-played
intervention branches in the diff view and with ``socialsim diff``. The teacher's inputs are
typed by the pilot."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_app_diff import text_of
from test_play_app import SIZE, decide, say, until

from engine import SaveStore
from tui.app import build_app
from tui.screens.diff import DiffScreen

TEACHER = [
    ("9", "stop the exclusion and include Alice", "That is enough. Alice joins Jane's group."),
    ("8", "make the group work together", "Every member of the group has a job, Jane."),
    ("7", "check on Alice", "Alice, my door is open after the last lesson."),
]


@pytest.fixture(autouse=True)
def _hermetic(hermetic_app: None) -> None:
    """No user keymap, no files outside tmp_path."""


@pytest.fixture
def classroom(run_cli, saves: Path) -> tuple[str, ...]:
    """The README's commands before the lesson: an AI-played baseline, one AI-played branch
    per intervention from its round 0, and the teacher's branch. Returns ``--saves DIR``."""
    at = ("--saves", str(saves))
    assert run_cli("run", "bullying", "--seed", "1", "--rounds", "3", "--run-id", "baseline",
                   "--quiet", *at).code == 0  # fmt: skip
    for arm in ("supportive-cooperative", "authoritative-punitive"):
        assert run_cli("branch", "baseline", "--at", "0", "--intervention", arm,
                       "--run-id", f"ai-{arm}", *at).code == 0  # fmt: skip
        assert run_cli("resume", f"ai-{arm}", "--quiet", *at).code == 0
    assert run_cli("branch", "baseline", "--at", "0", "--run-id", "teacher", *at).code == 0
    return at


async def test_a_teacher_plays_helen_and_compares_with_the_ai_interventions(
    run_cli, saves: Path, classroom: tuple[str, ...]
) -> None:
    app = build_app("teacher", saves=saves, players={"Helen": "Ms. Lee"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("r")  # run to the end: each round waits for the teacher
        for urgency, intent, words in TEACHER:
            await decide(pilot, urgency, intent, typed=True)
            await say(pilot, words, typed=True)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.sim.finished
        await pilot.press("d")  # the diff view against the parent (the AI-played baseline)
        await until(pilot, DiffScreen)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        assert "(human: Ms. Lee)" in text_of(screen, "talk-b-text")  # B: the teacher's run
        assert "(human: Ms. Lee)" not in text_of(screen, "talk-a-text")

    store = SaveStore(saves)
    helen = [a for r in store.history("teacher").logs(1) for a in r.actions if a.speaker == "Helen"]
    assert [(a.actor, a.player, a.utterance) for a in helen] == [
        ("human", "Ms. Lee", words) for _, _, words in TEACHER
    ]
    for arm in ("supportive-cooperative", "authoritative-punitive"):
        compared = await asyncio.to_thread(
            run_cli, "diff", f"ai-{arm}", "teacher", "--round", "1", *classroom
        )
        assert compared.code == 0, compared.err
        assert "first divergence: round 1" in compared.out
        assert "(human: Ms. Lee)" in compared.out
        assert "Alice" in compared.out
