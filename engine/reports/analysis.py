"""Saved runs and trials as pandas DataFrames, for a notebook::

    from engine.reports.analysis import open_saves, open_run, open_trial

    run = open_run("village50", saves="saves")
    run.relations            # the columns of relations.csv of ``socialsim export``
    trial = open_trial("bully3", saves="saves")
    trial.outcomes           # the tidy rows of ``socialsim trial --out``

Every table has the columns of the CSV export (``engine.reports.export.COLUMNS``) and is read when
first asked for, the save streamed one round at a time as the export reads it.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SocialsimError, incomplete_install
from ..saves.store import SaveStore

if TYPE_CHECKING:
    import pandas as pd

    from ..saves.history import History
    from ..saves.runmeta import RunMeta
    from ..studies.experiments.trial import TrialResult, TrialSpec

__all__ = ["Run", "Saves", "Trial", "open_run", "open_saves", "open_trial"]

#: Columns holding one of a few values (agents, modes, kinds): pandas categoricals.
CATEGORIES = frozenset(
    {
        "agent", "speaker", "target", "source", "actor", "player", "faction", "archetype",
        "speech_mode", "stance", "status", "override", "category", "need", "metric", "unit",
        "purpose", "model", "structured", "outcome", "counted_by", "judge_mode",
        "questionnaire", "respondent", "criterion", "rater", "arm",
    }
)  # fmt: skip


def typed(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    """``frame`` of table ``name`` with real dtypes: counts and rounds as nullable integers,
    measures as floats (NaN where the CSV cell is blank), agents and modes as categoricals
    (missing where blank), the rest as strings."""
    from .parquet import FLOATS, INTS

    pd = pandas()
    ints, floats = INTS.get(name, frozenset()) | {"round_no", "seed"}, FLOATS.get(name, ())
    for column in frame.columns:
        cells = frame[column]
        if column in ints or column in floats:
            numbers = pd.to_numeric(cells.replace("", None), errors="coerce")
            frame[column] = numbers.astype("Int64" if column in ints else "float64")
        elif column in CATEGORIES:
            frame[column] = cells.replace("", None).astype("category")
        else:
            frame[column] = cells.astype("string")
    return frame


def pandas() -> Any:
    """The pandas module (imported on first use), or one clear error if the install lacks it."""
    try:
        import pandas
    except ImportError:
        raise incomplete_install("pandas", "the analysis API") from None
    return pandas


def _store(saves: SaveStore | Path | str | None) -> SaveStore:
    return saves if isinstance(saves, SaveStore) else SaveStore(saves)


class Run:
    """One saved run: each export table as a DataFrame (read on first use), its lineage
    and its run card."""

    def __init__(self, store: SaveStore, run_id: str) -> None:
        pandas()
        self.store = store
        self.run_id = run_id
        self.meta: RunMeta = store.read_meta(run_id)
        self.history: History = store.history(run_id, self.meta)

    def __repr__(self) -> str:
        return f"Run({self.run_id!r}, {len(self.history) - 1} rounds)"

    def table(self, name: str) -> pd.DataFrame:
        """The export table ``name`` (a key of ``engine.reports.export.COLUMNS``)."""
        from .tables import COLUMNS, table_rows

        if name not in COLUMNS:
            raise SocialsimError(f"no table {name!r}; tables: {', '.join(COLUMNS)}")
        pd = pandas()
        measured = self.store.read_measurements(self.run_id) if name in _MEASURED else None
        rows = table_rows(name, self.meta, self.history, measured)
        frame = pd.DataFrame.from_records(rows, columns=list(COLUMNS[name]))
        return typed(frame, name)

    @cached_property
    def agents(self) -> pd.DataFrame:
        return self.table("agents")

    @cached_property
    def transcript(self) -> pd.DataFrame:
        return self.table("transcript")

    @cached_property
    def events(self) -> pd.DataFrame:
        return self.table("events")

    @cached_property
    def relations(self) -> pd.DataFrame:
        return self.table("relations")

    @cached_property
    def emotions(self) -> pd.DataFrame:
        return self.table("emotions")

    @cached_property
    def needs(self) -> pd.DataFrame:
        return self.table("needs")

    @cached_property
    def metrics(self) -> pd.DataFrame:
        return self.table("metrics")

    @cached_property
    def llm_calls(self) -> pd.DataFrame:
        return self.table("llm_calls")

    @cached_property
    def usage(self) -> pd.DataFrame:
        return self.table("usage")

    @cached_property
    def surveys(self) -> pd.DataFrame:
        return self.table("surveys")

    @cached_property
    def ratings(self) -> pd.DataFrame:
        return self.table("ratings")

    @cached_property
    def lineage(self) -> pd.DataFrame:
        """The fork points the run descends from, oldest first (``run_id``, ``round``)."""
        links = [(link.run_id, link.round) for link in self.meta.ancestry]
        return pandas().DataFrame(links, columns=["run_id", "round_no"])

    @cached_property
    def card(self) -> dict[str, Any]:
        """The run card (``card.json`` of the export) as a dict."""
        from .card import CardBuilder

        builder = CardBuilder(self.meta)
        for log in self.history.logs(relations=False):
            builder.add(log)
        return builder.card().model_dump(mode="json")


_MEASURED = ("surveys", "ratings")


class Trial:
    """One saved trial: its spec, the tidy outcome rows of its finished arm runs and a
    summary of the final outcomes per arm."""

    def __init__(self, store: SaveStore, trial_id: str) -> None:
        from ..studies.experiments.trial import collect, load_spec

        pandas()
        self.store = store
        self.spec: TrialSpec = load_spec(store, trial_id)
        self.result: TrialResult = collect(store, self.spec)[0]

    def __repr__(self) -> str:
        return f"Trial({self.spec.trial_id!r}, {len(self.result.rows)} arm runs)"

    @cached_property
    def outcomes(self) -> pd.DataFrame:
        """Every outcome row: the columns of ``socialsim trial --out``."""
        from ..studies.experiments.outcomes import COLUMNS

        spec = self.spec
        rows = [(spec.trial_id, spec.scenario_ref, *row.values()) for row in self.result.tidy()]
        frame = pandas().DataFrame(rows, columns=["trial", "scenario", *COLUMNS])
        return typed(frame, "outcomes")

    @cached_property
    def runs(self) -> pd.DataFrame:
        """The finished arm runs: ``seed``, ``arm``, ``run_id``."""
        spec = self.spec
        rows = [
            (seed, arm.name, spec.arm_id(seed, arm))
            for seed in spec.seeds
            for arm in spec.arms
            if (seed, arm.name) in self.result.rows
        ]
        return typed(pandas().DataFrame(rows, columns=["seed", "arm", "run_id"]), "runs")

    def run(self, seed: int, arm: str) -> Run:
        """The arm run of ``seed`` and ``arm``."""
        found = [a for a in self.spec.arms if a.name == arm]
        if not found:
            names = ", ".join(a.name for a in self.spec.arms)
            raise SocialsimError(f"no arm {arm!r}; arms: {names}")
        return Run(self.store, self.spec.arm_id(seed, found[0]))

    def summary(self) -> pd.DataFrame:
        """Per final outcome and arm: the mean over the complete seeds and the paired
        difference from the control, with their 95% bootstrap intervals."""
        from ..studies.experiments.trial import summarize

        rows = []
        for s in summarize(self.result):
            d = s.difference
            rows.append(
                {
                    "metric": s.metric,
                    "agent": s.agent,
                    "arm": s.arm,
                    "n": s.estimate.n,
                    "mean": s.estimate.mean,
                    "low": s.estimate.low,
                    "high": s.estimate.high,
                    "diff": None if d is None else d.mean,
                    "diff_low": None if d is None else d.low,
                    "diff_high": None if d is None else d.high,
                }
            )
        return (
            pandas()
            .DataFrame(rows)
            .astype({c: float for c in ("mean", "low", "high", "diff", "diff_low", "diff_high")})
        )


class Saves:
    """A saves folder: its runs as a DataFrame, each run and trial by id."""

    def __init__(self, store: SaveStore) -> None:
        pandas()
        self.store = store

    def __repr__(self) -> str:
        return f"Saves({str(self.store.root)!r})"

    @property
    def runs(self) -> pd.DataFrame:
        """One row per run folder (``socialsim list``): broken ones with ``ok`` False and
        the reason."""
        rows = [
            {
                "run_id": r.run_id,
                "ok": r.ok,
                "reason": r.reason,
                "name": r.name,
                "scenario": r.scenario_id,
                "title": r.title,
                "created": r.created,
                "rounds_done": r.rounds_done,
                "total_rounds": r.total_rounds,
                "model": r.model,
                "parent": r.parent.run_id if r.parent else "",
                "parent_round": r.parent.round if r.parent else None,
                "trial": r.trial.trial if r.trial else "",
                "seed": r.trial.seed if r.trial else None,
                "arm": r.trial.arm if r.trial else "",
            }
            for r in self.store.list_runs()
        ]
        return pandas().DataFrame(rows, columns=list(_LISTING))

    @property
    def trials(self) -> list[str]:
        """The ids of the trials saved here."""
        from ..studies.experiments.trial import TRIALS_DIR

        return sorted(p.stem for p in (self.store.root / TRIALS_DIR).glob("*.json"))

    def run(self, run_id: str) -> Run:
        return Run(self.store, run_id)

    def trial(self, trial_id: str) -> Trial:
        return Trial(self.store, trial_id)


_LISTING = (
    "run_id", "ok", "reason", "name", "scenario", "title", "created", "rounds_done",
    "total_rounds", "model", "parent", "parent_round", "trial", "seed", "arm",
)  # fmt: skip


def open_saves(saves: SaveStore | Path | str | None = None) -> Saves:
    """The saves folder ``saves`` (default: $SOCIALSIM_SAVES or ./saves)."""
    return Saves(_store(saves))


def open_run(run_id: str, saves: SaveStore | Path | str | None = None) -> Run:
    """The run ``run_id`` of the saves folder ``saves``."""
    return Run(_store(saves), run_id)


def open_trial(trial_id: str, saves: SaveStore | Path | str | None = None) -> Trial:
    """The trial ``trial_id`` of the saves folder ``saves``."""
    return Trial(_store(saves), trial_id)
