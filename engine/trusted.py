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
_set = object.__setattr__


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
        _set(obj, "__dict__", fields)
        _set(obj, "__pydantic_fields_set__", every)
        _set(obj, "__pydantic_extra__", None)
        _set(obj, "__pydantic_private__", None)
        return obj

    return build
