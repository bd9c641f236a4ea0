"""GovSim (Relational priors App. A): dynamics, the App. A.2 metrics and Eq. 5 on hand cases, and
whole offline and (faked) LLM episodes."""

from __future__ import annotations

import itertools
import json
import os
import statistics
from collections.abc import AsyncIterator, Sequence
from functools import cache
from typing import Any

import pytest

from engine import SaveStore, SocialsimError
from engine.core.priors import explicit_neutral, no_prior, render, signed_priors
from engine.llm.settings import LLMSettings
from engine.llm.transport import Reply, Request
from engine.minds.llm import LLMMind
from engine.minds.spec import OFFLINE
from engine.studies.govsim import (
    CAPACITY,
    COLLAPSE,
    MONTHS,
    NAMES,
    TEMPERATURE,
    GovSimMonth,
    max_total_gain,
    metrics,
    next_stock,
    paper_settings,
    ration,
    run_govsim,
    sustainable_share,
)

THREE = list(NAMES[:3])


def play(trace: Sequence[Sequence[float]], names: Sequence[str] = THREE) -> list[GovSimMonth]:
    """Months from hand-written catches (as the episode does, without rationing)."""
    stock, months = float(CAPACITY), []
    for t, catches in enumerate(trace, 1):
        after = next_stock(stock, catches)
        months.append(
            GovSimMonth(
                month=t,
                stock_before=stock,
                harvests=dict(zip(names, map(float, catches), strict=True)),
                stock_after=after,
                collapsed=after < COLLAPSE,
            )
        )
        stock = after
        if after < COLLAPSE:
            break
    return months


# -- dynamics --------------------------------------------------------------------------------


def test_next_stock_eq4() -> None:
    assert next_stock(100, [10, 10, 10]) == 100  # 2 * 70 = 140, capped at 100
    assert next_stock(100, [20, 20, 20]) == 80
    assert next_stock(100, [50]) == 100
    assert next_stock(30, [5, 5]) == 40
    assert next_stock(10, [6, 6]) == 0  # never below 0
    assert next_stock(100, []) == 100


def test_collapse_below_five_on_a_trace() -> None:
    months = play([[30, 30, 30], [9, 0, 0], [1, 1, 1]])
    assert [m.stock_after for m in months] == [20, 22, 38]
    assert not any(m.collapsed for m in months)
    months = play([[30, 30, 30], [8, 5, 5], [5, 5, 5]])
    assert [m.stock_after for m in months] == [20, 4]  # 2 * (20 - 18) = 4 < 5: stop
    assert months[-1].collapsed
    edge = play([[40, 27.5, 30]])  # 2 * 2.5 = 5: not below 5
    assert edge[0].stock_after == COLLAPSE and not edge[0].collapsed


def test_ration_shares_an_oversubscribed_lake() -> None:
    assert ration({"a": 10, "b": 20}, 100) == {"a": 10, "b": 20}
    assert ration({"a": 30, "b": 90}, 60) == {"a": 15, "b": 45}
    assert ration({"a": 0, "b": 0}, 0) == {"a": 0, "b": 0}


def test_max_total_gain_matches_brute_force() -> None:
    @cache
    def best(h: int, left: int) -> int:
        if left == 0:
            return 0
        return max(x + best(min(2 * (h - x), CAPACITY), left - 1) for x in range(h + 1))

    for horizon in (1, 2, 3, 4):
        assert max_total_gain(horizon) == best(CAPACITY, horizon)
    assert max_total_gain(MONTHS) == 650


# -- metrics (App. A.2, Eq. 5) ---------------------------------------------------------------


def test_sustainable_equal_run() -> None:
    months = play([[10, 10, 10]] * MONTHS)
    got = metrics(months, 3)
    assert got["survival_months"] == 12 and got["survival_time"] == 1.0
    assert got["survived"] == 1.0
    assert got["total_gain"] == 120.0
    assert got["equality"] == 1.0  # Gini of equal gains is 0
    assert got["over_usage"] == 0.0
    expected = 2 / 8 + 2 / 8 + 1 / 8 * (360 / 650) + 1 / 8 * 1.0 + 2 / 8 * 1.0
    assert got["score"] == pytest.approx(expected)


