"""Several endpoints per run (engine/llm/endpoints.py), through three local stubs and the
real ``socialsim`` entry point: each agent kept on one server, balanced by expected tokens,
a killed server's agents moved without a fallback and given back once it answers again."""

from __future__ import annotations

import asyncio
import contextlib
import csv
import gzip
import os
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import pytest
from cast import write_cast
from llm_stub import StubLLM

from engine import SaveStore
from engine.llm import endpoints
from engine.llm.progress import Calls, at_endpoint, exchange, sent
from engine.llm.server import servers_of
from engine.llm.settings import LLMSettings
from engine.llm.throughput import Rates, Throughput, combined
from engine.llm.transport import Request, close_clients
from tui.cli.progress import bar_text
from tui.widgets.header import round_text, structured_modes

TWELVE = tuple(f"Member {chr(65 + i)}" for i in range(12))
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")


@pytest.fixture
def stubs() -> Iterator[list[StubLLM]]:
    servers = [StubLLM(seed=i, keep_alive=True) for i in range(3)]
    for server in servers:
        server.start()
    yield servers
    for server in servers:
        server.stop()


def play(run_cli, saves: Path, cast: Path, urls: list[str], *extra: str):
    bases = [arg for url in urls for arg in ("--api-base", url)]
    return run_cli(
        "run", str(cast), "--model", "openai/stub", *bases, "--saves", str(saves),
        "--run-id", "r", "--timeout", "2", "--retries", "1", "-q", *extra,
    )  # fmt: skip


def calls_of(saves: Path) -> list:
    store = SaveStore(saves)
    return [c for rec in store.read_rounds("r") for c in rec.llm_calls]


def test_twelve_agents_on_three_endpoints_stay_put_and_share_the_tokens_evenly(
    run_cli, saves: Path, tmp_path: Path, stubs: list[StubLLM]
) -> None:
    cast = write_cast(tmp_path / "twelve.toml", TWELVE, rounds=2)
    result = play(run_cli, saves, cast, [s.url for s in stubs])
    assert result.code == 0, result.err
    calls = calls_of(saves)
    homes = defaultdict(set)
    tokens: Counter[str] = Counter()
    for call in calls:
        homes[call.agent].add(call.endpoint)
        tokens[call.endpoint] += call.prompt_tokens + call.completion_tokens
    assert all(len(ends) == 1 for ends in homes.values()), homes  # affinity
    assert set(tokens) == {s.url for s in stubs}
    even = sum(tokens.values()) / 3
    assert all(abs(t - even) <= 0.25 * even for t in tokens.values()), tokens
    assert sum(s.calls for s in stubs) == len(calls)
    assert not any(call.moved_from for call in calls)
    # The export's llm_calls.csv says where each call went.
    assert run_cli("export", "r", "--saves", str(saves), "--out", str(tmp_path / "x")).code == 0
    with open(tmp_path / "x" / "llm_calls.csv", newline="") as f:
        assert {row["endpoint"] for row in csv.DictReader(f)} == set(tokens)


def test_a_killed_endpoint_has_its_agents_moved_with_no_fallback(
    run_cli, saves: Path, tmp_path: Path, stubs: list[StubLLM]
) -> None:
    cast = write_cast(tmp_path / "twelve.toml", TWELVE, rounds=2)
    victim = stubs[1]

    def kill() -> None:
        while victim.calls < 5:
            threading.Event().wait(0.01)
        victim.stop()

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    result = play(run_cli, saves, cast, [s.url for s in stubs])
    killer.join()
    assert result.code == 0, result.err
    calls = calls_of(saves)
    assert not [c.key for c in calls if c.fell_back]
    gone = [c for c in calls if c.moved_from]
    assert gone and {c.moved_from for c in gone} == {victim.url}
    assert all(c.endpoint != victim.url for c in gone)
    said = [line for line in result.err.splitlines() if "stopped answering" in line]
    assert len(said) == 1 and victim.url in said[0] and "4 agents moved" in said[0], result.err
    summary = " ".join(result.out.split())  # the run's summary counts the calls moved
    calls_word = "calls" if len(gone) > 1 else "call"
    assert f"{len(gone)} {calls_word} moved off 127.0.0.1:{victim.port}" in summary, result.out


