"""Text that reaches a terminal or a spreadsheet: control characters and formula cells.

Scenario files may not contain control characters (checked on load); what a model returns
has them stripped before anything displays or saves it; CSV text cells that a spreadsheet
would run as a formula are neutralised with a leading apostrophe.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

T = TypeVar("T")

#: C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and
#: isolates (which reorder what a terminal shows).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: Line and tab breaks, unsafe in one-line fields (names, ids, roles).
_BREAKS = re.compile("[\t\n\u2028\u2029]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: Cells that are plain numbers, or lists of them, are never formulas.
_NUMBERS = re.compile(r"[+-]?\d[\d.]*(?:[eE][+-]?\d+)?(?:[ ;,][+-]?\d[\d.]*(?:[eE][+-]?\d+)?)*")


def unsafe_char(text: str, *, multiline: bool = False) -> str | None:
    """The first character of ``text`` a terminal would act on (None: the text is safe);
    tab and newline are allowed when ``multiline``."""
    found = _UNSAFE.search(text) or (None if multiline else _BREAKS.search(text))
    return found.group() if found else None


def char_name(char: str) -> str:
    """``U+001B`` for one character, as error messages name it."""
    return f"U+{ord(char):04X}"


def strip_controls(text: str) -> str:
    """``text`` without the control characters a terminal would act on; line ends become
    newlines and tabs stay."""
    text = text.replace("\r\n", "\n")
    return _UNSAFE.sub("", text) if _UNSAFE.search(text) else text


def clean(value: T) -> T:
    """``value`` with :func:`strip_controls` applied to every string in it (strings, lists,
    tuples, dicts and pydantic models, recursively); unchanged parts are the same objects."""
    from pydantic import BaseModel

    return _clean(value, BaseModel)


def _clean(value: Any, model: type[Any]) -> Any:
    if isinstance(value, str):
        return strip_controls(value)
    if isinstance(value, model):
        changed = {}
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = _clean(old, model)
            if new is not old:
                changed[name] = new
        return value.model_copy(update=changed) if changed else value
    if isinstance(value, list | tuple):
        items = [_clean(v, model) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    if isinstance(value, dict):
        pairs = {_clean(k, model): _clean(v, model) for k, v in value.items()}
        same = all(k in value and pairs[k] is value[k] for k in pairs)
        return value if same and len(pairs) == len(value) else pairs
    return value


def one_line(text: str) -> str:
    """``text`` as one printable line: line breaks and control characters are shown as
    escapes (``\\n``, ``\\x1b``), so a message cannot move the cursor or span lines."""
    if not (_UNSAFE.search(text) or _BREAKS.search(text)):
        return text
    return re.sub(f"{_UNSAFE.pattern}|{_BREAKS.pattern}", lambda m: repr(m.group())[1:-1], text)


def csv_cell(value: T) -> T:
    """A CSV cell a spreadsheet will not run: text beginning with ``=``, ``+``, ``-``, ``@``,
    tab or carriage return gets a leading apostrophe, unless it is a plain number (or a list
    of them). Numbers and other values are returned as they are."""
    if (
        isinstance(value, str)
        and value.startswith(_FORMULA_START)
        and not _NUMBERS.fullmatch(value)
    ):
        return "'" + value  # type: ignore[return-value]
    return value


def csv_row(row: Any) -> list[Any]:
    """One CSV row (a sequence of cells) with :func:`csv_cell` applied to each cell."""
    return [csv_cell(v) for v in row]
