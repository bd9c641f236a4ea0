"""SIGKILL a ``socialsim`` subprocess (run, resume, branch, export) at a random moment of
its life, then check the save: no finished round lost (every round the index lists reads
back and the run resumes), no leftover after the next open of the saves folder, and an
export either whole or absent.

Each trial kills at a uniform time in [0, 1.2 x the command's uncut duration], measured
first. A few trials per command run by default; ``-m slow`` runs ``SLOW_TRIALS`` more.
The seed is printed with every failure (``KILL_SEED`` chooses it).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from engine import SaveStore, Simulation
from engine.reports.card import FILE as CARD_FILE
from engine.reports.export import COLUMNS

TRIALS = 2
SLOW_TRIALS = 25
SEED = int(os.environ.get("KILL_SEED", "14"))
ROUNDS = "40"


def socialsim(saves: Path, *argv: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SOCIALSIM_SAVES": str(saves)}
    code = "import sys; from tui import cli; sys.argv[0] = 'socialsim'; cli.main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def finish(saves: Path, *argv: str) -> float:
    """Run a command to its end; its wall time."""
    start = time.perf_counter()
    proc = socialsim(saves, *argv)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    return time.perf_counter() - start


def kill_at(saves: Path, delay: float, *argv: str) -> bool:
    """Start a command and SIGKILL it after ``delay`` s; whether it was killed (not done)."""
    proc = socialsim(saves, *argv)
    killed = False
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        killed = True
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert "Traceback" not in err, err
    return killed


def check_saves(saves: Path, runs: dict[str, int]) -> list[Path]:
    """After the next open: no leftover, and each run in ``runs`` (id -> rounds known to
    be finished before the kill) holds them all, reads back and resumes. Returns the
    leftovers that open removed."""
    store = SaveStore(saves)
    cleaned = store.clean_leftovers()
    hidden = [p.name for p in saves.iterdir() if p.name.startswith(".") and p.name != ".verified"]
    assert hidden == [], hidden
    for folder in (f for f in saves.iterdir() if f.name != ".verified"):
        temps = [
            p.name
            for p in [*folder.iterdir(), *(folder / "rounds").iterdir()]
            if p.name.endswith(".tmp")
        ]
        assert temps == [], (folder.name, temps)
    for run_id, floor in runs.items():
        if not store.exists(run_id):
            assert floor < 0, f"{run_id} lost"
            continue
        (row,) = [r for r in store.list_runs() if r.run_id == run_id]
        assert row.ok, row.reason
        files = store.files(run_id)
        entries, _ = files.index_lines()
        for entry in entries:
            files.read(entry.round, entry)
        history = store.history(run_id)
        assert len(history) - 1 >= floor
        assert history[len(history) - 1].round == len(history) - 1
        with Simulation.resume(run_id, store) as sim:
            before = sim.round
            sim.extend(1)
            asyncio.run(sim.step())
            assert sim.round == before + 1
    return cleaned


#: (command, outcome) -> trials, printed after each test (``-s`` shows it).
TALLY: Counter[tuple[str, str]] = Counter()


def note(kind: str, killed: bool, cleaned: list[Path], result: str) -> None:
    outcome = ("killed" if killed else "finished") + f", {result}"
    if cleaned:
        outcome += f", {len(cleaned)} leftover(s) cleaned"
    TALLY[kind, outcome] += 1


@pytest.fixture(autouse=True)
def _report():
    TALLY.clear()
    yield
    for (kind, outcome), count in sorted(TALLY.items()):
        print(f"\n{kind}: {count} x {outcome}", end="")


def export_set(out: Path) -> dict[str, bytes] | None:
    if not out.exists():
        return None
    return {p.name: p.read_bytes() for p in out.iterdir()}


def trials(request: pytest.FixtureRequest) -> int:
    return SLOW_TRIALS if request.node.get_closest_marker("slow") else TRIALS


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    return random.Random(f"{SEED}:{request.node.name}")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saves folder holding a finished run ``base`` of ROUNDS rounds (a template)."""
    saves = tmp_path_factory.mktemp("template") / "saves"
    finish(saves, "run", "tavern", "--rounds", ROUNDS, "--run-id", "base", "-q")
    return saves


