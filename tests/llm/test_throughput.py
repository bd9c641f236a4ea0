"""Time before you spend: the server probe (engine/llm/throughput.py) against the stub's
per-token rates and slots, the estimate's wall time against a stub run's, and how
``socialsim estimate`` and the spend dialog show it."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
import time
from collections.abc import Iterator

import pytest
from llm_stub import StubLLM

from engine import SaveStore, Simulation, resolve_scenario
from engine.llm.settings import LLMSettings
from engine.llm.throughput import PROBE_CONCURRENCY, ProbeError, Rates, Throughput, probe
from engine.llm.transport import close_clients
from engine.studies.estimate import Estimate, Figures, Span, estimate_run
from tui.screens.spend import spend_lines

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

#: The stub's rates: tokens per second per request, two requests decoded at once.
PROMPT_RATE, GENERATE_RATE, SLOTS = 3000.0, 150.0, 2


@pytest.fixture
def server() -> Iterator[StubLLM]:
    with StubLLM(
        seed=1,
        tokens="litellm",
        server="llama.cpp",
        slots=SLOTS,
        prompt_rate=PROMPT_RATE,
        generate_rate=GENERATE_RATE,
    ) as stub:
        yield stub


def settings(url: str, **extra: object) -> LLMSettings:
    return LLMSettings.model_validate({"model": "openai/stub", "api_base": url, **extra})


@pytest.mark.slow  # timed against the stub's sleeps: not in the default run
def test_the_probe_measures_the_servers_rates_at_its_slots(server: StubLLM) -> None:
    speed = asyncio.run(probe(settings(server.url)))
    assert speed.concurrency == SLOTS  # from /props total_slots
    assert server.calls == speed.calls == 3 + 2 * SLOTS  # bounded
    one, both = speed.single, speed.parallel
    assert 0.3 * PROMPT_RATE < one.prompt_per_s < 1.5 * PROMPT_RATE, speed.text()
    assert 0.3 * GENERATE_RATE < one.generated_per_s < 1.5 * GENERATE_RATE, speed.text()
    assert both.prompt_per_s > 1.2 * one.prompt_per_s, speed.text()  # two slots at once
    prompts = [r["messages"][0]["content"].split()[0] for r in server.requests]
    assert len(set(prompts)) == len(prompts)  # each prompt new: no prefix cache reuses it
    assert all(not r.get("stream") and len(r["messages"]) == 1 for r in server.requests)


def test_without_slots_the_probe_stays_small(monkeypatch: pytest.MonkeyPatch) -> None:
    with StubLLM(seed=1) as stub:
        assert asyncio.run(probe(settings(stub.url))).concurrency == PROBE_CONCURRENCY
        stub.reset()
        assert asyncio.run(probe(settings(stub.url, max_concurrency=1))).concurrency == 1
        assert stub.calls == 5 and stub.peak_in_flight == 1


def test_the_probe_sends_only_a_key_the_user_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-this-server")
    monkeypatch.setenv("LOCAL_KEY", "sk-local")
    with StubLLM(seed=1) as stub:
        asyncio.run(probe(settings(stub.url)))
        assert not any("authorization" in {k.lower() for k in h} for h in stub.headers)
        stub.reset()
        asyncio.run(probe(settings(stub.url, api_key_env="LOCAL_KEY")))
        assert {h.get("Authorization") for h in stub.headers} == {"Bearer sk-local"}


def test_a_failing_server_is_one_line() -> None:
    with StubLLM(seed=1, faults={"500": 1.0}) as stub:
        with pytest.raises(ProbeError, match=r"answered HTTP 500"):
            asyncio.run(probe(settings(stub.url)))
        url = stub.url
    with pytest.raises(ProbeError, match="ConnectError"):
        asyncio.run(probe(settings(url)))  # stopped: the port refuses


def play(spec: LLMSettings, store: SaveStore | None = None) -> float:
    """Wall seconds of one tavern round played by ``spec``."""

    async def go() -> float:
        sim = Simulation.new(resolve_scenario("tavern"), seed=0, mind=spec, rounds=1, store=store)
        started = time.perf_counter()
        try:
            await sim.run()
        finally:
            await sim.aclose()
            await close_clients()
        return time.perf_counter() - started

    return asyncio.run(go())


@pytest.mark.slow  # timed against the stub's sleeps: not in the default run
def test_the_estimates_time_is_within_half_of_a_stub_runs_wall_time(
    server: StubLLM, store: SaveStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """One tavern round against a server decoding two requests at once; the calls and
    tokens expected from an earlier round (played on an untimed stub), the time from the
    probe: within ±50% of the round's wall time."""
    with StubLLM(seed=1, tokens="litellm") as quick:
        play(settings(quick.url), store)
    spec = settings(server.url)
    speed = asyncio.run(probe(spec))
    found = estimate_run(resolve_scenario("tavern"), spec, 1, store.root).timed(speed)
    assert found.earlier_runs == 1 and found.wall_s is not None
    server.reset()
    wall = play(spec)
    ratio = found.wall_s.expected / wall
    with capsys.disabled():
        print(f"\nestimated {found.wall_s.expected:.1f} s, played {wall:.1f} s: {ratio:.2f}")
    assert 0.5 <= ratio <= 1.5, f"estimated {found.time_text()}, the round took {wall:.1f} s"


