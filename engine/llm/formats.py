"""How a model is asked for structured replies: a fixed mode, or the one ``auto`` finds.

``auto`` tries ``response_format`` json_schema, then json_object carrying the schema (what
llama.cpp's servers enforce with a grammar), then json_object (schema in the prompt), then
JSON instructions in the prompt only. It steps down when the server refuses a format (a 4xx
or 5xx naming it, as llama-cpp-python's server does for json_schema), when the probe's reply
is not in the schema's shape (a server that accepts a format and ignores it), or when later
replies miss the shape twice in a row. An empty reply or a failed exchange says nothing of
the format and never steps down. The first exchange of a model goes alone (the probe): the
others wait for it, so a refusing server sees one refused request, not a burst. An
:class:`Ask` is one structured exchange, made into the request of whichever format.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..core.exchanges import Structured
from .parsing import Messages, with_schema
from .settings import StructuredMode
from .transport import Request

#: The formats each mode may use, best first.
LADDER: dict[StructuredMode, tuple[Structured, ...]] = {
    "auto": ("json_schema", "json_object_schema", "json_object", "json_instructions"),
    "schema": ("json_schema",),
    "grammar": ("json_object_schema",),
    "json": ("json_object",),
    "text": ("json_instructions",),
}
#: The mode a format belongs to (what the run metadata and the app show).
MODE_OF: dict[Structured, StructuredMode] = {
    "json_schema": "schema",
    "json_object_schema": "grammar",
    "json_object": "json",
    "json_instructions": "text",
}
#: Replies out of the schema's shape in a row after which a format counts as ignored.
IGNORED_LIMIT = 2


class Formats:
    """The format one model is asked with, and what the probe found."""

    def __init__(self, mode: StructuredMode) -> None:
        self.mode = mode
        self.probe = asyncio.Lock()
        #: True once an exchange came back (or failed) without its format being refused.
        self.settled = False
        self._ladder = LADDER[mode]
        self._rung = 0
        self._misses = 0

    def settle(self, mode: str) -> None:
        """Start settled at ``mode`` (what a saved run found; no probe): a mode outside
        this model's ladder (``auto``, or another ``--structured``) changes nothing. A reply
        refusing it or ignoring it steps down from there, as from any settled format."""
        for rung, format in enumerate(self._ladder):
            if MODE_OF[format] == mode:
                self._rung, self._misses, self.settled = rung, 0, True
                return

    @property
    def current(self) -> Structured:
        """The format to ask with now."""
        return self._ladder[self._rung]

    @property
    def resolved(self) -> StructuredMode:
        """The mode in use ("auto" until the probe is done)."""
        return MODE_OF[self.current] if self.settled or self.mode != "auto" else "auto"

    def refused(self, format: Structured) -> bool:
        """The server refused ``format``: step down. False when there is no other format."""
        if format != self.current:
            return True  # a concurrent exchange stepped down already
        if self._rung + 1 == len(self._ladder):
            return False
        self._rung += 1
        self._misses = 0
        return True

    @property
    def can_step(self) -> bool:
        """True while a lower format is left to try."""
        return self._rung + 1 < len(self._ladder)

    def answered(self, format: Structured, shaped: bool | None) -> None:
        """A reply came back in ``format``; ``shaped``: it was in the schema's shape (values
        out of bounds included: a grammar cannot express every rule); ``None``: an empty
        reply or a failure, which says nothing of the server's format."""
        if format != self.current or shaped is None:
            return
        self._misses = 0 if shaped else self._misses + 1
        if self._misses >= IGNORED_LIMIT and self._rung + 1 < len(self._ladder):
            self._rung += 1
            self._misses = 0


#: Formats whose schema the server is sent and enforces: it is not pasted in the prompt too.
ENFORCED = frozenset({"json_schema", "json_object_schema"})


@dataclass(frozen=True)
class Ask:
    """A structured exchange to make, in whichever format the model is asked with."""

    key: str
    model: str
    messages: Messages
    schema: dict[str, Any]
    schema_name: str
    temperature: float | None
    followup: tuple[dict[str, str], ...] = ()
    agent: str = ""

    def request(self, format: Structured) -> Request:
        """The request in ``format``: the schema goes in the prompt unless the server is
        sent it to enforce (json_schema, or json_object carrying it)."""
        pasted = None if format in ENFORCED else self.schema
        return Request(
            key=self.key,
            model=self.model,
            messages=[*with_schema(self.messages, pasted), *self.followup],
            schema=self.schema,
            schema_name=self.schema_name,
            format=format,
            temperature=self.temperature,
            agent=self.agent,
        )
