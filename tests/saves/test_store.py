"""The save layer: autosave, atomic writes, locks, branches, listing, read errors.

engine/saves/store.py and the save-related parts of engine/round/simulation.py.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import engine.saves.store
from engine import (
    ALL,
    FORMAT_VERSION,
    ForcedAction,
    Mode,
    RoundRecord,
    RunFinishedError,
    RunLockedError,
    SaveError,
    SaveStore,
    Scenario,
    Simulation,
    SocialsimError,
)
from engine.core.state import Pending
from engine.saves.headfile import HEAD_FILE
from engine.saves.roundfile import KEYFRAME_EVERY, RoundFile
from engine.saves.runfiles import INDEX_FILE, RunFiles
from engine.saves.runmeta import Lineage, RunMeta
from engine.saves.store import LOCK_FILE, META_FILE, ROUNDS_DIR, check_run_id

REPO = Path(__file__).resolve().parents[2]
SUBPROCESS_TIMEOUT = 20


# -- helpers ---------------------------------------------------------------------------


async def reference(scenario: Scenario, seed: int, rounds: int, total: int | None = None):
    """Records of an uninterrupted, unsaved run (round 0 first)."""
    sim = Simulation.new(scenario, seed=seed, rounds=total)
    await sim.run(rounds)
    return sim.records


async def played(
    store: SaveStore,
    scenario: Scenario,
    run_id: str,
    rounds: int,
    *,
    seed: int = 1,
    name: str = "",
    total: int | None = None,
) -> list[RoundRecord]:
    """Create a saved run, play ``rounds`` rounds, close it; its records."""
    sim = Simulation.new(scenario, seed=seed, store=store, run_id=run_id, name=name, rounds=total)
    try:
        await sim.run(rounds)
    finally:
        sim.close()
    return list(sim.records)


def tree(root: Path) -> dict[str, bytes | None]:
    """Every entry below ``root``: file bytes, or None for a folder."""
    if not root.exists():
        return {}
    return {
        p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


def round_path(store: SaveStore, run_id: str, number: int) -> Path:
    return store.run_dir(run_id) / ROUNDS_DIR / f"{number:06d}.json.gz"


def read_all(store: SaveStore, run_id: str) -> list[RoundRecord]:
    """Every round of a saved run, read from the save."""
    return list(store.history(run_id))


def meta_path(store: SaveStore, run_id: str) -> Path:
    return store.run_dir(run_id) / META_FILE


def edit_meta_doc(store: SaveStore, run_id: str, **changes: object) -> None:
    """Rewrite fields of run.json's single tinydb document."""
    path = meta_path(store, run_id)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["run"]["1"].update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")


def listing(store: SaveStore) -> dict:
    return {row.run_id: row for row in store.list_runs()}


