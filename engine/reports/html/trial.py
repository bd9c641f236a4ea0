"""The report of a trial: per outcome, the arm means over seeds and a forest plot of each
arm's paired difference from the control with its 95% interval, and a link to each arm
run's own report (written beside the trial's, in ``<name>.runs/``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...saves.store import SaveStore
from ...studies.experiments.outcomes import default_outcome
from ...studies.experiments.trial import ArmSummary, TrialResult, collect, load_spec, summarize
from . import figures
from .page import figure_json, render, report_modules, write
from .run import write_run_report

Outcomes = Callable[[str, str], bool]


def runs_folder(out: Path) -> Path:
    """Where the arm runs' reports of the trial report ``out`` go."""
    return out.with_name(out.stem + ".runs")


def _interval(e: Any) -> tuple[float, float | None, float | None]:
    return e.mean, e.low, e.high


def trial_report(
    result: TrialResult,
    summaries: list[ArmSummary],
    links: dict[tuple[int, str], str],
) -> str:
    """The report page of a trial; ``links``: (seed, arm) -> the href of that arm run's
    report (missing: none was written)."""
    report_modules()
    spec = result.spec
    arms = [a.name for a in spec.arms]
    plots = []
    by_key: dict[str, list[ArmSummary]] = {}
    for s in summaries:
        by_key.setdefault(f"{s.metric}:{s.agent}" if s.agent else s.metric, []).append(s)
    for key, rows in by_key.items():
        means = [_interval(s.estimate) for s in rows]
        diffs = [_interval(s.difference) for s in rows if s.difference is not None]
        fig = figures.forest(key, [s.arm for s in rows], means, spec.control.name, diffs)
        plots.append({"key": key, "figure": figure_json(fig)})
    runs = [
        {
            "seed": seed,
            "arm": arm,
            "run_id": spec.arm_id(seed, spec.arms[k]),
            "done": (seed, arm) in result.rows,
            "href": links.get((seed, arm)),
        }
        for seed in spec.seeds
        for k, arm in enumerate(arms)
    ]
    return render(
        "trial.html.j2",
        spec=spec,
        arms=arms,
        seeds=len(result.complete_seeds),
        plots=plots,
        runs=runs,
    )


def write_trial_report(
    store: SaveStore,
    trial_id: str,
    out: Path,
    *,
    outcomes: Outcomes | None = None,
    arm_reports: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[Path]:
    """Write the report of the saved trial ``trial_id`` to ``out`` (the final outcomes that
    ``outcomes(metric, agent)`` accepts, default those ``socialsim trial`` shows) and, with
    ``arm_reports``, each finished arm run's report into :func:`runs_folder`; returns the
    paths written, the trial's last. ``progress(run_id)`` hears each arm report as it is written."""
    report_modules()
    spec = load_spec(store, trial_id)
    result = collect(store, spec)[0]
    summaries = summarize(result, outcomes or default_outcome)
    links: dict[tuple[int, str], str] = {}
    written: list[Path] = []
    if arm_reports:
        folder = runs_folder(out)
        for seed, arm in result.rows:
            run_id = spec.arm_id(seed, next(a for a in spec.arms if a.name == arm))
            path = folder / f"{run_id}.html"
            back = os.path.relpath(out, folder)
            written.append(write_run_report(store, run_id, path, trial_report=back))
            links[seed, arm] = f"{folder.name}/{path.name}"
            if progress is not None:
                progress(run_id)
    written.append(write(out, trial_report(result, summaries, links)))
    return written