def fresh(template: Path, tmp_path: Path, k: int) -> Path:
    saves = tmp_path / f"saves{k}"
    shutil.copytree(template, saves, symlinks=True)
    return saves


def _kill_runs(tmp_path: Path, rng: random.Random, n: int) -> None:
    d = finish(tmp_path / "timing", "run", "tavern", "--rounds", ROUNDS, "--run-id", "t", "-q")
    for k in range(n):
        saves = tmp_path / f"saves{k}"
        delay = rng.uniform(0, 1.2 * d)
        killed = kill_at(saves, delay, "run", "tavern", "--rounds", ROUNDS, "--run-id", "k", "-q")
        done = len(SaveStore(saves).history("k")) - 1 if (saves / "k").exists() else None
        cleaned = check_saves(saves, {"k": -1}) if saves.exists() else []
        note("run", killed, cleaned, "no run folder" if done is None else f"{done} rounds")


def _kill_resumes(base: Path, tmp_path: Path, rng: random.Random, n: int) -> None:
    d = finish(fresh(base, tmp_path, -1), "resume", "base", "--rounds", ROUNDS, "-q")
    for k in range(n):
        saves = fresh(base, tmp_path, k)
        killed = kill_at(saves, rng.uniform(0, 1.2 * d), "resume", "base", "--rounds", ROUNDS, "-q")
        cleaned = check_saves(saves, {"base": int(ROUNDS)})
        note("resume", killed, cleaned, f"{len(SaveStore(saves).history('base')) - 2} rounds")


def _kill_branches(base: Path, tmp_path: Path, rng: random.Random, n: int) -> None:
    argv = ("branch", "base", "--at", "30", "--run-id", "b")
    d = finish(fresh(base, tmp_path, -1), *argv)
    for k in range(n):
        saves = fresh(base, tmp_path, k)
        killed = kill_at(saves, rng.uniform(0, 1.2 * d), *argv)
        cleaned = check_saves(saves, {"base": int(ROUNDS), "b": -1})
        made = (saves / "b").exists()
        if made:
            assert len(SaveStore(saves).history("b")) >= 31
        note("branch", killed, cleaned, "branch whole" if made else "branch absent")


def _kill_exports(base: Path, tmp_path: Path, rng: random.Random, n: int) -> None:
    ref = fresh(base, tmp_path, -1)
    old_out, new_out = tmp_path / "old", tmp_path / "new"
    finish(ref, "export", "base", "--out", str(old_out))
    finish(ref, "resume", "base", "--rounds", "5", "-q")
    d = finish(ref, "export", "base", "--out", str(new_out))
    old, new = export_set(old_out), export_set(new_out)
    assert old is not None and new is not None and old != new
    assert set(new) == {*(f"{name}.csv" for name in COLUMNS), CARD_FILE}
    for k in range(n):
        saves = tmp_path / f"saves{k}"
        shutil.copytree(ref, saves, symlinks=True)
        out = tmp_path / f"out{k}"
        if k % 2:  # over an earlier export: the old set or the new, never a mix
            shutil.copytree(old_out, out)
        killed = kill_at(saves, rng.uniform(0, 1.2 * d), "export", "base", "--out", str(out))
        got = export_set(out)
        assert got in (None, old, new) if k % 2 else got in (None, new)
        state = "absent" if got is None else "old set" if got == old else "new set"
        leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(f".out{k}.")]
        note("export", killed, leftovers, ("over an old one: " if k % 2 else "") + state)
        if leftovers:  # the next export to that folder removes them
            finish(saves, "export", "base", "--out", str(out))
            assert export_set(out) == new
            assert not [p for p in tmp_path.iterdir() if p.name.startswith(f".out{k}.")]
        check_saves(saves, {"base": int(ROUNDS) + 5})


KINDS = {
    "run": lambda base, tmp, rng, n: _kill_runs(tmp, rng, n),
    "resume": _kill_resumes,
    "branch": _kill_branches,
    "export": _kill_exports,
}


@pytest.mark.parametrize("kind", KINDS)
def test_a_kill_loses_no_round_and_leaves_nothing(kind, base, tmp_path, rng, request):
    KINDS[kind](base, tmp_path, rng, trials(request))


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_many_kills_lose_no_round_and_leave_nothing(kind, base, tmp_path, rng, request):
    KINDS[kind](base, tmp_path, rng, trials(request))
