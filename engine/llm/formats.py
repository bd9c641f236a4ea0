"""How a model is asked for structured replies: a fixed mode, or the one ``auto`` finds.

``auto`` tries ``response_format`` json_schema, then json_object (schema in the prompt), then
JSON instructions in the prompt only. It steps down when the server refuses a format (a 4xx
or 5xx naming it, as llama-cpp-python's server does for json_schema) or when it answers
prose instead of JSON twice in a row. The first exchange of a model goes alone (the probe):
the others wait for it, so a refusing server sees one refused request, not a burst.
"""

from __future__ import annotations

import asyncio

from ..core.exchanges import Structured
from .settings import StructuredMode

#: The formats each mode may use, best first.
LADDER: dict[StructuredMode, tuple[Structured, ...]] = {
    "auto": ("json_schema", "json_object", "json_instructions"),
    "schema": ("json_schema",),
    "json": ("json_object",),
    "text": ("json_instructions",),
}
#: The mode a format belongs to (what the run metadata and the app show).
MODE_OF: dict[Structured, StructuredMode] = {
    "json_schema": "schema",
    "json_object": "json",
    "json_instructions": "text",
}
#: Prose replies in a row after which a format counts as ignored.
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
        self._prose = 0

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
        self._prose = 0
        return True

    def answered(self, format: Structured, usable: bool) -> None:
        """A reply came back in ``format``; ``usable``: it was a JSON object (valid or not;
        breaking a rule the schema cannot express says nothing of the server)."""
        if format != self.current:
            return
        self._prose = 0 if usable else self._prose + 1
        if self._prose >= IGNORED_LIMIT and self._rung + 1 < len(self._ladder):
            self._rung += 1
            self._prose = 0
