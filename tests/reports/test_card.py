"""The run card (``engine/reports/card.py``, ``socialsim card``, ``card.json`` in exports): every
field, against what the run holds; no secret ever appears."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
import hashlib
import inspect
import json
import platform
from importlib import metadata
from pathlib import Path

import pytest
from llm_stub import StubLLM
from pydantic import ValidationError

from engine import SaveStore, Scenario, Simulation
from engine.core.priors import parse_prior
from engine.core.scenario import parse_scenario
from engine.core.state import ForcedAction, Mode
from engine.llm.settings import LLMSettings
from engine.llm.transport import close_clients
from engine.minds import prompts
from engine.reports.card import TEMPLATES, RunCard, _public_url, run_card
from engine.reports.export import export_run
from engine.round.simulation import HISTORY_WINDOW

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")
SECRET = "sk-card-secret"


@pytest.fixture
def scenario(mini_data: dict) -> Scenario:
    """The mini scenario with a ready-made intervention."""
    mini_data["interventions"] = {
        "calm": {
            "description": "a mediator arrives",
            "events": [
                {"round": 1, "text": "A mediator joins the committee."},
                {"round": 3, "text": "The mediator proposes a vote."},
            ],
        }
    }
    return parse_scenario(mini_data, "mini")


@pytest.fixture
def llm_run(scenario: Scenario, store: SaveStore, monkeypatch: pytest.MonkeyPatch) -> str:
    """Two rounds on the stub (a forced turn and an injected event in round 2), then a
    branch at round 1 with the intervention, one round played; returns the branch's id."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    prior = parse_prior("trust:chain:+,-", scenario.names)

    async def play(url: str) -> None:
        spec = LLMSettings(
            model="openai/stub",
            judge_model="openai/judge",
            agent_models={"Bob": "openai/bob"},
            api_base=url,
            judge_mode="batched",
            temperature=0.3,
            max_tokens=300,
            structured="json",
            structured_models={"openai/judge": "text"},
        )
        with Simulation.new(
            scenario, seed=11, mind=spec, store=store, run_id="base", rounds=4, prior=prior
        ) as sim:
            await sim.step()
            sim.force(ForcedAction(agent="Ann", mode=Mode.PUBLIC, target="all", utterance="Vote!"))
            sim.inject("The lights go out.")
            await sim.step()
            await sim.mind.aclose()
        child = Simulation.resume(store.branch("base", 1, intervention="calm").run_id, store)
        with child:
            await child.step()
            await child.mind.aclose()
        await close_clients()

    with StubLLM(seed=3) as stub:
        asyncio.run(play(stub.url))
    return next(r.run_id for r in store.list_runs() if r.parent is not None)


def card_of(store: SaveStore, run_id: str) -> RunCard:
    meta = store.read_meta(run_id)
    return run_card(meta, store.history(run_id, meta).logs())


def test_every_field_of_an_llm_branch(llm_run: str, store: SaveStore, scenario: Scenario):
    meta = store.read_meta(llm_run)
    c = card_of(store, llm_run)
    assert (c.run_id, c.name, c.created) == (meta.run_id, meta.name, meta.created)
    assert (c.rounds, c.total_rounds) == (2, 4)
    assert (c.scenario_id, c.scenario_title, c.scenario_ref) == ("mini", scenario.title, "mini")
    canonical = json.dumps(
        scenario.model_dump(mode="json"), sort_keys=True, separators=(",", ":")
    ).encode()
    assert c.scenario_sha256 == hashlib.sha256(canonical).hexdigest()
    assert set(c.prompt_templates_sha256) == {*TEMPLATES, "module"}
    for name in TEMPLATES:  # each builder's source as the module holds it
        source = inspect.getsource(getattr(prompts, name)).rstrip("\n")
        assert c.prompt_templates_sha256[name] == hashlib.sha256(source.encode()).hexdigest()
    assert (
        c.prompt_templates_sha256["module"]
        == hashlib.sha256(inspect.getsource(prompts).encode()).hexdigest()
    )
    assert (c.mind, c.model, c.judge_model) == ("llm", "openai/stub", "openai/judge")
    assert c.agent_models == {"Bob": "openai/bob"}
    assert c.api_base is not None and c.api_base.startswith("http://127.0.0.1:")
    assert (c.structured, c.structured_models) == ("json", {"openai/judge": "text"})
    assert c.structured_modes == {
        "openai/stub": "json",
        "openai/judge": "text",
        "openai/bob": "json",
    }
    assert (c.temperature, c.max_tokens, c.timeout_s, c.retries) == (0.3, 300, 60.0, 3)
    assert (c.seed, c.judge_mode, c.ablation) == (11, "batched", False)
    assert (c.history_window, c.memory_size) == (HISTORY_WINDOW, scenario.memory_size) == (3, 3)
    assert c.prior is not None and c.prior.startswith("signed trust chain")
    assert c.versions == {
        "python": platform.python_version(),
        "socialsim": metadata.version("socialsim"),
        "litellm": metadata.version("litellm"),
    }
    assert c.forks == [{"run_id": "base", "round": 1}]
    seen = [(i.round, i.kind, i.agent, i.text) for i in c.interventions]
    assert seen == [
        (1, "named", "", "calm"),
        (2, "injected", "", "A mediator joins the committee."),
        (4, "scheduled", "", "The mediator proposes a vote."),
    ]
    usages = store.history(llm_run).usages()
    assert len(usages) == 2  # the parent's round 1 and the branch's round 2
    t = c.totals
    assert t.calls == sum(u.calls for u in usages) > 0
    assert t.prompt_tokens == sum(u.prompt_tokens for u in usages) > 0
    assert t.completion_tokens == sum(u.completion_tokens for u in usages) > 0
    assert t.cost_usd == sum(u.cost_usd for u in usages)
    for field in ("retries", "repairs", "reasks", "fallbacks", "errors", "missing_edges"):
        assert getattr(t, field) == sum(getattr(u, field) for u in usages), field
    assert not c.deterministic
    assert c.warning is not None
    for word in ("openai/bob", "openai/judge", "openai/stub", "temperature 0.3", "replay"):
        assert word in c.warning


