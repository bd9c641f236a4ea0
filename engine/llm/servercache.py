"""What a server says it took from its prefix cache for one exchange.

Servers say it in different places, when they say it at all:

* OpenAI, vLLM (``--enable-prompt-tokens-details``) and recent llama.cpp ``llama-server``:
  ``usage.prompt_tokens_details.cached_tokens``;
* llama.cpp ``llama-server``: ``timings.cache_n`` beside ``timings.prompt_n`` (the prompt
  tokens it still evaluated), and ``tokens_cached`` in its native completion replies;
* llama-cpp-python says nothing in a reply (its log's "prefix-match hit" lines do: see
  docs/local-models.md); nor does the stub unless asked to.

``None`` is "not said", never 0.
"""

from __future__ import annotations

from typing import Any


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` or ``obj.name`` (a reply's dict or litellm's object); None if absent."""
    if obj is None:
        return None
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _count(value: Any) -> int | None:
    """A non-negative whole token count, or None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(value)


def cached_tokens(usage: Any, timings: Any = None, reply: Any = None) -> int | None:
    """The prompt tokens the server reused from its cache, as it reports them (None: it did
    not say). ``usage``: the reply's usage; ``timings``: llama.cpp's ``timings``;
    ``reply``: the whole reply body (llama.cpp's ``tokens_cached``)."""
    found = _count(_field(_field(usage, "prompt_tokens_details"), "cached_tokens"))
    if found is None:
        found = _count(_field(timings, "cache_n"))
    if found is None:
        found = _count(_field(reply, "tokens_cached"))
    return found