def test_collapsed_run() -> None:
    months = play([[30, 30, 30], [10, 10, 0]])  # 100 -> 20 -> 0
    got = metrics(months, 3)
    assert got["survival_months"] == 2
    assert got["survival_time"] == pytest.approx(2 / 12)
    assert got["survived"] == 0.0
    assert got["total_gain"] == pytest.approx(110 / 3)
    # R = (40, 40, 30): Σ|Ri-Rj| = 4 * 10 = 40 -> e = 1 - 40 / (2 * 3 * 110)
    assert got["equality"] == pytest.approx(1 - 40 / 660)
    # shares: 100/6 = 16.7 (all three over), 20/6 = 3.33 (John and Kate over)
    assert got["over_usage"] == pytest.approx(5 / 6)
    expected = 2 / 8 * (2 / 12) + 0 + 1 / 8 * (110 / 650) + 1 / 8 * (1 - 40 / 660) + 2 / 8 * (1 / 6)
    assert got["score"] == pytest.approx(expected)


def test_equality_hand_cases() -> None:
    assert metrics(play([[0, 0, 30]]), 3)["equality"] == pytest.approx(1 / 3)
    assert metrics(play([[5, 5, 5]]), 3)["equality"] == 1.0
    assert metrics(play([[0, 0, 0]]), 3)["equality"] == 1.0  # nobody caught anything
    # an agent that never appears counts as a zero gain
    assert metrics(play([[10, 10]], ["a", "b"]), 4)["equality"] == pytest.approx(0.5)


def test_over_usage_is_reported_against_both_thresholds() -> None:
    months = play([[20, 10, 16], [17, 17, 16]])  # shares 16.67, then 2*(100-46)=100 -> 16.67
    got = metrics(months, 3)
    assert got["over_usage"] == pytest.approx(3 / 6)
    # against the group's threshold h(t)/2 nobody over-uses
    assert got["over_usage_group"] == 0.0
    lone = metrics(play([[60, 0, 0]]), 3)
    assert lone["over_usage_group"] == pytest.approx(1 / 3)
    assert lone["over_usage"] == pytest.approx(1 / 3)


def test_the_score_uses_the_per_agent_share() -> None:
    # three times 40 tons from a full lake empties it: every action over its share 16.67,
    # none over the group's 50; S counts the over-uses (õ = 0), as GovSim does
    got = metrics(play([[40, 40, 20]]), 3)
    assert (got["over_usage"], got["over_usage_group"]) == (1.0, 0.0)
    surv, gain = 1 / MONTHS, 100 / max_total_gain()
    assert got["score"] == pytest.approx(2 / 8 * surv + 1 / 8 * gain + 1 / 8 * got["equality"])


def test_survival_time_uses_stock_strictly_above_c() -> None:
    months = play([[40, 27.5, 30], [1, 1, 1]])  # month 2 starts at exactly C = 5
    assert months[1].stock_before == COLLAPSE
    got = metrics(months, 3)
    assert got["survival_months"] == 1
    assert got["over_usage"] == pytest.approx(3 / 3)  # the survival period is month 1


def test_shorter_horizon_and_empty() -> None:
    got = metrics(play([[10, 10, 10]] * 3), 3, horizon=3)
    assert got["survived"] == 1.0 and got["survival_time"] == 1.0
    assert metrics(play([[10, 10, 10]] * 3), 3)["survived"] == 0.0
    empty = metrics([], 3)
    assert empty["survival_months"] == 0 and empty["over_usage"] == 0.0
    with pytest.raises(SocialsimError):
        metrics([], 0)


def test_sustainable_share() -> None:
    assert sustainable_share(100, 5) == 10
    assert sustainable_share(60, 3) == 10


# -- offline episodes ------------------------------------------------------------------------


def _consistent(months: list[GovSimMonth]) -> None:
    assert months[0].stock_before == CAPACITY
    for a, b in itertools.pairwise(months):
        assert b.stock_before == a.stock_after
        assert not a.collapsed
    for m in months:
        assert sum(m.harvests.values()) <= m.stock_before + 1e-9
        assert m.stock_after == pytest.approx(next_stock(m.stock_before, list(m.harvests.values())))


