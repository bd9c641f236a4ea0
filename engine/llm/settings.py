"""LLM run settings, persisted with the run (never an API key: keys come from the environment)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

JudgeMode = Literal["per-edge", "batched"]


class LLMSettings(BaseModel):
    """How an LLM run calls its models."""

    model_config = ConfigDict(extra="forbid")

    model: str
    judge_model: str | None = None
    agent_models: dict[str, str] = {}
    api_base: str | None = None
    judge_mode: JudgeMode = "per-edge"
    max_concurrency: Annotated[int, Field(ge=1, le=256)] = 8
    timeout: Annotated[float, Field(gt=0, le=3600)] = 60.0
    retries: Annotated[int, Field(ge=0, le=10)] = 3
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.7
    max_calls: Annotated[int, Field(ge=1)] | None = None
    budget_usd: Annotated[float, Field(gt=0)] | None = None

    def model_for(self, agent: str) -> str:
        """The model that plays ``agent``."""
        return self.agent_models.get(agent, self.model)

    @property
    def offline(self) -> bool:
        """Never: LLM settings name live models (see ``engine.mind_spec``)."""
        return False

    @property
    def label(self) -> str:
        """How the UI and CLI name this mind."""
        judge = "" if self.judge == self.model else f", judge {self.judge}"
        mixed = " (mixed team)" if self.agent_models else ""
        return f"LLM {self.model}{mixed}{judge}"

    @property
    def judge(self) -> str:
        """The model of the unified judge (U_S, U_R, needs)."""
        return self.judge_model or self.model
