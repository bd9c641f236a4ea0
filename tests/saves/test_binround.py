"""Save format 8's binary round files (``NNNNNN.round``): a large round's columns as raw
bytes read back as played (floats bit for bit), beside JSON rounds in one run, branched and
exported; damage to the container or its columns is one clear error naming the file."""

from __future__ import annotations

import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from cast import played_run, round_file_names
from conftest import CliResult

import engine.saves.binround
import engine.saves.codec
from engine import SaveStore, Simulation
from engine.core.scenario import Scenario
from engine.errors import SaveError, SocialsimError
from engine.saves.binround import MAGIC, floats_ref, from_ref, unpack
from engine.saves.codec import encoded
from engine.saves.store import ROUNDS_DIR


@pytest.fixture
def binary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every round written binary, however small."""
    monkeypatch.setattr(engine.saves.codec, "BINARY_FROM", 0)


def container(payload: bytes) -> bytes:
    """A sound format-8 container around ``payload`` (its checksum good)."""
    import pyarrow as pa

    data = MAGIC + len(payload).to_bytes(8, "little")
    data += pa.Codec("zstd", 1).compress(payload, asbytes=True)
    return data + zlib.crc32(data).to_bytes(4, "little")


def payload(table: list, head: bytes, blobs: bytes) -> bytes:
    text = json.dumps(table).encode()
    return struct.pack("<II", len(text), len(head)) + text + head + blobs


@pytest.mark.parametrize(("limit", "suffix"), [("BINARY_FROM", "round"), ("ZSTD_FROM", "json.zst")])
async def test_rounds_of_another_codec_read_back_as_played_beside_gzip_ones(
    store: SaveStore,
    mini: Scenario,
    monkeypatch: pytest.MonkeyPatch,
    limit: str,
    suffix: str,
) -> None:
    """A run resumed (one of format 7 or 6, say) writes binary or zstd rounds after its
    gzip'd JSON ones; it reads whole, lists, branches (the rounds before the fork linked,
    whatever their codec) and resumes."""
    await played_run(store, mini, "r", 3)
    monkeypatch.setattr(engine.saves.codec, limit, 0)
    with Simulation.resume("r", store) as sim:
        sim.extend(3)
        await sim.run()
        played = list(sim.records)
    assert round_file_names(store, "r") == [f"00000{n}.json.gz" for n in range(4)] + [
        f"00000{n}.{suffix}" for n in range(4, 7)
    ]
    assert list(store.history("r", whole=True)) == played
    child = store.branch("r", at_round=5, new_id="kid")
    assert child.parent is not None and list(store.history("kid")) == played[:6]
    kid, parent = (store.run_dir(run) / ROUNDS_DIR / f"000004.{suffix}" for run in ("kid", "r"))
    assert kid.stat().st_ino == parent.stat().st_ino
    rows = {row.run_id: row for row in store.list_runs()}
    assert rows["r"].ok and rows["r"].rounds_done == 6 and rows["kid"].ok
    with Simulation.resume("r", store) as sim:  # goes on from its binary rounds
        sim.extend(1)
        await sim.run()
        played = list(sim.records)
    assert list(store.history("r", whole=True)) == played and len(played) == 8


async def test_a_binary_round_holds_raw_columns_and_its_log(
    store: SaveStore, mini: Scenario, binary: None
) -> None:
    """The head is the round's JSON with each packed column a reference to its blob."""
    await played_run(store, mini, "r", 2)
    path = store.run_dir("r") / ROUNDS_DIR / "000002.round"
    head, blobs = unpack(path.read_bytes(), path)
    doc = json.loads(head)
    assert doc["round"] == 2 and doc["run"] == "r" and doc["actions"]
    assert doc["packed"]["source"] == {"ints": 0} and "codes" in doc["packed"]["fav"]
    changes = store.files("r").read(2).changes(["Ann", "Bob", "Cy"])
    assert np.array_equal(blobs[0], changes.source)


def test_floats_read_back_bit_for_bit() -> None:
    """Decimals are stored as codes, a float beside its decimal (a sum of two, say) as the
    difference of their bits, anything else as itself: each one reads back exactly."""
    rng = np.random.default_rng(1)
    decimals = np.round(rng.uniform(-1, 1, 2000), 4)
    sums = decimals + np.round(rng.uniform(-0.05, 0.05, 2000), 4)  # fl(old + delta)
    odd = np.array([np.nan, np.inf, -np.inf, -0.0, 5e-324, 1e300, 1e-18, -0.07440000000000001])
    for values, places in ((decimals, 4), (sums, 4), (odd, 4), (decimals, 6), (odd[:0], 4)):
        blobs: list[np.ndarray] = []
        back = from_ref(floats_ref(values, places, blobs), blobs)
        assert np.array_equal(back.view(np.int64), values.view(np.int64))
    blobs = []
    assert floats_ref(decimals, 6, blobs) == {"codes": 0, "places": 4}  # two bytes a float
    assert [b.dtype for b in blobs] == [np.int16]
    blobs = []
    ref = floats_ref(sums, 4, blobs)
    assert (ref["places"], blobs[1].dtype) == (4, np.int8) and np.count_nonzero(blobs[1]) > 0