async def test_full_offline_run_terminates_and_is_saved(store: SaveStore) -> None:
    prior = signed_priors(THREE, "attitude", "complete", 1 / 3)[0]
    result = await run_govsim(prior, seed=1, store=store)
    assert 1 <= len(result.months) <= MONTHS
    _consistent(result.months)
    assert len(result.months) == MONTHS or result.months[-1].collapsed
    assert set(result.metrics) >= {
        "survival_time",
        "survived",
        "total_gain",
        "equality",
        "over_usage",
        "score",
    }
    assert 0.0 <= result.metrics["score"] <= 1.0
    assert result.out_of_range == 0 and result.run_id is not None
    meta = store.read_meta(result.run_id)
    assert meta.prior == prior
    rounds = [store.read_round(result.run_id, n) for n in range(1, len(result.months) + 1)]
    for n, record in enumerate(rounds, 1):
        assert any(e.text.startswith(f"Month {n} harvest:") for e in record.events)


async def test_offline_run_is_deterministic_and_five_agents_work() -> None:
    prior = signed_priors(list(NAMES), "trust", "tree", 0.5)[2]
    a = await run_govsim(prior, n_agents=5, seed=4, months=6)
    b = await run_govsim(prior, n_agents=5, seed=4, months=6)
    assert a == b
    assert set(a.months[0].harvests) == set(NAMES)
    assert a.run_id is None
    _consistent(a.months)


async def test_the_offline_rule_reads_the_signs_stated_for_each_pair() -> None:
    # a positive five-agent star: the hub John is warm toward all four others, each leaf
    # toward one of four, so John restrains most; with the negative star he grabs most
    first: dict[float, list[float]] = {1.0: [], 0.0: []}
    for lam in first:
        (star,) = signed_priors(list(NAMES), "attitude", "star", lam)
        for seed in range(4):
            month = (await run_govsim(star, n_agents=5, seed=seed, months=1)).months[0]
            leaves = [month.requested[n] for n in NAMES[1:]]
            first[lam].append(month.requested["John"] - sum(leaves) / len(leaves))
    assert max(first[1.0]) < 0 < min(first[0.0])


async def test_bad_arguments() -> None:
    with pytest.raises(SocialsimError, match="n_agents"):
        await run_govsim(None, n_agents=6)
    with pytest.raises(SocialsimError, match="unknown agent"):
        await run_govsim(signed_priors(["A", "B", "C"], "trust", "complete", 1)[0])


def _multiples(months: list[GovSimMonth], n: int) -> list[float]:
    return [r / sustainable_share(m.stock_before, n) for m in months for r in m.requested.values()]


async def test_positive_priors_restrain_more_than_negative_ones() -> None:
    seeds = range(4)
    scores: dict[str, list[float]] = {"pos": [], "neg": [], "none": []}
    first: dict[str, list[float]] = {"pos": [], "neg": [], "none": []}
    for relation in ("attitude", "trust", "influence"):
        pos = signed_priors(THREE, relation, "complete", 1.0)[0]  # type: ignore[arg-type]
        neg = signed_priors(THREE, relation, "complete", 0.0)[0]  # type: ignore[arg-type]
        for seed in seeds:
            for label, prior in (("pos", pos), ("neg", neg), ("none", no_prior())):
                result = await run_govsim(prior, seed=seed)
                scores[label].append(result.metrics["score"])
                first[label] += _multiples(result.months[:1], 3)
    assert statistics.mean(first["pos"]) < statistics.mean(first["none"])
    assert statistics.mean(first["none"]) < statistics.mean(first["neg"])
    assert statistics.mean(scores["pos"]) > statistics.mean(scores["neg"])
    assert statistics.mean(scores["pos"]) >= statistics.mean(scores["none"])


# -- an LLM episode, with a scripted transport ---------------------------------------------


class ScriptedTransport:
    """Answers by the purpose its request's key names; harvests come from a script."""

    def __init__(self, harvests: list[str]) -> None:
        self.harvests = list(harvests)
        self.seen: list[Request] = []

    async def complete(self, request: Request) -> Reply:
        self.seen.append(request)
        purpose = request.key.split(":")[1]
        if purpose == "harvest":
            text = self.harvests.pop(0) if self.harvests else '{"tons": 5}'
        elif purpose == "decide":
            text = json.dumps(
                {
                    "urgency": 6,
                    "stance": "neutral",
                    "intent": "talk about the lake",
                    "action": {"mode": "public", "target": "all"},
                }
            )
        elif purpose == "speak":
            text = "Let us keep our catches low so the lake refills."
        elif purpose == "emotion":
            text = '{"delta": 0.0}'
        elif purpose == "relation":
            text = '{"delta_fav": 0.05, "summary": "spoke sensibly", "importance": 2}'
        else:
            text = "{}"
        return Reply(text=text)

    async def aclose(self) -> None:
        pass


