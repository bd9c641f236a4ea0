"""Prompt size bench: prompt tokens per round, before and after a change, on the local stub.

Run from the repository root::

    .venv/bin/python bench/bench_prompts.py                   # before = 8827095, after = tree
    .venv/bin/python bench/bench_prompts.py --before HEAD~3   # another git revision
    .venv/bin/python bench/bench_prompts.py --runs 5 --rounds 4

"Before" is the engine of a git revision (``git archive`` into a temporary folder), "after"
the working tree; both play the same scenario (the tavern, 5 agents) with the same seeds
against the current stub (tests/llm_stub.py), each in its own process, in per-edge and
batched judge modes. "after, schema pasted" is the working tree asked with ``structured =
"json"``: the schema in the prompt as before, so the two "after" rows tell the saving of
not pasting the schema from the rest. Tokens are counted on the messages sent (tiktoken's
o200k_base, the bundled copy litellm ships: no network); the stub's own usage counts
whitespace words, which undercounts compact JSON, so it is shown only as a cross-check. A
schema sent as ``response_format`` is not counted: llama.cpp turns it into a grammar, and
hosted APIs bill it apart from the prompt. Requests go one at a time, so a seed gives the
same replies on every invocation. Figures are the median of the runs (stub seeds 0, 1, 2,
...) with min and max. The bench prints figures and never fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "8827095"  # HEAD when issue 11's prompt changes began
SCENARIO = "tavern"  # five agents
MODES = ("per-edge", "batched")


def _encoder() -> Any:
    """tiktoken's o200k_base from litellm's bundled copy (no download)."""
    import litellm

    folder = Path(litellm.__file__).parent / "litellm_core_utils" / "tokenizers"
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(folder))
    import tiktoken

    return tiktoken.get_encoding("o200k_base")


async def _play(mode: str, seed: int, rounds: int, settings: dict[str, Any]) -> list[Any]:
    """One run against a fresh stub: the records of its rounds."""
    from llm_stub import StubLLM

    from engine import Simulation, load_library
    from engine.llm.settings import LLMSettings

    with StubLLM(seed=seed) as stub:
        llm = LLMSettings(
            model="openai/stub",
            api_base=stub.url,
            judge_mode=mode,
            max_concurrency=1,  # requests reach the stub in a fixed order: same replies each time
            **settings,
        )
        sim = Simulation.new(load_library(SCENARIO), mind=llm, rounds=rounds)
        try:
            return await sim.run()
        finally:
            await sim.aclose()


def child(runs: int, rounds: int, settings: dict[str, Any]) -> dict[str, Any]:
    """Measure the engine importable here: per mode, per run, tokens and words per round."""
    import asyncio

    os.environ["OPENAI_API_KEY"] = os.environ.get("OPENAI_API_KEY", "sk-bench")
    encode = _encoder().encode
    out: dict[str, Any] = {}
    for mode in MODES:
        rows = []
        for seed in range(runs):
            records = asyncio.run(_play(mode, seed, rounds, settings))
            calls = [c for r in records for c in r.llm_calls]
            tokens = sum(len(encode(m["content"])) for c in calls for m in c.messages)
            words = sum(c.prompt_tokens for c in calls)
            rows.append(
                {
                    "tokens": tokens / rounds,
                    "per_call": tokens / len(calls),
                    "words": words / rounds,
                    "calls": len(calls) / rounds,
                }
            )
        out[mode] = rows
    return out


def _measure(tree: Path, runs: int, rounds: int, settings: dict[str, Any]) -> dict[str, Any]:
    """Run :func:`child` in a process importing ``engine`` from ``tree``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT / "tests")])}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["LITELLM_LOG"] = "ERROR"
    argv = [sys.executable, __file__, "--child", json.dumps(settings), "--runs", str(runs)]
    argv += ["--rounds", str(rounds)]
    done = subprocess.run(argv, env=env, cwd=tree, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"measuring {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _figure(rows: list[dict[str, float]], what: str) -> tuple[float, float, float]:
    values = [r[what] for r in rows]
    return statistics.median(values), min(values), max(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help="git revision measured as 'before'")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)  # settings JSON: measure here
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.runs, args.rounds, json.loads(args.child))))
        return 0

    with tempfile.TemporaryDirectory(prefix="bench-prompts-") as folder:
        archive = subprocess.run(
            ["git", "archive", args.before], cwd=ROOT, capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        results = {
            f"before ({args.before})": _measure(Path(folder), args.runs, args.rounds, {}),
            "after": _measure(ROOT, args.runs, args.rounds, {}),
            "after, schema pasted": _measure(ROOT, args.runs, args.rounds, {"structured": "json"}),
        }
    print(
        f"{SCENARIO} (5 agents), {args.rounds} rounds, {args.runs} runs (stub seeds "
        f"0..{args.runs - 1}); prompt tokens per round (o200k_base), median [min, max]"
    )
    base = {mode: _figure(results[next(iter(results))][mode], "tokens")[0] for mode in MODES}
    for mode in MODES:
        print(f"\n{mode} judge")
        for label, by_mode in results.items():
            tokens = _figure(by_mode[mode], "tokens")
            words = _figure(by_mode[mode], "words")
            calls = _figure(by_mode[mode], "calls")
            per_call = _figure(by_mode[mode], "per_call")
            change = 100 * (tokens[0] / base[mode] - 1)
            print(
                f"  {label:<22} {tokens[0]:>6.0f} [{tokens[1]:.0f}, {tokens[2]:.0f}] tokens "
                f"({change:+5.1f}%)  {calls[0]:4.1f} calls, {per_call[0]:4.0f} tokens/call  "
                f"(stub words {words[0]:.0f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
