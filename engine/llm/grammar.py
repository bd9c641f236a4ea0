"""A reply's JSON schema as a grammar-enforcing server is given it: each number bounded on
both sides becomes the list of its steps, and a list of one object for each value of a
field becomes those objects.

llama.cpp's servers turn a schema sent in ``response_format`` (json_object carrying it) into
a grammar that holds a reply to the schema's shape, but llama-cpp-python's ignores a
number's ``minimum`` and ``maximum`` (llama-server's only an integer's): Gemma 3 270M wrote
``"delta": 4610`` and ``"importance": 4144858795233199`` for a change bounded to +-0.3 and an
importance of 1 to 10, and every such reply was asked again and fell back. Both servers
hold a reply to an ``enum``, so a bounded number is sent with its range in round steps
(``-0.3, -0.25, ..., 0.3``; ``0, 0.5, ..., 10``; each integer of ``1 ... 10``): the same
prompt then gave ``"delta": 0.15`` and ``"importance": 2``.

A list of exactly as many objects as one required field of theirs has values (the batched
judge's judgements, one for each agent named in ``target``) is sent as one object for each
value, in order, that field first and fixed: Gemma judged one agent three times and left
out the others, which were asked again alone.

The schema the reply is read and clamped against is the original; only what the server is
sent changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .clamp import Schema, resolved

#: The most steps a range is cut into.
MOST_STEPS = 20
#: Step sizes tried, times a power of ten, smallest first.
NICE = (1.0, 2.0, 2.5, 5.0)
#: Keywords whose value is a schema, or a list or a name map of schemas.
_ONE = ("items", "additionalProperties", "not", "contains")
_MANY = ("anyOf", "oneOf", "allOf", "prefixItems")
_NAMED = ("properties", "$defs", "definitions", "patternProperties")
#: The schemas sent, by the id of the schema each was made from (held with it, so that an
#: id is not taken by another while its entry stands), at most :data:`MOST_HELD` of them.
_SENT: dict[int, tuple[Schema, Schema]] = {}
MOST_HELD = 4096


def grammar_schema(schema: Schema) -> Schema:
    """``schema`` (not changed) as a grammar-enforcing server is sent it: every list of one
    object for each value of a field as those objects in order (:func:`_one_each`), every
    number and integer bounded on both sides with an ``enum`` of its steps (:func:`steps`).
    Made once for each schema (a mind builds each of its schemas once: ~0.3 ms saved a
    call)."""
    held = _SENT.get(id(schema))
    if held is not None and held[0] is schema:
        return held[1]
    listed = _rebuilt(schema, lambda node: _one_each(node, schema))
    sent = _rebuilt(listed, _stepped)
    if len(_SENT) >= MOST_HELD:
        _SENT.clear()
    _SENT[id(schema)] = (schema, sent)
    return sent


def _rebuilt(node: Schema, make: Callable[[Schema], Schema]) -> Schema:
    """``make`` of a copy of ``node`` whose subschemas were rebuilt first."""
    node = dict(node)
    for key in _ONE:
        if isinstance(node.get(key), dict):
            node[key] = _rebuilt(node[key], make)
    for key in _MANY:
        if isinstance(node.get(key), list):
            node[key] = [_rebuilt(s, make) if isinstance(s, dict) else s for s in node[key]]
    for key in _NAMED:
        if isinstance(node.get(key), dict):
            node[key] = {
                k: _rebuilt(s, make) if isinstance(s, dict) else s for k, s in node[key].items()
            }
    return make(node)


def _one_each(node: Schema, root: Schema) -> Schema:
    """An array of exactly ``n`` objects one of whose required fields has ``n`` values
    (``root``'s ``$defs`` followed) as ``prefixItems``: an object for each value, in order,
    with that field first and fixed to it; else ``node``."""
    count, items = node.get("minItems"), node.get("items")
    if not count or count != node.get("maxItems") or not isinstance(items, dict):
        return node
    item = resolved(items, root)
    fields = item.get("properties") or {}
    values = {k: (fields.get(k) or {}).get("enum") or [] for k in item.get("required", ())}
    keys = [k for k, v in values.items() if len(set(v)) == len(v) == count]
    if item.get("type") != "object" or len(keys) != 1:
        return node
    key = keys[0]
    rest = {k: v for k, v in fields.items() if k != key}
    each = [{**item, "properties": {key: {"const": value}, **rest}} for value in values[key]]
    return {**{k: v for k, v in node.items() if k != "items"}, "prefixItems": each}


def _stepped(node: Schema) -> Schema:
    """``node`` with an ``enum`` of its steps if it is a number or integer bounded on both
    sides with none yet."""
    low, high = node.get("minimum"), node.get("maximum")
    numeric = node.get("type") in ("number", "integer") and "enum" not in node
    if numeric and low is not None and high is not None:
        values = steps(low, high, node["type"] == "integer")
        if values is not None:
            node["enum"] = values
    return node


def steps(low: float, high: float, integer: bool) -> list[int | float] | None:
    """``low`` to ``high`` in the smallest round step (1, 2, 2.5 or 5 times a power of ten;
    at least 1 for an integer) that cuts it into at most :data:`MOST_STEPS` and lands on
    both bounds; whole values as integers. None when no such step exists (an integer range
    wider than :data:`MOST_STEPS`, bounds off every round step)."""
    span = high - low
    if not (math.isfinite(span) and span > 0):
        return None
    if integer:
        if span > MOST_STEPS or low != int(low) or high != int(high):
            return None
        return list(range(int(low), int(high) + 1))
    power = 10.0 ** math.floor(math.log10(span / MOST_STEPS))
    for scale in (power, power * 10):
        for nice in NICE:
            step = nice * scale
            count = round(span / step)
            if count <= MOST_STEPS and _on_grid(low, step) and _on_grid(high, step):
                return [_plain(low + k * step) for k in range(count + 1)]
    return None


def _on_grid(value: float, step: float) -> bool:
    return math.isclose(value / step, round(value / step), abs_tol=1e-9)


def _plain(value: float) -> int | float:
    """``value`` as a reply would write it: no float noise, a whole number as an integer."""
    value = round(value, 9)
    return int(value) if value.is_integer() else value
