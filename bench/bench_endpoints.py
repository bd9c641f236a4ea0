"""Several endpoints per run (issue 42): whole ``socialsim run`` processes against three
local stubs (tests/llm_stub.py), and optionally against real llama-cpp-python servers.

    .venv/bin/python bench/bench_endpoints.py                  # the stub figures, 3 runs each
    .venv/bin/python bench/bench_endpoints.py --real --runs 1  # real servers instead
    .venv/bin/python bench/bench_endpoints.py --real --runs 1 --setup one  # one setup only

Stub figures, each beside its target:

* one of three endpoints killed mid-run (after its 10th request): the run completes, no
  structured answer falls back, the dead endpoint's agents are moved (the one line said,
  the calls moved off it counted);
* 12 agents on 3 endpoints: each endpoint's tokens (prompt and completion, from the saved
  records) against an even share, within 25%;
* client CPU per call: the ``socialsim`` process's CPU time (user + system, imports and the
  Router's set-up included) over its calls, three endpoints through the Router against the
  same run at one endpoint, measured alternately in the same invocation.

Real figures (``--real``; llama-cpp-python with Gemma 3 270M, minutes per round): a 2-round
tavern at two servers of one thread each (agents kept on their server: affinity on; each
call sent round-robin: off) against one server of two threads; wall time and prefix reuse of
round 2, the share of its prompt tokens the servers took from their cache (their own
"prefix-match hit" log lines).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests", ROOT / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from bench_local import Server, free_port, serving  # noqa: E402
from cast import write_cast  # noqa: E402
from llm_stub import StubLLM  # noqa: E402

TWELVE = tuple(f"Member {chr(65 + i)}" for i in range(12))
SOCIALSIM = [sys.executable, "-m", "tui.cli"]
#: A socialsim whose calls ignore affinity: each goes to the next endpoint in turn.
ROUND_ROBIN = """
import itertools, sys
from engine.llm import endpoints
turn = itertools.count()
def next_one(self, request):
    up = [e for e in self.endpoints.values() if not e.down] or list(self.endpoints.values())
    return up[next(turn) % len(up)]
endpoints.Endpoints._endpoint_for = next_one
from tui.cli import main
sys.argv[0] = "socialsim"
main()
"""


def spread(values: Sequence[float], digits: int = 2) -> str:
    return (
        f"{statistics.median(values):.{digits}f} "
        f"[{min(values):.{digits}f}, {max(values):.{digits}f}]"
    )


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


def socialsim(
    args: list[str], saves: Path, run_id: str, command: list[str] = SOCIALSIM
) -> tuple[float, float, str]:
    """(wall s, CPU s of the process, stderr) of one ``socialsim`` invocation."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [*command, *args, "--saves", str(saves), "--run-id", run_id, "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode:
        raise SystemExit(f"socialsim {' '.join(args)} failed:\n{done.stderr}")
    return wall, cpu, done.stderr


def calls_of(saves: Path, run_id: str) -> list:
    from engine import SaveStore

    return [c for rec in SaveStore(saves).read_rounds(run_id) for c in rec.llm_calls]


@contextlib.contextmanager
def stubs(n: int) -> Iterator[list[StubLLM]]:
    servers = [StubLLM(seed=i, latency=0.02, keep_alive=True) for i in range(n)]
    for server in servers:
        server.start()
    try:
        yield servers
    finally:
        for server in servers:
            server.stop()


def run_args(cast: Path, urls: list[str], rounds: int) -> list[str]:
    bases = [arg for url in urls for arg in ("--api-base", url)]
    return ["run", str(cast), "--model", "openai/stub", *bases, "--rounds", str(rounds)]


def kill(victim: StubLLM) -> None:
    """Stop ``victim`` once it has had 10 requests."""
    while victim.calls < 10:
        time.sleep(0.01)
    victim.stop()


def killed(cast: Path, work: Path, runs: int) -> None:
    print("\none of three endpoints killed after its 10th request (2 rounds, 12 agents)")
    for i in range(runs):
        with stubs(3) as servers:
            threading.Thread(target=kill, args=(servers[1],), daemon=True).start()
            args = [*run_args(cast, [s.url for s in servers], 2), "--retries", "2"]
            wall, _, err = socialsim(args, work, f"killed{i}")
            calls = calls_of(work, f"killed{i}")
            fell = sum(c.fell_back for c in calls)
            moved = [c for c in calls if c.moved_from]
            said = [line for line in err.splitlines() if "stopped answering" in line]
            print(
                f"  run {i + 1}: completed in {wall:.1f} s; {len(calls)} calls, {fell} fallbacks "
                f"(target 0), {len(moved)} calls moved off the dead one, said {len(said)}x:"
            )
            for line in said:
                print(f"    {line}")


