"""``socialsim label``: the judge-validation study of Sociodrama Sec. 5.2. ``new`` draws the
judged updates to label from saved runs, ``sheet`` and ``import`` hand them to raters as a
CSV and read their labels back, ``rate`` labels them in the app, ``report`` compares the
raters with each other and with the judge."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from . import options
from .base import SavesOpt, fail, open_store, out_file, outside_saves

if TYPE_CHECKING:
    from engine.studies.labels.agreement import Interval, KindReport

StudyArg = Annotated[str, typer.Argument(help="Study name (saved as SAVES/.studies/NAME.json).")]
RaterOpt = Annotated[str, typer.Option("--rater", help="The rater's name (a plain name).")]


def _pairs(text: str) -> dict[str, float]:
    """``emotion=0.02,relation=0.05`` as a dict."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            fail(f"--dead-zone {text!r}: give KIND=NUMBER pairs like emotion=0.02,need=0.2")
        if not sep:
            fail(f"--dead-zone {text!r}: give KIND=NUMBER pairs like emotion=0.02,need=0.2")
    return out


def new(
    study: StudyArg,
    runs: Annotated[list[str], typer.Option("--runs", help="A run to sample (repeatable).")],
    sample: Annotated[int, typer.Option("--sample", min=1, help="Items to draw.")] = 60,
    stratify: Annotated[
        str, typer.Option("--stratify", help="Strata: kind, direction, both or none ('').")
    ] = "kind,direction",
    kinds: Annotated[
        str, typer.Option("--kinds", help="Updates to sample: emotion, relation, need.")
    ] = "emotion,relation",
    dead_zone: Annotated[
        str,
        typer.Option(
            "--dead-zone",
            help="|delta| below which the judge's change counts as unchanged, per kind "
            "[default: emotion=0.01,relation=0.01,need=0.1].",
        ),
    ] = "",
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the sample.", callback=options.seed)
    ] = 0,
    saves: SavesOpt = None,
) -> None:
    """Draw a study: a reproducible stratified sample of the judge's updates from saved runs."""
    from engine.studies.labels.sampling import new_study
    from engine.studies.labels.study import check_name, save_study, study_path

    store = open_store(saves)
    if study_path(store.root, check_name(study, "study")).exists():
        fail(f"study {study!r} exists in {store.root} (choose another name)")
    for run_id in runs:
        if not store.exists(run_id):
            fail(f"no run {run_id!r} in {store.root}")
    made = new_study(
        store,
        study,
        runs,
        sample,
        stratify=[s.strip() for s in stratify.split(",") if s.strip()],
        seed=seed,
        kinds=[k.strip() for k in kinds.split(",") if k.strip()],
        dead_zone=_pairs(dead_zone),
    )
    path = save_study(store.root, made)
    counts: dict[str, int] = {}
    for item in made.items:
        key = f"{item.kind} {item.judge}"
        counts[key] = counts.get(key, 0) + 1
    spread = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    typer.echo(f"{study}: {len(made.items)} items from {len(made.runs)} runs ({spread}) in {path}")


def sheet(
    study: StudyArg,
    out: Annotated[
        Path,
        typer.Option("--out", parser=out_file, metavar="<path>", help="The CSV file to write."),
    ],
    saves: SavesOpt = None,
) -> None:
    """Write the rating sheet: one row per item, its evidence, an empty label column."""
    from engine.studies.labels.sheet import write_sheet
    from engine.studies.labels.study import load_study

    store = open_store(saves)
    outside_saves(out, store)
    made = load_study(store.root, study)
    write_sheet(made, out)
    typer.echo(f"{out}: {len(made.items)} items; fill 'label' with increase, unchanged or decrease")


def import_labels(
    study: StudyArg,
    rater: RaterOpt,
    sheet_file: Annotated[Path, typer.Argument(metavar="SHEET", help="A filled rating sheet.")],
    saves: SavesOpt = None,
) -> None:
    """Read a filled sheet as one rater's labels (all or nothing)."""
    from engine.studies.labels.sheet import read_sheet
    from engine.studies.labels.study import add_labels, load_study, set_labels

    store = open_store(saves)
    made = load_study(store.root, study)
    labels = read_sheet(made, sheet_file)
    set_labels(made, rater, labels)  # a bad rater name fails before the lock is taken
    add_labels(store.root, study, rater, labels)
    typer.echo(f"{study}: {len(labels)} labels from {rater} ({len(made.items)} items)")