def scripted(transport: ScriptedTransport) -> LLMMind:
    """An LLM mind played by the scripted transport."""
    return LLMMind(LLMSettings(model="scripted"), transport)  # type: ignore[arg-type]


async def test_llm_harvests_are_clamped_and_counted() -> None:
    transport = ScriptedTransport(
        [
            '{"tons": 500}',  # over the stock: clamped to 100, counted
            '{"tons": -3}',  # negative: clamped to 0, counted
            "no idea",  # unusable twice (re-asked): counted, catches 0
            "still no idea",
            '{"tons": 10}',
            '{"tons": 10}',
            '{"tons": 10}',
        ]
    )
    prior = signed_priors(THREE, "trust", "complete", 1.0)[0]
    result = await run_govsim(prior, seed=0, mind=scripted(transport), months=2)
    assert result.out_of_range == 3
    first = result.months[0]
    requests = [r for r in transport.seen if r.key.startswith("r0001:harvest:")]
    got = {r.key.split(":")[2] for r in requests}
    assert got == set(THREE)
    # the asked-for catches after clamping, by agent (gather keeps the scenario order)
    assert sorted(first.requested.values()) == [0.0, 0.0, 100.0]
    assert sum(first.harvests.values()) == pytest.approx(100.0)  # the whole lake, no more
    assert first.stock_after == 0.0 and first.collapsed
    assert len(result.months) == 1
    # the harvest prompt is the agent's: its system prompt ends with the relational block
    john = next(r for r in requests if r.key == "r0001:harvest:John")
    block = render(prior, "John")
    assert block is not None and block in john.messages[0]["content"]
    assert result.metrics["survived"] == 0.0


async def test_llm_neutral_prior_states_neutrality() -> None:
    transport = ScriptedTransport(['{"tons": 10}'] * 6)
    prior = explicit_neutral(THREE, "attitude", "complete")
    result = await run_govsim(prior, mind=scripted(transport), months=2)
    assert result.out_of_range == 0
    assert [m.stock_after for m in result.months] == [100.0, 100.0]
    decide = next(r for r in transport.seen if r.key == "r0002:decide:Kate")
    assert "You and John have a neutral attitude toward each other" in decide.messages[0]["content"]


# -- temperature 0.8 (Relational priors Sec. 4.1), over HTTP to the local stub --------------


@pytest.fixture
async def stub(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    """A local OpenAI-compatible stub server; litellm's clients closed afterwards."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    from llm_stub import StubLLM

    server = StubLLM(seed=2)
    server.start()
    yield server
    import litellm

    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()
    server.stop()


def _temperatures(requests: list[dict[str, Any]]) -> dict[str, set[float]]:
    """The temperatures the stub received: the harvests' and the discussion's."""
    seen: dict[str, set[float]] = {}
    for body in requests:
        harvest = "Harvest phase of month" in body["messages"][-1]["content"]
        purpose = "harvest" if harvest else "discussion"
        seen.setdefault(purpose, set()).add(body["temperature"])
    return seen


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_harvests_reach_the_model_at_temperature_0_8(stub: Any) -> None:
    settings = LLMSettings(model="openai/stub", api_base=stub.url, timeout=5.0, temperature=0.3)
    prior = signed_priors(list(NAMES), "trust", "chain", 0.5)[0]
    result = await run_govsim(prior, n_agents=5, mind=settings, months=1)
    assert set(result.months[0].requested) == set(NAMES)
    seen = _temperatures(stub.requests)
    assert seen.pop("harvest") == {TEMPERATURE} == {0.8}
    assert seen and set().union(*seen.values()) == {0.3}  # the discussion: the run's
    stub.reset()
    await run_govsim(prior, n_agents=5, mind=paper_settings(settings), months=1)
    assert set().union(*_temperatures(stub.requests).values()) == {0.8}
    assert paper_settings(settings).model_copy(update={"temperature": 0.3}) == settings
    assert paper_settings(OFFLINE) is OFFLINE
