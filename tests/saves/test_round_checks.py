"""Round files checked against their run, index lines against their checks, save files read
only as regular files; saves written before format 4 still read."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import shutil
import threading
import zlib
from pathlib import Path

import pytest
from test_store import edit_meta_doc, listing, played, read_all, round_path

from engine import SaveStore, Simulation
from engine.core.metrics import RepairCounter
from engine.core.scenario import Scenario
from engine.errors import SaveError
from engine.saves.agentcolumns import MovedNeeds
from engine.saves.columnar import EdgeColumns, StateFrame
from engine.saves.packed import pack_floats, pack_ints, unpack
from engine.saves.roundcheck import RunCheck, round_problem
from engine.saves.roundfile import PackedMarks, RepairMarks, RoundFile
from engine.saves.runmeta import FORMAT_VERSION
from engine.saves.verified import Verdicts, fingerprint
from engine.studies.labels.study import LabelError, load_study


def _doc(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def _as_format_3(store: SaveStore, run_id: str) -> None:
    """Rewrite a run as a socialsim before format 4 wrote it: no run id in its round files,
    no check on its index lines."""
    folder = store.run_dir(run_id)
    lines = []
    for path in sorted((folder / "rounds").iterdir()):
        doc = _doc(path)
        del doc["run"]
        data = gzip.compress(json.dumps(doc, separators=(",", ":")).encode(), 1, mtime=0)
        path.write_bytes(data)
        entry = json.loads((folder / "index.jsonl").read_text().splitlines()[int(path.name[:6])])
        del entry["check"]
        entry.update(size=len(data), crc=zlib.crc32(data))
        lines.append(json.dumps(entry, separators=(",", ":")))
    (folder / "index.jsonl").write_text("".join(f"{line}\n" for line in lines))
    edit_meta_doc(store, run_id, format_version=3)


async def test_a_format_3_save_reads_lists_and_resumes(store: SaveStore, mini: Scenario) -> None:
    played_records = await played(store, mini, "old", 3, total=6)
    _as_format_3(store, "old")
    assert listing(store)["old"].ok
    assert read_all(store, "old") == played_records
    with Simulation.resume("old", store) as sim:
        await sim.run(2)
    folder = store.run_dir("old")
    lines = (folder / "index.jsonl").read_text().splitlines()
    assert ['"check"' in line for line in lines] == [False] * 4 + [True] * 2
    assert [_doc(round_path(store, "old", n)).get("run") for n in range(6)] == [None] * 4 + [
        "old"
    ] * 2
    assert store.read_meta("old").format_version == FORMAT_VERSION
    assert listing(store)["old"].ok and len(read_all(store, "old")) == 6


async def test_round_files_carry_their_writers_id_through_branches(
    store: SaveStore, mini: Scenario
) -> None:
    await played(store, mini, "a", 4)
    store.branch("a", at_round=3, new_id="b")
    with Simulation.resume("b", store) as sim:
        await sim.run(2)
    store.branch("b", at_round=4, new_id="c")
    runs = [_doc(round_path(store, "c", n))["run"] for n in range(5)]
    assert runs == ["a", "a", "a", "b", "c"]
    check = RunCheck.of(store.read_meta("c"), "c")
    assert [check.owner(n) for n in range(6)] == ["a", "a", "a", "b", "c", "c"]
    assert all(row.ok for row in listing(store).values())
    assert len(read_all(store, "c")) == 5


async def test_a_copied_run_reads_and_resumes_with_its_old_rounds(
    store: SaveStore, mini: Scenario
) -> None:
    await played(store, mini, "orig", 2, total=5)
    shutil.copytree(store.run_dir("orig"), store.root / "copy")
    with Simulation.resume("copy", store) as sim:
        await sim.run(1)
    assert store.read_meta("copy").aliases == ["orig"]  # kept in run.json by the resume
    assert listing(store)["copy"].ok and len(read_all(store, "copy")) == 4
    assert _doc(round_path(store, "copy", 3))["run"] == "copy"


def _forged(store: SaveStore, run_id: str, n: int, doc: dict) -> None:
    """Write ``doc`` as round ``n`` and fix the index line up to match it."""
    data = gzip.compress(json.dumps(doc).encode(), 1, mtime=0)
    round_path(store, run_id, n).write_bytes(data)
    index = store.run_dir(run_id) / "index.jsonl"
    lines = index.read_text().splitlines()
    entry = json.loads(re.sub(r',"check":\d+\}$', "}", lines[n]))
    entry.update(size=len(data), crc=zlib.crc32(data))
    body = json.dumps(entry, separators=(",", ":"))
    lines[n] = body[:-1] + f',"check":{zlib.crc32(body.encode())}}}'
    index.write_text("".join(f"{line}\n" for line in lines))


def _as_format_5(doc: dict, names: list[str]) -> dict:
    """The round file ``doc`` as format 5 wrote it: its relation changes and keyframe as
    coded columns."""
    file = RoundFile.model_validate(doc)
    edges = EdgeColumns.of_changes(file.changes(names))
    doc = {**doc, "edges": json.loads(edges.model_dump_json())}
    del doc["packed"]
    if file.keyframe is not None:
        frame = StateFrame.of(file.keyframe.columns())
        doc["keyframe"] = {"frame": json.loads(frame.model_dump_json())}
        doc["keyframe"]["repair"] = file.keyframe.model_dump(mode="json")["repair"]
    return doc


def _packed(doc: dict, key: str, edit) -> None:
    """Edit ``doc``'s packed column ``key`` as a list of numbers."""
    values = unpack(doc[key]).tolist()
    edit(values)
    floats = any(isinstance(v, float) for v in values)
    doc[key] = pack_floats(values, 6) if floats else pack_ints(values)