def start(code: str, *args: str, stdin: int | None = None) -> subprocess.Popen[str]:
    """Run ``code`` in a fresh interpreter with the project importable."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        stdin=stdin,
        stdout=subprocess.PIPE,
        text=True,
    )


# -- autosave and resume -----------------------------------------------------------------


async def test_every_step_autosaves_its_round(store: SaveStore, mini: Scenario) -> None:
    sim = Simulation.new(mini, seed=3, store=store, run_id="auto")
    rounds_dir = store.run_dir("auto") / ROUNDS_DIR
    assert sorted(os.listdir(rounds_dir)) == ["000000.json.gz"]
    assert read_all(store, "auto") == sim.records
    try:
        for n in range(1, mini.rounds + 1):
            record = await sim.step()
            assert record.round == n
            assert sorted(p.name for p in rounds_dir.iterdir()) == [
                f"{i:06d}.json.gz" for i in range(n + 1)
            ]
            # gzip'd JSON holding this round; the state only in keyframes
            raw = json.loads(gzip.decompress(round_path(store, "auto", n).read_bytes()))
            assert raw["round"] == n
            assert (raw["keyframe"] is not None) == (n % KEYFRAME_EVERY == 0)
            assert store.read_round("auto", n) == record
            assert read_all(store, "auto") == sim.records
            row = listing(store)["auto"]
            assert (row.ok, row.rounds_done, row.total_rounds) == (True, n, mini.rounds)
        with pytest.raises(RunFinishedError):
            await sim.step()
        assert not round_path(store, "auto", mini.rounds + 1).exists()
    finally:
        sim.close()


@pytest.mark.parametrize("stop_at", [0, 2, 6])
async def test_resume_continues_like_an_uninterrupted_run(
    store: SaveStore, mini: Scenario, stop_at: int
) -> None:
    expected = await reference(mini, seed=11, rounds=7, total=7)
    saved = await played(store, mini, "r", stop_at, seed=11, total=7)
    assert saved == expected[: stop_at + 1]

    sim = Simulation.resume("r", store)
    try:
        assert sim.round == stop_at
        assert sim.total_rounds == 7
        assert sim.records == expected[: stop_at + 1]
        await sim.run()
        assert sim.round == 7
        assert sim.records == expected
    finally:
        sim.close()
    assert read_all(store, "r") == expected


async def test_extend_is_persisted(store: SaveStore, mini: Scenario) -> None:
    await played(store, mini, "r", mini.rounds)
    with Simulation.resume("r", store) as sim:
        assert sim.finished
        sim.extend(2)
    assert store.read_meta("r").total_rounds == mini.rounds  # no round played with it
    with Simulation.resume("r", store) as sim:
        sim.extend(2)
        await sim.step()
    assert store.read_meta("r").total_rounds == mini.rounds + 2  # saved with its round
    with Simulation.resume("r", store) as sim:
        assert not sim.finished
        await sim.run()
    assert listing(store)["r"].rounds_done == mini.rounds + 2


# -- atomicity -----------------------------------------------------------------------


def test_an_atomic_write_makes_its_folder_once_and_fails_where_none_can_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder is made when missing; a folder that takes no new file (/proc), or one
    that cannot be made, is the error at once, not a loop."""
    import secrets

    from engine.saves.atomic import atomic_write_bytes

    names: list[int] = []
    real = secrets.token_hex

    def counted(n: int) -> str:  # each try at a temporary file draws a name
        names.append(n)
        assert len(names) < 20, "atomic_write_bytes tries again and again"
        return real(n)

    monkeypatch.setattr(secrets, "token_hex", counted)
    atomic_write_bytes(tmp_path / "a" / "b" / "f.bin", b"x")
    assert (tmp_path / "a" / "b" / "f.bin").read_bytes() == b"x"
    with pytest.raises(FileNotFoundError):
        atomic_write_bytes(Path("/proc/socialsim-test.bin"), b"x")
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(OSError):
        atomic_write_bytes(tmp_path / "file" / "sub" / "f.bin", b"x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "file"]


async def test_failed_round_write_keeps_earlier_rounds(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = await reference(mini, seed=2, rounds=4)
    sim = Simulation.new(mini, seed=2, store=store, run_id="r")
    await sim.run(2)
    before = tree(store.root)
    real_replace = os.replace

    def disk_full(src, dst, *args, **kwargs):
        if Path(dst).name == "000003.json.gz":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(engine.saves.store.os, "replace", disk_full)
    try:
        with pytest.raises(SaveError, match=r"000003\.json\.gz.*No space left"):
            await sim.step()
        assert sim.round == 2
        # no half-written round and no temporary file left behind
        assert tree(store.root) == before
        assert read_all(store, "r") == expected[:3]
        row = listing(store)["r"]
        assert (row.ok, row.rounds_done) == (True, 2)

        monkeypatch.setattr(engine.saves.store.os, "replace", real_replace)
        assert await sim.step() == expected[3]
        assert read_all(store, "r") == expected[:4]
    finally:
        sim.close()


class Killed(BaseException):
    """Stands for the process dying in the middle of a write."""


async def test_interrupted_write_leaves_old_file_and_no_temp(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = await played(store, mini, "r", 2)
    meta_before = meta_path(store, "r").read_bytes()

    def killed(src, dst, *args, **kwargs):
        raise Killed

    monkeypatch.setattr(engine.saves.store.os, "replace", killed)
    fake = store.files("r").read(2).model_copy(update={"round": 3})
    with pytest.raises(Killed):
        store.files("r").write(fake)
    meta = store.read_meta("r")
    with pytest.raises(Killed):
        store.write_meta(meta.model_copy(update={"name": "renamed"}))
    monkeypatch.undo()

    assert sorted(os.listdir(store.run_dir("r") / ROUNDS_DIR)) == [
        "000000.json.gz",
        "000001.json.gz",
        "000002.json.gz",
    ]
    assert sorted(os.listdir(store.run_dir("r"))) == [
        LOCK_FILE,
        HEAD_FILE,
        INDEX_FILE,
        ROUNDS_DIR,
        META_FILE,
    ]
    assert meta_path(store, "r").read_bytes() == meta_before
    assert read_all(store, "r") == records


async def test_stray_temp_files_from_a_kill_are_ignored(store: SaveStore, mini: Scenario) -> None:
    expected = await reference(mini, seed=1, rounds=4)
    await played(store, mini, "r", 2, seed=1)
    run = store.run_dir("r")
    half = round_path(store, "r", 2).read_bytes()[:40]
    (run / ROUNDS_DIR / ".000003.json.gz.k1ll3d.tmp").write_bytes(half)
    (run / ".run.json.zz9x.tmp").write_text('{"run": {"1": {', encoding="utf-8")
    staging = store.root / ".other.ab12cd"  # a run being created when the kill came
    (staging / ROUNDS_DIR).mkdir(parents=True)
    (staging / META_FILE).write_text("{", encoding="utf-8")

    assert read_all(store, "r") == expected[:3]
    assert store.round_numbers("r") == [0, 1, 2]
    rows = store.list_runs()
    assert [(row.run_id, row.ok, row.rounds_done) for row in rows] == [("r", True, 2)]

    with Simulation.resume("r", store) as sim:
        assert sim.records == expected[:3]
        assert await sim.step() == expected[3]
    assert read_all(store, "r") == expected[:4]


@pytest.mark.parametrize("die_after", [1, 2, 3])
async def test_kill_right_after_any_file_replace_leaves_a_readable_run(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch, die_after: int
) -> None:
    """The process dies just after the n-th atomic replace of a step: whatever files
    it has replaced by then, the run must read and resume consistently."""
    # BUG (engine/saves/store.py _write_doc): with tinydb 4.9, upsert() of a new file first
    # writes an empty table (update() of a missing doc_id still writes), then inserts
    # the document in a second write; a kill between the two leaves a visible
    # rounds/000003.json holding {"round": {}}, and the whole run no longer reads.
    ref = Simulation.new(mini, seed=9)
    await ref.run(2)
    ref.inject("A storm.")
    await ref.run(2)

    sim = Simulation.new(mini, seed=9, store=store, run_id="r")
    await sim.run(2)
    sim.inject("A storm.")
    real_replace = os.replace
    replaced: list[str] = []

    def replace_then_die(src, dst, *args, **kwargs):
        real_replace(src, dst, *args, **kwargs)
        replaced.append(Path(dst).name)
        if len(replaced) == die_after:
            raise Killed

    monkeypatch.setattr(engine.saves.store.os, "replace", replace_then_die)
    with contextlib.suppress(Killed):
        await sim.step()
    monkeypatch.undo()
    sim.close()  # a dead process holds no lock

    records = read_all(store, "r")
    assert len(records) in (3, 4)
    assert records == ref.records[: len(records)]
    with Simulation.resume("r", store) as again:
        await again.run(4 - again.round)
        assert again.records == ref.records
        assert again.pending == Pending()


LONG_RUN = """
import asyncio, sys
from engine import SaveStore, Simulation

async def main():
    sim = Simulation.resume(sys.argv[2], SaveStore(sys.argv[1]))
    print("running", flush=True)
    while True:
        await sim.step()

asyncio.run(main())
"""


async def test_sigkilled_writer_leaves_a_consistent_save(store: SaveStore, mini: Scenario) -> None:
    Simulation.new(mini, seed=5, store=store, run_id="long", rounds=10_000).close()
    proc = start(LONG_RUN, str(store.root), "long")
    rounds_dir = store.run_dir("long") / ROUNDS_DIR
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "running"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if len(os.listdir(rounds_dir)) > 8:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "the writer died on its own"
    finally:
        proc.kill()
        proc.wait(timeout=SUBPROCESS_TIMEOUT)
        if proc.stdout is not None:
            proc.stdout.close()

    names = sorted(os.listdir(rounds_dir))
    visible = [n for n in names if re.fullmatch(r"\d{6}\.json\.gz", n)]
    # only hidden temporary files may be left over, never a partial round file
    assert all(n.startswith(".") and n.endswith(".tmp") for n in names if n not in visible)
    assert visible == [f"{i:06d}.json.gz" for i in range(len(visible))]
    for n in visible:
        text = gzip.decompress((rounds_dir / n).read_bytes())
        assert RoundFile.model_validate_json(text).round == int(n[:6])

    records = read_all(store, "long")
    done = len(records) - 1
    check = min(done, 40)
    assert records[: check + 1] == await reference(mini, 5, check, total=10_000)
    row = listing(store)["long"]
    assert (row.ok, row.rounds_done) == (True, done)

    # the kernel dropped the dead process's lock: the run opens and goes on
    with Simulation.resume("long", store) as sim:
        assert sim.round == done
        assert (await sim.step()).round == done + 1
    assert len(read_all(store, "long")) == done + 2


# -- lock ------------------------------------------------------------------------------


async def test_open_run_is_locked_in_process(store: SaveStore, mini: Scenario) -> None:
    sim = Simulation.new(mini, store=store, run_id="busy")
    await sim.step()
    with pytest.raises(RunLockedError, match=r"run 'busy' is open in another socialsim process"):
        Simulation.resume("busy", store)
    with pytest.raises(RunLockedError, match="busy"):
        store.delete("busy")
    assert read_all(store, "busy") == sim.records
    sim.close()
    sim.close()  # closing twice is harmless

    with Simulation.resume("busy", store) as again:
        assert again.round == 1
        with pytest.raises(RunLockedError):
            Simulation.resume("busy", store)
    Simulation.resume("busy", store).close()

    store.delete("busy")
    assert not store.run_dir("busy").exists()
    assert store.list_runs() == []
    Simulation.new(mini, store=store, run_id="busy").close()  # the id is free again


HOLD_LOCK = """
import sys
from engine import SaveStore

lock = SaveStore(sys.argv[1]).lock(sys.argv[2])
print("locked", flush=True)
sys.stdin.readline()
lock.release()
print("released", flush=True)
"""


async def test_run_locked_by_another_process(store: SaveStore, mini: Scenario) -> None:
    records = await played(store, mini, "shared", 2)
    proc = start(HOLD_LOCK, str(store.root), "shared", stdin=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(RunLockedError) as err:
            Simulation.resume("shared", store)
        assert "'shared'" in str(err.value)
        assert "another socialsim process" in str(err.value)
        with pytest.raises(RunLockedError):
            store.delete("shared")
        assert read_all(store, "shared") == records  # reading needs no lock
        assert listing(store)["shared"].ok
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "released"
    finally:
        proc.stdin.close()
        proc.wait(timeout=SUBPROCESS_TIMEOUT)
        proc.stdout.close()
    assert proc.returncode == 0
    with Simulation.resume("shared", store) as sim:
        assert sim.records == records
    store.delete("shared")
    assert not store.run_dir("shared").exists()


async def test_delete_unknown_run(store: SaveStore) -> None:
    with pytest.raises(SaveError, match="no run 'ghost'"):
        store.delete("ghost")
    assert not store.root.exists()


# -- branch ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parent_name", "default"), [("Main line", "Main line @ 2"), ("", "p @ 2")]
)
async def test_branch_copies_rounds_and_records_lineage(
    store: SaveStore, mini: Scenario, parent_name: str, default: str
) -> None:
    parent = await played(store, mini, "p", 4, seed=8, name=parent_name)
    child = store.branch("p", at_round=2)

    assert child.run_id != "p"
    assert child.run_id.startswith("mini-")
    assert child.name == default
    assert child.parent == Lineage(run_id="p", round=2)
    assert child.ancestry == [Lineage(run_id="p", round=2)]
    assert (child.seed, child.scenario, child.total_rounds) == (8, mini, mini.rounds)
    assert store.read_meta(child.run_id) == child
    assert read_all(store, child.run_id) == parent[:3]
    assert read_all(store, "p") == parent  # the parent is untouched
    row = listing(store)[child.run_id]
    assert (row.ok, row.rounds_done, row.parent, row.name) == (True, 2, child.parent, default)


async def test_branch_outlives_its_parent(store: SaveStore, mini: Scenario) -> None:
    parent = await played(store, mini, "p", 4, seed=8)
    store.branch("p", at_round=2, new_id="kid", name="What if")
    store.delete("p")

    assert store.read_meta("kid").name == "What if"
    assert read_all(store, "kid") == parent[:3]
    with Simulation.resume("kid", store) as sim:
        assert sim.lineage == [Lineage(run_id="p", round=2)]
        # same scenario and seed, no intervention: it replays the parent's round 3
        assert await sim.step() == parent[3]
    assert [row.run_id for row in store.list_runs()] == ["kid"]


@pytest.mark.parametrize("at_round", [5, 99, -1])
async def test_branch_outside_the_run_is_refused(
    store: SaveStore, mini: Scenario, at_round: int
) -> None:
    await played(store, mini, "p", 4)
    before = tree(store.root)
    with pytest.raises(SaveError, match=r"rounds 0\.\.4"):
        store.branch("p", at_round=at_round)
    assert tree(store.root) == before


async def test_branch_to_a_taken_or_bad_id_writes_nothing(store: SaveStore, mini: Scenario) -> None:
    await played(store, mini, "p", 2)
    await played(store, mini, "q", 1)
    before = tree(store.root)
    with pytest.raises(SaveError, match="already exists"):
        store.branch("p", at_round=1, new_id="q")
    with pytest.raises(SaveError, match="not a plain name"):
        store.branch("p", at_round=1, new_id="../q")
    with pytest.raises(SaveError, match="no run 'nope'"):
        store.branch("nope", at_round=0)
    assert tree(store.root) == before


async def test_branch_of_a_branch_extends_ancestry(store: SaveStore, mini: Scenario) -> None:
    root = await played(store, mini, "root", 4)
    first = store.branch("root", at_round=3, new_id="b1")
    second = store.branch("b1", at_round=1, new_id="b2")
    assert first.ancestry == [Lineage(run_id="root", round=3)]
    assert second.parent == Lineage(run_id="b1", round=1)
    assert second.ancestry == [Lineage(run_id="root", round=3), Lineage(run_id="b1", round=1)]
    assert second.name == "root @ 3 @ 1"
    assert store.read_meta("b2").ancestry == second.ancestry
    assert read_all(store, "b2") == root[:2]


async def test_simulation_branch_opens_and_locks_the_child(
    store: SaveStore, mini: Scenario
) -> None:
    with Simulation.new(mini, seed=4, store=store, run_id="p") as sim:
        await sim.run(3)
        sim.inject("Rain.")
        with sim.branch(at_round=1, run_id="kid") as child:
            assert child.round == 1
            assert child.records == sim.records[:2]
            assert child.pending == Pending()  # the parent's queue stays with the parent
            with pytest.raises(RunLockedError):
                Simulation.resume("kid", store)
        assert sim.pending.events[0].text == "Rain."
    assert store.read_meta("kid").pending == Pending()


async def test_simulation_branch_reads_no_metadata(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The open run's metadata is held and the branch's was just written: neither
    ``run.json`` is read again (a large cast's takes a good part of a second)."""
    with Simulation.new(mini, seed=4, store=store, run_id="p") as sim:
        await sim.run(3)
        sim.inject("Rain.")
        read: list[str] = []
        real = SaveStore.read_meta

        def counted(self: SaveStore, run_id: str) -> RunMeta:
            read.append(run_id)
            return real(self, run_id)

        monkeypatch.setattr(SaveStore, "read_meta", counted)
        with sim.branch(run_id="kid") as child:
            assert read == []
            assert child.meta == real(store, "kid") and child.meta.parent == Lineage(
                run_id="p", round=3
            )
            assert child.pending.events[0].text == "Rain."  # carried: a fork at the last round


# -- list_runs -------------------------------------------------------------------------


async def test_a_branch_leaves_no_round_to_be_read_again_by_list(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linking a parent's round files into a branch moves their change time: both runs'
    verdicts follow, so the next listing reads no round file of either; a linked file
    replaced since is read again."""
    await played(store, mini, "parent", 4)
    store.list_runs()  # every round found sound once
    store.branch("parent", at_round=3, new_id="kid")
    reads: list[tuple[str, int]] = []
    load = RunFiles._load

    def counted(self: RunFiles, n: int, entry: object) -> object:
        reads.append((self.folder.name, n))
        return load(self, n, entry)  # type: ignore[arg-type]

    monkeypatch.setattr(RunFiles, "_load", counted)
    assert {r.run_id: r.ok for r in store.list_runs()} == {"parent": True, "kid": True}
    assert reads == []

    path = round_path(store, "kid", 1)  # rewritten whole: a new inode, the same bytes
    data = path.read_bytes()
    path.unlink()  # (the parent's file loses a link: its change time moves too)
    path.write_bytes(data)
    assert all(r.ok for r in store.list_runs())
    assert sorted(reads) == [("kid", 1), ("parent", 1)]


async def test_list_runs_flags_broken_entries_and_keeps_good_ones(
    store: SaveStore, mini: Scenario
) -> None:
    assert store.list_runs() == []  # no saves folder yet
    await played(store, mini, "good-a", 3, name="A")
    store.branch("good-a", at_round=1, new_id="good-b")
    await played(store, mini, "template", 3)
    good = {"good-a": tree(store.run_dir("good-a")), "good-b": tree(store.run_dir("good-b"))}

    def broken_copy(run_id: str) -> Path:
        shutil.copytree(store.run_dir("template"), store.root / run_id)
        return store.root / run_id

    broken_copy("garbage").joinpath(META_FILE).write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff garbage")
    path = broken_copy("cut-meta") / META_FILE
    path.write_bytes(path.read_bytes()[:50])
    broken_copy("empty-meta").joinpath(META_FILE).write_bytes(b"")
    broken_copy("foreign").joinpath(META_FILE).write_text('{"notes": ["buy milk"]}')
    broken_copy("foreign-list").joinpath(META_FILE).write_text("[1, 2, 3]")
    broken_copy("newer")
    edit_meta_doc(store, "newer", format_version=FORMAT_VERSION + 1)
    shutil.rmtree(broken_copy("no-rounds") / ROUNDS_DIR)
    (broken_copy("gap") / ROUNDS_DIR / "000002.json.gz").unlink()
    (store.root / "notes.txt").write_text("not a run")
    (store.root / "bad name").mkdir()
    (store.root / "-dash").mkdir()
    (store.root / ".hidden").mkdir()  # hidden entries (staging, trash) are not listed
    before = tree(store.root)

    rows = listing(store)

    # listing never writes into a run nor repairs one: it keeps its verdicts beside them
    after = tree(store.root)
    runs = {k: v for k, v in before.items() if not k.startswith(".verified")}
    assert {k: v for k, v in after.items() if not k.startswith(".verified")} == runs
    assert {k for k in after if k.startswith(".verified/")} == {
        f".verified/{r}.json" for r in ("good-a", "good-b", "template")
    }
    assert {k: tree(store.run_dir(k)) for k in good} == good
    assert set(rows) == {
        "good-a",
        "good-b",
        "template",
        "garbage",
        "cut-meta",
        "empty-meta",
        "foreign",
        "foreign-list",
        "newer",
        "no-rounds",
        "gap",
        "notes.txt",
        "bad name",
        "-dash",
    }
    a, b = rows["good-a"], rows["good-b"]
    assert (a.ok, a.name, a.title, a.scenario_id) == (True, "A", mini.title, "mini")
    assert (a.rounds_done, a.total_rounds, a.model, a.parent) == (3, mini.rounds, "offline", None)
    assert (b.ok, b.rounds_done, b.parent) == (True, 1, Lineage(run_id="good-a", round=1))
    assert rows["template"].ok

    for run_id in ("garbage", "cut-meta", "empty-meta", "foreign", "foreign-list", "newer"):
        row = rows[run_id]
        assert not row.ok, run_id
        assert str(meta_path(store, run_id)) in row.reason, row.reason
    assert "newer socialsim" in rows["newer"].reason
    for run_id in ("no-rounds", "gap"):
        assert not rows[run_id].ok
        assert str(store.run_dir(run_id) / ROUNDS_DIR) in rows[run_id].reason
    for entry in ("notes.txt", "bad name", "-dash"):
        assert not rows[entry].ok
        assert rows[entry].reason == "not a socialsim run folder"
    # the good runs still read in full
    assert len(read_all(store, "good-a")) == 4
    assert len(read_all(store, "good-b")) == 2


@pytest.mark.parametrize("damage", ["truncated", "empty"])
async def test_list_runs_flags_a_damaged_round_file(
    store: SaveStore, mini: Scenario, damage: str
) -> None:
    # BUG (engine/saves/store.py SaveStore._listing): only run.json and the round file
    # names are checked, so a run whose round file is truncated is listed as ok
    # although read_rounds and Simulation.resume fail on it.
    await played(store, mini, "good", 2)
    await played(store, mini, "hurt", 3)
    last = round_path(store, "hurt", 3)
    last.write_bytes(last.read_bytes()[:60] if damage == "truncated" else b"")
    with pytest.raises(SaveError, match=re.escape(str(last))):
        read_all(store, "hurt")

    rows = listing(store)
    assert rows["good"].ok
    assert not rows["hurt"].ok
    assert str(last) in rows["hurt"].reason


FOREIGN_SHAPED = ['{"%s": 1}', '{"%s": []}', '{"%s": {"1": "text"}}', '{"%s": {"x": {}}}']


@pytest.mark.parametrize("text", FOREIGN_SHAPED)
async def test_foreign_json_with_our_table_name_is_a_save_error(
    store: SaveStore, mini: Scenario, text: str
) -> None:
    # BUG (engine/saves/store.py _read_doc): tinydb is handed a table that is not a dict of
    # dict documents and raises AttributeError/ValueError, which escapes read_meta,
    # read_round and list_runs (only SaveError is caught there).
    await played(store, mini, "good", 1)
    await played(store, mini, "meta", 1)
    await played(store, mini, "round", 1)
    meta_path(store, "meta").write_text(text % "run")
    round_path(store, "round", 1).write_text(text % "round")

    with pytest.raises(SaveError, match=re.escape(str(meta_path(store, "meta")))):
        store.read_meta("meta")
    with pytest.raises(SaveError, match=re.escape(str(round_path(store, "round", 1)))):
        read_all(store, "round")
    rows = listing(store)
    assert rows["good"].ok
    assert not rows["meta"].ok


# -- read errors -----------------------------------------------------------------------

BAD_FILES = {
    "garbage": b"\x00\xff\xfe not json at all",
    "not-json": b"this is not { json",
    "empty": b"",
    "blank": b"  \n\t ",
    "list": b"[1, 2, 3]",
    "string": b'"hello"',
    "no-table": b'{"notes": {"1": {"a": 1}}}',
    "two-records": b'{"run": {"1": {}, "2": {}}, "round": {"1": {}, "2": {}}}',
    "wrong-fields": b'{"run": {"1": {"format_version": 1, "colour": "red"}},'
    b' "round": {"1": {"colour": "red"}}}',
}


@pytest.mark.parametrize("content", [*BAD_FILES.values(), "truncated"], ids=[*BAD_FILES, "cut"])
async def test_bad_run_json_is_a_save_error_naming_it(
    store: SaveStore, mini: Scenario, content: bytes | str
) -> None:
    await played(store, mini, "r", 1)
    path = meta_path(store, "r")
    if content == "truncated":
        content = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(content)
    before = tree(store.root)

    with pytest.raises(SaveError, match=re.escape(str(path))):
        store.read_meta("r")
    with pytest.raises(SaveError, match=re.escape(str(path))) as err:
        Simulation.resume("r", store)
    assert not isinstance(err.value, RunLockedError)
    with pytest.raises(SaveError, match=re.escape(str(path))):
        store.branch("r", at_round=0)
    assert tree(store.root) == before


@pytest.mark.parametrize("content", [*BAD_FILES.values(), "truncated"], ids=[*BAD_FILES, "cut"])
async def test_bad_round_file_is_a_save_error_naming_it(
    store: SaveStore, mini: Scenario, content: bytes | str
) -> None:
    await played(store, mini, "r", 3)
    path = round_path(store, "r", 2)
    if content == "truncated":
        content = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(content)

    with pytest.raises(SaveError, match=re.escape(str(path))):
        store.read_round("r", 2)
    with pytest.raises(SaveError, match=re.escape(str(path))):
        read_all(store, "r")
    with pytest.raises(SaveError, match=re.escape(str(path))):
        Simulation.resume("r", store)
    store.lock("r").release()  # the failed resume let go of the lock
    store.branch("r", at_round=1, new_id="early")  # rounds before the damage still branch
    with pytest.raises(SaveError, match=re.escape(str(path))):
        store.branch("r", at_round=2, new_id="late")
    assert not store.run_dir("late").exists()


async def test_round_file_holding_another_round(store: SaveStore, mini: Scenario) -> None:
    await played(store, mini, "r", 3)
    shutil.copyfile(round_path(store, "r", 2), round_path(store, "r", 1))
    with pytest.raises(SaveError, match=r"000001\.json\.gz: damaged round file"):
        read_all(store, "r")  # its size and checksum are not the index's
    (store.run_dir("r") / INDEX_FILE).unlink()
    with pytest.raises(SaveError, match=r"000001\.json\.gz: holds round 2, expected 1"):
        read_all(store, "r")


async def test_save_from_a_newer_socialsim(store: SaveStore, mini: Scenario) -> None:
    await played(store, mini, "r", 1)
    edit_meta_doc(store, "r", format_version=FORMAT_VERSION + 1, new_field={"x": 1})
    path = meta_path(store, "r")
    with pytest.raises(SaveError, match="newer socialsim") as err:
        store.read_meta("r")
    assert str(path) in str(err.value)
    assert f"save format {FORMAT_VERSION + 1}" in str(err.value)
    with pytest.raises(SaveError, match="newer socialsim"):
        Simulation.resume("r", store)
    assert "newer socialsim" in listing(store)["r"].reason


@pytest.mark.parametrize("missing", [[2], [0], [1, 2, 3]])
async def test_missing_rounds_are_a_save_error(
    store: SaveStore, mini: Scenario, missing: list[int]
) -> None:
    await played(store, mini, "r", 4)
    for n in missing:
        round_path(store, "r", n).unlink()
    with pytest.raises(SaveError, match="rounds are missing"):
        read_all(store, "r")
    with pytest.raises(SaveError, match="rounds are missing"):
        Simulation.resume("r", store)
    store.lock("r").release()  # not left locked by the failed resume
    assert not listing(store)["r"].ok


async def test_copied_run_folder_never_writes_into_the_original(
    store: SaveStore, mini: Scenario
) -> None:
    # BUG (engine/saves/store.py read_meta / Simulation): run.json's run_id is trusted over
    # the folder name, so resuming a copied or renamed run folder (a user's backup)
    # locks the copy but appends rounds and run.json updates to the original folder.
    await played(store, mini, "orig", 2)
    shutil.copytree(store.run_dir("orig"), store.root / "backup")
    original = tree(store.run_dir("orig"))
    try:
        sim = Simulation.resume("backup", store)
    except SaveError:
        pass  # refusing a folder whose run.json names another run is acceptable too
    else:
        with sim:
            await sim.step()
            sim.inject("Someone knocks.")
        assert len(read_all(store, "backup")) == 4
        assert store.read_meta("backup").pending.events[0].text == "Someone knocks."
    assert tree(store.run_dir("orig")) == original


async def test_unknown_run(store: SaveStore) -> None:
    with pytest.raises(SaveError, match="no run 'ghost'"):
        store.read_meta("ghost")
    with pytest.raises(SaveError, match="no run 'ghost'"):
        Simulation.resume("ghost", store)
    assert not store.root.exists()


# -- run ids ---------------------------------------------------------------------------

BAD_IDS = ["../x", "a/b", ".hidden", "", "x" * 200, "x" * 81, "..", "a..b", "/etc", "a b"]
BAD_IDS += ["a\\b", "run\n", "-dash", "_under", "ü"]


@pytest.mark.parametrize("run_id", BAD_IDS)
async def test_bad_run_ids_are_rejected(
    store: SaveStore, mini: Scenario, tmp_path: Path, run_id: str
) -> None:
    before = tree(tmp_path)
    with pytest.raises(SaveError, match="not a plain name"):
        check_run_id(run_id)
    with pytest.raises(SaveError, match="not a plain name"):
        store.run_dir(run_id)
    with pytest.raises(SaveError, match="not a plain name"):
        Simulation.new(mini, store=store, run_id=run_id)
    for call in (store.read_meta, store.delete, store.exists, store.history):
        with pytest.raises(SaveError, match="not a plain name"):
            call(run_id)
    assert tree(tmp_path) == before
    assert not store.root.exists()


@pytest.mark.parametrize("run_id", ["a", "x" * 80, "tavern-20261130-094512-3fa2", "v1.2_b"])
async def test_plain_run_ids_are_accepted(store: SaveStore, mini: Scenario, run_id: str) -> None:
    assert check_run_id(run_id) == run_id
    assert store.run_dir(run_id) == store.root / run_id
    Simulation.new(mini, store=store, run_id=run_id).close()
    assert store.exists(run_id)


async def test_new_run_never_overwrites(store: SaveStore, mini: Scenario) -> None:
    await played(store, mini, "r", 2)
    before = tree(store.root)
    with pytest.raises(SaveError, match="already exists"):
        Simulation.new(mini, store=store, run_id="r")
    assert tree(store.root) == before


# -- pending interventions and snapshots ---------------------------------------------


async def test_pending_interventions_survive_a_restart(store: SaveStore, mini: Scenario) -> None:
    with Simulation.new(mini, seed=6, store=store, run_id="r") as sim:
        await sim.step()
        sim.force(ForcedAction(agent="Bob", mode=Mode.PUBLIC, target=ALL, utterance="We're broke."))
        sim.inject("A letter arrives.", private_to=["Cy"])
        queued = sim.pending
        meta = store.read_meta("r")
        assert (meta.pending, meta.pending_round) == (queued, 2)

    with Simulation.resume("r", store) as sim:
        assert sim.pending == queued
        assert [f.agent for f in sim.pending.forced] == ["Bob"]
        assert sim.pending.events[0].private_to == ["Cy"]
        record = await sim.step()
        bob = next(a for a in record.actions if a.speaker == "Bob")
        assert (bob.forced, bob.utterance, bob.mode, bob.target) == (
            True,
            "We're broke.",
            Mode.PUBLIC,
            ALL,
        )
        letter = [e for e in record.events if e.text == "A letter arrives."]
        assert len(letter) == 1
        assert (letter[0].source, letter[0].private_to) == ("injected", ["Cy"])
        # used up by the round
        assert sim.pending == Pending()
        assert store.read_meta("r").pending == Pending()
        after = await sim.step()
        assert not any(a.forced for a in after.actions)
        assert all(e.source == "scripted" for e in after.events)

    with Simulation.resume("r", store) as sim:
        assert sim.pending == Pending()
    assert store.read_round("r", 2) == record


async def test_pending_not_replayed_after_a_crash_between_writes(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed after the round file was written but before run.json was cleared."""
    sim = Simulation.new(mini, seed=6, store=store, run_id="r")
    await sim.step()
    sim.inject("The lights go out.")

    def crash(meta: object) -> None:
        raise SaveError("killed")

    monkeypatch.setattr(store, "write_meta", crash)
    with pytest.raises(SaveError, match="killed"):
        await sim.step()
    sim.close()
    monkeypatch.undo()
    stale = store.read_meta("r")
    assert stale.pending.events and stale.pending_round == 2  # the file still has the queue
    assert store.read_round("r", 2).events[-1].text == "The lights go out."

    with Simulation.resume("r", store) as again:
        assert again.round == 2
        assert again.pending == Pending()
        record = await again.step()
    assert all(e.text != "The lights go out." for e in record.events)


async def test_snapshots_are_persisted(store: SaveStore, mini: Scenario) -> None:
    with Simulation.new(mini, store=store, run_id="r") as sim:
        await sim.run(2)
        first = sim.snapshot("  before the vote ")
        assert (first.name, first.round) == ("before the vote", 2)
        await sim.step()
        second = sim.snapshot("after")
        before = tree(store.root)
        with pytest.raises(SocialsimError, match="name is empty"):
            sim.snapshot("   ")
        assert tree(store.root) == before
    assert store.read_meta("r").snapshots == [first, second]
    with Simulation.resume("r", store) as sim:
        assert sim.meta.snapshots == [first, second]
    assert store.branch("r", at_round=2, new_id="b").snapshots == [first]
    assert store.read_meta("b").snapshots == [first]
    assert store.branch("r", at_round=1, new_id="c").snapshots == []
