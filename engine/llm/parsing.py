"""A structured reply read against its schema: strict JSON first, then json-repair, values
beyond the schema's bounds clamped, never raising (a reply nested deeper than
``MAX_JSON_DEPTH`` is not parsed); the schema pasted into a prompt, and what is kept of a
reply."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

import json_repair
from pydantic import BaseModel, ValidationError

from ..core.exchanges import Outcome
from ..core.quality import Flaw, runs, words
from .bounds import MAX_JSON_DEPTH, too_deep
from .clamp import clamp

M = TypeVar("M", bound=BaseModel)
Messages = list[dict[str, str]]
#: The most of a reply kept in the record and sent back in a re-ask (a runaway reply of
#: megabytes would otherwise be stored whole and resent).
MAX_REPLY_CHARS = 32_000


@functools.cache
def schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """JSON schema of an output model (built once per model)."""
    return schema.model_json_schema()


def with_schema(messages: Messages, schema: dict[str, Any] | None) -> Messages:
    """Append the JSON instruction, and ``schema`` unless the server is given it as
    ``response_format`` (None), to the last message (the task's): what comes before it is
    the same for a structured call and a free-text one (an agent's decision and its words),
    so a server's prefix cache reuses it for both."""
    note = "\n\nReply with one JSON object and nothing else."
    if schema is not None:
        note += f"\nJSON schema:\n{json.dumps(schema, separators=(',', ':'))}\nEND SCHEMA"
    *rest, last = messages
    return [*rest, {**last, "content": last["content"] + note}]


#: What a re-ask adds to its task, around the flaw's note (a reply saying them back echoes
#: its prompt: Gemma 3 270M's Silas, asked again, said "…, in character. Reply with new
#: words of your own").
NOT_USABLE, NEW_WORDS = "A reply to this was not usable", "Reply again, in new words of your own."


def asked_again(messages: Messages, flaw: str) -> Messages:
    """``messages`` asked again after a reply with ``flaw`` (a flaw's note): the task told
    what the reply got wrong, without the reply itself. Shown its own reply, a small
    model says it again word for word (Gemma 3 270M: 116 of 161 re-asks); what comes
    before the task is as it was, so a server's prefix cache still serves it."""
    *rest, last = messages
    return [*rest, {**last, "content": last["content"] + _again(flaw)}]


def _again(flaw: str) -> str:
    """What a re-ask adds to its task after a reply with ``flaw`` (a flaw's note)."""
    return f"\n\n{NOT_USABLE}: {flaw}. {NEW_WORDS}"


#: A re-ask's reply sharing a run of this many words with what the re-ask added (its words,
#: not the reply it quotes) says it back: Gemma 3 270M's Omar (family-pressure), told "the
#: intent 'Michael' is only a name, not words", planned "Michael is only a name.".
TOLD_WORDS = 4
#: A reply quoted in a flaw's note (``repr``: in quotes not inside a word).
_QUOTED = re.compile(r"(?<!\w)(?:'[^']*'|\"[^\"]*\")(?!\w)")


def told_back(value: object, first: Flaw | None) -> Flaw | None:
    """A re-ask's reply ``value`` (text, or a model: each of its texts) that says back what
    the re-ask told it of the ``first`` reply's flaw."""
    if first is None:
        return None
    told = runs(words(_QUOTED.sub(" ", _again(first.note))), TOLD_WORDS)
    for text in _texts(value.model_dump() if isinstance(value, BaseModel) else value):
        shared = runs(words(text), TOLD_WORDS) & told
        if shared:
            run = " ".join(min(shared))
            return Flaw("echo", f"it says back what was wrong with the reply ({run!r})")
    return None


def _texts(value: object) -> list[str]:
    """Every text in ``value`` (a model's dump)."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [text for item in items for text in _texts(item)]


@dataclass(frozen=True)
class Parsed:
    """A reply read against its schema: the value (None: invalid), whether json-repair
    mended it, the fields clamped to their bounds (``far``: those far off their scale, one
    line each), and the problem of an invalid one."""

    value: BaseModel | None
    repaired: bool = False
    clamped: tuple[str, ...] = ()
    problem: str = ""
    #: The reply broke only rules a JSON schema cannot express (a model validator's).
    shaped: bool = False
    far: tuple[str, ...] = ()
    #: ``lenient``: its JSON was read with line breaks in its strings.
    read: str = ""

    @property
    def outcome(self) -> Outcome:
        return "repaired" if self.repaired else "ok"


def parse(text: str, schema: type[M], lenient: bool = True, stray: bool = True) -> Parsed:
    """Strict JSON first, then (``lenient``) JSON with line breaks in its strings, then
    json-repair, whose reading of a string's words as keys the schema does not have makes
    the reply not valid (``stray``); values beyond the schema's bounds clamped to them;
    never raises (a reply nested deeper than ``MAX_JSON_DEPTH``, which the parsers would
    recurse through, is not parsed). A replay reads a reply as its record did (records made
    before the lenient reading and the stray keys used json-repair alone)."""
    if not text or not text.strip():
        return Parsed(None, problem="the reply was empty")
    if too_deep(text):
        return Parsed(None, problem=f"the reply nests JSON deeper than {MAX_JSON_DEPTH} levels")
    stripped = _strip_fences(text)
    try:
        return Parsed(schema.model_validate_json(stripped))
    except ValidationError as err:
        problem = _problem(err)
    repaired, read = False, ""
    try:
        data = json.loads(stripped)
    except ValueError:
        repaired = True
        data, read = _with_line_breaks(stripped) if lenient else (None, "")
        if not read:
            try:
                data = json_repair.loads(text)
            except Exception:  # json-repair gives up on some inputs
                return Parsed(None, problem=problem)
            keys = _stray_keys(data, schema) if stray else ""
            if keys:  # it read a string's words as keys: the reply was not read whole
                return Parsed(None, problem=f"the reply's JSON is broken (read as keys: {keys})")
    if not isinstance(data, dict):
        return Parsed(None, problem="the reply was not a JSON object", read=read)
    clamped: list[str] = []
    far: list[str] = []
    try:
        return Parsed(schema.model_validate(data), repaired, read=read)
    except ValidationError as err:
        problem = _problem(err)
        clamped = clamp(data, schema_of(schema), far)
        shaped = _unshaped_only(err)
    if not clamped:
        return Parsed(None, problem=problem, shaped=shaped, read=read)
    try:
        valid = schema.model_validate(data)
        return Parsed(valid, repaired, tuple(clamped), far=tuple(far), read=read)
    except ValidationError as err:
        return Parsed(None, problem=_problem(err), shaped=_unshaped_only(err), read=read)


def _with_line_breaks(text: str) -> tuple[Any, str]:
    """``text`` read as JSON with line breaks (control characters) inside its strings, and
    ``lenient``; else nothing."""
    try:
        return json.loads(text, strict=False), "lenient"
    except ValueError:
        return None, ""


def _stray_keys(data: object, schema: type[BaseModel]) -> str:
    """The keys of a repaired object the schema does not have (json-repair reads the words
    of a string with quotes in it as keys: ``{"say": "…", ",": "say the whole…"}``)."""
    if not isinstance(data, dict):
        return ""
    stray = [k for k in data if k not in schema.model_fields]
    return ", ".join(repr(k) for k in stray[:3])


#: Validation errors of rules a JSON schema cannot state (raised by validators).
VALIDATOR_ERRORS = frozenset({"value_error", "assertion_error"})


def _unshaped_only(err: ValidationError) -> bool:
    return all(e["type"] in VALIDATOR_ERRORS for e in err.errors())


def in_shape(parsed: Parsed, text: str) -> bool | None:
    """Whether a reply was in the schema's shape (``None``: empty, which says nothing)."""
    if not text.strip():
        return None
    return parsed.value is not None or parsed.shaped


def kept(text: str) -> str:
    """What is kept of a reply: at most :data:`MAX_REPLY_CHARS`."""
    if len(text) <= MAX_REPLY_CHARS:
        return text
    return text[:MAX_REPLY_CHARS] + f"[... {len(text) - MAX_REPLY_CHARS} more characters]"


def _strip_fences(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`")
        stripped = stripped.removeprefix("json").strip()
    return stripped


def _problem(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "reply"
    return f"{loc}: {first['msg']}"
