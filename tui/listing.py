"""Saved runs in the order ``list`` and the app's run browser show them, and their
snapshots in a few words (no textual here: the CLI uses it too)."""

from __future__ import annotations

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
