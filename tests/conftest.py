"""Shared fixtures: a small scenario, a temporary saves folder."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine import SaveStore, Scenario
from engine.core.scenario import parse_scenario

MINI = {
    "id": "mini",
    "title": "Mini committee",
    "description": "A three-person committee argues over a leaking roof.",
    "rounds": 5,
    "memory_size": 3,
    "agents": [
        {
            "name": "Ann",
            "role": "chair",
            "archetype": "dominant",
            "talking_points": ["we vote tonight", "the budget is fixed"],
        },
        {
            "name": "Bob",
            "role": "treasurer",
            "archetype": "reserved",
            "private_info": ["the account is overdrawn"],
            "talking_points": ["the numbers are worse than they look"],
        },
        {
            "name": "Cy",
            "role": "member",
            "archetype": "agreeable",
            "talking_points": ["we should hear everyone", "the roof cannot wait"],
        },
    ],
    "relations": [
        {"from": "Ann", "to": "Bob", "fav": -0.3},
        {"from": "Bob", "to": "Cy", "fav": 0.6, "status": "ally"},
    ],
    "factions": {"board": ["Ann"], "members": ["Bob", "Cy"]},
    "events": [
        {"round": 1, "text": "The hall roof leaks again."},
        {"round": 2, "text": "Bob receives the bank statement.", "private_to": ["Bob"]},
    ],
}


@pytest.fixture
def mini_data() -> dict:
    """Raw data of a small valid scenario (a fresh deep copy per test)."""
    import copy

    return copy.deepcopy(MINI)


@pytest.fixture
def mini(mini_data: dict) -> Scenario:
    """A small valid three-agent scenario."""
    return parse_scenario(mini_data, "mini")


@pytest.fixture
def store(tmp_path: Path) -> SaveStore:
    """A save store in a temporary folder."""
    return SaveStore(tmp_path / "saves")


@pytest.fixture
def hermetic_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user keymap, no saves or exports outside tmp_path (for app tests)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SOCIALSIM_KEYMAP", raising=False)
    monkeypatch.delenv("SOCIALSIM_SAVES", raising=False)
    monkeypatch.chdir(tmp_path)


@dataclass
class CliResult:
    """What one in-process ``socialsim`` invocation did."""

    code: int
    out: str
    err: str


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Call the console-script entry point in-process: ``run_cli(*args) -> CliResult``."""
    from tui import cli

    def invoke(*args: str) -> CliResult:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["socialsim", *args])
        code: int | str | None = 0
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code
        captured = capsys.readouterr()
        assert isinstance(code, int | None), code
        return CliResult(code or 0, captured.out, captured.err)

    return invoke


@pytest.fixture
async def make_client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """A structured LLM client on LiteLLMTransport talking to a fresh stub (seed: the test
    module's ``STUB_SEED``, default 2); clients and stubs are closed afterwards."""
    import litellm
    from llm_stub import StubLLM

    from engine.llm.client import LLMClient
    from engine.llm.settings import LLMSettings
    from engine.llm.transport import LiteLLMTransport

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    seed = getattr(request.module, "STUB_SEED", 2)
    stubs: list[StubLLM] = []

    def make(stub_kwargs: dict | None = None, **settings: object) -> tuple[LLMClient, StubLLM]:
        stub = StubLLM(seed=seed, **(stub_kwargs or {}))
        stub.start()
        stubs.append(stub)
        llm = LLMSettings.model_validate(
            {"model": "openai/stub", "api_base": stub.url, "timeout": 2.0, **settings}
        )
        return LLMClient(llm, LiteLLMTransport(llm)), stub

    yield make
    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()
    for stub in stubs:
        stub.stop()


@pytest.fixture
def saves(tmp_path: Path) -> Path:
    """A saves folder inside the test's tmp_path (not created)."""
    return tmp_path / "saves"


@pytest.fixture
def thirty(tmp_path: Path) -> Path:
    """A town meeting of 30 (long names, some alike), 3 rounds."""
    from cast import THIRTY, write_cast

    return write_cast(tmp_path / "thirty.toml", THIRTY)
