"""The prompts' own shared prefix: how much of each prompt repeats, from its first
character, an earlier prompt a server's prefix cache could still hold.

For every exchange the longer of two prefixes counts: the one it shares with the same
agent's previous prompt for the same purpose (what a cache that keeps many prompts, such as
llama.cpp's slots, vLLM's or llama-cpp-python's ``--cache true``, can reuse) and the one it
shares with the prompt sent just before it (all a server that keeps only its last prompt
can). Characters are compared; the shared share of a prompt's characters is applied to the
tokens the server read, so the figure stands beside the server's own count of tokens taken
from its cache (engine/llm/servercache.py). A property of the prompts, not of any server.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.exchanges import LLMCall


def prompt_text(call: LLMCall) -> str:
    """The call's messages as one text, roles included."""
    return "".join(f"<{m.get('role', '')}>\n{m.get('content', '')}\n" for m in call.messages)


def common_prefix(a: str, b: str) -> int:
    """The length of the longest prefix ``a`` and ``b`` share (bisected on slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _stream(call: LLMCall) -> tuple[str, str]:
    """(model, key without its round): the same agent, purpose and target across rounds."""
    return call.model, call.key.partition(":")[2]


class SharedPrefixes:
    """Follows a run's prompts in the order they were recorded; :meth:`tokens` gives each
    batch's shared-prefix tokens."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, str], str] = {}
        self.previous: dict[str, str] = {}

    def tokens(self, calls: Iterable[LLMCall]) -> int:
        """The prompt tokens of ``calls`` that repeat an earlier prompt's prefix (estimated
        from the characters shared); exchanges that got no reply are passed over."""
        total = 0
        for call in calls:
            if call.response is None:
                continue
            text = prompt_text(call)
            stream = _stream(call)
            shared = max(
                common_prefix(text, self.last.get(stream, "")),
                common_prefix(text, self.previous.get(call.model, "")),
            )
            total += round(call.prompt_tokens * shared / len(text)) if text else 0
            self.last[stream] = self.previous[call.model] = text
        return total
