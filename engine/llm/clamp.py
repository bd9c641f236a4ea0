"""Values, not only shapes: clamp a reply's out-of-bound values to its JSON schema's bounds.

A grammar (or a careful model) gives the schema's fields but not always values within its
ranges (``"urgency": 12``). Such a reply is clamped to the bound the schema states (numbers
to ``minimum``/``maximum``, strings to ``maxLength``, arrays to ``maxItems``) instead of being
re-asked. Everything else the schema rules out (a missing field, a value outside an enum, a
wrong type) is left for validation to refuse. A signed change (a number the schema bounds to
+-cap) more than :data:`OFF_SCALE` times its cap is not an overshoot but a misread scale
(``"delta": 45871`` for +-0.3), whose size says nothing: it is clamped too, and named, so that
the reply is asked again rather than taken as a change of the full cap. (A level off its
scale, ``"urgency": 20534`` for 0 to 10, is read as its bound.) :func:`at_caps` says whether a
reply's every signed change sits at its cap (a judgement of noise, flagged).
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]
#: How many times its cap a signed change may be before it is off its scale.
OFF_SCALE = 10


def clamp(data: Any, schema: Schema, far: list[str] | None = None) -> list[str]:
    """Clamp ``data`` in place to ``schema``'s bounds; the dotted paths of what changed.
    Each value off the scale is described in ``far`` (one line each)."""
    changed: list[str] = []
    _walk(data, schema, schema, "", changed, [] if far is None else far)
    return changed


def at_caps(data: Any, schema: Schema) -> bool:
    """True when ``data`` gives signed changes (numbers the schema bounds to +-cap) and
    every one of them sits at its cap (or beyond, where validation tolerates it)."""
    found: list[bool] = []
    _caps(data, schema, schema, found)
    return bool(found) and all(found)


def _caps(value: Any, node: Schema, root: Schema, found: list[bool]) -> None:
    node = resolved(node, root)
    branches = node.get("anyOf") or node.get("oneOf")
    if branches:
        branch = _branch(value, [resolved(b, root) for b in branches])
        if branch is not None:
            _caps(value, branch, root, found)
        return
    if isinstance(value, bool):
        return
    if isinstance(value, int | float) and node.get("type") in ("number", "integer"):
        cap = _cap(node)
        if cap is not None:
            found.append(abs(value) >= cap)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for item in value:
            _caps(item, node["items"], root, found)
    elif isinstance(value, dict):
        for key, sub in (node.get("properties") or {}).items():
            if key in value:
                _caps(value[key], sub, root, found)


def resolved(node: Schema, root: Schema) -> Schema:
    """``node`` with its ``$ref`` (into the root's ``$defs``) followed."""
    while "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        node = root.get("$defs", {}).get(name, {})
    return node


def _walk(
    value: Any, node: Schema, root: Schema, path: str, changed: list[str], far: list[str]
) -> Any:
    """Clamp ``value`` to ``node``; returns the (possibly new) value."""
    node = resolved(node, root)
    branches = node.get("anyOf") or node.get("oneOf")
    if branches:
        branch = _branch(value, [resolved(b, root) for b in branches])
        return value if branch is None else _walk(value, branch, root, path, changed, far)
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and node.get("type") in ("number", "integer"):
        bounded = _bounded(value, node)
        if bounded != value:
            changed.append(path or "reply")
            if _off_scale(value, node):
                named = path or "the reply"
                scale = f"{node['minimum']:g} to {node['maximum']:g}"
                far.append(f"{named} was {value:g}, far off its scale ({scale})")
        return bounded
    if isinstance(value, str) and node.get("type") == "string":
        limit = node.get("maxLength")
        if limit is not None and len(value) > limit:
            changed.append(path or "reply")
            return value[:limit]
        return value
    if isinstance(value, list) and node.get("type") == "array":
        limit = node.get("maxItems")
        if limit is not None and len(value) > limit:
            changed.append(path or "reply")
            del value[limit:]
        items = node.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                at = f"{path}.{i}" if path else str(i)
                value[i] = _walk(item, items, root, at, changed, far)
        return value
    if isinstance(value, dict):
        for key, sub in (node.get("properties") or {}).items():
            if key in value:
                at = f"{path}.{key}" if path else key
                value[key] = _walk(value[key], sub, root, at, changed, far)
    return value


def _bounded(value: float, node: Schema) -> float:
    low, high = node.get("minimum"), node.get("maximum")
    if low is not None and value < low:
        return type(value)(low) if node.get("type") == "integer" else low
    if high is not None and value > high:
        return type(value)(high) if node.get("type") == "integer" else high
    return value


def _off_scale(value: float, node: Schema) -> bool:
    """Whether ``value`` is a signed change more than :data:`OFF_SCALE` times its cap."""
    cap = _cap(node)
    return cap is not None and abs(value) > OFF_SCALE * cap


def _cap(node: Schema) -> float | None:
    """The cap of a signed change (a number bounded to +-cap), else None."""
    cap = node.get("maximum")
    return cap if cap is not None and cap > 0 and node.get("minimum") == -cap else None


def _branch(value: Any, branches: list[Schema]) -> Schema | None:
    """The union member ``value`` belongs to: of those of its JSON type, the one whose
    constant properties (a discriminator such as ``mode``) it matches, else one without."""
    kinds = [b for b in branches if _is_type(value, b.get("type"))]
    if not isinstance(value, dict):
        return kinds[0] if kinds else None
    untagged = None
    for b in kinds:
        tags = {k: t for k, p in (b.get("properties") or {}).items() if (t := _tag(p)) is not None}
        if tags and all(value.get(k) == t for k, t in tags.items()):
            return b
        if not tags and untagged is None:
            untagged = b
    return untagged


def _tag(prop: Schema) -> Any:
    """The one value a property allows (``const``, or a one-member ``enum``), else None."""
    if "const" in prop:
        return prop["const"]
    enum: list[Any] = prop.get("enum") or []
    return enum[0] if len(enum) == 1 else None


def _is_type(value: Any, kind: Any) -> bool:
    if kind is None:
        return True
    if kind == "null":
        return value is None
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("number", "integer"):
        return isinstance(value, int | float) and not isinstance(value, bool)
    return False
