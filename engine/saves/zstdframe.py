"""zstd frames, as the round files hold them (binary rounds, and JSON rounds of long LLM
exchanges): Python's own ``compression.zstd`` (3.14 on) or its backport,
``backports.zstd``, a socialsim dependency before 3.14. It imports in ~7 ms of CPU;
pyarrow's codec, which wrote the same bytes before, cost loading pyarrow (~70 ms beside
numpy) in every process that read or wrote a large cast's round.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

from ..errors import SaveError, incomplete_install


def _zstd() -> ModuleType:
    try:
        if sys.version_info >= (3, 14):
            import compression.zstd as zstd
        else:
            import backports.zstd as zstd
    except ImportError:
        raise incomplete_install("backports.zstd", "a large cast's round file") from None
    return zstd


def compress(data: bytes, level: int) -> bytes:
    """``data`` as one zstd frame at ``level``."""
    return bytes(_zstd().compress(data, level=level))


def decompress(frame: bytes | memoryview, limit: int, path: Path) -> bytes:
    """The data of one whole zstd ``frame`` of round file ``path``, at most ``limit``
    bytes; a frame that is garbled, cut short, followed by other data or inflates beyond
    ``limit`` is a SaveError naming the file."""
    zstd = _zstd()
    inflate = zstd.ZstdDecompressor()
    try:
        data = inflate.decompress(frame, max_length=limit + 1)
    except zstd.ZstdError as err:
        raise SaveError(f"{path}: damaged round file ({err})") from None
    if len(data) > limit:
        raise SaveError(f"{path}: damaged round file (inflates beyond the size limit)")
    if not inflate.eof or inflate.unused_data:
        raise SaveError(f"{path}: damaged round file (truncated or trailing data)")
    return bytes(data)
