"""Text that reaches a terminal or a spreadsheet: control characters and formula cells.

Scenario files may not contain control characters (checked on load); what a model returns
has them stripped before anything displays or saves it; what else comes from outside (error
messages quoting a reply, file names) is escaped where it is shown or exported. CSV text
cells that a spreadsheet would run as a formula are neutralised with a leading apostrophe.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable
from typing import Any, TypeVar

T = TypeVar("T")

#: C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and
#: isolates (which reorder what a terminal shows).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: Line and tab breaks, unsafe in one-line fields (names, ids, roles).
_BREAKS = re.compile("[\t\n\u2028\u2029]")
FORMULA_START = ("=", "+", "-", "@", "\t")
#: Cells that are plain numbers, or lists of them, are never formulas.
_NUMBERS = re.compile(r"[+-]?\d[\d.]*(?:[eE][+-]?\d+)?(?:[ ;,][+-]?\d[\d.]*(?:[eE][+-]?\d+)?)*")


def unsafe_char(text: str, *, multiline: bool = False) -> str | None:
    """The first character of ``text`` a terminal would act on (None: the text is safe);
    tab and newline are allowed when ``multiline``."""
    found = UNSAFE.search(text) or (None if multiline else _BREAKS.search(text))
    return found.group() if found else None


#: Characters a terminal draws as nothing (Unicode's default-ignorable code points: zero
#: widths, joiners, direction marks, variation selectors, fillers, tags).
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def format_char(text: str) -> str | None:
    """The first format character of ``text`` (Unicode category Cf: zero-width spaces and
    joiners, direction marks, the soft hyphen, tags), or None."""
    for char in text:
        if unicodedata.category(char) == "Cf":
            return char
    return None


#: Cyrillic and Greek letters drawn as a Latin one is, case-folded (``Н`` and ``н`` are
#: ``h``, Greek ``Η`` and ``η`` too), from Unicode's confusables of the three scripts.
_LOOKALIKES = str.maketrans(
    "авеѐёѕіїјкмнорстухһӏԁԛԝүӧαβεηικμνορτυχζϲ",
    "abeeesiijkmhopctyxhldqwyoabehikmnoptyxzc",
)


def name_key(name: str) -> str:
    """What a name looks like, for telling look-alikes apart: compatibility-normalised
    (NFKC: ``Ａ`` is ``A``, a composed ``ë`` is a decomposed one), case-folded, Cyrillic and
    Greek look-alikes of Latin letters read as those (``Аnn`` is ``ann``), without
    invisible or format characters, runs of spaces as one."""
    text = "".join(c for c in _INVISIBLE.sub("", name) if unicodedata.category(c) != "Cf")
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(text.translate(_LOOKALIKES).split())


def char_name(char: str) -> str:
    """``U+001B`` for one character, as error messages name it."""
    return f"U+{ord(char):04X}"


def strip_controls(text: str) -> str:
    """``text`` without the control characters a terminal would act on; line ends become
    newlines and tabs stay."""
    text = text.replace("\r\n", "\n")
    return UNSAFE.sub("", text) if UNSAFE.search(text) else text


def clean(value: T) -> T:
    """``value`` with :func:`strip_controls` applied to every string in it (strings, lists,
    tuples, dicts and pydantic models, recursively); unchanged parts are the same objects."""
    from pydantic import BaseModel

    return _clean(value, BaseModel)


def _clean(value: Any, model: type[Any]) -> Any:
    if isinstance(value, str):  # (an enum's value, a str, unchanged stays the enum's)
        text = strip_controls(value)
        return value if text == value else text
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
    if not (UNSAFE.search(text) or _BREAKS.search(text)):
        return text
    return re.sub(f"{UNSAFE.pattern}|{_BREAKS.pattern}", _escape, text)


def escape_controls(text: str) -> str:
    """``text`` with the control characters a terminal would act on shown as escapes
    (``\\x1b``, ``\\u202e``); line ends become newlines and tabs stay, so prose keeps
    its lines. For text that is kept, such as an export's cells."""
    if not UNSAFE.search(text):
        return text
    return UNSAFE.sub(_escape, text.replace("\r\n", "\n"))


def _escape(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def escaped(value: T) -> T:
    """:func:`escape_controls` for a text cell; other values are returned as they are."""
    return escape_controls(value) if isinstance(value, str) else value  # type: ignore[return-value]


def csv_cell(value: T) -> T:
    """A CSV cell a spreadsheet will not run and a terminal showing it will not act on:
    control characters are escaped (:func:`escape_controls`), and text beginning with
    ``=``, ``+``, ``-``, ``@`` or tab gets a leading apostrophe, unless it is a plain
    number (or a list of them). Numbers and other values are returned as they are."""
    if not isinstance(value, str):
        return value
    text = escape_controls(value)
    if text.startswith(FORMULA_START) and not _NUMBERS.fullmatch(text):
        return "'" + text  # type: ignore[return-value]
    return text  # type: ignore[return-value]


def list_cell(items: Iterable[str]) -> str:
    """Names in one cell, separated by ``;``; a name holding ``;``, a quote or a line break
    is quoted CSV-style (``"A;B";C``), so ``csv.reader([cell], delimiter=";")`` gives the
    names back whatever they hold."""
    out = io.StringIO()
    csv.writer(out, delimiter=";", lineterminator="").writerow(items)
    return out.getvalue()


#: What :func:`csv_cell` changes, searched in texts joined by line breaks.
GUARDED = re.compile(f"{UNSAFE.pattern}|^[{re.escape(''.join(FORMULA_START))}]", re.M)


def csv_row(row: Any) -> list[Any]:
    """One CSV row (a sequence of cells) with :func:`csv_cell` applied to each cell: one
    search of its text cells joined by line breaks tells whether the guard leaves each as
    it is (a cell's own line break sends the row cell by cell)."""
    texts = [v for v in row if isinstance(v, str)]
    joined = "\n".join(texts)
    if joined.count("\n") == len(texts) - 1 and not GUARDED.search(joined):
        return list(row)
    return [csv_cell(v) for v in row]
