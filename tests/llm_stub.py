"""A local OpenAI-compatible chat-completions stub server for tests and benchmarks.

Standard library only. The server runs in a background thread (``ThreadingHTTPServer``,
one handler thread per request, so latencies of concurrent requests overlap)::

    from llm_stub import StubLLM

    with StubLLM(latency=0.05, faults={"500": 0.1}, seed=1) as stub:
        url = stub.url  # "http://127.0.0.1:PORT/v1", for api_base / base_url
        ...
        assert stub.calls == 3 and stub.faults_served["500"] == 1

What it answers is driven by the request:

* ``response_format = {"type": "json_schema", "json_schema": {"schema": S}}``, or
  ``{"type": "json_object", "schema": S}`` (llama.cpp's servers) -> JSON valid against ``S``
  (a generator for the JSON Schema subset pydantic v2 emits);
* else a system/user message holding the marker ``JSON schema:`` followed by a schema (the
  rest of the message, or up to a line ``END SCHEMA``; the latest such message wins) -> JSON
  valid against that schema;
* else a plain sentence of 8-20 words (deterministic for a seed and a call index).

An array of exactly k objects (``minItems`` = ``maxItems`` = k) whose items have a required
property with k allowed values (``enum``, or ``const`` for k = 1) is a keyed list, like the
batched judge's judgements: the stub gives each value once, in order.

Faults (``faults={"500": 0.1, ...}`` drawn per request, or queued with :meth:`StubLLM.script`):
``"500"``, ``"429"`` (``Retry-After: 0``), ``"timeout"`` (answer only after ``hang_seconds``),
``"malformed"`` (broken JSON), ``"schema"`` (valid JSON violating the schema), ``"empty"``
(empty content), ``"incomplete"`` (a keyed list with items dropped and one repeated: k = 1
gives ``[]``, k >= 2 the first half and the first item again). ``malformed``/``schema`` only
apply to schema requests (streamed or not), ``incomplete`` to those with a keyed list. A
fault that does not apply to a request is not served (the request gets a normal answer) and
is not counted.

Servers that refuse a response format: ``reject_json_schema=True`` answers a json_schema
``response_format`` with an OpenAI-style 400; ``rejects={"json_schema"}`` answers it as
llama-cpp-python's server does, HTTP 500 with pydantic's "Input should be 'text' or
'json_object'" (``rejects={"json_schema", "json_object"}``: json_object too, "Input should
be 'text'"). Each request's headers are kept in ``headers`` (``Authorization`` included).

Connections: by default each response closes its connection (``stop()`` never waits on an
idle client). ``keep_alive=True`` keeps them open for the next request, as a real server does;
``connections`` counts the connections accepted either way (a client that reuses its HTTP
connections opens few).

Usage: by default ``prompt_tokens`` and ``completion_tokens`` count words and punctuation
marks (no dependency; close to a BPE tokenizer's count);
``tokens="litellm"`` counts them as a provider bills them, with ``litellm.token_counter``
(the messages, plus a schema sent as ``response_format``), for tests of cost estimates.
Either way only the messages the server read count (see ``drop_system``).

Local servers (each mode on its own; they combine):

* ``json_object_schema=True`` (the default with ``server="llama.cpp"``): a
  ``response_format = {"type": "json_object", "schema": S}`` is enforced as llama.cpp's
  grammar does: the reply is valid against ``S``. Without it such a schema is ignored and the
  reply is unrelated JSON (``{"answer": ...}``), as a server that takes the field and drops it.
  With ``rejects={"json_schema"}`` too, the stub is llama-cpp-python's server (json_schema
  answered with HTTP 500).
* ``server="llama.cpp"``: ``GET /props`` gives ``default_generation_settings.n_ctx`` (``n_ctx``)
  and ``total_slots`` (``slots``, else 1).
* ``server="vllm"``: ``GET /v1/models`` gives each model's ``max_model_len`` (``n_ctx``).
* ``server="ollama"``: Ollama's native API beside the OpenAI one: ``POST /api/chat`` (``format``
  = ``"json"`` or a JSON schema, which the reply conforms to; ``stream`` defaults to true and
  streams NDJSON lines; the counts are ``prompt_eval_count`` and ``eval_count``),
  ``POST /api/show`` (``model_info`` with ``stub.context_length`` = ``n_ctx``), ``GET
  /api/tags``. Other servers answer these paths with 404.
* ``slots=N``: at most N requests are answered at once; the rest wait server-side, first in
  first out (``granted``: the call indices in the order they got a slot). None: no limit.
  With ``interrupts=True`` too, a stream being answered is cut short (``[DONE]`` before any
  ``finish_reason``, then the connection closed; counted in ``cut``) as soon as another
  request waits, as llama-cpp-python's server does.
* ``prompt_rate`` and ``generate_rate`` (tokens per second, per request, in the stub's token
  counts): a reply takes ``prompt_tokens / prompt_rate + completion_tokens / generate_rate``
  seconds beyond ``latency`` (streamed: the prompt time before the first chunk, the rest
  spread over the chunks), inside its slot, as a server that decodes a few requests at once.
* ``drop_system=True``: system messages are dropped before anything else, as a chat template
  without a system role does (llama-cpp-python's ``gemma``): the reply sees only the other
  messages (a schema pasted in the system text is not seen) and ``prompt_tokens`` counts only
  the kept messages.
* ``stream_usage=False``: a streamed reply never carries a usage chunk, even when
  ``stream_options.include_usage`` asks for one.
* a prefix cache, said as the server says it: ``server="llama.cpp"`` replies carry
  ``timings`` (``cache_n``: the prompt's pieces, counted as ``tokens="words"`` counts them, that
  repeat an earlier prompt's from the first on; ``prompt_n``: the rest), non-streamed and on a
  stream's last chunk; ``server="vllm"`` says ``usage.prompt_tokens_details.cached_tokens``;
  ``cached``: each reply's figure, in order.
* the ``"range"`` and ``"scale"`` faults (drawn or scripted like the others; schema
  requests): the reply is in the schema's shape but its first bounded number, depth first, is
  put out of range: past its bound by three times the bound's size for ``range``
  (``{"urgency": 40, ...}`` for 0 to 10, an overshoot), by 365 times for ``scale``
  (``{"urgency": 3660, ...}``, far off the scale; see :func:`out_of_range`). They are not
  among :data:`FAULT_KINDS`, so the fault sweeps over those do not draw them.
* a hostile or broken server's faults (:data:`HOSTILE_FAULTS`, drawn or scripted like the
  others, never by the sweeps; chat completions only): ``"slow"``, the reply a piece at a
  time over ``hang_seconds`` (each piece soon after the last, so no idle timeout fires;
  sent whole, its body trickles in 16 pieces); ``"endless"``, ``"la "`` every 10 ms for
  ever (sent whole, a body that never ends), until the client goes away or the stub stops;
  ``"huge"``, a reply of ``huge_chars`` characters (10 MB of ``"la la ..."``; streamed in
  64 KiB events); ``"deep"`` (schema requests), JSON nested 10,000 deep.

Manual use (serves until Ctrl-C)::

    python tests/llm_stub.py --port 8765 --latency 0.2 --faults 500=0.1,malformed=0.1
    python tests/llm_stub.py --rejects json_schema  # as llama-cpp-python's server
    python tests/llm_stub.py --server llama.cpp --slots 1 --prompt-rate 300 --generate-rate 30
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import signal
import socket
import sys
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FAULT_KINDS",
    "KEYED_FAULTS",
    "StubLLM",
    "generate_from_schema",
    "llama_cpp_refusal",
    "out_of_range",
    "violate_schema",
]

#: Faults any JSON request can get.
FAULT_KINDS: tuple[str, ...] = ("500", "429", "timeout", "malformed", "schema", "empty")
#: Faults only requests whose schema has a keyed list can get.
KEYED_FAULTS: tuple[str, ...] = ("incomplete",)
#: Faults only requests whose schema bounds a number can get (a grammar gives the shape, not
#: the range).
VALUE_FAULTS: tuple[str, ...] = ("range", "scale")
#: Faults of a hostile or broken server (see the module docstring); never drawn by the
#: sweeps over :data:`FAULT_KINDS`.
HOSTILE_FAULTS: tuple[str, ...] = ("slow", "endless", "huge", "deep")
ALL_FAULTS = FAULT_KINDS + KEYED_FAULTS + VALUE_FAULTS + HOSTILE_FAULTS
SCHEMA_ONLY_FAULTS = frozenset({"malformed", "schema", "incomplete", *VALUE_FAULTS, "deep"})
#: What an ``endless`` reply sends, and how often (seconds), for ever.
ENDLESS_WORD = "la "
ENDLESS_EVERY = 0.01
#: The nesting of a ``deep`` reply, and the characters of a ``huge`` one (streamed in
#: events of :data:`HUGE_PIECE` characters).
DEEP = 10_000
HUGE_CHARS = 10_000_000
HUGE_PIECE = 64 * 1024
REFUSABLE = frozenset({"json_schema", "json_object"})
#: The servers the stub can pass for (the endpoints beside chat completions they serve).
SERVERS = ("openai", "llama.cpp", "vllm", "ollama")
#: How far past its bound a ``range`` and a ``scale`` fault put a number, in bound sizes.
PAST_BOUND = {"range": 3, "scale": 365}

SCHEMA_MARKER = "JSON schema:"
SCHEMA_END = "END SCHEMA"

WORDS: tuple[str, ...] = (
    "the", "council", "roof", "budget", "vote", "tonight", "we", "should", "listen", "before",
    "deciding", "money", "is", "tight", "but", "trust", "matters", "more", "than", "numbers",
    "I", "think", "you", "are", "wrong", "about", "this", "plan", "let", "us", "wait", "for",
    "news", "from", "the", "bank", "everyone", "deserves", "a", "fair", "hearing", "and",
    "honest", "answer", "rain", "keeps", "coming", "through", "hall", "again",
)  # fmt: skip
NAME_WORDS: tuple[str, ...] = (
    "amber", "birch", "cedar", "delta", "ember", "fable", "grove", "harbor", "iris", "juniper",
    "kestrel", "linden", "maple", "north", "olive", "pebble", "quill", "river", "sage", "thistle",
)  # fmt: skip

MAX_DEPTH = 5  # past this nesting depth the generator produces minimal values
_IDENTITY_KEYS = ("title", "description", "default", "examples", "$ref")


# --------------------------------------------------------------------------- JSON Schema


def _resolve(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` (``#/$defs/X`` style) and merge ``allOf``; sibling keys win."""
    if not isinstance(schema, dict):
        return {} if schema is True or schema is None else {"not": {}}
    seen = 0
    while "$ref" in schema and seen < 32:
        seen += 1
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#").strip("/").split("/"):
            if not part:
                continue
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part, {}) if isinstance(target, dict) else {}
        merged = dict(target) if isinstance(target, dict) else {}
        merged.update({k: v for k, v in schema.items() if k != "$ref"})
        schema = merged
    if "allOf" in schema:
        merged = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, root))
        merged.update({k: v for k, v in schema.items() if k != "allOf"})
        schema = merged
    return schema


