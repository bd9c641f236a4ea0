"""A round file's compressed bytes: one gzip member or one zstd frame, read bounded.

zstd goes through Python's own ``compression.zstd`` (3.14 on) or its backport,
``backports.zstd``, a socialsim dependency before 3.14. It imports in ~7 ms of CPU;
pyarrow's codec, which wrote the same bytes before, cost loading pyarrow (~70 ms beside
numpy) in every process that read or wrote a large cast's round.

Reading takes one whole stream: one that is garbled, cut short, followed by other data or
inflates beyond its limit is damage, a SaveError naming the file (:func:`damaged`).
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import SaveError, incomplete_install


def damaged(path: Path, why: str) -> SaveError:
    """The error of a round file that cannot be read, and why."""
    return SaveError(f"{path}: damaged round file ({why})")


def zstd_frame(data: bytes, level: int) -> bytes:
    """``data`` as one zstd frame at ``level``."""
    return _zstd().compress(data, level=level)


def inflated(data: bytes | memoryview, path: Path, limit: int, *, zstd: bool) -> bytes:
    """The data of round file ``path``'s one gzip member (or, with ``zstd``, zstd frame)
    ``data``, at most ``limit`` bytes."""
    inflate: Any  # (zlib's and zstd's decompressors have the same shape)
    if zstd:
        module = _zstd()
        inflate, error = module.ZstdDecompressor(), module.ZstdError
    else:
        inflate, error = zlib.decompressobj(wbits=31), zlib.error
    try:
        out: bytes = inflate.decompress(data, limit + 1)
    except error as err:
        raise damaged(path, str(err)) from None
    if len(out) > limit:
        raise damaged(path, "inflates beyond the size limit")
    if not inflate.eof or inflate.unused_data:
        raise damaged(path, "truncated or trailing data")
    return out


def _zstd() -> ModuleType:
    try:
        if sys.version_info >= (3, 14):
            import compression.zstd as zstd
        else:
            import backports.zstd as zstd
    except ImportError:
        raise incomplete_install("backports.zstd", "a large cast's round file") from None
    return zstd
