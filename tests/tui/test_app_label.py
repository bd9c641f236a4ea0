"""The labelling screen (``socialsim label rate``): keys, saving after each key, progress,
resuming, and never showing the judge's answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from cast import record_notifications

from engine import SaveStore, Scenario, Simulation
from engine.studies.labels.sampling import new_study
from engine.studies.labels.study import load_study, save_study
from tui.screens.label import LabelApp, LabelScreen

SIZE = (100, 30)


@pytest.fixture
async def saves(store: SaveStore, mini: Scenario) -> Path:
    """A saved study of 6 items from one offline run."""
    sim = Simulation.new(mini, seed=1, store=store, run_id="r1", rounds=3)
    await sim.run()
    sim.close()
    save_study(store.root, new_study(store, "st", ["r1"], 6, seed=2))
    return store.root


def text(app: LabelApp, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


async def test_keys_label_skip_and_go_back_saving_each_label(saves: Path) -> None:
    study = load_study(saves, "st")
    ids = [i.id for i in study.items]
    app = LabelApp(saves, study, "ann")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, LabelScreen)
        assert "item 1 of 6 · 0 labelled" in text(app, "#progress")
        assert "not labelled yet" in text(app, "#mine")
        await pilot.press("i")
        assert load_study(saves, "st").labels["ann"] == {ids[0]: "increase"}
        await pilot.press("s", "d")
        assert load_study(saves, "st").labels["ann"] == {ids[0]: "increase", ids[2]: "decrease"}
        assert "item 4 of 6 · 2 labelled" in text(app, "#progress")
        await pilot.press("b", "b", "b")
        assert "item 1 of 6" in text(app, "#progress")
        assert "your label: increase" in text(app, "#mine")
        await pilot.press("u")
        assert load_study(saves, "st").labels["ann"][ids[0]] == "unchanged"
        await pilot.press("b", "b")  # never before the first item
        assert "item 1 of 6" in text(app, "#progress")


async def test_rating_resumes_at_the_first_unlabelled_item(saves: Path) -> None:
    app = LabelApp(saves, load_study(saves, "st"), "bo")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("i", "u", "d")
    again = LabelApp(saves, load_study(saves, "st"), "bo")
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "item 4 of 6 · 3 labelled" in text(again, "#progress")
        await pilot.press("i", "i", "i")
        assert "6 labelled · all done" in text(again, "#progress")
    assert len(load_study(saves, "st").labels["bo"]) == 6


async def test_the_screen_shows_evidence_never_the_judge(saves: Path) -> None:
    study = load_study(saves, "st")
    app = LabelApp(saves, study, "cy")
    async with app.run_test(size=SIZE) as pilot:
        for item in study.items:
            await pilot.pause()
            shown = text(app, "#evidence")
            assert item.evidence.observer in shown and item.evidence.role in shown
            assert f"{item.evidence.prior:.2f}" in text(app, "#question")
            assert all(a in shown for a in item.evidence.actions)
            assert "judge" not in shown.lower()
            assert item.delta == 0 or repr(item.delta) not in shown
            await pilot.press("s")


async def test_raters_keep_each_others_labels(saves: Path) -> None:
    first = LabelApp(saves, load_study(saves, "st"), "ann")
    second = LabelApp(saves, load_study(saves, "st"), "bo")  # opened before ann labels
    async with first.run_test(size=SIZE) as pilot:
        await pilot.press("i")
    async with second.run_test(size=SIZE) as pilot:
        await pilot.press("d")
    labels = load_study(saves, "st").labels
    assert set(labels) == {"ann", "bo"}


async def test_a_label_that_cannot_be_saved_says_so_and_stays(saves: Path) -> None:
    app = LabelApp(saves, load_study(saves, "st"), "ann")
    seen = record_notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        (saves / ".studies" / "st.json").unlink()
        await pilot.press("i")
        await pilot.pause()
        assert "item 1 of 6 · 0 labelled" in text(app, "#progress")
    assert [s for s, m in seen if "not saved: no study 'st'" in m] == ["error"]