def _words(rng: random.Random, low: int, high: int, pool: tuple[str, ...] = NAME_WORDS) -> str:
    return " ".join(rng.choice(pool) for _ in range(rng.randint(low, high)))


class _Generator:
    def __init__(self, root: dict[str, Any], rng: random.Random) -> None:
        self.root = root
        self.rng = rng

    def gen(self, schema: Any, depth: int = 0) -> Any:
        rng = self.rng
        s = _resolve(schema, self.root)
        if "const" in s:
            return s["const"]
        if s.get("enum"):
            return rng.choice(s["enum"])
        branches = s.get("anyOf") or s.get("oneOf")
        if branches:
            non_null = [b for b in branches if _resolve(b, self.root).get("type") != "null"]
            nulls = [b for b in branches if b not in non_null]
            if depth >= MAX_DEPTH and nulls:
                return None
            pick = rng.choice(non_null) if non_null and (not nulls or rng.random() < 0.7) else None
            if pick is None:
                pick = rng.choice(nulls or branches)
            rest = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf", *_IDENTITY_KEYS)}
            return self.gen({**rest, **_resolve(pick, self.root)}, depth)
        if "default" in s and rng.random() < 0.15:
            return s["default"]
        kind = s.get("type")
        if isinstance(kind, list):
            kind = rng.choice(kind) if kind else None
        if kind is None:
            if "properties" in s or "additionalProperties" in s:
                kind = "object"
            elif "items" in s or "prefixItems" in s:
                kind = "array"
            elif any(k in s for k in ("minimum", "maximum", "exclusiveMinimum")):
                kind = "number"
            else:
                kind = "string"
        method = getattr(self, f"_gen_{kind}", None)
        return method(s, depth) if method else _words(rng, 1, 2)

    # -- scalars
    def _gen_null(self, s: dict[str, Any], depth: int) -> None:
        return None

    def _gen_boolean(self, s: dict[str, Any], depth: int) -> bool:
        return self.rng.random() < 0.5

    def _gen_integer(self, s: dict[str, Any], depth: int) -> int:
        lo = s.get("minimum")
        hi = s.get("maximum")
        if "exclusiveMinimum" in s:
            x = s["exclusiveMinimum"]
            lo = max(lo, int(x // 1) + 1) if lo is not None else int(x // 1) + 1
        if "exclusiveMaximum" in s:
            x = s["exclusiveMaximum"]
            x = int(-(-x // 1)) - 1  # largest integer strictly below
            hi = min(hi, x) if hi is not None else x
        lo = int(-(-lo // 1)) if lo is not None else None
        hi = int(hi // 1) if hi is not None else None
        if lo is None and hi is None:
            lo, hi = 0, 100
        elif lo is None:
            lo = hi - 100
        elif hi is None:
            hi = lo + 100
        step = s.get("multipleOf")
        if isinstance(step, int) and step > 0:
            first, last = -(-lo // step), hi // step
            if first <= last:
                return self.rng.randint(first, last) * step
        return self.rng.randint(lo, max(lo, hi))

    def _gen_number(self, s: dict[str, Any], depth: int) -> float:
        lo = s.get("minimum", s.get("exclusiveMinimum"))
        hi = s.get("maximum", s.get("exclusiveMaximum"))
        if "minimum" in s and "exclusiveMinimum" in s:
            lo = max(s["minimum"], s["exclusiveMinimum"])
        if "maximum" in s and "exclusiveMaximum" in s:
            hi = min(s["maximum"], s["exclusiveMaximum"])
        if lo is None and hi is None:
            lo, hi = 0.0, 100.0
        elif lo is None:
            lo = hi - 100.0
        elif hi is None:
            hi = lo + 100.0
        lo, hi = float(lo), float(hi)

        def ok(v: float) -> bool:
            if "minimum" in s and v < s["minimum"]:
                return False
            if "maximum" in s and v > s["maximum"]:
                return False
            if "exclusiveMinimum" in s and v <= s["exclusiveMinimum"]:
                return False
            return not ("exclusiveMaximum" in s and v >= s["exclusiveMaximum"])

        step = s.get("multipleOf")
        if isinstance(step, (int, float)) and step > 0:
            first, last = -int(-lo // step), int(hi // step)
            for _ in range(8):
                value = round(self.rng.randint(first, max(first, last)) * step, 10)
                if ok(value):
                    return value
        for _ in range(8):
            value = round(lo + (hi - lo) * self.rng.random(), 3)
            if ok(value):
                return value
        return (lo + hi) / 2

    def _gen_string(self, s: dict[str, Any], depth: int) -> str:
        rng = self.rng
        fmt = s.get("format")
        if fmt == "date-time":
            text = f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T12:{rng.randint(10, 59)}:00Z"
        elif fmt == "date":
            text = f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"
        elif fmt == "time":
            text = f"12:{rng.randint(10, 59)}:00"
        elif fmt == "uuid":
            text = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        elif fmt == "email":
            text = f"{rng.choice(NAME_WORDS)}@example.com"
        elif fmt in ("uri", "url"):
            text = f"https://example.com/{rng.choice(NAME_WORDS)}"
        elif fmt == "duration":
            text = f"PT{rng.randint(1, 59)}M"
        else:
            text = _words(rng, 1, 3)
        low = int(s.get("minLength", 0))
        high = s.get("maxLength")
        while len(text) < low:
            text = f"{text} {rng.choice(NAME_WORDS)}"
        if high is not None:
            while len(text) > int(high) and " " in text:
                shorter = text.rsplit(" ", 1)[0]
                if len(shorter) < low:
                    break
                text = shorter
            text = text[: int(high)]
        return text

    # -- containers
    def _gen_array(self, s: dict[str, Any], depth: int) -> list[Any]:
        rng = self.rng
        keyed = _keyed_by(s, self.root)
        if keyed is not None:
            name, values = keyed
            return [{**self.gen(s["items"], depth + 1), name: value} for value in values]
        prefix = s.get("prefixItems") or []
        items = s.get("items", False if prefix else {})
        low = int(s.get("minItems", 0))
        high = s.get("maxItems")
        if items is False:
            high = len(prefix) if high is None else min(int(high), len(prefix))
        high = max(low, int(high) if high is not None else 3)
        count = low if depth >= MAX_DEPTH else rng.randint(max(low, min(1, high)), high)
        unique = bool(s.get("uniqueItems"))
        out: list[Any] = []
        for i in range(count):
            sub = prefix[i] if i < len(prefix) else items
            value = self.gen(sub, depth + 1)
            for _ in range(10 if unique else 0):
                if value not in out:
                    break
                value = self.gen(sub, depth + 1)
            if unique and value in out and len(out) >= low:
                break
            out.append(value)
        return out

    def _gen_object(self, s: dict[str, Any], depth: int) -> dict[str, Any]:
        rng = self.rng
        props: dict[str, Any] = s.get("properties") or {}
        required = set(s.get("required") or ())
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or (depth < MAX_DEPTH and rng.random() < 0.7):
                out[name] = self.gen(sub, depth + 1)
        extra = s.get("additionalProperties")
        if isinstance(extra, dict) and not props:
            names = _resolve(s.get("propertyNames") or {}, self.root)
            low = int(s.get("minProperties", 0))
            high = int(s.get("maxProperties", max(low, 2)))
            count = low if depth >= MAX_DEPTH else rng.randint(low, max(low, min(high, low + 2)))
            keys: list[str] = []
            if names.get("enum"):
                pool = [str(k) for k in names["enum"]]
                keys = rng.sample(pool, min(count, len(pool)))
            else:
                while len(keys) < count:
                    key = self._gen_string(names, depth) if names else rng.choice(NAME_WORDS)
                    if key in keys:
                        key = f"{key}_{len(keys)}"
                    keys.append(key)
            for key in keys:
                out[key] = self.gen(extra, depth + 1)
        return out


def _keyed_by(array: dict[str, Any], root: dict[str, Any]) -> tuple[str, list[Any]] | None:
    """(property, values) when ``array`` is a keyed list (see the module docstring)."""
    size = array.get("minItems")
    items = array.get("items")
    if size is None or size != array.get("maxItems") or not isinstance(items, dict):
        return None
    item = _resolve(items, root)
    props = item.get("properties") or {}
    for name in item.get("required") or ():
        prop = _resolve(props.get(name), root)
        values = (
            list(prop["enum"]) if prop.get("enum") else [prop["const"]] if "const" in prop else []
        )
        if values and len(values) == size:
            return name, values
    return None


def _keyed_lists(schema: dict[str, Any]) -> list[str]:
    """The top-level properties of ``schema`` that are keyed lists."""
    top = _resolve(schema, schema)
    return [
        name
        for name, sub in (top.get("properties") or {}).items()
        if _keyed_by(_resolve(sub, schema), schema) is not None
    ]


def _incomplete(value: Any, names: list[str]) -> Any:
    """``value`` with its first keyed list cut short and its first item repeated."""
    if not isinstance(value, dict) or not names or not isinstance(value.get(names[0]), list):
        return value
    items = value[names[0]]
    kept = items[: len(items) // 2] + items[:1] if len(items) > 1 else []
    return {**value, names[0]: kept}


def llama_cpp_refusal(format: str, refused: Iterable[str]) -> str:
    """What llama-cpp-python's server says (HTTP 500) of a response format it does not take:
    FastAPI's request validation error, as ``str()`` renders it."""
    allowed = "'text'" if "json_object" in refused else "'text' or 'json_object'"
    error = {
        "type": "literal_error",
        "loc": ("body", "response_format", "type"),
        "msg": f"Input should be {allowed}",
        "input": format,
        "ctx": {"expected": allowed},
    }
    return f"1 validation error:\n  {error}\n    POST /v1/chat/completions"


def generate_from_schema(schema: dict[str, Any], rng: random.Random) -> Any:
    """Return a value valid against ``schema`` (the JSON Schema subset pydantic v2 emits)."""
    return _Generator(schema, rng).gen(schema)


#: The sign of a change of favorability each status goes against (engine/minds/checks.py).
_AGAINST = {"rival": 1, "enemy": 1, "ally": -1}


def consistent(value: Any) -> Any:
    """``value`` with each judgement's status that goes against its change of favorability
    left out (null), as a model that judges sanely gives it: the engine refuses such a
    status (a rival made while warming). Draws nothing, so the rest of a reply is as its
    seed made it."""
    if isinstance(value, list):
        return [consistent(v) for v in value]
    if not isinstance(value, dict):
        return value
    value = {k: consistent(v) for k, v in value.items()}
    delta, status = value.get("delta_fav"), value.get("status")
    if isinstance(delta, int | float) and _AGAINST.get(status, 0) * delta > 0:
        value["status"] = None
    return value


def _broken_for(schema: dict[str, Any]) -> Any:
    """A JSON value of a type ``schema`` does not accept (best effort)."""
    kinds = schema.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    if "number" in kinds or "integer" in kinds:
        return "not a number"
    if "string" in kinds:
        return ["not", "a", "string"]
    if "boolean" in kinds:
        return "maybe"
    if "array" in kinds:
        return "not an array"
    return ["not", "an", "object"]


def violate_schema(schema: dict[str, Any], rng: random.Random) -> Any:
    """Return valid JSON that does not validate against ``schema`` (best effort).

    Tried in order: drop a required field, put a number out of range, put a value outside an
    enum, give a field the wrong type; for a non-object schema, a value of the wrong type.
    """
    root = schema
    top = _resolve(schema, root)
    value = generate_from_schema(schema, rng)
    if not isinstance(value, dict) or top.get("type", "object") != "object":
        return _broken_for(top)
    required = [name for name in top.get("required") or () if name in value]
    if required:
        del value[rng.choice(required)]
        return value
    props = {name: _resolve(sub, root) for name, sub in (top.get("properties") or {}).items()}
    for name, sub in props.items():
        bounds = [k for k in ("maximum", "exclusiveMaximum") if k in sub]
        if bounds and sub.get("type") in ("number", "integer"):
            value[name] = sub[bounds[0]] + 1000
            return value
    for name, sub in props.items():
        if sub.get("enum") or "const" in sub:
            value[name] = "__not_allowed__"
            return value
    for name, sub in props.items():
        if sub.get("type") and "anyOf" not in sub:
            value[name] = _broken_for(sub)
            return value
    return ["not", "an", "object"]


def out_of_range(schema: dict[str, Any], value: Any, past: float = 3) -> Any | None:
    """``value`` (valid against ``schema``) with its first bounded number, depth first, out of
    range: ``past`` times the bound's size (the larger bound's magnitude, else 1) past its
    maximum, else below its minimum; None when the schema bounds no number in ``value`` (a
    number given an ``enum`` is held to it, as a grammar holds it)."""
    root = schema

    def walk(sub: Any, v: Any) -> tuple[bool, Any]:
        s = _resolve(sub, root)
        for branch in s.get("anyOf") or s.get("oneOf") or ():
            hit, new = walk(branch, v)
            if hit:
                return True, new
        if isinstance(v, bool):
            return False, v
        if isinstance(v, (int, float)):
            if "enum" in s:  # a grammar holds a number to its enum (engine/llm/grammar.py)
                return False, v
            high = s.get("maximum", s.get("exclusiveMaximum"))
            low = s.get("minimum", s.get("exclusiveMinimum"))
            if high is None and low is None:
                return False, v
            size = max(abs(high or 0), abs(low or 0)) or 1
            return True, type(v)(high + past * size if high is not None else low - past * size)
        if isinstance(v, dict):
            props = s.get("properties") or {}
            for name, item in v.items():
                extra = s.get("additionalProperties")
                hit, new = walk(props.get(name, extra if isinstance(extra, dict) else {}), item)
                if hit:
                    return True, {**v, name: new}
        if isinstance(v, list):
            prefix = s.get("prefixItems") or []
            for i, item in enumerate(v):
                hit, new = walk(prefix[i] if i < len(prefix) else s.get("items") or {}, item)
                if hit:
                    return True, [*v[:i], new, *v[i + 1 :]]
        return False, v

    hit, changed = walk(schema, value)
    return changed if hit else None


def _schema_from_text(text: str) -> dict[str, Any] | None:
    idx = text.find(SCHEMA_MARKER)
    if idx < 0:
        return None
    rest = text[idx + len(SCHEMA_MARKER) :]
    end = re.search(rf"^\s*{re.escape(SCHEMA_END)}\s*$", rest, flags=re.MULTILINE)
    if end:
        rest = rest[: end.start()]
    rest = rest.strip()
    start = rest.find("{")
    if start < 0:
        return None
    try:
        schema, _ = json.JSONDecoder().raw_decode(rest[start:])
    except ValueError:
        return None
    return schema if isinstance(schema, dict) else None


def _message_text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def _find_schema(
    fmt: Any, messages: list[Any], json_object_schema: bool = False
) -> tuple[dict[str, Any] | None, bool]:
    """Return (schema or None, wants_json) of a request's ``response_format`` and its
    messages."""
    wants_json = False
    if isinstance(fmt, dict):
        if fmt.get("type") == "json_schema":
            spec = fmt.get("json_schema") or {}
            schema = spec.get("schema") if isinstance(spec, dict) else None
            if isinstance(schema, dict):
                return schema, True
        if fmt.get("type") == "json_object" and json_object_schema:
            schema = fmt.get("schema")
            if isinstance(schema, dict):
                return schema, True
        wants_json = fmt.get("type") in ("json_object", "json_schema")
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") in ("system", "developer", "user"):
            schema = _schema_from_text(_message_text(message))
            if schema is not None:
                return schema, True
    return None, wants_json


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
    words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words) + "."


def _malform(text: str, rng: random.Random) -> str:
    """Break a JSON text: truncate it, add a trailing comma, or switch to single quotes."""
    candidates = []
    stripped = text.rstrip()
    if stripped.endswith(("}", "]")):
        candidates.append(stripped[:-1] + ", " + stripped[-1])
    if '"' in text:
        candidates.append(text.replace('"', "'"))
    candidates.append(text[: max(1, len(text) * 2 // 3)])
    rng.shuffle(candidates)
    for broken in [*candidates, text + ' {"']:
        try:
            json.loads(broken)
        except ValueError:
            return broken
    return "{"  # pragma: no cover - unreachable in practice


def _shared(a: list[str], b: list[str]) -> int:
    """How many leading pieces ``a`` and ``b`` share."""
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))


def _count_words(text: str) -> int:
    """Words and punctuation marks, each one token: near a BPE tokenizer's count, prose
    and JSON alike (so a client that checks what the server read sees it all arrive)."""
    return len(_PIECES.findall(text))


_PIECES = re.compile(r"\w+|[^\w\s]")


# --------------------------------------------------------------------------- HTTP server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() joins handler threads itself, with a deadline
    allow_reuse_address = True
    request_queue_size = 1024  # listen backlog (default 5): bursts of concurrent connections

    stub: StubLLM

    def __init__(self, address: tuple[str, int], stub: StubLLM) -> None:
        self.stub = stub
        self.active: dict[threading.Thread, socket.socket] = {}
        self.active_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        me = threading.current_thread()
        with self.active_lock:
            self.active[me] = request
        with self.stub._lock:
            self.stub.connections += 1
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.active_lock:
                self.active.pop(me, None)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)) or self.stub._stopping.is_set():
            return  # the client went away (e.g. its timeout fired); not our problem
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "StubLLM/1.0"
    timeout = 10.0  # socket timeout for a client that connects and says nothing
    server: _Server
    #: Whether the request being handled counts in the stub's ``in_flight``.
    _in_flight = False

    def setup(self) -> None:
        # A kept connection carries many small writes: no Nagle delay between them.
        self.disable_nagle_algorithm = self.server.stub.keep_alive
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.stub.verbose:
            super().log_message(format, *args)

    # -- plumbing
    def _send_json(
        self,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
        trickle: float | None = None,
    ) -> None:
        """Send ``payload``; with ``trickle`` (the ``slow`` fault), its body in 16 pieces
        over that many seconds."""
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._close_unless_kept()
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        step = len(data) if trickle is None else -(-len(data) // 16)
        for start in range(0, len(data), step):
            if trickle is not None and self.server.stub._wait(trickle / 16):
                return
            if start + step >= len(data):
                self._answered()
            self.wfile.write(data[start : start + step])
            self.wfile.flush()

    def _start_chunked(self, content_type: str) -> Callable[[str], None]:
        """Send a 200 with chunked transfer; return a writer of one chunk ("" ends it)."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self._close_unless_kept()
        self.end_headers()

        def write(text: str) -> None:
            payload = text.encode()
            if not payload:
                self._answered()
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()

        return write

    def _close_unless_kept(self) -> None:
        """End the connection after this response, unless the stub keeps connections alive."""
        if not self.server.stub.keep_alive:
            self.send_header("Connection", "close")
            self.close_connection = True

    def _send_error(
        self,
        status: int,
        message: str,
        kind: str,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        error = {"message": message, "type": kind, "param": param, "code": code}
        self._send_json(status, {"error": error}, headers)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # -- routes
    def do_GET(self) -> None:
        stub = self.server.stub
        path = self.path.split("?")[0].rstrip("/")
        stub.paths.append(f"GET {path}")
        if path in ("/v1/models", "/models"):
            model: dict[str, Any] = {
                "id": "stub",
                "object": "model",
                "created": 0,
                "owned_by": "socialsim",
            }
            if stub.server == "vllm":
                model.update(owned_by="vllm", root="stub", max_model_len=stub.n_ctx)
            self._send_json(200, {"object": "list", "data": [model]})
        elif path == "/props" and stub.server == "llama.cpp":
            settings = {"n_ctx": stub.n_ctx, "model": "stub.gguf"}
            self._send_json(
                200,
                {
                    "default_generation_settings": settings,
                    "total_slots": stub.slots or 1,
                    "model_path": "stub.gguf",
                },
            )
        elif path == "/api/tags" and stub.server == "ollama":
            self._send_json(200, {"models": [{"name": "stub", "model": "stub"}]})
        else:
            self._send_error(404, f"Unknown path {self.path}", "invalid_request_error")

    def do_POST(self) -> None:
        if not self.server.stub.keep_alive:  # one request per connection: stop() never waits
            self.close_connection = True
        path = self.path.split("?")[0].rstrip("/")
        self.server.stub.paths.append(f"POST {path}")
        raw = self._read_body()
        stub = self.server.stub
        ollama = stub.server == "ollama" and path in ("/api/chat", "/api/show")
        if path not in ("/v1/chat/completions", "/chat/completions") and not ollama:
            self._send_error(404, f"Unknown path {self.path}", "invalid_request_error")
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not an object")
        except ValueError as exc:
            self._send_error(400, f"Invalid JSON body: {exc}", "invalid_request_error")
            return
        if path == "/api/show":  # Ollama: the model's trained window
            info = {"general.architecture": "stub", "stub.context_length": stub.n_ctx}
            self._send_json(200, {"model_info": info, "details": {"family": "stub"}})
            return
        with stub._lock:
            stub.in_flight += 1
            stub.peak_in_flight = max(stub.peak_in_flight, stub.in_flight)
        self._in_flight = True
        try:
            if path == "/api/chat":
                stub._handle_ollama_chat(self, body)
            else:
                stub._handle_completion(self, body)
        finally:
            self._answered()

    def _answered(self) -> None:
        """The request is answered: no longer in flight. Called before a response's last
        bytes are sent, as the client may send its next request once it has them (counted
        after, a busy machine could let that one arrive first: one too many in flight)."""
        if self._in_flight:
            self._in_flight = False
            with self.server.stub._lock:
                self.server.stub.in_flight -= 1


# --------------------------------------------------------------------------- the stub


class StubLLM:
    """OpenAI-compatible chat-completions stub; see the module docstring.

    Attributes for assertions (updated under a lock): ``requests`` (JSON bodies received by
    the chat-completions endpoint, in arrival order), ``calls`` (their number),
    ``faults_served`` (``Counter`` by fault kind), ``fault_log`` (per call: the fault served,
    ``"rejected"`` for a refused response format, or ``None``), ``headers`` (each request's
    HTTP headers, in arrival order), ``connections`` (TCP connections accepted),
    ``peak_in_flight`` (most chat-completion requests being answered at once).
    """

    def __init__(
        self,
        latency: float = 0.0,
        faults: dict[str, float] | None = None,
        seed: int = 0,
        reject_json_schema: bool = False,
        hang_seconds: float = 30.0,
        *,
        chunk_latency: float = 0.0,
        rejects: Iterable[str] = (),
        host: str = "127.0.0.1",
        port: int = 0,
        verbose: bool = False,
        keep_alive: bool = False,
        tokens: str = "words",
        server: str = "openai",
        n_ctx: int = 4096,
        slots: int | None = None,
        prompt_rate: float | None = None,
        generate_rate: float | None = None,
        json_object_schema: bool | None = None,
        drop_system: bool = False,
        stream_usage: bool = True,
        interrupts: bool = False,
        huge_chars: int = HUGE_CHARS,
    ) -> None:
        if tokens not in ("words", "litellm"):
            raise ValueError(f"tokens: {tokens!r}; known: words, litellm")
        if server not in SERVERS:
            raise ValueError(f"server: {server!r}; known: {', '.join(SERVERS)}")
        if slots is not None and slots < 1:
            raise ValueError("slots must be >= 1")
        if any(r is not None and r <= 0 for r in (prompt_rate, generate_rate)):
            raise ValueError("prompt_rate and generate_rate are tokens per second, > 0")
        faults = dict(faults or {})
        unknown = set(faults) - set(ALL_FAULTS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {ALL_FAULTS}")
        rejects = frozenset(rejects)
        if not rejects <= REFUSABLE:
            raise ValueError(f"rejects: {sorted(rejects - REFUSABLE)}; known: {sorted(REFUSABLE)}")
        if any(p < 0 for p in faults.values()) or sum(faults.values()) > 1.0 + 1e-9:
            raise ValueError("fault probabilities must be >= 0 and sum to <= 1")
        self.latency = float(latency)
        self.faults = faults
        self.seed = seed
        self.reject_json_schema = reject_json_schema
        self.rejects = rejects
        self.hang_seconds = float(hang_seconds)
        self.chunk_latency = float(chunk_latency)
        self.host = host
        self.port = port
        self.verbose = verbose
        self.keep_alive = keep_alive
        self.tokens = tokens
        self.server = server
        self.n_ctx = int(n_ctx)
        self.slots = slots
        self.prompt_rate = prompt_rate
        self.generate_rate = generate_rate
        self.json_object_schema = (
            server == "llama.cpp" if json_object_schema is None else json_object_schema
        )
        self.drop_system = drop_system
        self.stream_usage = stream_usage
        self.interrupts = interrupts
        self.huge_chars = int(huge_chars)
        #: Streams cut short because another request waited (``interrupts``).
        self.cut = 0
        #: The prompts read so far, as pieces, and each reply's cached pieces (llama.cpp, vllm).
        self._prompts: list[list[str]] = []
        self.cached: list[int] = []

        self.requests: list[dict[str, Any]] = []
        #: Every request's method and path, in order (the chat completions too).
        self.paths: list[str] = []
        #: Call indices in the order they were given a slot (arrival order when FIFO holds).
        self.granted: list[int] = []
        self.headers: list[dict[str, str]] = []
        self.faults_served: Counter[str] = Counter()
        self.fault_log: list[str | None] = []
        self.calls = 0
        self.connections = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.url = ""
        self._lock = threading.Lock()
        self._script: deque[str | None] = deque()
        self._waiting: deque[threading.Event] = deque()
        self._busy = 0
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> str:
        """Start serving in a background thread; return the base URL (``.../v1``)."""
        if self._server is not None:
            return self.url
        self._stopping.clear()
        self._server = _Server((self.host, self.port), self)
        host, port = self._server.server_address[:2]
        self.port = int(port)
        self.url = f"http://{host}:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"StubLLM:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self.url

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving: wake hanging handlers, close sockets, join threads (bounded)."""
        server, thread = self._server, self._thread
        if server is None:
            return
        deadline = time.monotonic() + timeout
        self._stopping.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(max(0.0, deadline - time.monotonic()))
        with server.active_lock:
            active = list(server.active.items())
        if self.keep_alive:  # wake handlers idle between requests; replies still go out
            for _thread, sock in active:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RD)
        for handler_thread, sock in active:
            handler_thread.join(max(0.0, min(0.5, deadline - time.monotonic())))
            if handler_thread.is_alive():
                with contextlib.suppress(OSError):  # unblock a handler stuck on its socket
                    sock.shutdown(socket.SHUT_RDWR)
                handler_thread.join(max(0.0, deadline - time.monotonic()))
        self._server = None
        self._thread = None

    def __enter__(self) -> StubLLM:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- test helpers
    def script(self, kinds: Iterable[str | None]) -> None:
        """Queue faults for the next requests (``None`` = a normal answer), consumed in order
        before any random draw: ``stub.script(["500", None])`` = first call 500, second ok."""
        kinds = list(kinds)
        bad = {k for k in kinds if k is not None and k not in ALL_FAULTS}
        if bad:
            raise ValueError(f"unknown fault kinds {sorted(bad)}; known: {ALL_FAULTS}")
        with self._lock:
            self._script.extend(kinds)

    def reset(self) -> None:
        """Forget received requests, counts and any queued script (the call index restarts)."""
        with self._lock:
            self.requests.clear()
            self.paths.clear()
            self.headers.clear()
            self.faults_served.clear()
            self.fault_log.clear()
            self.granted.clear()
            self._script.clear()
            self.calls = 0
            self.connections = 0
            self.peak_in_flight = self.in_flight
            self._prompts.clear()
            self.cached.clear()

    # -- request handling (runs in a handler thread)
    def _draw_fault(self, index: int, scripted: bool, kind: str | None) -> str | None:
        if scripted:
            return kind
        if not self.faults:
            return None
        roll = random.Random(f"{self.seed}/{index}/fault").random()
        acc = 0.0
        for name in ALL_FAULTS:  # fixed order, so draws do not depend on dict order
            acc += self.faults.get(name, 0.0)
            if roll < acc:
                return name
        return None

    def _wait(self, seconds: float) -> bool:
        """Sleep, waking early on stop(); return True when the server is stopping."""
        if seconds > 0:
            return self._stopping.wait(seconds)
        return self._stopping.is_set()

    def _admit(
        self,
        handler: _Handler,
        body: dict[str, Any],
        draw: bool,
        schema: Any,
        stream: bool,
        keyed: list[str],
    ) -> tuple[int, str | None]:
        """Record a request on arrival; draw its fault (``draw``: not refused)."""
        with self._lock:
            index = self.calls
            self.calls += 1
            self.requests.append(body)
            self.headers.append(dict(handler.headers))
            fault: str | None = None
            if draw:
                scripted = bool(self._script)
                fault = self._draw_fault(
                    index, scripted, self._script.popleft() if scripted else None
                )
                if fault in SCHEMA_ONLY_FAULTS and schema is None:
                    fault = None
                if fault in KEYED_FAULTS and not keyed:
                    fault = None
                if (
                    fault in VALUE_FAULTS
                    and out_of_range(schema, generate_from_schema(schema, random.Random(0))) is None
                ):
                    fault = None
                if fault is not None:
                    self.faults_served[fault] += 1
            self.fault_log.append(fault if draw else "rejected")
        return index, fault

    @contextlib.contextmanager
    def _slot(self, index: int) -> Iterator[bool]:
        """Hold one of the server's ``slots`` (FIFO) while a request is answered; yields
        False when the server stopped while the request waited."""
        if self.slots is None:
            with self._lock:
                self.granted.append(index)
            yield True
            return
        turn = threading.Event()
        with self._lock:
            if self._busy < self.slots and not self._waiting:
                self._busy += 1
                turn.set()
            else:
                self._waiting.append(turn)
        while not turn.wait(0.05):
            if self._stopping.is_set():
                with self._lock:
                    if not turn.is_set():
                        self._waiting.remove(turn)
                        break
        if not turn.is_set():
            yield False
            return
        with self._lock:
            self.granted.append(index)
        try:
            yield True
        finally:
            with self._lock:
                if self._waiting:
                    self._waiting.popleft().set()  # the slot passes to the longest waiting
                else:
                    self._busy -= 1

    def _content(
        self, index: int, schema: Any, wants_json: bool, fault: str | None, keyed: list[str]
    ) -> str:
        """The reply's text for a request and its fault."""
        rng = random.Random(f"{self.seed}/{index}/content")
        if schema is not None:
            value = consistent(generate_from_schema(schema, rng))
            content = json.dumps(value)
            if fault == "malformed":
                content = _malform(content, rng)
            elif fault == "schema":
                content = json.dumps(violate_schema(schema, rng))
            elif fault == "incomplete":
                content = json.dumps(_incomplete(value, keyed))
            elif fault in VALUE_FAULTS:
                content = json.dumps(out_of_range(schema, value, PAST_BOUND[fault]))
            elif fault == "deep":
                content = '{"a":' * DEEP + "1" + "}" * DEEP
        elif wants_json:
            content = json.dumps({"answer": _sentence(rng)})
        else:
            content = _sentence(rng)
        if fault == "huge":
            content = (ENDLESS_WORD * (self.huge_chars // len(ENDLESS_WORD) + 1))[: self.huge_chars]
        return "" if fault == "empty" else content

    def answer(self, body: dict[str, Any]) -> str | None:
        """The reply's text for a request, where a test's stub decides it (a subclass
        overrides this); None: the stub's own (from the schema, or a sentence)."""
        return None

    def _kept(self, body: dict[str, Any]) -> list[Any]:
        """The messages the server reads: all of them, or (``drop_system``) the non-system
        ones, as a chat template without a system role does."""
        messages = list(body.get("messages") or [])
        if self.drop_system:
            return [m for m in messages if not (isinstance(m, dict) and m.get("role") == "system")]
        return messages

    def _seconds(self, prompt_tokens: int, completion_tokens: int) -> tuple[float, float]:
        """(prompt, generation) seconds at ``prompt_rate`` and ``generate_rate``."""
        prompt = prompt_tokens / self.prompt_rate if self.prompt_rate else 0.0
        generate = completion_tokens / self.generate_rate if self.generate_rate else 0.0
        return prompt, generate

    def _handle_completion(self, handler: _Handler, body: dict[str, Any]) -> None:
        fmt = body.get("response_format")
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        refused = kind in self.rejects
        rejected = refused or (self.reject_json_schema and kind == "json_schema")
        messages = self._kept(body)
        schema, wants_json = _find_schema(fmt, messages, self.json_object_schema)
        stream = bool(body.get("stream"))
        keyed = _keyed_lists(schema) if schema is not None else []
        index, fault = self._admit(handler, body, not rejected, schema, stream, keyed)
        with self._slot(index) as served:
            if not served or self._wait(self.latency):
                return
            if refused:
                message = llama_cpp_refusal(str(kind), self.rejects)
                handler._send_error(500, message, "internal_server_error")
                return
            if rejected:
                handler._send_error(
                    400,
                    "Invalid 'response_format': response_format of type json_schema is not "
                    "supported by this server (json_schema is not supported).",
                    "invalid_request_error",
                    code="invalid_request_error",
                    param="response_format",
                )
                return
            if fault == "500":
                handler._send_error(
                    500, "The server had an error (stub fault 500).", "server_error"
                )
                return
            if fault == "429":
                handler._send_error(
                    429,
                    "Rate limit reached (stub fault 429). Please try again.",
                    "requests",
                    code="rate_limit_exceeded",
                    headers={"Retry-After": "0"},
                )
                return
            if fault == "timeout" and self._wait(self.hang_seconds):
                return
            model = str(body.get("model") or "stub")
            ident = f"chatcmpl-stub-{self.seed}-{index}"
            if fault == "endless":
                self._endless(handler, ident, model, stream)
                return
            answer = self.answer(body)
            content = (
                self._content(index, schema, wants_json, fault, keyed) if answer is None else answer
            )
            counted = "" if fault == "huge" else content  # its words: seconds to count
            prompt_tokens, completion_tokens = self._usage(messages, fmt, model, counted)
            if fault == "huge":
                completion_tokens = content.count(ENDLESS_WORD)
            usage: dict[str, Any] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
            timings = self._cache(messages, prompt_tokens, usage)
            seconds = self._seconds(prompt_tokens, completion_tokens)
            if fault == "slow":
                seconds = (seconds[0], seconds[1] + self.hang_seconds)
            created = int(time.time())
            if stream:
                options = body.get("stream_options") or {}
                include_usage = (
                    isinstance(options, dict)
                    and bool(options.get("include_usage"))
                    and self.stream_usage
                )
                self._stream(
                    handler,
                    ident,
                    created,
                    model,
                    content,
                    usage if include_usage else None,
                    seconds,
                    _pieces(content, fault),
                    timings,
                )
                return
            if fault != "slow" and self._wait(sum(seconds)):
                return
            handler._send_json(
                200,
                {
                    **({"timings": timings} if timings else {}),
                    "id": ident,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "system_fingerprint": "stub",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "logprobs": None,
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                },
                trickle=seconds[1] if fault == "slow" else None,
            )

    def _handle_ollama_chat(self, handler: _Handler, body: dict[str, Any]) -> None:
        """Ollama's native ``POST /api/chat``: ``format`` is ``"json"`` or a JSON schema (the
        reply conforms), ``stream`` defaults to true (NDJSON lines), the counts are
        ``prompt_eval_count`` and ``eval_count``."""
        fmt = body.get("format")
        messages = self._kept(body)
        schema, wants_json = _find_schema(None, messages)
        if isinstance(fmt, dict):
            schema, wants_json = fmt, True
        wants_json = wants_json or fmt == "json"
        stream = body.get("stream", True) is not False
        keyed = _keyed_lists(schema) if schema is not None else []
        index, fault = self._admit(handler, body, True, schema, stream, keyed)
        with self._slot(index) as served:
            if not served or self._wait(self.latency):
                return
            if fault in ("500", "429"):
                status = int(fault)
                handler._send_json(status, {"error": f"stub fault {fault}"})
                return
            if fault == "timeout" and self._wait(self.hang_seconds):
                return
            answer = self.answer(body)
            content = (
                self._content(index, schema, wants_json, fault, keyed) if answer is None else answer
            )
            model = str(body.get("model") or "stub")
            prompt_tokens, completion_tokens = self._usage(messages, fmt, model, content)
            prompt_s, generate_s = self._seconds(prompt_tokens, completion_tokens)
            created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            final = {
                "model": model,
                "created_at": created,
                "message": {"role": "assistant", "content": "" if stream else content},
                "done": True,
                "done_reason": "stop",
                "total_duration": int((prompt_s + generate_s) * 1e9),
                "prompt_eval_count": prompt_tokens,
                "eval_count": completion_tokens,
            }
            if not stream:
                if not self._wait(prompt_s + generate_s):
                    handler._send_json(200, final)
                return
            send = handler._start_chunked("application/x-ndjson")
            if self._wait(prompt_s):
                return
            pieces = re.findall(r"\s*\S+", content)
            for piece in pieces:
                if self._wait(self.chunk_latency + generate_s / len(pieces)):
                    return
                message = {"role": "assistant", "content": piece}
                line = {"model": model, "created_at": created, "message": message, "done": False}
                send(json.dumps(line) + "\n")
            send(json.dumps(final) + "\n")
            send("")

    def _cache(
        self, messages: list[Any], prompt_tokens: int, usage: dict[str, Any]
    ) -> dict[str, int] | None:
        """The prefix cache as this server says it: llama.cpp's ``timings`` (returned), vLLM's
        ``prompt_tokens_details`` (put in ``usage``); None and nothing for the others."""
        if self.server not in ("llama.cpp", "vllm"):
            return None
        pieces = _PIECES.findall("\n".join(_message_text(m) for m in messages))
        with self._lock:
            shared = max((_shared(pieces, seen) for seen in self._prompts), default=0)
            self._prompts.append(pieces)
            cached = min(shared, prompt_tokens)
            self.cached.append(cached)
        if self.server == "vllm":
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
            return None
        return {"cache_n": cached, "prompt_n": prompt_tokens - cached}

    def _usage(self, messages: list[Any], fmt: Any, model: str, content: str) -> tuple[int, int]:
        """(prompt, completion) tokens of the messages the server read and of its reply:
        words, or as litellm counts them (``tokens``)."""
        if self.tokens == "words":
            return sum(_count_words(_message_text(m)) for m in messages), _count_words(content)
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network
        import litellm

        prompt = litellm.token_counter(model=model, messages=messages)
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema")
            text = json.dumps(schema, separators=(",", ":"))
            prompt += litellm.token_counter(model=model, text=text)
        return int(prompt), int(litellm.token_counter(model=model, text=content))

    def _stream(
        self,
        handler: _Handler,
        ident: str,
        created: int,
        model: str,
        content: str,
        usage: dict[str, int] | None,
        seconds: tuple[float, float],
        pieces: list[str],
        timings: dict[str, int] | None = None,
    ) -> None:
        send_raw = handler._start_chunked("text/event-stream; charset=utf-8")

        def send(data: str) -> None:
            send_raw(f"data: {data}\n\n")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            event: dict[str, Any] = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "stub",
                "choices": [choice],
            }
            if usage is not None:
                event["usage"] = None
            return json.dumps(event)

        prompt_s, generate_s = seconds
        if self._wait(prompt_s):
            return
        send(chunk({"role": "assistant", "content": ""}))
        for piece in pieces:
            if self._wait(self.chunk_latency + generate_s / len(pieces)):
                return
            if self.interrupts and self._waiting:  # llama-cpp-python: the next one is served
                with self._lock:
                    self.cut += 1
                send("[DONE]")
                handler.close_connection = True  # and closes it, the chunked body unfinished
                return
            send(chunk({"content": piece}))
        last = chunk({}, "stop")
        send(json.dumps({**json.loads(last), "timings": timings}) if timings else last)
        if usage is not None:
            final = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "stub",
                "choices": [],
                "usage": usage,
            }
            send(json.dumps(final))
        send("[DONE]")
        send_raw("")

    def _endless(self, handler: _Handler, ident: str, model: str, stream: bool) -> None:
        """The ``endless`` fault: :data:`ENDLESS_WORD` every :data:`ENDLESS_EVERY` seconds,
        as events of a stream or inside a reply sent whole, until the client goes away or
        the stub stops."""
        if stream:
            send = handler._start_chunked("text/event-stream; charset=utf-8")
            choice = {"index": 0, "delta": {"content": ENDLESS_WORD}, "finish_reason": None}
            event = {"id": ident, "object": "chat.completion.chunk", "model": model}
            piece = f"data: {json.dumps({**event, 'choices': [choice]})}\n\n"
        else:
            send = handler._start_chunked("application/json")
            head = {"id": ident, "object": "chat.completion", "model": model}
            send(json.dumps(head)[:-1] + ', "choices": [{"index": 0, "message": {"content": "')
            piece = ENDLESS_WORD
        handler.close_connection = True  # the body is never finished
        while not self._wait(ENDLESS_EVERY):
            send(piece)


def _pieces(content: str, fault: str | None) -> list[str]:
    """The pieces a reply is streamed in: a word each (the space before it included), or
    :data:`HUGE_PIECE` characters each for a ``huge`` fault."""
    if fault == "huge":
        return [content[i : i + HUGE_PIECE] for i in range(0, len(content), HUGE_PIECE)]
    return re.findall(r"\s*\S+", content)


# --------------------------------------------------------------------------- CLI


def _parse_faults(text: str) -> dict[str, float]:
    faults: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, sep, prob = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"expected KIND=PROB, got {item!r}")
        try:
            faults[kind.strip()] = float(prob)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"bad probability in {item!r}") from exc
    return faults


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="OpenAI-compatible chat-completions stub.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--chunk-latency", type=float, default=0.0, help="seconds per chunk")
    parser.add_argument(
        "--faults", type=_parse_faults, default={}, help="e.g. 500=0.1,malformed=0.1"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reject-json-schema", action="store_true")
    parser.add_argument(
        "--rejects",
        default="",
        help="response formats refused as llama-cpp-python does (HTTP 500), e.g. "
        "json_schema or json_schema,json_object",
    )
    parser.add_argument("--hang-seconds", type=float, default=30.0)
    parser.add_argument(
        "--huge-chars", type=int, default=HUGE_CHARS, help="characters of a huge reply"
    )
    parser.add_argument("--quiet", action="store_true", help="no per-request log lines")
    parser.add_argument(
        "--keep-alive", action="store_true", help="keep connections open between requests"
    )
    parser.add_argument(
        "--tokens", choices=("words", "litellm"), default="words", help="how usage is counted"
    )
    parser.add_argument("--server", choices=SERVERS, default="openai", help="server to pass for")
    parser.add_argument("--n-ctx", type=int, default=4096, help="context window it reports")
    parser.add_argument("--slots", type=int, default=None, help="requests decoded at once")
    parser.add_argument("--prompt-rate", type=float, default=None, help="prompt tokens/s")
    parser.add_argument("--generate-rate", type=float, default=None, help="generated tokens/s")
    parser.add_argument(
        "--json-object-schema",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="enforce a json_object's schema [default: with --server llama.cpp]",
    )
    parser.add_argument("--drop-system", action="store_true", help="drop system messages")
    parser.add_argument(
        "--no-stream-usage", action="store_true", help="no usage chunk, even when asked"
    )
    args = parser.parse_args(argv)
    try:
        stub = StubLLM(
            latency=args.latency,
            faults=args.faults,
            seed=args.seed,
            reject_json_schema=args.reject_json_schema,
            rejects=[r.strip() for r in args.rejects.split(",") if r.strip()],
            hang_seconds=args.hang_seconds,
            chunk_latency=args.chunk_latency,
            host=args.host,
            port=args.port,
            verbose=not args.quiet,
            keep_alive=args.keep_alive,
            tokens=args.tokens,
            server=args.server,
            n_ctx=args.n_ctx,
            slots=args.slots,
            prompt_rate=args.prompt_rate,
            generate_rate=args.generate_rate,
            json_object_schema=args.json_object_schema,
            drop_system=args.drop_system,
            stream_usage=not args.no_stream_usage,
            huge_chars=args.huge_chars,
        )
    except ValueError as exc:
        parser.error(str(exc))

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with it ignored
    signal.signal(signal.SIGTERM, interrupt)
    url = stub.start()
    print(f"StubLLM serving at {url} (Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        stub.stop()
        print(f"served {stub.calls} calls; faults: {dict(stub.faults_served)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
