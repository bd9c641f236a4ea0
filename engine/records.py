"""What is kept of every LLM exchange, and the per-round usage summary."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Outcome = Literal["ok", "repaired", "reasked", "fallback", "error"]


class LLMCall(BaseModel):
    """One exchange with a model: request, response, usage, latency and how it ended.

    ``key`` names the exchange deterministically (round, purpose, agent, target), so a
    replay can serve the same response to the same request whatever the call order.
    """

    model_config = ConfigDict(extra="forbid")

    key: str
    purpose: str
    agent: str
    model: str
    messages: list[dict[str, str]]
    response: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempts: int = 1
    structured: Literal["json_schema", "json_instructions", "text"] = "text"
    outcome: Outcome = "ok"


class RoundUsage(BaseModel):
    """Totals of one round's LLM calls, for the header, the save and the CSV."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    repairs: int = 0
    reasks: int = 0
    fallbacks: int = 0
    errors: int = 0  # exchanges that got no reply (timeouts, 5xx, 429 after retries, rejections)
    judge_mode: str = ""

    @classmethod
    def of(cls, calls: list[LLMCall], judge_mode: str) -> RoundUsage:
        """Sum a round's calls."""
        return cls(
            calls=len(calls),
            prompt_tokens=sum(c.prompt_tokens for c in calls),
            completion_tokens=sum(c.completion_tokens for c in calls),
            cost_usd=sum(c.cost_usd for c in calls),
            retries=sum(c.attempts - 1 for c in calls),
            repairs=sum(c.outcome == "repaired" for c in calls),
            reasks=sum(c.outcome == "reasked" for c in calls),
            fallbacks=sum(c.outcome == "fallback" for c in calls),
            errors=sum(c.response is None for c in calls),
            judge_mode=judge_mode,
        )
