"""The judge-validation study (engine/studies/labels): sampling, evidence, the dead zone, the
agreement statistics against hand-worked values, the sheet round trip and the report."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa

from engine import SaveStore, Scenario, Simulation
from engine.core.rules import can_observe
from engine.studies.labels.agreement import alpha_batch, coincidences, fleiss_batch, kind_report
from engine.studies.labels.sampling import allocate, candidates, new_study
from engine.studies.labels.study import (
    DIRECTIONS,
    Evidence,
    Item,
    LabelError,
    Study,
    direction,
    load_study,
    save_study,
    set_labels,
    study_path,
)


@pytest.fixture
async def two_runs(store: SaveStore, mini: Scenario) -> SaveStore:
    """Two offline runs of the mini scenario, four rounds each."""
    for seed, run_id in ((1, "r1"), (2, "r2")):
        sim = Simulation.new(mini, seed=seed, store=store, run_id=run_id, rounds=4)
        await sim.run()
        sim.close()
    return store


def pool(store: SaveStore, kinds=("emotion", "relation")) -> list:
    found = []
    for run_id in ("r1", "r2"):
        before = None
        for record in store.history(run_id).records():
            if before is not None:
                found.extend(candidates(run_id, before, record, kinds))
            before = record.state
    return found


# -- sampling ------------------------------------------------------------------------


def test_the_same_seed_draws_the_same_study(two_runs: SaveStore) -> None:
    a = new_study(two_runs, "s", ["r1", "r2"], 20, seed=5)
    b = new_study(two_runs, "s", ["r1", "r2"], 20, seed=5)
    c = new_study(two_runs, "s", ["r1", "r2"], 20, seed=6)
    assert a.items == b.items
    assert len(a.items) == 20 and len({i.id for i in a.items}) == 20
    assert [i.evidence for i in a.items] != [i.evidence for i in c.items]


def test_allocation_spreads_the_sample_evenly() -> None:
    assert allocate([1, 10, 10], 12) == [1, 6, 5]
    assert allocate([3, 3], 10) == [3, 3]
    assert allocate([5, 5, 5], 0) == [0, 0, 0]


def test_the_sample_is_stratified_by_kind_and_direction(two_runs: SaveStore) -> None:
    study = new_study(two_runs, "s", ["r1", "r2"], 30, seed=0)
    drawn = Counter((i.kind, i.judge) for i in study.items)
    zone = study.dead_zone
    available = Counter((c.kind, direction(c.delta, zone[c.kind])) for c in pool(two_runs))
    assert set(drawn) == set(available)  # every stratum the runs have is represented
    short = {k for k in available if drawn[k] == available[k]}  # exhausted strata
    full = [drawn[k] for k in available if k not in short]
    assert max(full) - min(full) <= 1
    by_kind = Counter(i.kind for i in new_study(two_runs, "s", ["r1"], 10, stratify=["kind"]).items)
    assert by_kind == {"emotion": 5, "relation": 5}


def test_items_carry_the_evidence_the_judge_saw(two_runs: SaveStore, mini: Scenario) -> None:
    study = new_study(
        two_runs, "s", ["r1", "r2"], 40, seed=1, kinds=["emotion", "relation", "need"]
    )
    assert {i.kind for i in study.items} == {"emotion", "relation", "need"}
    roles = {a.name: a.role for a in mini.agents}
    for item in study.items:
        ev = item.evidence
        history = two_runs.history(item.run_id)
        record, before = history[item.round], history[item.round - 1].state
        agent = before.agents[ev.observer]
        assert ev.role == roles[ev.observer]
        if item.kind == "emotion":
            assert ev.prior == agent.emotion
            assert item.delta == next(
                e.delta for e in record.emotion_changes if e.agent == ev.observer
            )
        elif item.kind == "relation":
            old = agent.relations.get(ev.about)
            assert ev.prior == (old.fav if old else 0.0)
            change = next(
                r
                for r in record.relation_changes
                if (r.source, r.target) == (ev.observer, ev.about)
            )
            assert item.delta == change.delta
        else:
            assert ev.prior == agent.needs[ev.about].current
            assert item.delta == record.need_deltas[ev.observer][ev.about]
        seen = [a for a in record.actions if can_observe(a, ev.observer)]
        assert len(ev.actions) == len(seen)
        assert ev.events == [e.text for e in record.events if e.visible_to(ev.observer)]
    private = [i for i in study.items if i.round == 2 and i.evidence.observer != "Bob"]
    assert all("bank statement" not in " ".join(i.evidence.events) for i in private)


def test_the_dead_zone_makes_small_changes_unchanged(two_runs: SaveStore) -> None:
    assert direction(0.009, 0.01) == "unchanged"
    assert direction(-0.01, 0.01) == "decrease"
    assert direction(0.2, 0.01) == "increase"
    assert direction(0.0, 0.0) == "unchanged"
    wide = new_study(two_runs, "s", ["r1"], 10, dead_zone={"emotion": 2.0, "relation": 2.0})
    assert {i.judge for i in wide.items} == {"unchanged"}
    assert wide.dead_zone["emotion"] == 2.0


def test_bad_requests_are_clear_errors(two_runs: SaveStore) -> None:
    with pytest.raises(LabelError, match="strata"):
        new_study(two_runs, "s", ["r1"], 10, stratify=["colour"])
    with pytest.raises(LabelError, match="'mood'"):
        new_study(two_runs, "s", ["r1"], 10, dead_zone={"mood": 0.1})
    with pytest.raises(LabelError, match="dead zone"):
        new_study(two_runs, "s", ["r1"], 10, dead_zone={"need": -1.0})
    with pytest.raises(LabelError, match="sample"):
        new_study(two_runs, "s", ["r1"], 0)
    with pytest.raises(LabelError, match="plain name"):
        study_path(two_runs.root, "../x")


def test_a_study_is_saved_and_read_back(two_runs: SaveStore) -> None:
    study = new_study(two_runs, "s", ["r1", "r2"], 12, seed=2)
    path = save_study(two_runs.root, study)
    assert path == two_runs.root / ".studies" / "s.json"
    assert load_study(two_runs.root, "s") == study
    assert [r.run_id for r in two_runs.list_runs()] == ["r1", "r2"]  # not listed as a run
    with pytest.raises(LabelError, match="no study 'other'"):
        load_study(two_runs.root, "other")


# -- statistics ------------------------------------------------------------------------

#: Fleiss (1971) as on Wikipedia: 10 subjects, 14 raters, 5 categories.
WIKIPEDIA = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)


def test_fleiss_kappa_of_the_worked_example() -> None:
    # p_j = column sums / 140 = 0.143, 0.200, 0.279, 0.150, 0.229; P_e = sum p_j^2 = 0.213.
    # P_i = (sum_j n_ij^2 - 14) / (14 * 13): 1.000, 0.253, 0.308, 0.440, 0.330, 0.462,
    # 0.242, 0.176, 0.286, 0.286; P-bar = 0.378. kappa = (0.378 - 0.213) / (1 - 0.213) = 0.210.
    assert fleiss_kappa(WIKIPEDIA) == pytest.approx(0.210, abs=5e-4)
    assert fleiss_batch(WIKIPEDIA) == pytest.approx(fleiss_kappa(WIKIPEDIA))
    batch = fleiss_batch(np.stack([WIKIPEDIA, WIKIPEDIA[[0, 0, 1, 2, 3, 4, 5, 6, 7, 8]]]))
    assert batch[0] == pytest.approx(0.20993, abs=1e-5)
    assert batch[1] == pytest.approx(fleiss_kappa(WIKIPEDIA[[0, 0, 1, 2, 3, 4, 5, 6, 7, 8]]))


def test_alpha_from_coincidences_matches_krippendorff() -> None:
    import krippendorff

    expected = krippendorff.alpha(value_counts=WIKIPEDIA, level_of_measurement="nominal")
    assert alpha_batch(coincidences(WIKIPEDIA).sum(axis=0)) == pytest.approx(expected)


def hand_study() -> Study:
    """Four items, three raters, the judge (worked by hand in the test below)."""
    rows = [  # rater a, b, c; judge
        ("increase", "increase", "increase", "increase"),
        ("increase", "increase", "unchanged", "unchanged"),
        ("decrease", "decrease", "decrease", "decrease"),
        ("unchanged", "decrease", "increase", "decrease"),
    ]
    items = [
        Item(
            id=f"i{k}",
            kind="emotion",
            run_id="r",
            round=1,
            evidence=Evidence(observer="Ann", prior=0.5),
            delta=0.0,
            judge=row[3],
        )
        for k, row in enumerate(rows)
    ]
    labels = {r: {f"i{k}": row[j] for k, row in enumerate(rows)} for j, r in enumerate("abc")}
    study = Study(name="h", created="", seed=0, runs=["r"], stratify=[], dead_zone={}, items=items)
    return study.model_copy(update={"labels": labels})


def test_the_report_against_hand_computed_values() -> None:
    # Humans: counts (inc, unch, dec) [3,0,0] [2,1,0] [0,0,3] [1,1,1], n = 3.
    # P_i = (sum n^2 - 3) / 6 = 1, 1/3, 1, 0 -> P-bar = 7/12; p = 6/12, 2/12, 4/12,
    # P_e = 14/36 = 7/18; kappa = (7/12 - 7/18) / (11/18) = 7/22.
    # With the judge, n = 4: [4,0,0] [2,2,0] [0,0,4] [1,1,2]; P_i = 1, 1/3, 1, 1/6,
    # P-bar = 5/8; p = 7/16, 3/16, 6/16, P_e = 47/128; kappa = (80 - 47) / 81 = 11/27.
    # Alpha: coincidences (outer - diag) / 2 summed: diagonal 4, 0, 3; inc-unch 1.5,
    # inc-dec 0.5, unch-dec 0.5 (each both ways); n_c = 6, 2, 4, n = 12;
    # alpha = 1 - 11 * 5 / (144 - 56) = 0.375.
    # Clear majority (2 of 3): items 0, 1, 2 (majorities inc, inc, dec); the judge says
    # inc, unch, dec: agreement 2/3; confusion (judge rows) inc->inc, unch->inc, dec->dec.
    r = kind_report(hand_study(), "emotion", boots=500, seed=1)
    assert (r.items, r.raters, r.complete_items, r.majority) == (4, 3, 4, 2)
    assert r.kappa_humans == pytest.approx(7 / 22)
    assert r.kappa_with_judge == pytest.approx(11 / 27)
    assert r.alpha == pytest.approx(0.375)
    assert r.clear_items == 3
    assert r.agreement == pytest.approx(2 / 3)
    assert r.confusion == [[1, 0, 0], [1, 0, 0], [0, 0, 1]]
    for name, ci in r.intervals.items():
        assert ci.low is not None and ci.high is not None and ci.low <= ci.high, name
    assert r.intervals["agreement"].low == 0.0 and r.intervals["agreement"].high == 1.0
    strict = kind_report(hand_study(), "emotion", majority=3, boots=100)
    assert (strict.clear_items, strict.agreement) == (2, 1.0)
    again = kind_report(hand_study(), "emotion", boots=500, seed=1)
    assert again.intervals == r.intervals  # seeded


def test_missing_labels_keep_alpha_and_drop_the_item_from_kappa() -> None:
    study = hand_study()
    labels = {**study.labels, "c": {k: v for k, v in study.labels["c"].items() if k != "i3"}}
    r = kind_report(study.model_copy(update={"labels": labels}), "emotion", boots=50)
    assert (r.complete_items, r.pairable_items) == (3, 4)
    # Items 0-2 only: P_i = 1, 1/3, 1 -> 7/9; p = 5/9, 1/9, 3/9, P_e = 35/81.
    assert r.kappa_humans == pytest.approx((7 / 9 - 35 / 81) / (1 - 35 / 81))
    assert r.alpha is not None


def test_labels_merge_per_rater_and_refuse_unknown_items() -> None:
    study = hand_study()
    updated = set_labels(study, "d", {"i0": "decrease"})
    assert updated.labels["d"] == {"i0": "decrease"}
    assert set_labels(updated, "d", {"i1": "increase"}).labels["d"] == {
        "i0": "decrease",
        "i1": "increase",
    }
    with pytest.raises(LabelError, match="unknown item 'x9'"):
        set_labels(study, "d", {"x9": "increase"})
    with pytest.raises(LabelError, match="reserved"):
        set_labels(study, "judge", {"i0": "increase"})
    assert DIRECTIONS == ("increase", "unchanged", "decrease")


def test_a_study_without_labels_reports_no_statistics() -> None:
    study = hand_study().model_copy(update={"labels": {}})
    r = kind_report(study, "emotion", boots=20)
    assert (r.items, r.raters, r.clear_items) == (4, 0, 0)
    assert r.kappa_humans is r.kappa_with_judge is r.alpha is r.agreement is None
    assert r.confusion == [[0, 0, 0]] * 3


def test_sheet_round_trip(two_runs: SaveStore, tmp_path) -> None:
    import csv

    from engine.studies.labels.sheet import read_sheet, write_sheet

    study = new_study(two_runs, "s", ["r1", "r2"], 10, seed=4)
    path = tmp_path / "sheet.csv"
    write_sheet(study, path)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["item"] for r in rows] == [i.id for i in study.items]
    assert "judge" not in rows[0] and "delta" not in rows[0]
    wanted = {r["item"]: DIRECTIONS[k % 3] for k, r in enumerate(rows) if k != 3}
    for row in rows:
        row["label"] = wanted.get(row["item"], "")
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert read_sheet(study, path) == wanted  # the empty label is no label