async def test_a_format_5_round_reads_as_it_was_played(store: SaveStore, mini: Scenario) -> None:
    records = await played(store, mini, "r", 11, total=12)
    for n in (10, 11):
        _forged(store, "r", n, _as_format_5(_doc(round_path(store, "r", n)), list(mini.names)))
    assert read_all(store, "r") == records
    with Simulation.resume("r", store) as sim:
        await sim.run(1)
    assert listing(store)["r"].ok and len(read_all(store, "r")) == 13


FORGED_ROUNDS = [
    (lambda d: d.update(run="elsewhere"), "a round of run 'elsewhere', not of this run"),
    (lambda d: d["emotion_changes"][0].update(agent="Zed"), "'Zed', who is not in this"),
    (lambda d: d["emotion_changes"].append(d["emotion_changes"][0]), "emotion twice"),
    (lambda d: d["moved"]["kinds"].__setitem__(0, "flying"), "the need 'flying'"),
    (lambda d: d.update(round=7), "holds round 7, expected 2"),
]
FORGED_IDS = ["run id", "stranger", "twice", "need", "round"]


def _self(doc: dict) -> None:
    first = unpack(doc["packed"]["source"])[0]
    _packed(doc["packed"], "target", lambda v: v.__setitem__(0, int(first)))


def _edge_twice(doc: dict) -> None:
    """The second changed edge made the first one again."""
    for key in ("source", "target"):
        first = int(unpack(doc["packed"][key])[0])
        _packed(doc["packed"], key, lambda v, first=first: v.__setitem__(1, first))


