"""What a reply may be: its tokens, characters and bytes as they arrive, its time, and the
nesting of its JSON. A reply past a bound is cut (:class:`ReplyCut`): a failed exchange,
recorded and counted like any other, never retried (the same request would run past it
again).

The tokens of a streamed reply are counted as its events arrive, not tokenized: a
llama.cpp server (llama-server, llama-cpp-python) sends one event a token, and OpenAI's
API, vLLM and Ollama at most one a token, so an honest server that stops at ``max_tokens``
sends at most ``max_tokens`` events beside a few of its own (the role, the finish, the
usage); a server that sends more runs past the ``max_tokens`` it was asked. Its characters
are counted too, at most :data:`CHARS_PER_TOKEN` a token, for a server that sends big
events; and the bytes received, with or without a stream, for one that sends big events
of anything else, or lines without end. (Tokenizing each event with litellm's counter
would take about as long as the rest of the event's handling, and count with the wrong
tokenizer for a local model all the same.)
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

#: The most characters a reply may hold for each token it may have: longer than the tokens
#: of any tokenizer's prose (about 4 characters), short enough that a runaway reply is cut
#: at a few kilobytes.
CHARS_PER_TOKEN = 16
#: Events of a stream beside its tokens' (the role, the finish, the usage, ``[DONE]``).
EVENT_SLACK = 8
#: The bytes a reply may take: this much, and :data:`BYTES_PER_TOKEN` more for each token
#: (a streamed token's event is about 300 bytes; a whole reply's escaped text, at most 6
#: a character).
BASE_BYTES = 64 * 1024
BYTES_PER_TOKEN = 1024
#: The deepest JSON a reply may nest: the schemas nest 4 deep; Python's parsers, json-repair
#: and pydantic recurse once a level, so a reply nested thousands deep would exhaust the stack.
MAX_JSON_DEPTH = 32
#: Counts the server sends (tokens) are taken up to this (a larger one is not a count).
MAX_COUNT = 2**31 - 1

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class ReplyCut(Exception):
    """A reply that ran past one of its bounds; its text says which, with the figure."""


class Meter:
    """Counts one reply as it arrives; raises :class:`ReplyCut` past ``max_tokens``."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.events = self.chars = self.bytes = 0

    @property
    def max_bytes(self) -> int:
        return BASE_BYTES + self.max_tokens * BYTES_PER_TOKEN

    def received(self, size: int) -> None:
        """``size`` more bytes of the reply arrived."""
        self.bytes += size
        if self.bytes > self.max_bytes:
            raise ReplyCut(
                f"the reply ran past {self.max_bytes:,} bytes (max_tokens {self.max_tokens}); cut"
            )

    def event(self) -> None:
        """One more event of a stream arrived."""
        self.events += 1
        if self.events > self.max_tokens + EVENT_SLACK:
            raise ReplyCut(
                f"the reply ran past max_tokens {self.max_tokens} ({self.events} events "
                "streamed); cut"
            )

    def text(self, piece: str) -> None:
        """``piece`` of the reply's text arrived."""
        self.chars += len(piece)
        if self.chars > self.max_tokens * CHARS_PER_TOKEN:
            raise ReplyCut(
                f"the reply ran past max_tokens {self.max_tokens} (over "
                f"{self.max_tokens * CHARS_PER_TOKEN:,} characters); cut"
            )


async def read_lines(chunks: AsyncIterator[bytes], meter: Meter) -> AsyncIterator[str]:
    """The lines of a body arriving in ``chunks``, each byte counted by ``meter`` (a line
    without end is cut with the body)."""
    rest = b""
    async for chunk in chunks:
        meter.received(len(chunk))
        rest += chunk
        if b"\n" in chunk:
            *whole, rest = rest.split(b"\n")
            for line in whole:
                yield line.rstrip(b"\r").decode("utf-8", "replace")
    if rest:
        yield rest.rstrip(b"\r").decode("utf-8", "replace")


async def read_body(chunks: AsyncIterator[bytes], meter: Meter) -> bytes:
    """A whole body arriving in ``chunks``, each byte counted by ``meter``."""
    parts = []
    async for chunk in chunks:
        meter.received(len(chunk))
        parts.append(chunk)
    return b"".join(parts)


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON ``text`` nests deeper than ``limit`` (strings skipped; an unclosed
    bracket counts as open). Cheap: a text with no more than ``limit`` opening brackets is
    not looked at further, and the scan stops at the first level past ``limit``."""
    if text.count("{") + text.count("[") <= limit:
        return False
    level = 0
    for bracket in _BRACKET.findall(_STRING.sub("", text)):
        level += 1 if bracket in "[{" else -1
        if level > limit:
            return True
    return False


def loads(text: str) -> Any:
    """``json.loads`` of a reply, or ``ValueError`` for one nested deeper than
    :data:`MAX_JSON_DEPTH` (which would exhaust the parser's stack)."""
    if too_deep(text):
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return json.loads(text)


def count(value: Any) -> int:
    """A token count a server sent: a whole number from 0 to :data:`MAX_COUNT`, else 0."""
    try:
        number = int(value or 0)
    except (TypeError, ValueError, OverflowError):  # not a number, NaN, infinite, too long
        return 0
    return number if 0 <= number <= MAX_COUNT else 0