def test_seconds_follow_the_calls_in_flight() -> None:
    speed = Throughput(4, Rates(1 / 100, 1 / 10), Rates(1 / 400, 1 / 40), calls=11, seconds=9)
    assert speed.seconds_for(1000, 100, 1) == pytest.approx(10 + 10)
    assert speed.seconds_for(1000, 100, 8) == pytest.approx(2.5 + 2.5)  # no faster past 4
    assert speed.seconds_for(1000, 100, 2.5) == pytest.approx(1000 / 250 + 100 / 25)


def test_the_spend_dialog_shows_the_time() -> None:
    prompt, completion = Span(150.0, 300.0, 600.0), Span(50.0, 100.0, 200.0)
    untimed = Estimate(
        2, Span(2, 4, 8), prompt, completion, None, by_purpose={"decide": Figures(4, 300, 100)}
    )
    shown = spend_lines(untimed, "500calls")
    assert not any(line.startswith(("time", "a round")) for line in shown)
    one_slot = Throughput(1, Rates(0.01, 0.1), Rates(0.01, 0.1), calls=5, seconds=3)
    lines = spend_lines(untimed.timed(one_slot), "500calls")
    # a round: 2 decide calls, 150 prompt tokens x 0.01 s + 50 generated x 0.1 s = 6.5 s
    assert lines[1:3] == ["a round    ~6.5 s", "the run    ~13 s  [6.5 s–26 s]"]  # time first


def test_socialsim_estimate_prints_the_time(server: StubLLM, run_cli) -> None:
    args = ("estimate", "tavern", "--model", "openai/stub", "--api-base", server.url)
    result = run_cli(*args, "--rounds", "2")
    assert result.code == 0, result.err
    assert "wall time" in result.out and "per round" in result.out
    assert f"with {SLOTS} at once" in result.out
    calls = server.calls
    unprobed = run_cli(*args, "--no-probe")
    assert unprobed.code == 0 and "wall time" not in unprobed.out and server.calls == calls


def test_socialsim_estimate_says_when_the_server_cannot_be_measured(run_cli) -> None:
    with StubLLM(seed=1) as stub:
        url = stub.url
    result = run_cli("estimate", "tavern", "--model", "openai/stub", "--api-base", url)
    assert result.code == 2
    assert "LLM calls" in result.out  # the figures that need no server are printed
    assert result.err.startswith("socialsim: error: estimate: time not measured:")
    assert len(result.err.strip().splitlines()) == 1
