"""Cost-estimate accuracy: ``socialsim estimate``'s expected figures over a stub run's actual
usage, for the estimate from the prompts alone and for the one calibrated on a saved run of
another scenario with the same model.

Run from the repository root::

    .venv/bin/python bench/bench_estimate.py                      # seeds 1-3, 6 rounds, 5 pairs
    .venv/bin/python bench/bench_estimate.py --seeds 1-5 --rounds 8
    .venv/bin/python bench/bench_estimate.py --pairs tavern:bullying,hospital:tavern
    .venv/bin/python bench/bench_estimate.py --by-purpose      # and each purpose of call

For each judge mode, seed and pair A:B, the local stub (tests/llm_stub.py, counting tokens
with litellm as a provider bills them) plays A (saved) and B; the estimate of B is made
without saves (prompts only) and with A's save (calibrated: A is another scenario, so only
the model's behaviour carries over). Printed: expected / actual for calls, prompt tokens and
all tokens, median [min, max] over the runs, beside the +-25% target, and how many actual
figures fell within the estimate's low-high range; with ``--by-purpose``, for each purpose of
call (decide, plan, speak, emotion, needs, relation, judge) the calls, prompt tokens per call
and reply tokens per call. No network; the figures are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import warnings
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network fetch at litellm import
os.environ.setdefault("LITELLM_LOG", "ERROR")
os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
warnings.filterwarnings("ignore", category=DeprecationWarning)

from llm_stub import StubLLM  # noqa: E402

from engine import SaveStore, Scenario, Simulation, resolve_scenario  # noqa: E402
from engine.llm.settings import LLMSettings  # noqa: E402
from engine.llm.transport import close_clients  # noqa: E402
from engine.studies.estimate import Estimate, Figures, Span, estimate_run  # noqa: E402

TARGET = 0.25
FIGURES = ("calls", "prompt", "tokens")
PER_CALL = ("calls", "prompt/call", "reply/call")


def play(
    scenario: Scenario, spec: LLMSettings, rounds: int, seed: int, store: SaveStore | None
) -> tuple[tuple[int, int, int], dict[str, Figures]]:
    """A stub run's calls, prompt tokens and all tokens; its figures by purpose."""

    async def go() -> tuple[tuple[int, int, int], dict[str, Figures]]:
        sim = Simulation.new(scenario, seed=seed, mind=spec, store=store, rounds=rounds)
        try:
            await sim.run()
        finally:
            await sim.aclose()
            await close_clients()
        usages = [r.usage for r in sim.history if r.usage is not None]
        prompt = sum(u.prompt_tokens for u in usages)
        by: dict[str, Figures] = defaultdict(Figures)
        for call in (c for r in sim.history for c in r.llm_calls):
            by[call.purpose] += Figures(1, call.prompt_tokens, call.completion_tokens)
        totals = (
            sum(u.calls for u in usages),
            prompt,
            prompt + sum(u.completion_tokens for u in usages),
        )
        return totals, dict(by)

    return asyncio.run(go())


def per_purpose(e: Estimate, actual: dict[str, Figures]) -> dict[str, tuple[float, float, float]]:
    """Expected / actual by purpose: calls, prompt tokens per call, reply tokens per call."""
    out = {}
    for purpose, got in actual.items():
        f = e.by_purpose.get(purpose)
        if f is None or not f.calls or not got.completion_tokens:
            continue
        out[purpose] = (
            f.calls / got.calls,
            (f.prompt_tokens / f.calls) / (got.prompt_tokens / got.calls),
            (f.completion_tokens / f.calls) / (got.completion_tokens / got.calls),
        )
    return out


def spans(e: Estimate) -> tuple[Span, Span, Span]:
    return e.calls, e.prompt_tokens, e.tokens


def _cell(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}]"


def _order(source: str) -> tuple[bool, bool, str]:
    """Prompts only, then calibrated; each scenario's or pair's row, then all together."""
    return source.startswith("calibrated"), source.endswith(", all"), source


def _span(s: Span) -> str:
    return f"{s.low:,.0f}-{s.high:,.0f}"


