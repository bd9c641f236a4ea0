"""Hypothesis strategies that break scenario files: the bundled library mutated on its data
(deleted, duplicated and retyped fields, control characters, deep nesting, huge values,
case-folded duplicate names) and on its text (lines and bytes deleted or repeated, raw
control characters, a BOM, truncation), and the checks every resulting error must pass."""

from __future__ import annotations

import copy
import json
import math
import re
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from engine.core.limits import MAX_DEPTH
from engine.core.scenario import library_ids
from engine.core.textsafe import unsafe_char

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "scenarios"
CONTROL = ["\x1b", "\x07", "\x00", "\x9b", "\u202e", "\r", "\n", "\t", "\x7f", "\x1b[2J"]
ODD_VALUES: list[Any] = [
    True,
    False,
    0,
    -1,
    3.5,
    "3",
    "",
    " ",
    [],
    {},
    10**30,
    -(10**30),
    1e308,
    math.inf,
    -math.inf,
    math.nan,
    "x" * 20_000,
    '=HYPERLINK("http://x")',
    [1, "a", None is None],
    {"nested": {"deeper": [1, 2]}},
]


@cache
def library() -> dict[str, dict[str, Any]]:
    """Every bundled scenario's parsed data, by id."""
    return {sid: tomllib.loads((LIBRARY / f"{sid}.toml").read_text()) for sid in library_ids()}


# -- writing data back as TOML -----------------------------------------------------------


def toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes, DEL and C1 controls escaped too, other
    characters as they are (TOML has no surrogate pairs)."""
    quoted = json.dumps(text, ensure_ascii=False)
    return re.sub("[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", quoted)


def toml_value(value: Any) -> str:
    """``value`` as an inline TOML value (tables inline, strings JSON-escaped)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
        )
    raise TypeError(type(value))


def to_toml(data: dict[str, Any]) -> str:
    """Scenario data as a TOML document (one ``key = value`` line per top-level field)."""
    return "".join(f"{toml_string(k)} = {toml_value(v)}\n" for k, v in data.items())


# -- data mutations -----------------------------------------------------------------------

Path_ = tuple[str | int, ...]