async def test_a_silent_endpoint_answering_again_gets_its_agents_back(
    stubs: list[StubLLM], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(endpoints, "COOLDOWN_SECONDS", 0.2)
    a, b = stubs[:2]
    routed = endpoints.Endpoints(LLMSettings(model="openai/stub", api_bases=[a.url, b.url]))
    said: list[str] = []
    routed.notices = said.append

    def ask(agent: str) -> Request:
        return Request(
            key=agent,
            model="openai/stub",
            messages=[{"role": "user", "content": agent}],
            agent=agent,
        )

    try:
        first = {agent: (await routed.complete(ask(agent))).endpoint for agent in "wxyz"}
        own = [agent for agent, url in first.items() if url == b.url]
        assert len(own) == 2  # two agents each
        port = b.port
        b.stop()
        moved = await routed.complete(ask(own[0]))
        assert (moved.endpoint, moved.moved_from) == (a.url, b.url)
        assert len(said) == 1 and "2 agents moved" in said[0]
        with StubLLM(seed=9, port=port) as revived:
            for _ in range(400):  # until its rest is over and the probe found it answering
                if (await routed.complete(ask(own[1]))).endpoint == revived.url:
                    break
                await asyncio.sleep(0.05)
            assert said[-1] == f"endpoint {revived.url} answers again: its 2 agents are back"
            assert (await routed.complete(ask(own[0]))).endpoint == revived.url
    finally:
        await routed.aclose()
        await close_clients()


def test_one_api_base_saves_no_endpoint(run_cli, saves: Path, stubs: list[StubLLM]) -> None:
    result = play(run_cli, saves, Path("tavern"), [stubs[0].url], "--rounds", "1")
    assert result.code == 0, result.err
    calls = calls_of(saves)
    assert calls and not any(c.endpoint or c.moved_from for c in calls)
    saved = [p.read_bytes() for p in (saves / "r").rglob("*.json")]
    saved += [gzip.decompress(p.read_bytes()) for p in (saves / "r").rglob("*.json.gz")]
    assert len(saved) > 2 and not any(b'"endpoint"' in text for text in saved)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "no URL in it"),
        ("http://127.0.0.1:1/v1 http://127.0.0.1:2/v1\n", "is not one URL"),
        ("ftp://127.0.0.1:1/v1\n", "--api-base: "),
        ("http://127.0.0.1:1/v1\nhttp://127.0.0.1:1/v1\n", "given twice"),
    ],
)
def test_a_bad_endpoints_file_is_one_error_line(run_cli, tmp_path: Path, text, said) -> None:
    path = tmp_path / "endpoints.txt"
    path.write_text(text)
    result = run_cli(
        "run", "tavern", "--model", "openai/stub", "--endpoints", str(path),
        "--saves", str(tmp_path / "s"),
    )  # fmt: skip
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("socialsim: error: ") and said in lines[0]


def test_estimate_measures_each_endpoint_and_all_together(run_cli, stubs: list[StubLLM]) -> None:
    bases = [arg for s in stubs[:2] for arg in ("--api-base", s.url)]
    result = run_cli("estimate", "tavern", "--model", "openai/stub", *bases, "--rounds", "1")
    assert result.code == 0, result.err
    assert all(s.calls > 0 for s in stubs[:2]) and stubs[2].calls == 0
    text = " ".join(result.out.split())
    assert "2 servers together" in text and "wall time" in text


def test_together_two_servers_read_and_write_twice_as_fast_as_one() -> None:
    one = Throughput(2, Rates(0.001, 0.01), Rates(0.0005, 0.005), 7, 1.0)
    both = combined([("a", one), ("b", one)])
    assert both.concurrency == 4 and both.single == one.single
    assert both.parallel.prompt_per_s == pytest.approx(2 * one.parallel.prompt_per_s)
    assert both.seconds_for(1000, 100, 4) == pytest.approx(one.seconds_for(1000, 100, 2) / 2)