def _as_format_9(doc: dict) -> dict:
    """The round file ``doc`` as format 9 wrote it: its need changes as objects of objects."""
    need_deltas, needs = MovedNeeds.model_validate(doc["moved"]).tables()
    doc = {**doc, "need_deltas": need_deltas, "needs": needs}
    del doc["moved"]
    return doc


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        *FORGED_ROUNDS,
        (
            lambda d: _packed(d["packed"], "fav", list.pop),
            "relation columns have different lengths",
        ),
        (_self, "themself"),
        (
            lambda d: _packed(d["packed"], "delta", lambda v: v.__setitem__(0, float("inf"))),
            "not a number",
        ),
        (lambda d: _packed(d["packed"], "fav", lambda v: v.__setitem__(0, 1.5)), "outside -1..1"),
        (lambda d: _packed(d["packed"], "source", lambda v: v.__setitem__(0, 9)), "does not list"),
        (
            lambda d: _packed(d["packed"], "note", lambda v: v.__setitem__(0, 99)),
            "a note it does not",
        ),
        (
            lambda d: d["packed"].update(names=["Zed", *d["packed"]["names"][1:]]),
            "'Zed', who is not",
        ),
        (lambda d: d["packed"].update(fav="x2:AAAA"), "packed.fav"),
        (_edge_twice, "it changes one relation twice"),
        (
            lambda d: _packed(d["moved"], "delta", lambda v: v.__setitem__(0, float("inf"))),
            "a need change is not a number",
        ),
        (lambda d: d["moved"]["agents"].__setitem__(0, "Zed"), "'Zed', who is not in this"),
        (lambda d: d["moved"]["agents"].pop(), "counts do not fit their agents"),
        (lambda d: _packed(d["moved"], "count", lambda v: v.__setitem__(0, v[0] + 1)), "differ"),
        (lambda d: _packed(d["moved"], "kind", lambda v: v.__setitem__(0, 99)), "not among"),
        (
            lambda d: _packed(d["moved"], "current", lambda v: v.__setitem__(0, 10.5)),
            "a moved need's value outside 0..10",
        ),
        (lambda d: d.update(need_deltas={"Ann": {}}), "its need changes twice"),
    ],
    ids=[
        *FORGED_IDS,
        *("uneven", "self", "inf", "fav", "index", "note", "names", "malformed"),
        *("edge twice", "need inf", "need stranger", "need agents", "need counts"),
        *("need kind", "need value", "needs twice"),
    ],
)
async def test_a_forged_round_is_damage_and_earlier_rounds_stay_readable(
    store: SaveStore, mini: Scenario, edit, problem: str
) -> None:
    await played(store, mini, "r", 4)
    doc = _doc(round_path(store, "r", 2))
    edit(doc)
    _forged(store, "r", 2, doc)
    _stays_readable_before(store, "r", problem)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        *FORGED_ROUNDS,
        (lambda d: d["edges"]["fav"].pop(), "relation columns have different lengths"),
        (
            lambda d: d["edges"]["target"].__setitem__(0, d["edges"]["source"][0]),
            "themself",
        ),
        (lambda d: d["edges"]["delta"].__setitem__(0, float("inf")), "not a number"),
    ],
    ids=[*FORGED_IDS, "uneven", "self", "inf"],
)
async def test_a_forged_format_5_round_is_damage(
    store: SaveStore, mini: Scenario, edit, problem: str
) -> None:
    await played(store, mini, "r", 4)
    doc = _as_format_5(_doc(round_path(store, "r", 2)), list(mini.names))
    edit(doc)
    _forged(store, "r", 2, doc)
    _stays_readable_before(store, "r", problem)


async def test_a_format_9_round_reads_as_it_was_played(store: SaveStore, mini: Scenario) -> None:
    """Need changes as format 9 wrote them (objects of objects) read as played, and a run
    holding them resumes."""
    records = await played(store, mini, "r", 3, total=5)
    for n in (1, 2, 3):
        _forged(store, "r", n, _as_format_9(_doc(round_path(store, "r", n))))
    assert read_all(store, "r") == records
    assert records[2].need_deltas and any(records[2].need_deltas.values())
    with Simulation.resume("r", store) as sim:
        await sim.run(1)
    assert listing(store)["r"].ok and len(read_all(store, "r")) == 5
    assert "moved" in _doc(round_path(store, "r", 4))


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda d: d["needs"].update(Ann={"flying": 3.0}), "the need 'flying'"),
        (lambda d: d["need_deltas"].update(Zed={}), "'Zed', who is not in this"),
        (lambda d: d["need_deltas"].update(Ann={"self_worth": float("inf")}), "not a number"),
    ],
    ids=["need", "stranger", "inf"],
)
async def test_a_forged_format_9_round_is_damage(
    store: SaveStore, mini: Scenario, edit, problem: str
) -> None:
    await played(store, mini, "r", 4)
    doc = _as_format_9(_doc(round_path(store, "r", 2)))
    edit(doc)
    _forged(store, "r", 2, doc)
    _stays_readable_before(store, "r", problem)


