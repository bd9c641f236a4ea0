"""Save format 8's binary round file: a JSON head and the raw column bytes, zstd'd once.

A large round (:func:`~engine.saves.codec.is_binary`) is written as ``NNNNNN.round``::

    b"SSR8" | payload size (u8, little-endian) | zstd frame of the payload | CRC-32 (u4)

The CRC-32 covers every byte before it, so a truncated, garbled or extended file is damage
before anything is decompressed. The payload is ``len(table)``, ``len(head)`` (u4 each),
the blob table (JSON ``[[dtype, count], ...]``), the head and the blobs back to back: the
head is the :class:`~engine.saves.roundfile.RoundFile`'s JSON (its log, metrics, notes,
names, status digits) in which each packed column (engine/saves/packed.py) is a reference
to blobs instead of base64 text:

- ``{"ints": k}``: blob k, integers in the narrowest of ``i1``..``i8``;
- ``{"codes": k, "places": p}``: floats, each ``codes[i] / 10**p`` (the decimals the engine
  rounds to), with ``"ulps": m`` (``i1``) where some float is not that decimal: its bits
  minus the decimal's (``-128``: the float is the next of ``"exact": e``, ``f8``). Reading
  gives back every float bit for bit.

Writing makes no Python object per edge: each column is a numpy pass and one ``tobytes``.
Reading makes none either: the blobs are ``frombuffer`` views of the decompressed payload.
Measured at 1,000 agents (docs/formats.md, Format 8), zstd level 1 is the level kept.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .frames import damaged, inflated, zstd_frame
from .saferead import MAX_SAVE_FILE_BYTES

if TYPE_CHECKING:
    import numpy as np

MAGIC = b"SSR8"
ZSTD_LEVEL = 1
#: The serialization/validation context key holding a file's blobs.
BLOBS = "blobs"
_SIZES = struct.Struct("<II")
_HEAD = len(MAGIC) + 8
#: Integer types, narrowest first, with the bound of their magnitudes; an ``ulps`` value
#: that marks an exact float.
_INTS = (("i1", 1 << 7), ("i2", 1 << 15), ("i4", 1 << 31), ("i8", 1 << 63))
_EXACT = -128


def pack(head: bytes, blobs: list[np.ndarray]) -> bytes:
    """The file of a round whose JSON ``head`` refers to ``blobs``."""
    table = json.dumps([[b.dtype.str, len(b)] for b in blobs]).encode()
    parts = [_SIZES.pack(len(table), len(head)), table, head, *(b.tobytes() for b in blobs)]
    payload = b"".join(parts)
    data = MAGIC + len(payload).to_bytes(8, "little") + zstd_frame(payload, ZSTD_LEVEL)
    return data + zlib.crc32(data).to_bytes(4, "little")


def unpack(data: bytes, path: Path) -> tuple[bytes, list[np.ndarray]]:
    """The head and blobs of round file ``path`` from its bytes ``data``; damage (a wrong
    checksum, size or table) is a SaveError naming it."""
    import numpy as np

    view = memoryview(data)
    if len(data) < _HEAD + 4 or view[:4] != MAGIC:
        raise damaged(path, "not a format-8 round file")
    if zlib.crc32(view[:-4]) != int.from_bytes(view[-4:], "little"):
        raise damaged(path, "its checksum fails: truncated, garbled or with trailing data")
    size = int.from_bytes(view[4:_HEAD], "little")
    if size > MAX_SAVE_FILE_BYTES:
        raise damaged(path, "inflates beyond the size limit")
    payload = inflated(view[_HEAD:-4], path, MAX_SAVE_FILE_BYTES, zstd=True)
    if len(payload) != size:
        raise damaged(path, f"its payload is {len(payload)} bytes, not {size}")
    try:
        tables, heads = _SIZES.unpack_from(payload)
        start = _SIZES.size + tables
        table = json.loads(payload[_SIZES.size : start])
        head, at = payload[start : start + heads], start + heads
        blobs = []
        for kind, count in table:
            dtype = np.dtype(kind)
            if dtype.kind not in "iuf" or not isinstance(count, int) or count < 0:
                raise ValueError(f"a blob of {kind} x {count}")
            blobs.append(np.frombuffer(payload, dtype, count, at))
            at += dtype.itemsize * count
    except (struct.error, ValueError, TypeError) as err:
        raise damaged(path, f"its blob table does not fit it: {err}") from None
    if at != len(payload) or len(head) != heads:
        raise damaged(path, "its blobs do not fill it")
    return head, blobs


def ints_ref(values: np.ndarray, blobs: list[np.ndarray]) -> dict[str, int]:
    """Integer array ``values`` added to ``blobs`` in its narrowest type, as a reference."""
    return {"ints": _add(blobs, narrowest(values))}


def floats_ref(values: np.ndarray, places: int, blobs: list[np.ndarray]) -> dict[str, int]:
    """Float array ``values`` added to ``blobs`` as decimal codes of ``places`` places (fewer
    where a sample of them has as many exact ones) and, where a float is not its decimal,
    the difference of their bits (or the float itself), as a reference."""
    import numpy as np

    values = np.asarray(values, np.float64)
    places = _fewest_places(values[:: max(1, len(values) // 512)], places)
    with np.errstate(invalid="ignore", over="ignore"):  # a float beyond: an exact one
        codes = np.rint(values * 10.0**places).astype(np.int64)
    ulps = values.view(np.int64) - np.divide(codes, 10.0**places).view(np.int64)
    ref = {"codes": _add(blobs, narrowest(codes)), "places": places}
    if ulps.any():
        exact = (ulps + 127).view(np.uint64) > 254  # outside -127..127
        ref["ulps"] = _add(blobs, np.where(exact, _EXACT, ulps).astype(np.int8))
        if exact.any():
            ref["exact"] = _add(blobs, values[exact])
    return ref


def from_ref(ref: dict[str, Any], blobs: list[np.ndarray]) -> np.ndarray:
    """The array a reference names among ``blobs`` (int64 or float64); a reference that
    does not fit them is a ValueError."""
    import numpy as np

    def blob(key: str, kinds: str) -> np.ndarray:
        k = ref.get(key)
        if not isinstance(k, int) or not 0 <= k < len(blobs) or blobs[k].dtype.kind not in kinds:
            raise ValueError(f"a column whose {key!r} names no blob of its kind")
        return blobs[k]

    if set(ref) == {"ints"}:
        return blob("ints", "iu").astype(np.int64)
    places = ref.get("places")
    known = set(ref) <= {"codes", "places", "ulps", "exact"}
    if not (known and isinstance(places, int) and 0 <= places <= 18):
        raise ValueError("not a column reference")
    values = np.divide(blob("codes", "iu"), 10.0**places)
    if "ulps" in ref:
        ulps = blob("ulps", "i")
        exact = ulps == _EXACT
        floats = blob("exact", "f") if "exact" in ref else np.zeros(0)
        if len(ulps) != len(values) or len(floats) != np.count_nonzero(exact):
            raise ValueError("a column of floats whose parts differ in length")
        values = (values.view(np.int64) + np.where(exact, 0, ulps)).view(np.float64)
        values[exact] = floats
    return values


def _fewest_places(sample: np.ndarray, places: int) -> int:
    """The fewest decimal places (up to ``places``) at which as many floats of ``sample``
    are their decimals as at ``places`` (the deltas the engine rounds to 6 places mostly
    have 4: half the bytes)."""
    import numpy as np

    with np.errstate(invalid="ignore", over="ignore"):
        exact = [
            np.count_nonzero(np.divide(np.rint(sample * 10.0**p), 10.0**p) == sample)
            for p in range(places + 1)
        ]
    return exact.index(exact[-1])


def narrowest(values: np.ndarray) -> np.ndarray:
    """Integer array ``values`` little-endian in the narrowest integer type holding them."""
    if values.dtype.kind not in "iub":
        raise TypeError(f"a column of integers, not {values.dtype}")
    low, high = (int(values.min()), int(values.max())) if len(values) else (0, 0)
    kind = next(k for k, bound in _INTS if -bound <= low and high < bound)
    return values.astype("<" + kind, copy=False)


def _add(blobs: list[np.ndarray], blob: np.ndarray) -> int:
    blobs.append(blob)
    return len(blobs) - 1
