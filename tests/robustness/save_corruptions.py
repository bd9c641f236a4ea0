"""Corruptions of a saved run, for the corrupted-save fuzz (test_save_fuzz.py).

Each corruption changes run ``A`` of a saves folder that also holds ``B`` (the same
scenario, another seed) and ``H`` (another scenario), all of :data:`ROUNDS` rounds with a
keyframe at round 10. Forgeries fix the index up (size, checksum and line check) so that
only the round file's own content can give them away. A corruption returns what the fuzz
expects of it: whether ``list`` must flag the run, and the first damaged round (the rounds
before it must stay readable) when the damage is in one round file.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engine.saves.packed import pack_floats, pack_ints, unpack
from engine.saves.roundfile import IndexEntry
from engine.saves.runfiles import index_line

ROUNDS = 12
KEYFRAME = 10


@dataclass(frozen=True)
class Expect:
    """What the fuzz expects of a corruption."""

    flagged: bool
    #: The damaged round, when the damage is one round file (rounds before it are read).
    round: int | None = None


def round_path(saves: Path, run: str, n: int) -> Path:
    return saves / run / "rounds" / f"{n:06d}.json.gz"


def _doc(saves: Path, run: str, n: int) -> dict:
    return json.loads(gzip.decompress(round_path(saves, run, n).read_bytes()))


def _forge(saves: Path, n: int, doc: dict) -> None:
    """Write ``doc`` as round ``n`` of A and fix A's index line up to match it."""
    data = gzip.compress(json.dumps(doc).encode(), 1, mtime=0)
    round_path(saves, "A", n).write_bytes(data)
    _fix_index(saves, n, data, keyframe=doc.get("keyframe") is not None)


def _fix_index(saves: Path, n: int, data: bytes, keyframe: bool | None = None) -> None:
    index = saves / "A" / "index.jsonl"
    lines = index.read_bytes().split(b"\n")
    line = json.loads(lines[n])
    line.pop("check", None)
    line.update(size=len(data), crc=zlib.crc32(data))
    if keyframe is not None:
        line["keyframe"] = keyframe
    lines[n] = index_line(IndexEntry.model_validate(line)).rstrip(b"\n")
    index.write_bytes(b"\n".join(lines))


def _swapped(source: str) -> Callable[[random.Random, Path, int], Expect]:
    def swap(rng: random.Random, saves: Path, n: int) -> Expect:
        data = round_path(saves, source, n).read_bytes()
        round_path(saves, "A", n).write_bytes(data)
        _fix_index(saves, n, data, keyframe=n % KEYFRAME == 0)
        return Expect(True, n)

    return swap


def truncate_round(rng: random.Random, saves: Path, n: int) -> Expect:
    path = round_path(saves, "A", n)
    data = path.read_bytes()
    path.write_bytes(data[: rng.randrange(len(data))])
    return Expect(True, n)


def flip_round_bit(rng: random.Random, saves: Path, n: int) -> Expect:
    path = round_path(saves, "A", n)
    data = bytearray(path.read_bytes())
    data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return Expect(True, n)


def flip_bit_keeping_times(rng: random.Random, saves: Path, n: int) -> Expect:
    status = round_path(saves, "A", n).stat()
    flip_round_bit(rng, saves, n)
    os.utime(round_path(saves, "A", n), ns=(status.st_atime_ns, status.st_mtime_ns))
    return Expect(True, n)


def duplicate_keyframe(rng: random.Random, saves: Path, n: int) -> Expect:
    n = n if n != KEYFRAME else KEYFRAME + 1
    data = round_path(saves, "A", KEYFRAME).read_bytes()
    round_path(saves, "A", n).write_bytes(data)
    _fix_index(saves, n, data, keyframe=True)
    return Expect(True, n)


def demote_keyframe(rng: random.Random, saves: Path, n: int) -> Expect:
    doc = _doc(saves, "A", KEYFRAME)
    doc["keyframe"] = None
    data = gzip.compress(json.dumps(doc).encode(), 1, mtime=0)
    round_path(saves, "A", KEYFRAME).write_bytes(data)
    _fix_index(saves, KEYFRAME, data)  # the index still says keyframe
    return Expect(True, KEYFRAME)


def foreign_keyframe(rng: random.Random, saves: Path, n: int) -> Expect:
    return _swapped(rng.choice(["B", "H"]))(rng, saves, rng.choice([0, KEYFRAME]))


def missing_keyframe(rng: random.Random, saves: Path, n: int) -> Expect:
    round_path(saves, "A", KEYFRAME).unlink()
    return Expect(True)


