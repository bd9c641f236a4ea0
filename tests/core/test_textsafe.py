"""clean(): the control characters out of every string of a model's reply, the rest as it
was: a string left as it is stays the same object, an enum's value too."""

from __future__ import annotations

import warnings

from pydantic import BaseModel

from engine.core.scenario import Status
from engine.core.textsafe import clean


class Judged(BaseModel):
    status: Status | None
    summary: str
    notes: list[str] = []


def test_a_reply_without_control_characters_is_the_same_object() -> None:
    value = Judged(status=Status.RIVAL, summary="He lied to me.", notes=["first"])
    assert clean(value) is value


def test_an_enum_value_stays_an_enum_value_where_another_field_is_cleaned() -> None:
    """The judge's status stayed a plain str when a summary beside it was cleaned, and
    dumping the reply (a re-ask's told-back check) warned on the user's terminal, as
    ``socialsim replay`` of a Gemma run did: "Expected `enum` ... input_value='neutral'"."""
    value = Judged(status=Status.NEUTRAL, summary="He\x07 lied\x1b to me.\r\n", notes=["a\x07"])
    cleaned = clean(value)
    assert cleaned.summary == "He lied to me.\n" and cleaned.notes == ["a"]
    assert cleaned.status is Status.NEUTRAL
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cleaned.model_dump()["status"] is Status.NEUTRAL