def _stays_readable_before(store: SaveStore, run_id: str, problem: str) -> None:
    """Round 2 of run ``run_id`` is damage (``problem``), rounds 0 and 1 read and branch."""
    with pytest.raises(SaveError, match=re.escape(problem)):
        store.history(run_id)[2]
    row = listing(store)[run_id]
    assert not row.ok and problem in row.reason and "000002.json.gz" in row.reason
    assert store.history(run_id)[1].round == 1
    store.branch(run_id, at_round=1, new_id="saved")
    assert len(read_all(store, "saved")) == 2
    with pytest.raises(SaveError, match=re.escape(problem)):
        store.branch(run_id, at_round=3, new_id="lost")
    with pytest.raises(SaveError, match=re.escape(problem)):
        Simulation.resume(run_id, store)


async def test_a_keyframe_of_another_cast_is_damage(store: SaveStore, mini: Scenario) -> None:
    await played(store, mini, "r", 1)
    doc = _doc(round_path(store, "r", 0))
    names = doc["keyframe"]["packed"]["names"]
    names[names.index("Cy")] = "Dee"
    _forged(store, "r", 0, doc)
    with pytest.raises(SaveError, match="keyframe names 'Dee'"):
        store.history("r")[0]


def _gap(frame: dict) -> None:
    """Empty a filled slot behind an earlier filled one of the same edge."""
    width, memory = frame["width"], frame["memory"]
    edge = next(k for k in range(0, len(memory), width) if min(memory[k : k + width]) >= 0)
    memory[edge + width - 1] = -1


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda f: f["fav"].pop(), "columns do not fit its cast"),
        (lambda f: f.update(status="9" + f["status"][1:]), "keyframe.frame.status"),
        (lambda f: f["memory"].__setitem__(f["memory"].index(0), 99), "a note its target"),
        (lambda f: f["fav"].__setitem__(0, 0.5), "regard for themself"),
        (lambda f: f["theta"].pop(), "agent columns do not fit"),
        (_gap, "has a gap"),
        (lambda f: f["notes"].update(Zed=[]), "'Zed', who is not in this"),
    ],
    ids=["short", "statuses", "note", "self", "agents", "gap", "stranger"],
)
async def test_a_forged_format_5_keyframe_is_damage(
    store: SaveStore, mini: Scenario, edit, problem: str | None
) -> None:
    """A keyframe's columns (save format 5) are checked against the run's cast before its
    state is used."""
    await played(store, mini, "r", 10, total=10)
    doc = _as_format_5(_doc(round_path(store, "r", 10)), list(mini.names))
    edit(doc["keyframe"]["frame"])
    _forged(store, "r", 10, doc)
    with pytest.raises(SaveError, match=re.escape(problem)):
        store.history("r")[10]
    assert store.history("r")[9].round == 9


def _one_agent_less(needs: dict) -> None:
    """Drop the last agent's needs (format 9's columns)."""
    for key in ("current", "expected"):
        _packed(needs, key, lambda v: v.__delitem__(slice(-len(needs["kinds"]), None)))


