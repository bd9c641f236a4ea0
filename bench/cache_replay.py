"""The prompt tokens llama-cpp-python reuses with its cache off and on (``--cache true``),
replayed on tavern's real prompt sequence, when a whole run against the server takes too
long to play twice.

Each run plays tavern for 2 rounds (batched judge, seed 0) against the stub acting as
llama-cpp-python (json_schema refused, system role dropped, one request at a time, streams
cut for the next), so socialsim sends the prompts it would send that server. Then, in the
Python given with ``--python`` (it must have llama-cpp-python), the prompts are put through
Gemma's chat template and tokenizer (``--model``, loaded vocabulary only) and llama-cpp-
python 0.3's reuse rule is replayed: cache off, the context keeps the last prompt and reply
and a prompt reuses their common prefix; cache on, every prompt and reply is also stored
(keyed by its tokens, least recently used first out once the states' bytes pass
``--cache-bytes``; a state costs 18,448 bytes a token, as the server logged for a 2,310-token
prompt) and the longest-prefix state is loaded when it beats the context. It prints the
tokens reused of those read, both ways, beside socialsim's own shared-prefix figure (the run
summary's). The cache-off figure is checked against a real run: 12.4% of the prompt tokens
(issue 37). ::

    .venv/bin/python bench/cache_replay.py --python /opt/llama/venv/bin/python \\
        --model /opt/llama/gemma.gguf --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network fetch at litellm import

#: What runs in the llama-cpp-python Python: reads the calls, prints reused/read both ways.
REPLAY = r"""
import json, sys
from collections import OrderedDict
from llama_cpp import Llama
from llama_cpp.llama_chat_format import format_gemma

model, capacity, per_token = sys.argv[1], int(sys.argv[2]), 42_615_378 / 2310
llm = Llama(model_path=model, vocab_only=True, verbose=False)

def common(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n

def replay(calls, cache_on):
    ctx, cache, reused, read = [], OrderedDict(), 0, 0
    for c in calls:
        text = format_gemma(c["messages"]).prompt.encode()
        prompt = llm.tokenize(text, add_bos=True, special=True)
        reply = llm.tokenize(c["response"].encode(), add_bos=False, special=False)
        if cache_on and cache:
            key = max(cache, key=lambda k: common(k, prompt))
            if common(key, prompt) > common(ctx, prompt):
                cache.move_to_end(key)
                ctx = list(key)
        lp = common(ctx, prompt)
        reused += max(0, lp - 1 if lp == len(prompt) else lp)
        read += len(prompt)
        ctx = prompt + reply
        if cache_on:
            cache[tuple(ctx)] = len(ctx) * per_token
            while sum(cache.values()) > capacity:
                cache.popitem(last=False)
    return reused, read

calls = json.load(sys.stdin)
print(json.dumps([replay(calls, False), replay(calls, True)]))
"""


async def prompts(seed: int) -> tuple[list[dict[str, object]], int, int]:
    """A stub run's exchanges in the order recorded; its shared-prefix and prompt tokens."""
    from llm_stub import StubLLM

    from engine import Simulation, resolve_scenario
    from engine.llm.settings import LLMSettings
    from engine.llm.transport import close_clients

    with StubLLM(
        seed=seed, server="llama.cpp", rejects={"json_schema"}, drop_system=True, slots=1,
        interrupts=True, latency=0.01,
    ) as stub:  # fmt: skip
        settings = LLMSettings(model="openai/gemma", api_base=stub.url, judge_mode="batched")
        sim = Simulation.new(resolve_scenario("tavern"), seed=0, mind=settings, rounds=2)
        records = await sim.run(2)
        await sim.aclose()
        await close_clients()
    calls = [
        {"messages": c.messages, "response": c.response}
        for r in records
        for c in r.llm_calls
        if c.response is not None
    ]
    usages = [r.usage for r in records if r.usage is not None]
    return calls, sum(u.shared_prefix for u in usages), sum(u.prompt_tokens for u in usages)


def share(part: int, whole: int) -> str:
    return f"{part:,}/{whole:,} ({part / max(1, whole):.1%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="a Python with llama-cpp-python")
    parser.add_argument("--model", required=True, type=Path, help="Gemma's GGUF file")
    parser.add_argument("--runs", type=int, default=3, help="stub seeds 1..N")
    parser.add_argument("--cache-bytes", type=int, default=2 << 30, help="--cache_size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cache-replay-") as folder:
        script = Path(folder) / "replay.py"
        script.write_text(REPLAY)
        for seed in range(1, args.runs + 1):
            calls, shared, prompt = asyncio.run(prompts(seed))
            done = subprocess.run(
                [args.python, str(script), str(args.model), str(args.cache_bytes)],
                input=json.dumps(calls), capture_output=True, text=True, check=True,
            )  # fmt: skip
            (off, off_read), (on, on_read) = json.loads(done.stdout.splitlines()[-1])
            print(
                f"seed {seed}: {len(calls)} calls; Gemma tokens reused/read: cache off "
                f"{share(off, off_read)}, cache on {share(on, on_read)}; socialsim's shared "
                f"prefix (stub tokens) {share(shared, prompt)}"
            )


if __name__ == "__main__":
    main()
