"""Save format 6's number columns: a whole array as one JSON string, written from its bytes.

A column is ``"<type>:<base64>"``: the array's little-endian bytes, ``<type>`` one of ``i1``,
``i2``, ``i4``, ``i8`` (integers, the narrowest that holds them) and ``f8`` (floats, their
exact bits). A column of floats that all are decimals of ``p`` places (what the engine
rounds favorability and its movement to) is stored as those integers: ``"i2/4:..."`` is
``k / 10**4``, and only where dividing gives back every float bit for bit (else ``f8``), so
reading returns the very floats written. Neither writing nor reading makes a Python object
per element; as text, the integers compress to about half of what the decimals in JSON do,
in a third of the time.

In a pydantic model a column is an :data:`Ints`, :data:`Decimals4` or :data:`Decimals6`
field holding a numpy array: validated from the string (or taken as an array), serialized
to it; in a binary round file (format 8, engine/saves/binround.py), whose serialization and
validation context holds its blobs, it is a reference to those instead.
"""

from __future__ import annotations

import base64
import binascii
import re
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import PlainSerializer, PlainValidator, SerializationInfo, ValidationInfo

from .binround import BLOBS, floats_ref, from_ref, ints_ref, narrowest

if TYPE_CHECKING:
    import numpy as np

_COLUMN = re.compile(r"(i[1248]|f8)(?:/(\d{1,2}))?:")


def pack_ints(values: np.ndarray) -> str:
    """The column of integer array ``values``."""
    import numpy as np

    return _packed(np.asarray(values), None)


def pack_floats(values: np.ndarray, places: int) -> str:
    """The column of float array ``values``: as integers of ``places`` decimals where that
    gives back every float exactly, else as the floats' bits."""
    import numpy as np

    values = np.asarray(values, np.float64)
    scale = 10.0**places
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.rint(values * scale)
        ok = bool(np.isfinite(scaled).all()) and (
            not len(scaled) or float(np.abs(scaled).max()) < 2.0**62
        )
        if ok:
            codes = scaled.astype(np.int64)
            ok = bool((np.divide(codes, scale).view(np.int64) == values.view(np.int64)).all())
    if not ok:
        return "f8:" + _b64(values.astype("<f8", copy=False))
    return _packed(codes, places)


def unpack(text: str) -> np.ndarray:
    """The array of a column (floats for ``f8`` and decimals, int64 for integers); a
    malformed column is a ValueError."""
    import numpy as np

    head = _COLUMN.match(text)
    if head is None:
        raise ValueError("not a packed column (expected '<type>:<base64>')")
    kind, places = head[1], head[2]
    try:
        data = base64.b64decode(text[head.end() :], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a packed column that is not base64") from None
    dtype = np.dtype("<" + kind)
    if len(data) % dtype.itemsize:
        raise ValueError("a packed column cut inside a number")
    array = np.frombuffer(data, dtype)
    if kind == "f8":
        if places is not None:
            raise ValueError("a packed column of floats with decimal places")
        return array.astype(np.float64)
    if places is not None:
        return np.divide(array.astype(np.int64), 10.0 ** int(places))
    return array.astype(np.int64)


def _packed(values: np.ndarray, places: int | None) -> str:
    codes = narrowest(values)
    kind = codes.dtype.str[1:]
    tag = kind if places is None else f"{kind}/{places}"
    return f"{tag}:{_b64(codes)}"


def _b64(values: np.ndarray) -> str:
    return base64.b64encode(values.tobytes()).decode("ascii")


def _validated(kind: str, value: object, info: ValidationInfo) -> np.ndarray:
    import numpy as np

    if isinstance(value, str):
        array = unpack(value)
    elif isinstance(value, dict):
        blobs = (info.context or {}).get(BLOBS)
        if blobs is None:
            raise ValueError("a reference to binary columns outside a binary round file")
        array = from_ref(value, blobs)
    elif isinstance(value, np.ndarray) and value.ndim == 1:
        array = value
    else:
        raise ValueError("expected a packed column")
    if kind == "int" and array.dtype.kind not in "iu":
        raise ValueError("a packed column of floats where integers belong")
    if kind == "float":
        array = array.astype(np.float64, copy=False)
    return array


def _ints(values: np.ndarray, info: SerializationInfo) -> str | dict[str, int]:
    blobs = (info.context or {}).get(BLOBS)
    return pack_ints(values) if blobs is None else ints_ref(values, blobs)


def _floats(places: int, values: np.ndarray, info: SerializationInfo) -> str | dict[str, int]:
    blobs = (info.context or {}).get(BLOBS)
    return pack_floats(values, places) if blobs is None else floats_ref(values, places, blobs)


#: A column of integers (an int array in the model).
Ints = Annotated[
    Any,
    PlainValidator(partial(_validated, "int")),
    PlainSerializer(_ints, return_type=Any, when_used="json"),
]


def _decimals(places: int) -> PlainSerializer:
    return PlainSerializer(partial(_floats, places), return_type=Any, when_used="json")


#: A column of floats (a float array in the model), stored as integers of 4 (6) decimals
#: where that is exact.
Decimals4 = Annotated[Any, PlainValidator(partial(_validated, "float")), _decimals(4)]
Decimals6 = Annotated[Any, PlainValidator(partial(_validated, "float")), _decimals(6)]