def _packed_gap(frame: dict) -> None:
    """Empty a filled slot behind an earlier filled one of the same edge (packed)."""
    width, memory = frame["width"], unpack(frame["memory"]).tolist()
    edge = next(k for k in range(0, len(memory), width) if min(memory[k : k + width]) > 0)
    _packed(frame, "memory", lambda m: m.__setitem__(edge + width - 1, 0))


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda f: _packed(f, "fav", list.pop), "columns do not fit its cast"),
        (lambda f: f.update(status="9" + f["status"][1:]), "keyframe.packed.status"),
        (lambda f: _packed(f, "memory", lambda m: m.__setitem__(0, 99)), "a note it does not"),
        (lambda f: _packed(f, "fav", lambda v: v.__setitem__(0, 0.5)), "regard for themself"),
        (lambda f: _packed(f, "fav", lambda v: v.__setitem__(1, -1.5)), "outside -1..1"),
        (lambda f: f["theta"].pop(), "agent columns do not fit"),
        (_packed_gap, "has a gap"),
        (lambda f: f.update(memory="i4:AAA"), "keyframe.packed.memory"),
        (lambda f: f["needs"]["kinds"].__setitem__(0, "flying"), "not the rules' needs"),
        (lambda f: f["needs"]["kinds"].__setitem__(0, f["needs"]["kinds"][1]), "kinds repeat"),
        (
            lambda f: _packed(f["needs"], "current", lambda v: v.__setitem__(0, 10.5)),
            "a need's value outside 0..10",
        ),
        (lambda f: _one_agent_less(f["needs"]), "agent columns do not fit"),
        (lambda f: _packed(f["needs"], "expected", list.pop), "do not fit their kinds"),
        (
            lambda f: _packed(f["notes"], "importance", lambda v: v.__setitem__(0, 11)),
            "importance is outside 1..10",
        ),
        (lambda f: f["notes"]["summary"].pop(), "columns differ in length"),
    ],
    ids=[
        *("short", "statuses", "note", "self", "fav", "agents", "gap", "malformed"),
        *("need kinds", "kinds twice", "need value", "needs short", "needs uneven"),
        *("importance", "notes uneven"),
    ],
)
async def test_a_forged_keyframe_is_damage(
    store: SaveStore, mini: Scenario, edit, problem: str | None
) -> None:
    """A keyframe's packed columns (save format 6) are checked against the run's cast
    before its state is used."""
    await played(store, mini, "r", 10, total=10)
    doc = _doc(round_path(store, "r", 10))
    edit(doc["keyframe"]["packed"])
    _forged(store, "r", 10, doc)
    with pytest.raises(SaveError, match=re.escape(problem)):
        store.history("r")[10]
    assert store.history("r")[9].round == 9


def test_repair_marks_as_bit_rows_give_back_the_counter_in_any_order_of_the_cast() -> None:
    """Format 7 keeps the repair counter as bit rows (format 6 named every agent of every
    mask); read back in the keyframe's order or another, it is the counter written."""
    rng = random.Random(4)
    names = [f"a{k}" for k in range(19)]
    n, everyone = len(names), (1 << len(names)) - 1
    fell = [rng.getrandbits(n) & everyone & ~(1 << i) for i in range(n)]
    friendly = [rng.getrandbits(n) & everyone & ~(1 << i) for i in range(n)]
    counter = RepairCounter(n, fell, friendly)
    packed = PackedMarks.model_validate_json(PackedMarks.of(counter, names).model_dump_json())
    back = packed.counter(names)
    assert (back.fell, back.was_friendly) == (fell, friendly)
    shuffled = rng.sample(names, n)
    named = RepairMarks(
        fell={a: [b for j, b in enumerate(names) if fell[i] >> j & 1] for i, a in enumerate(names)},
        never_friendly={
            a: [b for j, b in enumerate(names) if j != i and not friendly[i] >> j & 1]
            for i, a in enumerate(names)
        },
    ).counter(shuffled)
    other = packed.counter(shuffled)
    assert (other.fell, other.was_friendly) == (named.fell, named.was_friendly)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda m: m.update(fell=m["fell"][:-4]), "repair marks of"),
        (lambda m: m.update(never_friendly="not base64!"), "repair marks that are not base64"),
        (lambda m: m["names"].__setitem__(0, "Dee"), "repair marks are of another cast"),
    ],
    ids=["short", "garbage", "stranger"],
)
async def test_forged_repair_marks_are_damage(
    store: SaveStore, mini: Scenario, edit, problem: str
) -> None:
    await played(store, mini, "r", 10, total=10)
    doc = _doc(round_path(store, "r", 10))
    edit(doc["keyframe"]["repair"])
    _forged(store, "r", 10, doc)
    with pytest.raises(SaveError, match=re.escape(problem)):
        Simulation.resume("r", store)
    assert store.history("r")[9].round == 9


