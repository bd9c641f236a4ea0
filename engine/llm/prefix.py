"""The prompts' own shared prefix: how much of each prompt repeats, from its first
character, an earlier prompt a server's prefix cache could still hold.

An agent speaks in two voices: its own (deciding, planning, speaking: one system text and
context, the purpose's rules last) and the judge's about it (the judge's system text about
the character). For every exchange the longest of these prefixes counts: the one it shares
with the same agent's latest prompt of each purpose in the same voice (what a cache that
keeps many prompts, such as llama.cpp's slots and host prompt cache, vLLM's or
llama-cpp-python's ``--cache true``, can reuse: an agent's words repeat its decision of the
round, its next decision the words' history) and the one it shares with the prompt sent
just before it (all a server that keeps only its last prompt can). Characters are compared;
the shared share of a prompt's characters is applied to the tokens the server read, so the
figure stands beside the server's own count of tokens taken from its cache
(engine/llm/servercache.py). A property of the prompts, not of any server.
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


#: The purposes whose prompts are the judge's about an agent, not the agent's own.
JUDGED = frozenset({"judge", "emotion", "relation", "needs"})


def voice(purpose: str) -> str:
    """``judge`` for the judge's calls about an agent, ``own`` for the agent's own: the calls
    of one voice share their prompt's head."""
    return "judge" if purpose in JUDGED else "own"


def _stream(call: LLMCall) -> tuple[str, str, str]:
    """(model, agent, voice): the prompts that share a head."""
    return call.model, call.agent, voice(call.purpose)


class SharedPrefixes:
    """Follows a run's prompts in the order they were recorded; :meth:`tokens` gives each
    batch's shared-prefix tokens."""

    def __init__(self) -> None:
        #: (model, agent, voice) -> the latest prompt of each purpose (its key without round).
        self.latest: dict[tuple[str, str, str], dict[str, str]] = {}
        self.previous: dict[str, str] = {}

    def tokens(self, calls: Iterable[LLMCall]) -> int:
        """The prompt tokens of ``calls`` that repeat an earlier prompt's prefix (estimated
        from the characters shared); exchanges that got no reply are passed over."""
        total = 0
        for call in calls:
            if call.response is None:
                continue
            text = prompt_text(call)
            earlier = self.latest.setdefault(_stream(call), {})
            before = [self.previous.get(call.model, ""), *earlier.values()]
            shared = max(common_prefix(text, other) for other in before)
            total += round(call.prompt_tokens * shared / len(text)) if text else 0
            earlier[call.key.partition(":")[2]] = self.previous[call.model] = text
        return total