def balance(cast: Path, work: Path, runs: int) -> None:
    print("\n12 agents on 3 endpoints (2 rounds): tokens per endpoint against an even share")
    worst: list[float] = []
    for i in range(runs):
        with stubs(3) as servers:
            socialsim(run_args(cast, [s.url for s in servers], 2), work, f"even{i}")
        tokens: Counter[str] = Counter()
        agents: dict[str, set[str]] = {}
        for call in calls_of(work, f"even{i}"):
            tokens[call.endpoint] += call.prompt_tokens + call.completion_tokens
            agents.setdefault(call.endpoint, set()).add(call.agent)
        even = sum(tokens.values()) / 3
        off = [tokens[b] / even - 1 for b in sorted(tokens)]
        worst.append(max(abs(x) for x in off) * 100)
        each = ", ".join(f"{len(agents[b])} agents {tokens[b]:,}" for b in sorted(tokens))
        print(f"  run {i + 1}: {each} tokens; {', '.join(f'{x:+.1%}' for x in off)} of even")
    print(f"  furthest from even: {spread(worst, 1)} % (target within 25 %)")


def cpu(cast: Path, work: Path, runs: int) -> None:
    print("\nclient CPU per call, 12 agents, 2 rounds: three endpoints (Router) / one")
    per: dict[str, list[float]] = {"one": [], "three": []}
    ratios: list[float] = []
    for i in range(runs):
        figures = {}
        for name, n in (("one", 1), ("three", 3)):
            with stubs(n) as servers:
                _, used, _ = socialsim(
                    run_args(cast, [s.url for s in servers], 2), work, f"{name}{i}"
                )
            figures[name] = used / len(calls_of(work, f"{name}{i}")) * 1000
            per[name].append(figures[name])
        ratios.append(figures["three"] / figures["one"])
    print(f"  one endpoint:    {spread(per['one'])} ms CPU per call (whole process)")
    print(f"  three endpoints: {spread(per['three'])} ms CPU per call (whole process)")
    print(f"  ratio: {spread(ratios)} (target <= 1.3)")


def round_two(
    command: list[str], args: list[str], work: Path, run_id: str, logs: list[Path]
) -> tuple[float, list[int]]:
    """(wall s, each server log's size when round 1 was saved) of one real run."""
    first = work / run_id / "rounds" / "000001.json.gz"
    started = time.perf_counter()
    argv = [*command, *args, "--saves", str(work), "--run-id", run_id, "-q"]
    with subprocess.Popen(argv, cwd=ROOT, stderr=subprocess.PIPE, text=True) as proc:
        sizes: list[int] = []
        while proc.poll() is None:
            if not sizes and first.exists():
                sizes = [log.stat().st_size for log in logs]
            time.sleep(0.5)
        err = proc.stderr.read() if proc.stderr else ""
    if proc.returncode:
        raise SystemExit(f"socialsim {' '.join(args)} failed:\n{err}")
    return time.perf_counter() - started, sizes


def llama_cpp_server(
    binary: str, log: Path, model: Path, threads: int
) -> contextlib.AbstractContextManager[Server]:
    """llama.cpp's own ``llama-server`` with its defaults (slots and host prompt cache) on a
    free loopback port, ``threads`` threads."""
    port = free_port()
    command = [binary, "-m", str(model), "--alias", "gemma", "--host", "127.0.0.1",
               "--port", str(port), "-t", str(threads)]  # fmt: skip
    return serving(command, port, log)


#: A prompt's evaluated tokens in llama-server's log ("prompt eval time = ... / N tokens").
EVALUATED = re.compile(r"prompt eval time = +[\d.]+ ms / +(\d+) tokens")