def _damaged(data: bytes, damage: str) -> bytes:
    if damage == "truncated":
        return data[: len(data) // 2]
    if damage == "flipped byte":
        at = len(data) // 2
        return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]
    if damage == "trailing data":
        return data + b"more"
    return b"\x28\xb5\x2f\xfd" + data[4:]  # a plain zstd frame's magic: not the container


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "trailing data", "not ours"])
async def test_a_damaged_binary_round_is_one_clear_error(
    store: SaveStore, mini: Scenario, binary: None, damage: str
) -> None:
    await played_run(store, mini, "r", 2)
    path = store.run_dir("r") / ROUNDS_DIR / "000002.round"
    path.write_bytes(_damaged(path.read_bytes(), damage))
    with pytest.raises(SaveError, match=r"000002\.round: damaged round file \(") as caught:
        store.files("r").read(2)
    assert "\n" not in str(caught.value)
    (row,) = store.list_runs()
    assert not row.ok and "000002.round: damaged round file" in row.reason


async def test_a_round_inflating_beyond_the_limit_is_refused(
    store: SaveStore, mini: Scenario, binary: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    await played_run(store, mini, "r", 1)
    monkeypatch.setattr(engine.saves.binround, "MAX_SAVE_FILE_BYTES", 100)
    with pytest.raises(SaveError, match=r"000001\.round: damaged round file \(inflates beyond"):
        store.files("r").read(1)


@pytest.mark.parametrize("off", [1, -1])
async def test_a_payload_size_the_frame_does_not_hold_is_damage(
    store: SaveStore, mini: Scenario, binary: None, off: int
) -> None:
    """A sound checksum over a size field that is not the frame's payload's: damage."""
    await played_run(store, mini, "r", 1)
    path = store.run_dir("r") / ROUNDS_DIR / "000001.round"
    data = path.read_bytes()
    size = int.from_bytes(data[4:12], "little") + off
    forged = MAGIC + size.to_bytes(8, "little") + data[12:-4]
    path.write_bytes(forged + zlib.crc32(forged).to_bytes(4, "little"))
    with pytest.raises(SaveError, match=r"000001\.round: damaged round file \(") as caught:
        store.files("r").read(1)
    assert f"its payload is {size - off} bytes, not {size}" in str(caught.value)


async def test_a_binary_round_without_zstd_installed_is_one_line(
    store: SaveStore, mini: Scenario, binary: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken install without its zstd module: one line saying so, not a traceback."""
    await played_run(store, mini, "r", 1)
    for module in ("compression.zstd", "backports.zstd"):
        monkeypatch.setitem(sys.modules, module, None)  # its import raises ImportError
    with pytest.raises(SocialsimError, match=r"needs backports\.zstd, which is missing"):
        store.files("r").read(1)


async def test_columns_that_do_not_fit_are_damage(
    store: SaveStore, mini: Scenario, binary: None
) -> None:
    """A sound container whose columns are wrong: a column shorter than the others, a blob
    table longer or shorter than the blobs, a reference to no blob."""
    await played_run(store, mini, "r", 2)
    files = store.files("r")
    path = files.rounds / "000002.round"
    head, blobs = unpack(path.read_bytes(), path)
    fewer = blobs[:-1]  # the last column's blob gone
    good = files.read(2)
    assert good.packed is not None
    short = good.packed.model_copy(update={"fav": good.packed.fav[:-1]})
    path.write_bytes(encoded(good.model_copy(update={"packed": short}))[1])
    with pytest.raises(SaveError, match=r"different lengths"):
        files.read(2)
    cases = {
        "its blobs do not fill it": payload([["<i2", 2]], b"{}", bytes(6)),
        "its blob table does not fit it": payload([["<i2", 4]], b"{}", bytes(6)),
        "names no blob": payload(
            [[b.dtype.str, len(b)] for b in fewer], head, b"".join(b.tobytes() for b in fewer)
        ),
    }
    for problem, data in cases.items():
        path.write_bytes(container(data))
        with pytest.raises(SaveError, match=r"000002\.round: ") as caught:
            files.read(2)
        assert problem in str(caught.value)


async def test_the_cli_reads_binary_rounds_and_names_a_damaged_one(
    saves: Path, mini: Scenario, binary: None, run_cli, tmp_path: Path
) -> None:
    played = await played_run(SaveStore(saves), mini, "r", 3)
    shown: CliResult = run_cli("show", "r", "--round", "2", "--saves", str(saves))
    assert shown.code == 0 and "Ann" in shown.out
    out = tmp_path / "x"
    exported = run_cli("export", "r", "--out", str(out), "--saves", str(saves))
    assert exported.code == 0, exported.err
    assert len(played) == 4
    path = saves / "r" / ROUNDS_DIR / "000002.round"
    path.write_bytes(path.read_bytes()[:-9])
    failed = run_cli("show", "r", "--saves", str(saves))
    assert failed.code == 2 and failed.err.count("\n") == 1
    assert failed.err.startswith("socialsim: error: ") and "000002.round: damaged" in failed.err
