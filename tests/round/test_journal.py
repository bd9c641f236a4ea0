"""The exchange journal (the local stub): a round cut short keeps every exchange answered,
and whoever plays it next asks the server only for the rest, ending where the played-through
round from the same exchanges ends (``replay`` checks it); a saved run's structured mode and
system role are used from the first call on resume."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from llm_stub import StubLLM

from engine import SaveStore, Simulation, resolve_scenario
from engine.core.scenario import Scenario
from engine.llm.journal import JOURNAL_FILE, Journal
from engine.llm.settings import LLMSettings
from engine.llm.transport import Request
from engine.round.events import Notice
from engine.round.replay import replay_run


@pytest.fixture
async def stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubLLM]:
    import litellm

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with StubLLM(seed=4, latency=0.2) as s:
        yield s
    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()


async def until(condition, what: str) -> None:
    for _ in range(3000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def recorded(store: SaveStore, run_id: str, n: int) -> int:
    return len(store.history(run_id)[n].llm_calls)


async def cut_round(sim: Simulation, stub: StubLLM, after: int, *, hold: bool) -> None:
    """Play the next round and cancel it once the stub has received ``after`` requests:
    held first until the calls in flight are answered (a quit), or at once (a second
    press)."""
    task = asyncio.create_task(sim.run(1))
    await until(lambda: stub.calls >= after, f"{after} requests")
    if hold:
        sim.hold()
        await until(lambda: sim.progress.now().in_flight == 0, "the calls in flight answered")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_round_quit_mid_way_is_resumed_without_asking_again(
    stub: StubLLM, mini: Scenario, store: SaveStore
) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=10.0)
    with Simulation.new(mini, seed=2, mind=settings, store=store, run_id="cut") as sim:
        await sim.run(1)
        first = stub.calls
        await cut_round(sim, stub, first + 5, hold=True)
        assert sim.round == 1
        kept = sim.journaled
        assert kept >= 5  # every exchange answered, none in flight when cancelled
        await sim.mind.aclose()
    asked_before = stub.calls - first
    assert (store.run_dir("cut") / JOURNAL_FILE).is_file()

    with Simulation.resume("cut", store) as again:
        assert again.journaled == kept
        await again.run(1)
        await again.mind.aclose()
    assert not (store.run_dir("cut") / JOURNAL_FILE).exists()  # dropped with the round saved
    asked_after = stub.calls - first - asked_before
    # Nothing asked twice: the round's exchanges are those asked before the quit and after.
    assert asked_before == kept
    assert asked_before + asked_after == recorded(store, "cut", 2)

    result = await replay_run(store, "cut", "cut-replay")
    result.sim.close()
    assert result.identical, result.diverged
    for n in (1, 2):  # the round files are the same bytes, but for the run's id
        ours, theirs = (
            json.loads(store.files(r).read(n).model_dump_json()) for r in ("cut", "cut-replay")
        )
        ours.pop("run", None), theirs.pop("run", None)
        assert ours == theirs


async def test_a_round_cancelled_at_once_asks_again_only_what_was_in_flight(
    stub: StubLLM, mini: Scenario, store: SaveStore
) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=10.0)
    with Simulation.new(mini, seed=2, mind=settings, store=store, run_id="abandoned") as sim:
        await cut_round(sim, stub, 6, hold=False)
        kept = sim.journaled
        await sim.mind.aclose()
    await asyncio.sleep(0.3)  # a request written before the cancel reaches the stub
    sent = stub.calls
    in_flight = sent - kept
    # The same process plays the round again (a person's turn withdrawn does so): the
    # journal serves what was answered.
    with Simulation.resume("abandoned", store) as again:
        await again.run(1)
        await again.mind.aclose()
    asked_again = stub.calls - recorded(store, "abandoned", 1)
    assert 0 <= asked_again <= in_flight
    result = await replay_run(store, "abandoned", "abandoned-replay")
    result.sim.close()
    assert result.identical, result.diverged


def line(entry: dict) -> str:
    from engine.llm.journal import _canonical, _sum

    return json.dumps({"sum": _sum(_canonical(entry)), "x": entry}) + "\n"


def request(key: str) -> Request:
    return Request(key=key, model="m", messages=[{"role": "user", "content": key}])


def test_a_torn_last_line_is_ignored_and_a_damaged_one_said(tmp_path: Path) -> None:
    from engine.llm.journal import digest

    journal = Journal(tmp_path)
    entries = [
        {"round": 3, "key": k, "sent": digest(request(k)), "text": k}
        for k in ("r0003:a", "r0003:b", "r0003:c")
    ]
    damaged = line(entries[1]).replace('"text": "r0003:b"', '"text": "forged"')
    torn = line(entries[2])[:-9]
    (tmp_path / JOURNAL_FILE).write_text(line(entries[0]) + damaged + torn)
    assert journal.begin(3) == 1
    assert journal.notes == [f"{tmp_path / JOURNAL_FILE}: 1 damaged journal line ignored "
                    "(their exchanges are asked again)"]  # fmt: skip
    kept = journal.served(request("r0003:a"), digest(request("r0003:a")))
    assert kept is not None and kept["text"] == "r0003:a"
    assert journal.served(request("r0003:b"), digest(request("r0003:b"))) is None
    # The next exchange starts a line of its own: the torn tail is gone.
    journal.add(request("r0003:c"), digest(request("r0003:c")), {"text": "again"})
    assert Journal(tmp_path).begin(3) == 2


def test_a_journal_of_a_round_since_saved_is_dropped(tmp_path: Path) -> None:
    from engine.llm.journal import digest

    old = {"round": 2, "key": "r0002:a", "sent": digest(request("r0002:a")), "text": "x"}
    (tmp_path / JOURNAL_FILE).write_text(line(old))
    assert Journal(tmp_path).begin(3) == 0
    assert not (tmp_path / JOURNAL_FILE).exists()


def test_an_exchange_is_served_only_to_the_same_request(tmp_path: Path) -> None:
    from engine.llm.journal import digest

    journal = Journal(tmp_path)
    journal.begin(1)
    asked = request("r0001:decide:Ann")
    journal.add(asked, digest(asked), {"text": "yes"})
    other = Request(key=asked.key, model="m", messages=[{"role": "user", "content": "other"}])
    journal.begin(1)
    assert journal.served(other, digest(other)) is None  # a prompt that changed is asked
    assert journal.served(asked, digest(asked)) is not None


async def test_a_damaged_journal_line_is_said_as_a_notice(
    stub: StubLLM, mini: Scenario, store: SaveStore
) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=10.0)
    with Simulation.new(mini, seed=2, mind=settings, store=store, run_id="damaged") as sim:
        await sim.mind.aclose()
    (store.run_dir("damaged") / JOURNAL_FILE).write_text('{"sum": "0", "x": {"round": 1}}\n')
    with Simulation.resume("damaged", store) as again:
        notices: list[str] = []
        again.subscribe(lambda e: notices.append(e.message) if isinstance(e, Notice) else None)
        await again.run(1)
        await again.mind.aclose()
    assert any("1 damaged journal line ignored" in n for n in notices), notices


async def test_resume_asks_in_the_settled_mode_and_role_from_its_first_call(
    store: SaveStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import litellm

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    # llama-cpp-python serving Gemma: json_schema answered with HTTP 500, system text dropped.
    gemma = {"rejects": {"json_schema"}, "server": "llama.cpp", "drop_system": True}
    with StubLLM(seed=4, slots=2, **gemma) as s:
        settings = LLMSettings(model="openai/stub", api_base=s.url, timeout=10.0)
        # The tavern's personas: its system text is most of a first prompt, so its drop shows.
        tavern = resolve_scenario("tavern")
        with Simulation.new(tavern, seed=2, mind=settings, store=store, run_id="settled") as sim:
            await sim.run(1)
            await sim.mind.aclose()
        meta = store.read_meta("settled")
        assert meta.structured_modes == {"openai/stub": "grammar"}
        assert meta.system_roles == {"openai/stub": "merge"}
        assert meta.server_slots == {s.url: 2}
        assert any(not p.endswith("/chat/completions") for p in s.paths)  # asked once
        asked, paths = len(s.requests), len(s.paths)
        with Simulation.resume("settled", store) as again:
            await again.run(1)
            await again.mind.aclose()
        resumed = s.requests[asked:]
        questions = [p for p in s.paths[paths:] if not p.endswith("/chat/completions")]
    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()
    assert questions == []  # the server's slots are known: not asked again
    assert resumed
    formats = [(r.get("response_format") or {}).get("type") for r in resumed]
    assert "json_schema" not in formats  # no probe
    roles = {m["role"] for r in resumed for m in r["messages"]}
    assert "system" not in roles  # merged from the first call
    calls = store.history("settled")[2].llm_calls
    assert not [c for c in calls if c.key.endswith((":rejected", ":system-dropped"))]


async def _resumed_asking_only_completions(store: SaveStore, stub: StubLLM, run_id: str) -> None:
    """``run_id`` saved that its server said nothing of itself; resumed for a round, it asks
    the server nothing but chat completions."""
    assert store.read_meta(run_id).server_slots == {stub.url: 0}
    paths = len(stub.paths)
    with Simulation.resume(run_id, store) as again:
        await again.run(1)
        await again.mind.aclose()
    assert set(stub.paths[paths:]) == {"POST /v1/chat/completions"}


async def test_a_server_that_says_nothing_of_itself_is_not_asked_again_on_resume(
    stub: StubLLM, mini: Scenario, store: SaveStore
) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=10.0)
    with Simulation.new(mini, seed=2, mind=settings, store=store, run_id="mute") as sim:
        await sim.run(1)
        await sim.mind.aclose()
    asked = [p for p in stub.paths if not p.endswith("/chat/completions")]
    assert asked  # /props, /v1/models, /api/show: nothing said
    await _resumed_asking_only_completions(store, stub, "mute")


async def test_a_first_round_quit_mid_way_keeps_what_the_server_said_of_itself(
    stub: StubLLM, mini: Scenario, store: SaveStore
) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=10.0)
    with Simulation.new(mini, seed=2, mind=settings, store=store, run_id="early") as sim:
        await cut_round(sim, stub, 3, hold=True)
        await sim.mind.aclose()
    assert sim.round == 0
    await _resumed_asking_only_completions(store, stub, "early")


async def test_a_replay_carries_the_journal_of_a_partly_played_round(
    stub: StubLLM, mini: Scenario, store: SaveStore
) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=10.0)
    with Simulation.new(mini, seed=2, mind=settings, store=store, run_id="part") as sim:
        await sim.run(1)
        await cut_round(sim, stub, stub.calls + 4, hold=True)
        kept = sim.journaled
        await sim.mind.aclose()
    result = await replay_run(store, "part", "part-replay")
    result.sim.close()
    assert result.identical and result.journaled == kept
    asked = stub.calls
    with Simulation.resume("part-replay", store) as again:
        assert again.journaled == kept
        await again.run(1)
        await again.mind.aclose()
    assert stub.calls - asked == recorded(store, "part-replay", 2) - kept