def rate(study: StudyArg, rater: RaterOpt, saves: SavesOpt = None) -> None:
    """Label a study's items in the app (i/u/d, s skip, b back; resumes where you stopped)."""
    from engine.studies.labels.study import load_study, set_labels

    from ..screens.label import LabelApp

    store = open_store(saves)
    made = load_study(store.root, study)
    set_labels(made, rater, {})  # the rater's name is checked before the app starts
    LabelApp(store.root, made, rater).run()


def _value(x: float | None, percent: bool) -> str:
    if x is None:
        return "n/a"
    return f"{x:.1%}" if percent else f"{x:.3f}"


def _ci(ci: Interval, percent: bool) -> str:
    if ci.low is None or ci.high is None:
        return ""
    return f"  [{_value(ci.low, percent)}, {_value(ci.high, percent)}]"


def report_lines(reports: list[KindReport], boots: int) -> list[str]:
    """The report as plain lines, one block per kind."""
    from engine.studies.labels.study import DIRECTIONS

    lines: list[str] = []
    for r in reports:
        rows = [
            ("Fleiss' kappa, humans", r.kappa_humans, "kappa_humans", False),
            ("Fleiss' kappa, judge added", r.kappa_with_judge, "kappa_with_judge", False),
            ("Krippendorff's alpha (nominal)", r.alpha, "alpha", False),
            (f"judge = majority ({r.majority}+ agree)", r.agreement, "agreement", True),
        ]
        lines.append(
            f"{r.kind}: {r.items} items, {r.raters} raters, {r.complete_items} labelled by "
            f"all, {r.clear_items} with a clear majority"
        )
        for name, value, key, percent in rows:
            lines.append(
                f"  {name:<32} {_value(value, percent):>7}{_ci(r.intervals[key], percent)}"
            )
        lines.append("  judge (rows) vs majority (columns):")
        lines.append("    " + " " * 10 + "".join(f"{d:>10}" for d in DIRECTIONS))
        for d, row in zip(DIRECTIONS, r.confusion, strict=True):
            lines.append(f"    {d:<10}" + "".join(f"{n:>10}" for n in row))
    lines.append(f"95% intervals: {boots} bootstrap resamples of the items")
    return lines


def report(
    study: StudyArg,
    majority: Annotated[
        int | None,
        typer.Option(
            "--majority",
            min=1,
            help="Raters who must agree for a clear majority [default: more than half].",
        ),
    ] = None,
    boots: Annotated[int, typer.Option("--boots", min=10, help="Bootstrap resamples.")] = 2000,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the bootstrap.", callback=options.seed)
    ] = 0,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Also write items, labels, report, confusion CSVs here."),
    ] = None,
    saves: SavesOpt = None,
) -> None:
    """Agreement among raters and with the judge, per kind of update."""
    from engine.studies.labels.agreement import report as make_report
    from engine.studies.labels.study import load_study
    from engine.studies.labels.tables import write_tables

    store = open_store(saves)
    outside_saves(out, store)
    made = load_study(store.root, study)
    reports = make_report(made, majority=majority, boots=boots, seed=seed)
    for line in report_lines(reports, boots):
        typer.echo(line)
    if out is not None:
        for path in write_tables(made, reports, out):
            typer.echo(str(path))


def app() -> typer.Typer:
    """The ``label`` sub-application."""
    sub = typer.Typer(
        name="label",
        help="Validate the judge against human raters (Sociodrama Sec. 5.2).",
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        rich_markup_mode="markdown",
    )
    sub.command("new")(new)
    sub.command("sheet")(sheet)
    sub.command("import")(import_labels)
    sub.command("rate")(rate)
    sub.command("report")(report)
    return sub