def _edited(edit: Callable[[random.Random, dict], None]) -> Callable[..., Expect]:
    def forge(rng: random.Random, saves: Path, n: int) -> Expect:
        for m in [*range(n, ROUNDS + 1), *range(1, n)]:  # a round with changes to edit
            doc = _doc(saves, "A", m)
            if m % KEYFRAME and doc["emotion_changes"] and len(_column(doc, "source")):
                edit(rng, doc)
                _forge(saves, m, doc)
                return Expect(True, m)
        raise AssertionError("no round of A has changes to edit")

    return forge


def _agent_twice(rng: random.Random, doc: dict) -> None:
    doc["emotion_changes"] = [*doc["emotion_changes"], doc["emotion_changes"][0]]


#: The packed relation columns (save format 6) of one value an edge, and the digit strings.
_PACKED = ("source", "target", "delta", "fav", "override", "note", "importance")
_DIGITS = ("status", "previous_status")


def _column(doc: dict, name: str) -> list:
    """The packed column ``name`` of the round's relation changes, as a list."""
    return unpack(doc["packed"][name]).tolist()


def _set(doc: dict, name: str, values: list) -> None:
    floats = any(isinstance(v, float) for v in values)
    doc["packed"][name] = pack_floats(values, 6) if floats else pack_ints(values)


def _relation_twice(rng: random.Random, doc: dict) -> None:
    cols = doc["packed"]
    width = len(_column(doc, "evicted")) // len(_column(doc, "source"))
    for name in _PACKED:
        values = _column(doc, name)
        _set(doc, name, [*values, values[0]])
    for name in _DIGITS:
        cols[name] += cols[name][0]
    evicted = _column(doc, "evicted")
    _set(doc, "evicted", [*evicted, *evicted[:width]])


def _uneven_columns(rng: random.Random, doc: dict) -> None:
    name = rng.choice(sorted((*_PACKED, *_DIGITS)))
    if name in _DIGITS:
        doc["packed"][name] = doc["packed"][name][:-1]
    else:
        _set(doc, name, _column(doc, name)[:-1])


def _stranger(rng: random.Random, doc: dict) -> None:
    where = rng.choice(["names", "emotion", "needs"])
    if where == "emotion":
        doc["emotion_changes"][0]["agent"] = "Helena"
    elif where == "needs":
        doc["needs"]["Helena"] = {"safety": 5.0}
    else:
        doc["packed"]["names"][0] = "Helena"


def _out_of_bounds(rng: random.Random, doc: dict) -> None:
    where = rng.choice(["emotion", "fav", "importance", "delta"])
    if where == "emotion":
        doc["emotion_changes"][0]["emotion"] = 1.5
        return
    values = _column(doc, where)
    values[0] = {"fav": 2.0, "importance": 11, "delta": float("nan")}[where]
    _set(doc, where, values)


def _wrong_round(rng: random.Random, doc: dict) -> None:
    doc["round"] += rng.choice([-1, 1, 1000])


def _other_run_id(rng: random.Random, doc: dict) -> None:
    doc["run"] = "B"


def _special(make: Callable[[Path, Path], None], where: str = "round") -> Callable[..., Expect]:
    def replace(rng: random.Random, saves: Path, n: int) -> Expect:
        path = {
            "round": round_path(saves, "A", n),
            "index": saves / "A" / "index.jsonl",
            "meta": saves / "A" / "run.json",
        }[where]
        path.unlink()
        make(path, saves)
        return Expect(True, n if where == "round" else None)

    return replace


def _fifo(path: Path, saves: Path) -> None:
    os.mkfifo(path)


def _to_zero(path: Path, saves: Path) -> None:
    path.symlink_to("/dev/zero")


def _to_sibling(path: Path, saves: Path) -> None:
    path.symlink_to(saves / "B" / path.relative_to(saves / "A"))


def _folder(path: Path, saves: Path) -> None:
    path.mkdir()


def flip_index_metric(rng: random.Random, saves: Path, n: int) -> Expect:
    index = saves / "A" / "index.jsonl"
    data = index.read_bytes()
    lines = data.split(b"\n")
    line = bytearray(lines[n])
    at = line.index(b'"mean_fav":') + len(b'"mean_fav":')
    digits = [k for k in range(at, at + 8) if chr(line[k]).isdigit()]
    k = rng.choice(digits)
    line[k] = ord(str((int(chr(line[k])) + rng.randrange(1, 10)) % 10))
    lines[n] = bytes(line)
    index.write_bytes(b"\n".join(lines))
    return Expect(True)


