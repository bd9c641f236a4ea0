"""Pydantic models built from values the engine itself produced, without validating them.

A round at 100 agents builds tens of thousands of per-edge models (relations, memory
entries, relation changes) from values the rules just clipped; validating each again costs
more than the rest of the edge's work, and ``model_construct`` costs more still. A builder's
callers pass every field, in declaration order (what validation would store, and the order
dumps follow), with values of the declared types; tests compare what they build with
validated copies.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
#: The setters of the slots every model instance fills: called directly, they skip the
#: attribute lookup by name ``object.__setattr__`` makes on each call.
SET_DICT, SET_FIELDS, SET_EXTRA, SET_PRIVATE = (
    BaseModel.__dict__[slot].__set__
    for slot in (
        "__dict__",
        "__pydantic_fields_set__",
        "__pydantic_extra__",
        "__pydantic_private__",
    )
)


@cache
def fields_set(model: type[BaseModel]) -> set[str]:
    """The fields-set every trusted instance of ``model`` shares: it names every field, so
    the additions pydantic makes on assignment leave it unchanged. (A loop that builds
    instances inline, as :func:`trusted`'s builder does, sets this one.)"""
    return set(model.model_fields)


def trusted(model: type[M]) -> Callable[[dict[str, Any]], M]:
    """A builder of ``model`` instances that hold the given fields as they are."""
    every = fields_set(model)

    def build(fields: dict[str, Any]) -> M:
        obj = _new(model)
        SET_DICT(obj, fields)
        SET_FIELDS(obj, every)
        SET_EXTRA(obj, None)
        SET_PRIVATE(obj, None)
        return obj

    return build