def seeds_of(text: str) -> list[int]:
    if "-" in text:
        first, last = text.split("-")
        return list(range(int(first), int(last) + 1))
    return [int(s) for s in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-3", help="e.g. 1-5 or 1,4,9")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--modes", default="per-edge,batched")
    parser.add_argument(
        "--pairs",
        default="tavern:hospital,hospital:tavern,gossip:bullying,bullying:gossip,tavern:bullying",
        help="A:B = calibrate on a run of A, estimate B",
    )
    parser.add_argument(
        "--by-purpose", action="store_true", help="also expected / actual by purpose of call"
    )
    args = parser.parse_args()
    pairs = [tuple(p.split(":")) for p in args.pairs.split(",")]
    # (mode, source) -> figure -> ratios; (mode, source) -> [in range, runs]
    ratios: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    inside: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    # (mode, estimate, purpose) -> figure -> ratios
    purposes: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for mode in args.modes.split(","):
        for seed in seeds_of(args.seeds):
            with StubLLM(seed=seed, tokens="litellm") as stub:
                spec = LLMSettings(model="openai/stub", api_base=stub.url, judge_mode=mode)
                for a, b in pairs:
                    target = resolve_scenario(b)
                    with tempfile.TemporaryDirectory() as folder:
                        store = SaveStore(Path(folder))
                        play(resolve_scenario(a), spec, args.rounds, seed, store)
                        calibrated = estimate_run(target, spec, args.rounds, store.root)
                    alone = estimate_run(target, spec, args.rounds)
                    actual, actual_by = play(target, spec, args.rounds, seed + 100, None)
                    for source, e in (("prompts only", alone), (f"calibrated on {a}", calibrated)):
                        kind = "prompts only" if source == "prompts only" else "calibrated"
                        keys = [(mode, f"prompts only: {b}"), (mode, "prompts only, all")]
                        if kind == "calibrated":
                            keys = [(mode, f"calibrated: {a} -> {b}"), (mode, "calibrated, all")]
                        for purpose, found in per_purpose(e, actual_by).items():
                            rows = purposes[mode, kind, purpose]
                            for name, ratio in zip(PER_CALL, found, strict=True):
                                rows[name].append(ratio)
                        for key in keys:
                            for name, span, got in zip(FIGURES, spans(e), actual, strict=True):
                                ratios[key][name].append(span.expected / got)
                                inside[key][0] += span.low <= got <= span.high
                                inside[key][1] += 1
                        print(
                            f"{mode:8} seed {seed} {b:9} {source:22} "
                            + "  ".join(
                                f"{n} {s.expected:,.0f}/{g:,} = {s.expected / g:.2f}"
                                + ("" if s.low <= g <= s.high else f" (outside {_span(s)})")
                                for n, s, g in zip(FIGURES, spans(e), actual, strict=True)
                            ),
                            flush=True,
                        )
    print(f"\nexpected / actual, median [min, max]; target within +-{TARGET:.0%}")
    print(f"{'judge mode':10} {'estimate':24} " + " ".join(f"{f:>18}" for f in FIGURES) + "  range")
    for (mode, source), by in sorted(ratios.items(), key=lambda kv: (kv[0][0], _order(kv[0][1]))):
        cells = [_cell(by[f]) for f in FIGURES]
        n_in, n = inside[mode, source]
        print(f"{mode:10} {source:24} " + " ".join(f"{c:>18}" for c in cells) + f"  {n_in}/{n}")
    if args.by_purpose:
        print("\nby purpose of call, expected / actual, median [min, max]")
        print(
            f"{'judge mode':10} {'estimate':13} {'purpose':9} "
            + " ".join(f"{f:>18}" for f in PER_CALL)
        )
        for (mode, source, purpose), by_figure in sorted(purposes.items()):
            cells = [_cell(by_figure[f]) for f in PER_CALL]
            print(f"{mode:10} {source:13} {purpose:9} " + " ".join(f"{c:>18}" for c in cells))


if __name__ == "__main__":
    main()