def test_round_problem_accepts_a_file_without_a_run_id() -> None:
    check = RunCheck("r", frozenset(), (), ("Ann", "Bob"))
    assert round_problem(RoundFile(round=3), 3, check) is None
    assert round_problem(RoundFile(round=3, run="r"), 3, check) is None
    assert round_problem(RoundFile(round=3, run="q"), 3, check) is not None


async def test_a_bit_flip_in_an_index_metric_is_damage(store: SaveStore, mini: Scenario) -> None:
    await played(store, mini, "r", 4)
    index = store.run_dir("r") / "index.jsonl"
    text = index.read_text()
    flipped = re.sub(r'("mean_fav":-?0\.)(\d)', lambda m: m[1] + str(9 - int(m[2])), text, count=3)
    assert flipped != text
    index.write_text(flipped)
    for read in (lambda: store.history("r"), lambda: Simulation.resume("r", store)):
        with pytest.raises(SaveError, match=r"index.jsonl: damaged line \d \(its check fails"):
            read()
    assert "its check fails" in listing(store)["r"].reason
    index.unlink()  # what the message advises: the index is rebuilt from the round files
    assert listing(store)["r"].ok and len(read_all(store, "r")) == 5


async def test_an_old_index_line_without_a_check_is_accepted(
    store: SaveStore, mini: Scenario
) -> None:
    await played(store, mini, "r", 2)
    index = store.run_dir("r") / "index.jsonl"
    index.write_text(re.sub(r',"check":\d+\}', "}", index.read_text()))
    assert listing(store)["r"].ok and len(read_all(store, "r")) == 3


async def test_damage_a_reader_found_is_listed_though_no_fingerprint_changed(
    store: SaveStore, mini: Scenario
) -> None:
    await played(store, mini, "r", 3)
    assert listing(store)["r"].ok
    path = round_path(store, "r", 2)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x04
    path.write_bytes(bytes(data))
    # Rot the disk made: the verdict kept for the file still matches its fingerprint.
    files = store.files("r")
    verdicts = files.verdicts()
    assert verdicts is not None
    crc = files.load_index(store.read_meta("r").scenario)[2].crc
    verdicts.add_sound(2, fingerprint(os.lstat(path), crc))
    verdicts.save()
    assert listing(store)["r"].ok  # list trusts the verdict: nothing it can see changed
    with pytest.raises(SaveError, match=r"000002\.json\.gz: damaged round file"):
        store.history("r")[2]  # the reader checks every file it reads, and keeps what it found
    assert "000002.json.gz: damaged round file" in listing(store)["r"].reason
    with pytest.raises(SaveError, match="000002"):
        store.branch("r", at_round=3, new_id="b")
    assert "000002" in listing(store)["r"].reason  # still flagged after the refused branch


def test_verdicts_of_another_check_are_dropped(tmp_path: Path) -> None:
    run = tmp_path / "saves" / "r"
    run.mkdir(parents=True)
    verdicts = Verdicts.of(run, "k1")
    verdicts.add_sound(0, [1, 2, 3, 4, 5])
    verdicts.save()
    assert Verdicts.of(run, "k1").sound(0, [1, 2, 3, 4, 5])
    assert not Verdicts.of(run, "k2").sound(0, [1, 2, 3, 4, 5])
    (tmp_path / "saves" / ".verified" / "r.json").write_text("[garbage")
    assert Verdicts.of(run, "k1").good == {}