def paths(data: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every path into ``data`` (dict keys and list indexes), the root excluded."""
    found: list[Path_] = []
    items = (
        data.items()
        if isinstance(data, dict)
        else enumerate(data)
        if isinstance(data, list)
        else ()
    )
    for key, value in items:
        here = (*prefix, key)
        found.append(here)
        found.extend(paths(value, here))
    return found


def parent_of(data: Any, path: Path_) -> Any:
    node = data
    for part in path[:-1]:
        node = node[part]
    return node


def nest(value: Any, depth: int, tables: bool) -> Any:
    for _ in range(depth):
        value = {"x": value} if tables else [value]
    return value


@st.composite
def mutated_data(draw: st.DrawFn) -> tuple[str, dict[str, Any], str]:
    """(scenario id, mutated data, what was done) from one to three mutations."""
    sid = draw(st.sampled_from(sorted(library())))
    data = copy.deepcopy(library()[sid])
    done = []
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(paths(data)))
        parent, key = parent_of(data, where), where[-1]
        kind = draw(
            st.sampled_from(
                [
                    "delete",
                    "duplicate",
                    "retype",
                    "control",
                    "control-key",
                    "nest",
                    "huge",
                    "case-twin",
                ]
            )
        )
        if kind == "delete":
            del parent[key]
        elif kind == "duplicate":
            if isinstance(parent, list):
                parent.insert(key, copy.deepcopy(parent[key]))  # type: ignore[arg-type]
            else:
                parent[f"{key}_copy"] = copy.deepcopy(parent[key])
        elif kind == "retype":
            parent[key] = copy.deepcopy(draw(st.sampled_from(ODD_VALUES)))
        elif kind == "control":
            char = draw(st.sampled_from(CONTROL))
            old = parent[key]
            text = old if isinstance(old, str) else "value"
            at = draw(st.integers(0, len(text)))
            parent[key] = text[:at] + char + text[at:]
        elif kind == "control-key" and isinstance(parent, dict):
            parent[f"{key}{draw(st.sampled_from(CONTROL))}"] = parent.pop(key)
        elif kind == "nest":
            depth = draw(st.integers(1, 3 * MAX_DEPTH))
            parent[key] = nest(parent[key], depth, draw(st.booleans()))
        elif kind == "huge":
            parent[key] = draw(st.sampled_from([10**23, -(10**23), 1e308, 2**63, 10_001]))
        elif kind == "case-twin" and data.get("agents"):
            agents = data["agents"]
            if isinstance(agents, list) and agents and isinstance(agents[0], dict):
                twin = copy.deepcopy(agents[0])
                if isinstance(twin.get("name"), str):
                    twin["name"] = twin["name"].swapcase()
                agents.append(twin)
        done.append(f"{kind} {'.'.join(map(str, where))}")
        if not paths(data):
            break
    return sid, data, "; ".join(done)


# -- text mutations -----------------------------------------------------------------------


@st.composite
def mutated_text(draw: st.DrawFn) -> tuple[str, bytes, str]:
    """(scenario id, mutated file bytes, what was done)."""
    sid = draw(st.sampled_from(sorted(library())))
    raw = (LIBRARY / f"{sid}.toml").read_bytes()
    done = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(
            st.sampled_from(
                [
                    "drop-line",
                    "repeat-line",
                    "drop-bytes",
                    "raw-control",
                    "bom",
                    "truncate",
                    "deep-array",
                    "deep-table",
                    "junk-bytes",
                ]
            )
        )
        lines = raw.split(b"\n")
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        if kind == "drop-line":
            del lines[at]
            raw = b"\n".join(lines)
        elif kind == "repeat-line":
            lines.insert(at, lines[at])
            raw = b"\n".join(lines)
        elif kind == "drop-bytes":
            start = draw(st.integers(0, len(raw)))
            raw = raw[:start] + raw[start + draw(st.integers(1, 40)) :]
        elif kind == "raw-control":
            start = draw(st.integers(0, len(raw)))
            raw = raw[:start] + draw(st.sampled_from(CONTROL)).encode() + raw[start:]
        elif kind == "bom":
            raw = b"\xef\xbb\xbf" + raw
        elif kind == "truncate":
            raw = raw[: draw(st.integers(0, len(raw)))]
        elif kind in ("deep-array", "deep-table"):
            depth = draw(st.sampled_from([MAX_DEPTH + 1, 200, 3000]))
            if kind == "deep-array":
                value = "[" * depth + "]" * depth
            else:
                value = "{a = " * depth + "1" + "}" * depth
            raw = f"deep = {value}\n".encode() + raw
        else:
            start = draw(st.integers(0, len(raw)))
            raw = raw[:start] + draw(st.binary(min_size=1, max_size=8)) + raw[start:]
        done.append(kind)
    return sid, raw, "; ".join(done)


# -- what every error must be -----------------------------------------------------------

#: After "<file>: ": a field path and its problem, or a problem of the file as a whole.
_FILE_PROBLEM = re.compile(
    r"invalid TOML: .+ \(at line \d+, column \d+\)|not a UTF-8 text file"
    r"|nested deeper than \d+ levels|larger than \d+ MB, the limit for a scenario file"
)


def check_error(message: str, path: Path, data: dict[str, Any] | None = None) -> None:
    """One printable line naming the file, then the field (or the file's problem); with the
    mutated ``data``, the field's first part is one of its keys or a required field."""
    assert "\n" not in message and unsafe_char(message) is None, repr(message)
    prefix = f"{path}: "
    assert message.startswith(prefix), message
    rest = message.removeprefix(prefix)
    if _FILE_PROBLEM.fullmatch(rest):
        return
    field, sep, problem = rest.partition(": ")
    assert sep and problem, message
    if data is not None:
        first = re.match(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^.]+", field)
        assert first, message
        keys = {repr(k) if unsafe_char(k) else k for k in data} | {"title", "agents"}
        assert first.group() in keys, (first.group(), message)
