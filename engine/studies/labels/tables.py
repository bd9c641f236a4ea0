"""The study and its report as tidy tables (one observation per row) for analysis
elsewhere: items, labels (the judge as rater ``judge``), statistics with their intervals,
and the judge-vs-majority confusion counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .agreement import STATISTICS, KindReport
from .sheet import write_csv
from .study import DIRECTIONS, JUDGE, Study

TABLES = ("items", "labels", "report", "confusion")


def item_rows(study: Study) -> list[list[Any]]:
    return [
        [
            i.id,
            i.kind,
            i.run_id,
            i.round,
            i.evidence.observer,
            i.evidence.about,
            i.evidence.prior,
            i.delta,
            i.judge,
        ]
        for i in study.items
    ]


def label_rows(study: Study) -> list[list[Any]]:
    rows: list[list[Any]] = [[i.id, JUDGE, i.judge] for i in study.items]
    for rater in sorted(study.labels):
        labels = study.labels[rater]
        rows.extend([i.id, rater, labels[i.id]] for i in study.items if i.id in labels)
    return rows


def report_rows(reports: list[KindReport]) -> list[list[Any]]:
    """One row per kind and statistic; ``items_used``: the items the statistic is computed
    on (labelled by every rater for kappa, with a clear majority for agreement)."""
    rows = []
    for r in reports:
        used = {
            "kappa_humans": r.complete_items,
            "kappa_with_judge": r.complete_items,
            "alpha": r.pairable_items,
            "agreement": r.clear_items,
        }
        for s in STATISTICS:
            ci = r.intervals[s]
            rows.append([r.kind, s, getattr(r, s), ci.low, ci.high, r.items, r.raters, used[s]])
    return rows


def confusion_rows(reports: list[KindReport]) -> list[list[Any]]:
    return [
        [r.kind, judge, human, r.confusion[a][b]]
        for r in reports
        for a, judge in enumerate(DIRECTIONS)
        for b, human in enumerate(DIRECTIONS)
    ]


def write_tables(study: Study, reports: list[KindReport], folder: Path) -> list[Path]:
    """items.csv, labels.csv, report.csv and confusion.csv in ``folder``, each atomic."""
    folder.mkdir(parents=True, exist_ok=True)
    tables = {
        "items": (
            ("item", "kind", "run", "round", "observer", "about", "prior", "delta", "judge"),
            item_rows(study),
        ),
        "labels": (("item", "rater", "label"), label_rows(study)),
        "report": (
            ("kind", "statistic", "value", "ci_low", "ci_high", "items", "raters", "items_used"),
            report_rows(reports),
        ),
        "confusion": (("kind", "judge", "majority", "count"), confusion_rows(reports)),
    }
    paths = []
    for name in TABLES:
        header, rows = tables[name]
        write_csv(folder / f"{name}.csv", header, rows)
        paths.append(folder / f"{name}.csv")
    return paths