@pytest.mark.parametrize("total", [0, -1, 10_001, 10**12])
async def test_total_rounds_outside_the_cap_is_damage(
    store: SaveStore, mini: Scenario, total: int
) -> None:
    await played(store, mini, "r", 1)
    edit_meta_doc(store, "r", total_rounds=total)
    with pytest.raises(SaveError, match="total_rounds"):
        Simulation.resume("r", store)
    assert "total_rounds" in listing(store)["r"].reason


def _in_time(call) -> BaseException | None:
    """Run ``call`` in a thread; its exception (a hang fails the test after 30 s)."""
    caught: list[BaseException] = []

    def target() -> None:
        try:
            call()
        except BaseException as err:
            caught.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "blocked on a special file"
    return caught[0] if caught else None


@pytest.mark.parametrize("special", ["fifo", "zero", "folder"])
@pytest.mark.parametrize("where", ["run.json", "index.jsonl", "rounds/000001.json.gz"])
async def test_a_special_file_in_a_run_is_damage_at_once(
    store: SaveStore, mini: Scenario, special: str, where: str
) -> None:
    await played(store, mini, "r", 2)
    path = store.run_dir("r") / where
    path.unlink()
    {"fifo": os.mkfifo, "zero": lambda p: p.symlink_to("/dev/zero"), "folder": Path.mkdir}[special](
        path
    )
    kind = {"fifo": "a named pipe", "zero": "a symlink", "folder": "a folder"}[special]
    err = _in_time(lambda: Simulation.resume("r", store))
    assert isinstance(err, SaveError) and f"{path}: {kind} in place of" in str(err), err
    assert kind in listing(store)["r"].reason


def test_a_special_study_or_trial_file_is_refused_at_once(tmp_path: Path) -> None:
    from engine.studies.experiments.trial import load_spec

    saves = tmp_path / "saves"
    (saves / ".studies").mkdir(parents=True)
    os.mkfifo(saves / ".studies" / "s.json")
    err = _in_time(lambda: load_study(saves, "s"))
    assert isinstance(err, LabelError) and "a named pipe in place of a study" in str(err)
    (saves / ".trials").mkdir()
    (saves / ".trials" / "t.json").symlink_to("/dev/zero")
    err = _in_time(lambda: load_spec(SaveStore(saves), "t"))
    assert isinstance(err, SaveError) and "a symlink in place of a trial" in str(err)


async def test_a_symlinked_lock_file_is_refused(store: SaveStore, mini: Scenario, tmp_path):
    await played(store, mini, "r", 1)
    precious = tmp_path / "thesis.txt"
    precious.write_text("years of work")
    lock = store.run_dir("r") / ".lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(precious)
    with pytest.raises(SaveError, match="a symlink in place of a lock file"):
        Simulation.resume("r", store)
    assert precious.read_text() == "years of work"


def test_lineage_owner_is_the_run_that_wrote_the_round() -> None:
    check = RunCheck("c", frozenset(), (("a", 22), ("b", 10)), ())
    assert [check.owner(n) for n in (0, 9, 10, 21, 22, 30)] == ["a", "a", "c", "c", "c", "c"]


async def test_a_writer_keeps_verdicts_on_what_it_wrote(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.saves.runfiles import RunFiles

    await played(store, mini, "r", 12, total=12)
    loads: list[int] = []
    real = RunFiles._load

    def load(files: RunFiles, n: int, entry: object = None) -> object:
        loads.append(n)
        return real(files, n, entry)  # type: ignore[arg-type]

    monkeypatch.setattr(RunFiles, "_load", load)
    assert listing(store)["r"].ok
    # round 0 was written in the staging folder; 11 and 12 after the last keyframe's save
    assert loads == [0, 11, 12]
