"""Cost-estimate accuracy: ``socialsim estimate``'s expected figures over a stub run's actual
usage, for the estimate from the prompts alone and for the one calibrated on a saved run of
another scenario with the same model.

Run from the repository root::

    .venv/bin/python bench/bench_estimate.py                      # seeds 1-3, 6 rounds, 5 pairs
    .venv/bin/python bench/bench_estimate.py --seeds 1-5 --rounds 8
    .venv/bin/python bench/bench_estimate.py --pairs tavern:bullying,hospital:tavern

For each judge mode, seed and pair A:B, the local stub (tests/llm_stub.py, counting tokens
with litellm as a provider bills them) plays A (saved) and B; the estimate of B is made
without saves (prompts only) and with A's save (calibrated: A is another scenario, so only
the model's behaviour carries over). Printed: expected / actual for calls, prompt tokens and
all tokens, median [min, max] over the runs, beside the +-25% target, and how many actual
figures fell within the estimate's low-high range. No network; the figures are printed,
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
from engine.estimate import Estimate, Span, estimate_run  # noqa: E402
from engine.llm.settings import LLMSettings  # noqa: E402
from engine.llm.transport import close_clients  # noqa: E402

TARGET = 0.25
FIGURES = ("calls", "prompt", "tokens")


def play(scenario: Scenario, spec: LLMSettings, rounds: int, seed: int, store: SaveStore | None):
    """A stub run's calls, prompt tokens and all tokens."""

    async def go() -> tuple[int, int, int]:
        sim = Simulation.new(scenario, seed=seed, mind=spec, store=store, rounds=rounds)
        try:
            await sim.run()
        finally:
            await sim.aclose()
            await close_clients()
        usages = [r.usage for r in sim.history if r.usage is not None]
        prompt = sum(u.prompt_tokens for u in usages)
        return (
            sum(u.calls for u in usages),
            prompt,
            prompt + sum(u.completion_tokens for u in usages),
        )

    return asyncio.run(go())


def spans(e: Estimate) -> tuple[Span, Span, Span]:
    return e.calls, e.prompt_tokens, e.tokens


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
    args = parser.parse_args()
    pairs = [tuple(p.split(":")) for p in args.pairs.split(",")]
    # (mode, source) -> figure -> ratios; (mode, source) -> [in range, runs]
    ratios: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    inside: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
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
                    actual = play(target, spec, args.rounds, seed + 100, None)
                    for source, e in (("prompts only", alone), (f"calibrated on {a}", calibrated)):
                        keys = [(mode, f"prompts only: {b}"), (mode, "prompts only, all")]
                        if source != "prompts only":
                            keys = [(mode, f"calibrated: {a} -> {b}"), (mode, "calibrated, all")]
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
        cells = [
            f"{statistics.median(by[f]):.2f} [{min(by[f]):.2f}, {max(by[f]):.2f}]" for f in FIGURES
        ]
        n_in, n = inside[mode, source]
        print(f"{mode:10} {source:24} " + " ".join(f"{c:>18}" for c in cells) + f"  {n_in}/{n}")


if __name__ == "__main__":
    main()
