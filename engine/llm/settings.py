"""LLM run settings, persisted with the run (never an API key: keys come from the environment;
the settings hold at most the name of the variable that holds one)."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

JudgeMode = Literal["per-edge", "batched"]
#: How structured replies are asked for: ``schema`` = ``response_format`` json_schema (OpenAI,
#: vLLM, SGLang, LM Studio, Ollama); ``grammar`` = ``response_format`` json_object carrying
#: the schema (llama.cpp's llama-server and llama-cpp-python enforce it with a grammar);
#: ``json`` = ``response_format`` json_object with the schema in the prompt; ``text`` = JSON
#: instructions and the schema in the prompt only; ``auto`` = probe them in that order once
#: per model and keep the first the server accepts and really enforces.
StructuredMode = Literal["auto", "schema", "grammar", "json", "text"]
#: Where the system text goes: ``keep`` = a system message; ``merge`` = at the head of the
#: first user turn (for chat templates without a system role, whose servers drop it);
#: ``auto`` = keep, and merge for a model whose server is seen to drop it.
SystemRole = Literal["auto", "keep", "merge"]
#: The most LLM calls a run may have in flight at once (``--max-concurrency``).
MAX_CONCURRENCY = 4096
#: Seconds an exchange's attempt may take in all (``--call-timeout``): a reply of
#: ``max_tokens`` 1024 from a CPU server at 10 tokens a second, after a long prompt.
CALL_TIMEOUT = 180.0


class LLMSettings(BaseModel):
    """How an LLM run calls its models."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    model: str
    judge_model: str | None = None
    agent_models: dict[str, str] = {}
    api_base: str | None = None
    #: Every endpoint of a run served by several (``--api-base`` given more than once, or
    #: ``--endpoints``), ``api_base`` first: each agent's calls go to one of them
    #: (``engine.llm.endpoints``). Empty (and not saved): one endpoint, ``api_base``.
    api_bases: list[str] = Field(default_factory=list, exclude_if=lambda bases: not bases)
    judge_mode: JudgeMode = "per-edge"
    #: The most LLM calls in flight at once. A hosted provider gets this many from the start
    #: (a whole update wave: a 30-agent round in per-edge mode asks up to 30 x (29 edges +
    #: emotion + needs) = 930); an ``api_base`` server starts at its slot count (or 1) and
    #: the limit adapts (see ``engine.llm.limit``) up to this ceiling.
    max_concurrency: Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)] = 1024
    #: Seconds an exchange may wait for the server's next byte (a reply still arriving is
    #: not cut by it: ``call_timeout`` bounds the whole).
    timeout: Annotated[float, Field(gt=0, le=3600)] = 60.0
    #: Seconds an exchange's attempt may take in all, however the server sends: past it
    #: the reply is cut (``engine.llm.bounds``), recorded as failed, and not retried.
    call_timeout: Annotated[float, Field(gt=0, le=86400)] = CALL_TIMEOUT
    retries: Annotated[int, Field(ge=0, le=10)] = 3
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.7
    #: Cap on each reply's tokens: a small local model constrained to JSON can otherwise
    #: pad a reply until its context is full (minutes per call on a CPU).
    max_tokens: Annotated[int, Field(ge=16, le=32768)] = 1024
    max_calls: Annotated[int, Field(ge=1)] | None = None
    budget_usd: Annotated[float, Field(gt=0)] | None = None
    structured: StructuredMode = "auto"
    #: Per-model overrides of ``structured`` (model string -> mode).
    structured_models: dict[str, StructuredMode] = {}
    system_role: SystemRole = "auto"
    #: Play on after a round in which most structured answers fell back.
    tolerate_fallbacks: bool = False
    #: The environment variable whose value is sent as the API key. Unset: the provider's
    #: usual variable, except with ``api_base``, where a placeholder is sent (a local server
    #: must not receive OPENAI_API_KEY and the like unless asked).
    api_key_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = None

    @field_validator("api_base")
    @classmethod
    def _no_credentials(cls, url: str | None) -> str | None:
        """The base URL is saved with the run: it may not carry a key (user:password@, a
        query or a fragment); keys come from ``api_key_env``."""
        return None if url is None else _public(url)

    @field_validator("api_bases")
    @classmethod
    def _several(cls, urls: list[str]) -> list[str]:
        """Each endpoint as ``api_base`` is checked, none twice; one alone is ``api_base``."""
        urls = [_public(url) for url in urls]
        twice = sorted({url for url in urls if urls.count(url) > 1})
        if twice:
            raise ValueError(f"{twice[0]} is given twice")
        return urls

    @model_validator(mode="after")
    def _first_is_api_base(self) -> LLMSettings:
        """``api_base`` is the first endpoint; a lone one is only ``api_base``."""
        if self.api_bases:
            self.api_base = self.api_bases[0]
        if len(self.api_bases) == 1:
            self.api_bases = []
        return self

    @property
    def endpoints(self) -> list[str]:
        """The run's endpoints (empty: a hosted provider's own)."""
        return self.api_bases or ([self.api_base] if self.api_base else [])

    def at(self, api_base: str) -> LLMSettings:
        """These settings with ``api_base`` their only endpoint."""
        return self.model_copy(update={"api_base": api_base, "api_bases": []})

    def model_for(self, agent: str) -> str:
        """The model that plays ``agent``."""
        return self.agent_models.get(agent, self.model)

    def structured_for(self, model: str) -> StructuredMode:
        """How ``model`` is asked for structured replies."""
        return self.structured_models.get(model, self.structured)

    @property
    def offline(self) -> bool:
        """Never: LLM settings name live models (see ``engine.minds.spec``)."""
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


def _public(url: str) -> str:
    """``url``, an http(s) base URL without credentials, a query or a fragment."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is not an http(s) URL")
    if "@" in parts.netloc or parts.query or parts.fragment:
        raise ValueError(
            "the URL may not hold credentials, a query or a fragment (it is saved with "
            "the run); pass the key with --api-key-env"
        )
    return url
