"""The JSON codecs (save format 7, kept for a round too small to be binary in format 8):
JSON of a round with long exchanges is zstd'd (``NNNNNN.json.zst``), a small one gzip'd;
both read back as played, mixed in one run, and damage in either is one clear error naming
the file. Binary rounds: test_binround.py."""

from __future__ import annotations

import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from cast import played_run, round_file_names

import engine.saves.codec
from engine import SaveStore
from engine.core.scenario import Scenario
from engine.errors import SaveError
from engine.saves.codec import GZIP, ZSTD, codec_for, compress, decompress
from engine.saves.frames import inflated
from engine.saves.store import ROUNDS_DIR

ROOT = Path(__file__).resolve().parents[2]


def test_the_codec_goes_by_the_size_of_the_round() -> None:
    small, large = b"x" * 100, b"x" * engine.saves.codec.ZSTD_FROM
    assert (codec_for(small), codec_for(large)) == (GZIP, ZSTD)
    for text, suffix in ((small, GZIP), (large, ZSTD)):
        data = compress(text, suffix)
        assert decompress(data, Path(f"000001{suffix}")) == text
    assert (
        compress(small, GZIP)[:2] == b"\x1f\x8b"
        and zlib.decompress(compress(small, GZIP), wbits=31) == small
    )
    assert compress(large, ZSTD)[:4] == bytes.fromhex("28b52ffd")  # a standard zstd frame


async def test_a_round_rewritten_in_the_other_codec_is_kept_once(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    await played_run(store, mini, "r", 2)
    files = store.files("r")
    last = files.read(2)
    monkeypatch.setattr(engine.saves.codec, "ZSTD_FROM", 0)
    entries, _ = files.index_lines()
    files.write_index(entries[:2])
    files.write(last)
    assert round_file_names(store, "r") == ["000000.json.gz", "000001.json.gz", "000002.json.zst"]
    assert files.read(2).model_dump_json() == last.model_dump_json()


@pytest.mark.parametrize("suffix", [GZIP, ZSTD])
@pytest.mark.parametrize(
    ("damage", "why"),
    [
        ("truncated", "truncated or trailing data"),
        ("trailing", "truncated or trailing data"),
        ("too large", "inflates beyond the size limit"),
    ],
)
def test_a_stream_is_read_whole_and_bounded(suffix: str, damage: str, why: str) -> None:
    """gzip and zstd alike: one whole stream, at most the limit, or one line of damage."""
    text = b"round " * 100
    data, limit = compress(text, suffix), len(text)
    if damage == "truncated":
        data = data[:-6]
    elif damage == "trailing":
        data += compress(text, suffix)  # a second stream
    else:
        limit -= 1
    path, zstd = Path(f"000003{suffix}"), suffix == ZSTD
    assert inflated(compress(text, suffix), path, len(text), zstd=zstd) == text
    with pytest.raises(SaveError, match=rf"000003\.json\.\w+: damaged round file \({why}\)$"):
        inflated(data, path, limit, zstd=zstd)
    garbage = (
        b"\x1f\x8b" + bytes(30) if suffix == GZIP else bytes(30)
    )  # (gzip: its magic, then zeros)
    with pytest.raises(SaveError, match=r"000003\.json\.\w+: damaged round file \(.+\)$"):
        inflated(garbage, path, limit, zstd=zstd)


@pytest.mark.parametrize("damage", ["truncated", "trailing", "garbage", "too large"])
async def test_a_damaged_zstd_round_is_one_clear_error(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    monkeypatch.setattr(engine.saves.codec, "ZSTD_FROM", 0)
    await played_run(store, mini, "r", 2)
    path = store.run_dir("r") / ROUNDS_DIR / "000002.json.zst"
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "trailing":
        path.write_bytes(data + b"more")
    elif damage == "garbage":
        path.write_bytes(data[:4] + b"\x00" * (len(data) - 4))
    else:
        monkeypatch.setattr(engine.saves.codec, "MAX_SAVE_FILE_BYTES", 100)
    with pytest.raises(SaveError, match=r"000002\.json\.zst: damaged round file"):
        store.files("r").read(2)


@pytest.mark.parametrize(
    ("limit", "suffix"), [("BINARY_FROM", ".round"), ("ZSTD_FROM", ".json.zst")]
)
def test_zstd_round_files_never_load_pyarrow(tmp_path: Path, limit: str, suffix: str) -> None:
    """A run whose rounds are zstd frames (binary, or JSON) writes and reads them back
    without loading pyarrow (~70 ms of CPU beside numpy): that is for Parquet alone."""
    code = (
        "import asyncio, sys\n"
        "import engine.saves.codec\n"
        "from engine import SaveStore, Simulation\n"
        "from engine.core.scenario import load_library\n"
        f"engine.saves.codec.{limit} = 0\n"
        f"store = SaveStore({str(tmp_path)!r})\n"
        "sim = Simulation.new(load_library('tavern'), seed=1, store=store, rounds=12)\n"
        "asyncio.run(sim.run())\n"
        "history = store.history(sim.run_id, whole=True)\n"
        "print(sim.run_id, list(history)[-1].round, 'pyarrow' in sys.modules)\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    run, last, loaded = got.stdout.split()
    assert (last, loaded) == ("12", "False")
    assert {name[6:] for name in round_file_names(SaveStore(tmp_path), run)} == {suffix}