def test_the_calls_in_flight_are_shown_per_endpoint() -> None:
    calls = Calls()
    a, b = "http://127.0.0.1:8101/v1", "http://127.0.0.1:8102/v1"
    with calls.round(1, None):
        calls.phase("speak", 3)
        with contextlib.ExitStack() as stack:
            for key, base in (("x", a), ("y", b), ("z", b)):
                stack.enter_context(exchange(key))
                sent()
                stack.enter_context(at_endpoint(base))
            p = calls.now()
            assert p.endpoints == ((a, 1), (b, 2))
            assert "3 in flight (127.0.0.1:8101 1, 127.0.0.1:8102 2)" in bar_text(p, 3)
            sim = SimpleNamespace(progress=calls, journaled=0)
            assert "3 calls in flight (127.0.0.1:8101 1, 127.0.0.1:8102 2)" in round_text(sim)
        assert calls.now().endpoints == ((a, 0), (b, 0))
    solo = Calls()
    with solo.round(1, None), exchange("x"):
        sent()
        solo.phase("speak", 1)
        assert "1 in flight, oldest" in bar_text(solo.now(), 1)


def test_on_llama_cpp_servers_no_call_names_a_slot(run_cli, saves: Path) -> None:
    """llama-server clears its idle slots into its prompt cache, and a call naming a slot
    then loads nothing from it: the server chooses each call's slot."""
    with (
        StubLLM(seed=1, server="llama.cpp", slots=16, n_ctx=32768) as a,
        StubLLM(seed=2, server="llama.cpp", slots=16, n_ctx=32768) as b,
    ):
        result = play(
            run_cli, saves, Path("tavern"), [a.url, b.url], "--rounds", "2",
            "--judge-mode", "batched",
        )  # fmt: skip
        assert result.code == 0, result.err
        asked = [r for server in (a, b) for r in server.requests if "messages" in r]
    assert len(asked) > 20
    assert not [r for r in asked if "id_slot" in r]


def test_the_narrowest_window_of_the_endpoints_counts() -> None:
    with (
        StubLLM(seed=1, server="llama.cpp", n_ctx=8192) as wide,
        StubLLM(seed=2, server="llama.cpp", n_ctx=4096) as narrow,
    ):
        settings = LLMSettings(model="openai/stub", api_bases=[wide.url, narrow.url])
        assert servers_of(settings)["openai/stub"].window == 4096


def test_with_every_endpoint_gone_the_run_stops_in_one_line(
    run_cli, saves: Path, stubs: list[StubLLM]
) -> None:
    for server in stubs[:2]:
        server.stop()
    result = play(run_cli, saves, Path("tavern"), [s.url for s in stubs[:2]], "--rounds", "1")
    assert result.code == 2
    errors = [line for line in result.err.splitlines() if line.startswith("socialsim: error: ")]
    assert len(errors) == 1 and "cannot reach" in errors[0], result.err
    assert not (saves / "r").exists()


def test_each_endpoint_keeps_its_own_structured_mode_and_system_role(run_cli, saves: Path) -> None:
    with (
        StubLLM(seed=1, rejects={"json_schema"}, json_object_schema=True, drop_system=True) as a,
        StubLLM(seed=2) as b,
    ):
        result = play(run_cli, saves, Path("tavern"), [a.url, b.url], "--rounds", "1")
        assert result.code == 0, result.err
        meta = SaveStore(saves).read_meta("r")
        assert meta.structured_modes == {
            f"openai/stub @ {a.url}": "grammar",
            f"openai/stub @ {b.url}": "schema",
        }
        assert meta.system_roles == {
            f"openai/stub @ {a.url}": "merge",
            f"openai/stub @ {b.url}": "keep",
        }
        formats_b = {(r.get("response_format") or {}).get("type") for r in b.requests}
        assert "json_object" not in formats_b  # a's refusal stepped only a's ladder down
        assert all(r["messages"][0]["role"] == "system" for r in b.requests)
    calls = calls_of(saves)
    assert not [c.key for c in calls if c.fell_back]
    assert {c.structured for c in calls if c.endpoint == b.url} <= {"json_schema", "text"}
    # Its replay asks each exchange's model as at its endpoint: the same exchanges, state.
    replayed = run_cli("replay", "r", "--saves", str(saves))
    assert replayed.code == 0 and "identical state" in replayed.out, replayed.out + replayed.err


def test_the_header_names_each_endpoints_mode_by_its_host() -> None:
    modes = {
        "openai/gemma @ http://127.0.0.1:8101/v1": "grammar",
        "openai/gemma @ http://h:2/v1": "schema",
    }
    sim = SimpleNamespace(meta=SimpleNamespace(structured_modes=modes))
    assert structured_modes(sim) == "gemma@127.0.0.1:8101:grammar gemma@h:2:schema"
