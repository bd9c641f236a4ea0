"""How a round file is written: binary for a large round, compressed JSON for a small one.

A round file is named by its codec. Since save format 8 a round of at least
:data:`BINARY_FROM` edges (changed, plus a keyframe's) is ``NNNNNN.round``, its columns
as raw bytes (engine/saves/binround.py); a smaller one is JSON: ``NNNNNN.json.gz`` (gzip,
level :data:`GZIP_LEVEL`) or, since format 7, ``NNNNNN.json.zst`` (a zstd frame, level
:data:`ZSTD_LEVEL`, engine/saves/frames.py) for JSON of at least :data:`ZSTD_FROM` bytes
(a round with long LLM exchanges). Measured on
the changes of a 300-agent round (2.4 MB of JSON): gzip level 1 takes 22 ms for 0.76 MB,
zstd level 1 4.3 ms for 0.70 MB (level 3: 6.3 ms, 0.59 MB) and reads back in half of
gzip's time. A round of a few dozen agents (tens of KB, well under a millisecond of gzip)
stays gzip. docs/formats.md has the figures at 100 to 1,000 agents.

Reading is bounded: a file that inflates beyond :data:`~engine.saves.saferead.MAX_SAVE_FILE_BYTES`,
is cut short or has trailing data is damage (a SaveError naming it).
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from .binround import BLOBS, pack
from .frames import inflated, zstd_frame
from .saferead import MAX_SAVE_FILE_BYTES

if TYPE_CHECKING:
    from .roundfile import RoundFile

BINARY, GZIP, ZSTD = ".round", ".json.gz", ".json.zst"
#: The codecs' suffixes, the newest first (the order a reader looks for a round's file in).
SUFFIXES = (BINARY, ZSTD, GZIP)
GZIP_LEVEL = 1
ZSTD_LEVEL = 1
#: A round's JSON this long or longer is compressed with zstd (a round of long LLM exchanges;
#: a large cast's rounds are binary).
ZSTD_FROM = 256 * 1024
#: A round of this many edges or more (changed, plus a keyframe's N²) is written binary: below
#: it its JSON is under ~256 KB, gzip'd in 1.6 ms or less.
BINARY_FROM = 5000


def encoded(file: RoundFile) -> tuple[str, bytes]:
    """The suffix and bytes of ``file``'s round file."""
    packed, keyframe = file.packed, file.keyframe
    edges = len(packed.source) if packed is not None else 0
    if keyframe is not None and keyframe.packed is not None:
        edges += len(keyframe.packed.fav)
    if edges >= BINARY_FROM:
        blobs: list = []
        head = file.model_dump_json(context={BLOBS: blobs}).encode()
        return BINARY, pack(head, blobs)
    text = file.model_dump_json().encode()
    suffix = codec_for(text)
    return suffix, compress(text, suffix)


def codec_for(text: bytes) -> str:
    """The suffix of the codec a round file of JSON ``text`` is written with."""
    return ZSTD if len(text) >= ZSTD_FROM else GZIP


def compress(text: bytes, suffix: str) -> bytes:
    """``text`` compressed with the codec of ``suffix``."""
    if suffix == ZSTD:
        return zstd_frame(text, ZSTD_LEVEL)
    return zlib.compress(text, GZIP_LEVEL, wbits=31)  # gzip's header, mtime 0


def decompress(data: bytes, path: Path) -> bytes:
    """The JSON of round file ``path`` (its codec by its suffix) from its bytes ``data``."""
    return inflated(data, path, MAX_SAVE_FILE_BYTES, zstd=path.name.endswith(ZSTD))
