"""Saved runs in the order ``list`` and the app's run browser show them, and their
snapshots in a few words (no textual here: the CLI uses it too)."""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from engine import RunListing


def newest_first(rows: list[RunListing]) -> list[RunListing]:
    """Readable runs by creation time, newest first (ties by id), the runs of a trial
    together where its newest run falls; broken entries last."""
    readable = [r for r in rows if r.ok]
    newest: dict[str, str] = {}
    for r in readable:
        if r.trial is not None:
            newest[r.trial.trial] = max(newest.get(r.trial.trial, ""), r.created)

    def key(r: RunListing) -> tuple[str, str, str, str]:
        trial = r.trial.trial if r.trial else ""
        return (newest.get(trial, r.created), trial, r.created, r.run_id)

    return sorted(readable, key=key, reverse=True) + [r for r in rows if not r.ok]


@dataclass(frozen=True)
class TrialRuns:
    """The runs a trial made, folded into one row (``list``, the app's run browser)."""

    trial: str
    runs: tuple[RunListing, ...]

    @property
    def scenario(self) -> str:
        return self.runs[0].scenario_id or self.runs[0].title

    @property
    def model(self) -> str:
        return self.runs[0].model

    @property
    def created(self) -> str:
        return max(r.created for r in self.runs)

    def about(self) -> str:
        """``4 arms × 20 seeds, 100 runs (3 playing or stopped)``."""
        links = [r.trial for r in self.runs if r.trial is not None]
        arms = {link.arm for link in links if link.arm}
        seeds = {link.seed for link in links}
        open_runs = sum(
            r.rounds_done < r.total_rounds for r in self.runs if r.trial and r.trial.arm
        )  # a prefix stops at the fork by design
        text = f"{len(arms)} arms × {len(seeds)} seeds, {len(self.runs)} runs"
        return text + (f" ({open_runs} not finished)" if open_runs else "")


def folded(
    rows: list[RunListing], expanded: Container[str] | bool = False
) -> list[RunListing | TrialRuns]:
    """:func:`newest_first`'s rows with each trial's runs folded into one
    :class:`TrialRuns` where it falls, unless the trial is ``expanded`` (True: every trial);
    an expanded trial is its :class:`TrialRuns` followed by its runs."""
    out: list[RunListing | TrialRuns] = []
    ordered = newest_first(rows)
    k = 0
    while k < len(ordered):
        row = ordered[k]
        if not row.ok or row.trial is None:
            out.append(row)
            k += 1
            continue
        end = k
        while end < len(ordered) and _trial(ordered[end]) == row.trial.trial:
            end += 1
        group = TrialRuns(row.trial.trial, tuple(ordered[k:end]))
        out.append(group)
        if expanded is True or (expanded is not False and group.trial in expanded):
            out.extend(group.runs)
        k = end
    return out


def _trial(row: RunListing) -> str | None:
    return row.trial.trial if row.ok and row.trial is not None else None


def snapshot_names(row: RunListing) -> str:
    """``before the vote@3, after@7``: the run's named snapshots and their rounds."""
    return ", ".join(f"{s.name}@{s.round}" for s in row.snapshots)


def short_parent(row: RunListing) -> str:
    """The parent as ``…004941-bec4@3``: the dash-separated parts it shares with the run's
    own id (scenario, date) left out, so the column stays narrow; ``—`` for none."""
    if row.parent is None:
        return "—"
    mine, theirs = row.run_id.split("-"), row.parent.run_id.split("-")
    same = 0
    # The time and the four hex digits stay: a branch made in the parent's second still
    # shows when its parent was made.
    while same < min(len(mine), len(theirs)) - 2 and mine[same] == theirs[same]:
        same += 1
    shown = "-".join(theirs[same:])
    return f"{'…' if same else ''}{shown}@{row.parent.round}"
