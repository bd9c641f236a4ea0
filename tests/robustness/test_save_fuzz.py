"""The corrupted-save fuzz: seeded runs corrupted every way save_corruptions.py knows, each
case run through ``list``, ``show``, ``show --round``, ``resume``, ``branch``, ``export``,
``diff`` and opening it in the app. Every command ends in a result or one error line with
exit 2: no traceback, no hang (each command has a time limit), no readable round lost,
nothing written into a damaged run, and ``list`` flags every damaged run.

The small variant (one case of each corruption) runs with the suite; the full one
(``SOCIALSIM_FUZZ_CASES`` cases, 2,000 by default) behind the slow marker. Both print
their table: cases and outcomes per command.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine import SaveStore
from engine.errors import SocialsimError

from .save_corruptions import CORRUPTIONS, ROUNDS, Expect, cases

#: Seconds a command may take before it counts as a hang (reading 12 rounds takes a
#: fraction of one; a blocked open never ends).
TIME_LIMIT = 60
COMMANDS = ("list", "show", "show --round", "resume", "branch", "export", "diff", "app")
ERROR = "socialsim: error: "


class Hang(Exception):
    """A command ran past its time limit."""


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saves folder with A and B (tavern, seeds 1 and 2) and H (hospital), 12 rounds."""
    from engine.core.scenario import load_library
    from engine.round.simulation import Simulation

    saves = tmp_path_factory.mktemp("fuzz") / "saves"
    store = SaveStore(saves)

    async def play(scenario_id: str, run_id: str, seed: int) -> None:
        sim = Simulation.new(
            load_library(scenario_id), seed=seed, store=store, run_id=run_id, rounds=ROUNDS
        )
        try:
            await sim.run()
        finally:
            sim.close()

    for scenario_id, run_id, seed in (("tavern", "A", 1), ("tavern", "B", 2), ("hospital", "H", 1)):
        asyncio.run(play(scenario_id, run_id, seed))
    return saves


def snapshot(folder: Path) -> dict[str, tuple[int, bytes | None]]:
    """What a run folder holds: each entry's type and, for a regular file, its bytes (the
    lock file aside, which only locks)."""
    found: dict[str, tuple[int, bytes | None]] = {}
    for path in sorted(folder.rglob("*")):
        if path.name == ".lock":
            continue
        mode = path.lstat().st_mode
        regular = path.is_file() and not path.is_symlink()
        found[str(path.relative_to(folder))] = (mode >> 12, path.read_bytes() if regular else None)
    return found


def open_in_app(saves: Path) -> tuple[int, str]:
    """Open run A in the app (headless) as ``socialsim tui A`` does: (exit code, stderr)."""
    from tui.app import build_app

    try:
        app = build_app("A", saves=saves)
    except SocialsimError as err:
        return 2, f"{ERROR}{err}\n"

    async def look() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()

    asyncio.run(look())
    return 0, ""


def outcome(code: int, err: str) -> str:
    if code == 0:
        return "ok"
    if code == 2 and err.startswith(ERROR) and err.count("\n") == 1:
        return "damage (one line, exit 2)"
    return f"BAD exit {code}: {err[-300:]!r}"