def test_the_parent_shows_its_forced_turn_and_injected_event(llm_run: str, store: SaveStore):
    seen = [(i.round, i.kind, i.agent, i.text) for i in card_of(store, "base").interventions]
    assert seen == [(2, "forced", "Ann", "Vote!"), (2, "injected", "", "The lights go out.")]
    assert card_of(store, "base").forks == []


def test_no_secret_in_the_card(llm_run: str, store: SaveStore):
    meta = store.read_meta(llm_run)
    assert meta.llm is not None
    leaky = meta.llm.model_copy(
        update={"api_base": "https://me:pw-secret@llm.example:8443/v1?api_key=q-secret#f-secret"}
    )
    c = run_card(meta.model_copy(update={"llm": leaky}), [])
    assert c.api_base == "https://llm.example:8443/v1"
    text = c.to_json() + card_of(store, llm_run).to_json()
    for secret in (SECRET, "pw-secret", "q-secret", "f-secret", "me:"):
        assert secret not in text


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
        ("http://me:pw@[::1]:8000/v1?k=1", "http://[::1]:8000/v1"),
        ("http://h:abc/v1", "http://h:abc/v1"),
    ],
)
def test_the_cards_url_keeps_ipv6_hosts_and_odd_ports(given: str, shown: str):
    assert _public_url(given) == shown


@pytest.mark.parametrize(
    "url", ["https://me:pw@llm.example/v1", "http://h/v1?api_key=k", "http://h/v1#k", "h:80"]
)
def test_a_url_with_credentials_is_never_saved(url: str):
    with pytest.raises(ValidationError, match=r"credentials|not an http"):
        LLMSettings(model="openai/x", api_base=url)


def test_an_offline_run_is_deterministic(mini: Scenario, store: SaveStore):
    with Simulation.new(mini, seed=4, store=store, run_id="off") as sim:
        asyncio.run(sim.run(2))
    c = card_of(store, "off")
    assert c.deterministic and c.warning is None
    assert (c.mind, c.model, c.judge_model, c.judge_mode) == (
        "offline",
        "offline",
        "offline",
        "rules",
    )
    assert c.temperature is None and c.structured == "" and c.api_base is None
    assert c.totals.calls == 0 and c.rounds == 2 and c.prior is None


def test_the_scenario_hash_follows_its_content(mini_data: dict, store: SaveStore):
    hashes = []
    for title in ("One", "One", "Two"):
        mini_data["title"] = title
        with Simulation.new(parse_scenario(mini_data, "mini"), store=store) as sim:
            hashes.append(card_of(store, sim.run_id).scenario_sha256)
    assert hashes[0] == hashes[1] != hashes[2]


def test_export_writes_the_card_the_command_prints(
    llm_run: str, store: SaveStore, tmp_path, run_cli
):
    meta = store.read_meta(llm_run)
    export_run(meta, store.history(llm_run, meta), tmp_path / "out")
    written = json.loads((tmp_path / "out" / "card.json").read_text(encoding="utf-8"))
    printed = run_cli("card", llm_run, "--json", "--saves", str(store.root))
    assert printed.code == 0, printed.err
    assert json.loads(printed.out) == written == card_of(store, llm_run).model_dump(mode="json")
    assert SECRET not in printed.out


def test_card_command_prints_a_table_and_the_warning(llm_run: str, store: SaveStore, run_cli):
    result = run_cli("card", llm_run, "--saves", str(store.root))
    assert result.code == 0, result.err
    for word in (
        "scenario sha256",
        "prompt templates",
        "judge model",
        "openai/judge",
        "temperature 0.3",
        "history window",
        "batched",
        "base@1",
        "R1 named: calm",
        "LLM totals",
        "not deterministic",
    ):
        assert word in result.out, word
    missing = run_cli("card", "nope", "--saves", str(store.root))
    assert missing.code == 2 and missing.err.startswith("socialsim: error: ")
    assert missing.err.count("\n") == 1


def test_card_json_holds_the_documented_keys(mini: Scenario, store: SaveStore, tmp_path: Path):
    with Simulation.new(mini, store=store, run_id="k") as sim:
        asyncio.run(sim.run(1))
    meta = store.read_meta("k")
    export_run(meta, store.history("k", meta), tmp_path / "out")
    keys = set(json.loads((tmp_path / "out" / "card.json").read_text()))
    assert keys == set(RunCard.model_fields)


def test_interventions_queued_for_the_next_round(mini: Scenario, store: SaveStore):
    with Simulation.new(mini, store=store, run_id="q") as sim:
        asyncio.run(sim.run(1))
        sim.force(ForcedAction(agent="Bob", mode=Mode.SILENT))
        sim.inject("A letter arrives.")
    seen = [(i.round, i.kind, i.agent, i.text) for i in card_of(store, "q").interventions]
    assert seen == [(2, "queued", "Bob", ""), (2, "queued", "", "A letter arrives.")]
