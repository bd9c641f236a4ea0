"""API keys go where they belong: a server at ``api_base`` never receives the provider's key
variable (OPENAI_API_KEY, ...) unless ``api_key_env`` names it; keys are never saved."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

from collections.abc import AsyncIterator
from pathlib import Path

import litellm
import pytest
from llm_stub import StubLLM
from pydantic import ValidationError

from engine import SaveStore, Simulation, SocialsimError, load_library
from engine.llm.settings import LLMSettings
from engine.llm.transport import LiteLLMTransport, Request

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

SECRET = "sk-secret"
MESSAGES = [{"role": "user", "content": "Hello?"}]


@pytest.fixture
async def stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubLLM]:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with StubLLM(seed=1) as s:
        yield s
    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()


def authorization(stub: StubLLM) -> list[str]:
    return [{k.lower(): v for k, v in h.items()}.get("authorization", "") for h in stub.headers]


async def ask(settings: LLMSettings) -> None:
    transport = LiteLLMTransport(settings)
    await transport.complete(Request(key="k", model=settings.model, messages=MESSAGES))


async def test_a_local_server_gets_a_placeholder_not_the_provider_key(stub: StubLLM) -> None:
    await ask(LLMSettings(model="openai/stub", api_base=stub.url))
    assert authorization(stub) == ["Bearer no-key"]


async def test_api_key_env_names_the_variable_sent(
    stub: StubLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_LLM_KEY", "local-123")
    settings = LLMSettings(model="openai/stub", api_base=stub.url, api_key_env="LOCAL_LLM_KEY")
    await ask(settings)
    await ask(settings.model_copy(update={"api_key_env": "OPENAI_API_KEY"}))  # asked for: sent
    assert authorization(stub) == ["Bearer local-123", f"Bearer {SECRET}"]
    saved = settings.model_dump_json()
    assert "LOCAL_LLM_KEY" in saved and "local-123" not in saved


def test_an_unset_or_malformed_key_variable_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    unset = LLMSettings(
        model="openai/stub", api_base="http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY"
    )
    with pytest.raises(SocialsimError, match="--api-key-env NO_SUCH_KEY: NO_SUCH_KEY is not set"):
        LiteLLMTransport(unset)
    with pytest.raises(ValidationError):
        LLMSettings(model="openai/stub", api_key_env="sk-not-a-name")


def test_a_named_variable_replaces_the_provider_key_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(SocialsimError, match="set OPENAI_API_KEY"):
        LiteLLMTransport(LLMSettings(model="gpt-4o-mini"))
    monkeypatch.setenv("TEAM_OPENAI_KEY", "sk-team")
    LiteLLMTransport(LLMSettings(model="gpt-4o-mini", api_key_env="TEAM_OPENAI_KEY"))


async def test_a_whole_run_never_sends_or_saves_the_key(stub: StubLLM, tmp_path: Path) -> None:
    store = SaveStore(tmp_path / "saves")
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=5)
    sim = Simulation.new(load_library("tavern"), mind=settings, store=store, rounds=1)
    try:
        await sim.run()
    finally:
        await sim.aclose()
    assert stub.calls > 10 and set(authorization(stub)) == {"Bearer no-key"}
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