def run_case(socialsim, saves: Path, seed: int, name: str, n: int, tmp: Path) -> dict[str, str]:
    """Corrupt A one way, run every command on it; the outcome of each command."""
    expect: Expect = CORRUPTIONS[name](random.Random(seed), saves, n)
    damaged = saves / "A"
    before = snapshot(damaged)
    (row,) = [r for r in SaveStore(saves).list_runs() if r.run_id == "A"]
    assert row.ok != expect.flagged, (name, n, row)
    assert "\n" not in row.reason
    at = expect.round - 1 if expect.round else 1
    argv = {
        "list": ["list"],
        "show": ["show", "A"],
        "show --round": ["show", "A", "--round", str(at)],
        "resume": ["resume", "A", "--rounds", "1", "-q"],
        "branch": ["branch", "A", "--at", str(at), "--run-id", "BR"],
        "export": ["export", "A", "--out", str(tmp / "export")],
        "diff": ["diff", "A", "B"],
    }
    results: dict[str, str] = {}
    for command in COMMANDS:
        try:
            with time_limit(TIME_LIMIT):
                if command == "app":
                    code, err = open_in_app(saves)
                else:
                    result = socialsim(*argv[command])
                    code, err = result.code, result.err
                results[command] = outcome(code, err)
        except Hang:
            results[command] = "HANG"
        except BaseException as err:  # a traceback: what the fuzz exists to find
            if isinstance(err, KeyboardInterrupt):
                raise
            results[command] = f"TRACEBACK {type(err).__name__}: {err}"[:300]
        if command == "resume" and results[command] == "ok":  # undamaged: play on, as asked
            before = snapshot(damaged)
        if command == "branch":
            shutil.rmtree(saves / "BR", ignore_errors=True)
    if expect.flagged:  # what reads or writes the whole run says it is damaged
        whole = ("show", "resume", "export", "diff", "app")
        assert all(results[c].startswith("damage") for c in whole), (name, results)
        assert snapshot(damaged) == before, f"{name}: something was written into damaged A"
    else:
        assert set(results.values()) == {"ok"}, (name, results)
    if expect.round is not None and expect.round > 0:  # the rounds before it stay readable
        assert results["show --round"] == "ok", (name, n, results)
        assert results["branch"] == "ok", (name, n, results)
    return results


def fuzz(socialsim, template: Path, tmp_path: Path, monkeypatch, count: int) -> None:
    table: dict[str, Counter[str]] = {c: Counter() for c in COMMANDS}
    kinds: Counter[str] = Counter()
    bad: list[str] = []
    for k, (seed, name, n) in enumerate(cases(count)):
        case = tmp_path / f"case{k}"
        saves = case / "saves"
        shutil.copytree(template, saves, symlinks=True)
        monkeypatch.setenv("SOCIALSIM_SAVES", str(saves))
        results = run_case(socialsim, saves, seed, name, n, case)
        kinds[name] += 1
        for command, result in results.items():
            table[command][result.split(":")[0]] += 1
            if result.startswith(("BAD", "HANG", "TRACEBACK")):
                bad.append(f"{name} @ round {n}: {command}: {result}")
        shutil.rmtree(case, ignore_errors=True)
    print_table(count, kinds, table)
    assert not bad, "\n".join(bad[:20])


def print_table(count: int, kinds: Counter[str], table: dict[str, Counter[str]]) -> None:
    out = sys.__stdout__ or sys.stdout
    print(f"\ncorrupted-save fuzz: {count} cases, {len(kinds)} corruptions", file=out)
    for name, k in sorted(kinds.items()):
        print(f"  {k:5d}  {name}", file=out)
    print(f"  {'command':14} " + "  ".join(f"{o:>26}" for o in _outcomes(table)), file=out)
    for command, outcomes in table.items():
        cells = "  ".join(f"{outcomes[o]:>26}" for o in _outcomes(table))
        print(f"  {command:14} {cells}", file=out)


def _outcomes(table: dict[str, Counter[str]]) -> list[str]:
    return sorted({o for outcomes in table.values() for o in outcomes})


def test_every_corruption_once(socialsim, template: Path, tmp_path: Path, monkeypatch) -> None:
    fuzz(socialsim, template, tmp_path, monkeypatch, len(CORRUPTIONS))


@pytest.mark.slow
def test_thousands_of_corruptions(socialsim, template: Path, tmp_path: Path, monkeypatch) -> None:
    count = int(os.environ.get("SOCIALSIM_FUZZ_CASES", "2000"))
    fuzz(socialsim, template, tmp_path, monkeypatch, count)