def flip_index_bit(rng: random.Random, saves: Path, n: int) -> Expect:
    index = saves / "A" / "index.jsonl"
    data = bytearray(index.read_bytes())
    lines = bytes(data).split(b"\n")
    start = sum(len(line) + 1 for line in lines[:n])
    k = start + rng.randrange(len(lines[n]))
    bit = 1 << rng.randrange(7)  # stays ASCII; a newline made or lost is damage too
    data[k] ^= bit
    index.write_bytes(bytes(data))
    return Expect(True)


def drop_index_line(rng: random.Random, saves: Path, n: int) -> Expect:
    index = saves / "A" / "index.jsonl"
    lines = index.read_bytes().split(b"\n")
    del lines[min(n, ROUNDS - 1)]
    index.write_bytes(b"\n".join(lines))
    return Expect(True)


def tear_index_tail(rng: random.Random, saves: Path, n: int) -> Expect:
    """A kill while the last line was appended: rebuilt from the round file, no damage."""
    index = saves / "A" / "index.jsonl"
    data = index.read_bytes()
    last = data[:-1].rfind(b"\n") + 1
    index.write_bytes(data[: last + rng.randrange(1, len(data) - last - 1)])
    return Expect(False)


def lose_index(rng: random.Random, saves: Path, n: int) -> Expect:
    """No index at all: rebuilt from the round files, no damage."""
    (saves / "A" / "index.jsonl").unlink()
    return Expect(False)


def truncate_meta(rng: random.Random, saves: Path, n: int) -> Expect:
    path = saves / "A" / "run.json"
    data = path.read_bytes()
    path.write_bytes(data[: rng.randrange(len(data))])
    return Expect(True)


def bad_total_rounds(rng: random.Random, saves: Path, n: int) -> Expect:
    path = saves / "A" / "run.json"
    doc = json.loads(path.read_bytes())
    doc["run"]["1"]["total_rounds"] = rng.choice([0, -3, 10**12, 10_001])
    path.write_text(json.dumps(doc))
    return Expect(True)


def foreign_cast(rng: random.Random, saves: Path, n: int) -> Expect:
    """run.json of another scenario over A's rounds: every keyframe is of a stranger cast."""
    shutil.copyfile(saves / "H" / "run.json", saves / "A" / "run.json")
    return Expect(True, 0)


CORRUPTIONS: dict[str, Callable[[random.Random, Path, int], Expect]] = {
    "truncate round": truncate_round,
    "flip round bit": flip_round_bit,
    "flip bit, keep times": flip_bit_keeping_times,
    "swap round, same scenario": _swapped("B"),
    "swap round, other scenario": _swapped("H"),
    "foreign keyframe": foreign_keyframe,
    "duplicate keyframe": duplicate_keyframe,
    "demote keyframe": demote_keyframe,
    "missing keyframe": missing_keyframe,
    "agent named twice": _edited(_agent_twice),
    "relation changed twice": _edited(_relation_twice),
    "uneven columns": _edited(_uneven_columns),
    "stranger in cast": _edited(_stranger),
    "value out of bounds": _edited(_out_of_bounds),
    "wrong round number": _edited(_wrong_round),
    "other run's id": _edited(_other_run_id),
    "fifo round": _special(_fifo),
    "symlink round to /dev/zero": _special(_to_zero),
    "symlink round to sibling": _special(_to_sibling),
    "folder as round": _special(_folder),
    "fifo index": _special(_fifo, "index"),
    "symlink index": _special(_to_sibling, "index"),
    "fifo run.json": _special(_fifo, "meta"),
    "symlink run.json to /dev/zero": _special(_to_zero, "meta"),
    "flip index metric": flip_index_metric,
    "flip index bit": flip_index_bit,
    "drop index line": drop_index_line,
    "tear index tail": tear_index_tail,
    "lose index": lose_index,
    "truncate run.json": truncate_meta,
    "total_rounds out of bounds": bad_total_rounds,
    "run.json of another cast": foreign_cast,
}


def cases(count: int, seed: int = 27) -> list[tuple[int, str, int]]:
    """``count`` cases (case seed, corruption, round), every corruption in turn."""
    rng = random.Random(seed)
    names = list(CORRUPTIONS)
    return [
        (rng.randrange(2**32), names[i % len(names)], rng.randrange(1, ROUNDS + 1))
        for i in range(count)
    ]
