"""An exchange's record: what was asked, what came back, and what socialsim made of it."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.exchanges import LLMCall, Outcome
from .parsing import kept
from .transport import Reply, Request


def record_of(
    request: Request,
    purpose: str,
    agent: str,
    reply: Reply | None,
    outcome: Outcome,
    error: str | None = None,
    *,
    attempts: int = 1,
    clamped: Sequence[str] = (),
    flaw: str = "",
    at_cap: bool = False,
    read: str = "",
) -> LLMCall:
    """The record of ``request`` and its ``reply`` (None: it failed after ``attempts``):
    the reply kept (up to its cap), its tokens, cost, latency and server, the outcome and
    what was wrong with it."""
    call = LLMCall(
        key=request.key,
        purpose=purpose,
        agent=agent,
        model=request.model,
        messages=request.messages,
        response=kept(reply.text) if reply else None,
        error=error,
        structured=request.format,
        outcome=outcome,
        attempts=reply.attempts if reply else attempts,
        clamped=list(clamped),
        flaw=flaw,
        at_cap=at_cap,
        read=read,
    )
    if reply is not None:
        call.prompt_tokens = reply.prompt_tokens
        call.completion_tokens = reply.completion_tokens
        call.cost_usd = reply.cost_usd
        call.latency_s = reply.latency_s
        call.sent_tokens = reply.sent_tokens
        call.counted_by = reply.counted_by
        call.cached_tokens = reply.cached_tokens
        call.endpoint, call.moved_from = reply.endpoint, reply.moved_from
    return call
