"""The prefix cache as the server reports it, beside the prompts' own shared prefix: each
exchange's ``cached_tokens`` (llama.cpp's ``timings``, vLLM's ``prompt_tokens_details``;
``None`` where a server says nothing), summed per round, printed in the run's summary and
card, exported; saves made before the field load."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import csv
from pathlib import Path

import pytest
from llm_stub import StubLLM

from engine.core.exchanges import LLMCall, RoundUsage, cache_line
from engine.llm.prefix import SharedPrefixes, prompt_text
from engine.llm.servercache import cached_tokens
from engine.saves.store import SaveStore


def test_each_server_shape_is_read_and_silence_is_none() -> None:
    assert cached_tokens({"prompt_tokens_details": {"cached_tokens": 40}}) == 40
    assert cached_tokens({"prompt_tokens": 9}, {"cache_n": 7, "prompt_n": 2}) == 7
    assert cached_tokens(None, None, {"tokens_cached": 12}) == 12
    assert cached_tokens({"prompt_tokens": 9, "completion_tokens": 2}) is None
    assert cached_tokens({"prompt_tokens_details": None}, {"cache_n": True}) is None
    assert cached_tokens(None, {"cache_n": -1}) is None


def test_a_save_from_before_the_field_loads() -> None:
    old = {"key": "r0001:decide:A", "purpose": "decide", "agent": "A", "model": "m", "messages": []}
    assert LLMCall.model_validate(old).cached_tokens is None
    usage = RoundUsage.model_validate({"calls": 3, "prompt_tokens": 90})
    assert (usage.cached_tokens, usage.cache_reported, usage.shared_prefix) == (0, 0, 0)


def _call(key: str, text: str, tokens: int) -> LLMCall:
    messages = [{"role": "user", "content": text}]
    _, purpose, agent = key.split(":")[:3]
    return LLMCall(
        key=key, purpose=purpose, agent=agent, model="m", messages=messages, response="ok",
        prompt_tokens=tokens,
    )  # fmt: skip


def test_the_shared_prefix_counts_the_same_stream_and_the_last_prompt() -> None:
    prefixes = SharedPrefixes()
    first = _call("r0001:decide:A", "x" * 90, 100)
    assert prefixes.tokens([first]) == 0
    # Round 2: the same stream's prompt repeats round 1's 90 characters of its 108.
    again = _call("r0002:decide:A", "x" * 90 + "y" * 10, 50)
    text = "<user>\n" + "x" * 90 + "y" * 10 + "\n"
    assert prefixes.tokens([again]) == round(50 * (7 + 90) / len(text))
    unanswered = _call("r0002:decide:B", "x" * 90, 10).model_copy(update={"response": None})
    assert prefixes.tokens([unanswered]) == 0


def test_an_agents_prompt_repeats_any_purpose_of_its_own_voice_not_the_judges() -> None:
    """The agent's words repeat its decision of the round (its own voice); the judge's
    prompt about it shares no head with them, and another agent's prompt in between (the
    one a server keeping only its last prompt holds) does not stand in the way."""
    prefixes = SharedPrefixes()
    prefixes.tokens([_call("r0001:decide:A", "x" * 90, 100), _call("r0001:decide:B", "z", 1)])
    words = _call("r0001:speak:A", "x" * 90 + "y" * 10, 50)
    assert prefixes.tokens([words]) == round(50 * (7 + 90) / len(prompt_text(words)))
    judged = _call("r0001:judge:A", "x" * 90 + "j" * 10, 50)
    prefixes.tokens([_call("r0001:speak:B", "z", 1)])
    assert prefixes.tokens([judged]) == round(50 * 7 / 108)  # "<user>\n" alone


def test_cache_line_says_the_server_figure_or_that_there_is_none() -> None:
    assert cache_line(3130, 25152, 9870, 25152) == (
        "server reused 3,130 of 25,152 prompt tokens (12.4%); the prompts repeat 9,870 "
        "(39.2%) of an earlier prompt"
    )
    assert cache_line(0, 0, 50, 200).startswith("not reported by the server; the prompts")
    assert cache_line(0, 0, 0, 0) == "not reported by the server"  # every call failed


def _play(socialsim, run_id: str, **stub_kwargs) -> tuple[str, StubLLM]:
    """Two rounds of the tavern against a fresh stub."""
    with StubLLM(seed=2, **stub_kwargs) as stub:
        model = ["--model", "openai/stub", "--api-base", stub.url, "--retries", "0"]
        result = socialsim("run", "tavern", "--rounds", "2", "--run-id", run_id, "-q", *model)
    assert result.code == 0, result.err
    return result.out, stub


@pytest.mark.parametrize("server", ["llama.cpp", "vllm"])
def test_the_servers_figure_is_recorded_summed_printed_exported_and_carded(
    run_cli, saves: Path, tmp_path: Path, server: str
) -> None:
    out, stub = _play(run_cli, "cached", server=server)
    store = SaveStore(saves)
    rounds = store.read_rounds("cached")[1:]
    calls = [c for r in rounds for c in r.llm_calls if c.response is not None]
    assert all(c.cached_tokens is not None for c in calls)
    said = sum(stub.cached)
    assert said > 0 and sum(c.cached_tokens or 0 for c in calls) == said
    usages = [r.usage for r in rounds if r.usage is not None]
    total = RoundUsage.summed(usages)
    assert total.cached_tokens == said
    assert total.cache_reported == sum(c.prompt_tokens for c in calls)
    assert 0 < total.shared_prefix <= total.prompt_tokens
    line = cache_line(
        total.cached_tokens, total.cache_reported, total.shared_prefix, total.prompt_tokens
    )
    assert line.startswith("server reused")
    printed = " ".join(out.split())
    assert f"prefix cache {line}" in printed
    card = run_cli("card", "cached")
    assert card.code == 0 and line in " ".join(card.out.replace("│", " ").split())
    folder = tmp_path / "export"
    assert run_cli("export", "cached", "--out", str(folder)).code == 0
    with (folder / "usage.csv").open() as f:
        exported = list(csv.DictReader(f))
    assert sum(int(r["cached_tokens"]) for r in exported) == said
    assert sum(int(r["shared_prefix"]) for r in exported) == total.shared_prefix


def test_a_server_that_says_nothing_is_said_to_say_nothing(
    run_cli, saves: Path, tmp_path: Path
) -> None:
    out, _ = _play(run_cli, "silent")
    rounds = SaveStore(saves).read_rounds("silent")[1:]
    assert all(c.cached_tokens is None for r in rounds for c in r.llm_calls)
    assert "prefix cache not reported by the server; the prompts repeat" in " ".join(out.split())
    folder = tmp_path / "export"
    assert run_cli("export", "silent", "--out", str(folder)).code == 0
    with (folder / "llm_calls.csv").open() as f:
        assert {r["cached_tokens"] for r in csv.DictReader(f)} == {""}


@pytest.fixture
def saves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "saves"
    monkeypatch.setenv("SOCIALSIM_SAVES", str(folder))
    return folder