def reused_in_round(work: Path, run_id: str, round_no: int) -> tuple[int, int]:
    """(prompt tokens the servers said they took from their cache, prompt tokens) of one
    saved round: the servers' own ``usage.prompt_tokens_details.cached_tokens``."""
    from engine import SaveStore

    calls = [
        c
        for rec in SaveStore(work).read_rounds(run_id)
        if rec.round == round_no
        for c in rec.llm_calls
        if c.prompt_tokens
    ]
    return sum(c.cached_tokens or 0 for c in calls), sum(c.prompt_tokens or 0 for c in calls)


def real(work: Path, runs: int, python: str, model: Path, only: str, binary: str | None) -> None:
    from bench_local import llama_server, server_hits

    extra = ("--cache", "true", "--cache_size", str(1 << 30), "--logits_all", "false",
             "--n_batch", "64")  # fmt: skip
    kind = "llama.cpp's llama-server" if binary else "llama-cpp-python"
    print(f"\nreal servers: {kind}, Gemma 3 270M, tavern 2 rounds, batched judge")
    setups = (("two servers, 1 thread each, affinity on", 2, 1, False),
              ("two servers, 1 thread each, affinity off", 2, 1, True),
              ("one server, 2 threads", 1, 2, False))  # fmt: skip
    for label, n, threads, round_robin in setups:
        if only != "all" and only != ("one" if n == 1 else "off" if round_robin else "on"):
            continue
        walls, reuse = [], []
        for i in range(runs):
            run_id = f"real{i}-{n}-{int(round_robin)}"
            logs = [work / f"{run_id}-server{k}.log" for k in range(n)]
            with contextlib.ExitStack() as stack:
                servers = [
                    stack.enter_context(
                        llama_cpp_server(binary, log, model, threads)
                        if binary
                        else llama_server(python, log, model, False, threads, extra)
                    )
                    for log in logs
                ]
                args = ["run", "tavern", "--model", "openai/gemma", "--rounds", "2"]
                args += [a for s in servers for a in ("--api-base", s.url)]
                args += ["--judge-mode", "batched", "--timeout", "600", "--call-timeout", "1800"]
                args += ["--tolerate-fallbacks"]  # Gemma 3 270M's answers often fall back
                command = [sys.executable, "-c", ROUND_ROBIN] if round_robin else SOCIALSIM
                wall, sizes = round_two(command, args, work, run_id, logs)
            if binary:  # the servers' usage, checked against their logs' evaluated tokens
                hit, read = reused_in_round(work, run_id, 2)
                logged = sum(
                    int(n)
                    for log, since in zip(logs, sizes, strict=True)
                    for n in EVALUATED.findall(log.read_text(errors="replace")[since:])
                )
                check = f" (their logs: {logged:,} evaluated)"
            else:
                hit = evaluated = 0
                for log, since in zip(logs, sizes, strict=True):
                    h, e = server_hits(log, since)
                    hit, evaluated = hit + h, evaluated + e
                read, check = hit + evaluated, ""
            walls.append(wall)
            reuse.append(hit / max(1, read) * 100)
            print(
                f"  {label}, run {i + 1}: {wall:.0f} s; round 2: {hit:,} of {read:,} "
                f"prompt tokens from the servers' cache ({reuse[-1]:.1f} %){check}; {load()}",
                flush=True,
            )
        print(f"  {label}: wall {spread(walls, 0)} s; prefix reuse {spread(reuse, 1)} %")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--real", action="store_true", help="the real-server comparison")
    parser.add_argument("--python", default="/opt/llama/venv/bin/python")
    parser.add_argument("--model", type=Path, default=Path("/opt/llama/gemma.gguf"))
    parser.add_argument(
        "--setup",
        choices=("all", "on", "off", "one"),
        default="all",
        help="with --real: only two servers with affinity on, off, or the one server",
    )
    parser.add_argument(
        "--llama-server",
        metavar="PATH",
        help="with --real: llama.cpp's llama-server binary instead of llama-cpp-python",
    )
    args = parser.parse_args()
    print(f"{load()}; {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    work = Path(tempfile.mkdtemp(prefix="socialsim-endpoints-"))
    cast = write_cast(work / "twelve.toml", TWELVE, rounds=2)
    if args.real:
        real(work, args.runs, args.python, args.model, args.setup, args.llama_server)
    else:
        killed(cast, work, args.runs)
        balance(cast, work, args.runs)
        cpu(cast, work, args.runs)
    print(f"\n{load()}")


if __name__ == "__main__":
    main()
