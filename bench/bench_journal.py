"""An LLM run cut mid-round, against the local stub (tests/llm_stub.py), as whole
``socialsim`` processes (issue 36):

* **kills**: ``socialsim run`` is SIGKILLed once the stub has received a random number of
  requests (seeded), then ``socialsim resume`` plays the run to its end. The calls asked
  again (requests the stub answered beyond the exchanges the run records) must be at most
  the calls in flight at the kill (requests received minus exchanges saved or journaled);
  the run must replay identically, its round files equal to the replay's but for the run's
  id;
* **hold**: ``socialsim run`` gets a SIGINT mid-round; the figure is the time from the
  signal to the last request the stub receives after it (target <= 1 s).

Usage: ``python bench/bench_journal.py [--kills 20] [--holds 3] [--seed 36]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from llm_stub import StubLLM  # noqa: E402

SCENARIO = "helicopter-parent"  # three agents
ROUNDS = 2
#: Requests a two-round run of the scenario sends (about; a kill is drawn below it).
CALLS = 24


def socialsim(saves: Path, *argv: str, stderr: int | None = subprocess.PIPE) -> subprocess.Popen:
    env = {**os.environ, "SOCIALSIM_SAVES": str(saves), "OPENAI_API_KEY": "sk-bench"}
    code = "import sys; from tui import cli; sys.argv[0] = 'socialsim'; cli.main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv], env=env, stdout=subprocess.DEVNULL, stderr=stderr
    )


def model(stub: StubLLM) -> list[str]:
    return ["--model", "openai/stub", "--api-base", stub.url, "--retries", "0", "-q"]


def wait_for(condition, proc: subprocess.Popen, timeout: float = 300) -> bool:
    """Poll until ``condition()``; False if the process ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.005)
    raise TimeoutError("the run never got there")


def recorded(store, run_id: str) -> list[int]:
    """The exchanges each saved round records (round 0 first)."""
    return [len(r.llm_calls) for r in store.history(run_id)]


@dataclass(frozen=True)
class Kill:
    """One kill: where it fell and what the resume asked again."""

    at_request: int
    round: int
    in_flight: int
    journaled: int
    asked_again: int
    identical: bool


def kill_trial(workdir: Path, seed: int, latency: float = 0.3) -> Kill:
    """Kill a run after a random number of requests, resume it, replay it, compare."""
    from engine import SaveStore
    from engine.llm.journal import Journal
    from engine.round.replay import replay_run

    saves = workdir / f"saves-{seed}"
    run_id = f"kill-{seed}"
    at = random.Random(seed).randint(1, CALLS - 2)
    with StubLLM(seed=seed, latency=latency) as stub:
        proc = socialsim(saves, "run", SCENARIO, "--rounds", str(ROUNDS), "--run-id", run_id,
                         *model(stub))  # fmt: skip
        wait_for(lambda: stub.calls >= at, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        sent = stub.calls
        store = SaveStore(saves)
        saved = recorded(store, run_id)
        journaled = Journal(store.run_dir(run_id)).begin(len(saved))
        in_flight = sent - sum(saved) - journaled
        if len(saved) <= ROUNDS:
            resumed = socialsim(saves, "resume", run_id, "-q")
            _, err = resumed.communicate(timeout=600)
            if resumed.returncode != 0:
                raise RuntimeError(f"resume failed: {err.decode()}")
        asked_again = stub.calls - sum(recorded(store, run_id))
    replay = asyncio.run(replay_run(store, run_id, f"{run_id}-replay"))
    replay.sim.close()
    identical = replay.identical and all(
        _same_round(store, run_id, replay.sim.run_id, n) for n in range(1, ROUNDS + 1)
    )
    shutil.rmtree(saves, ignore_errors=True)
    return Kill(at, len(saved), in_flight, journaled, asked_again, identical)


def _same_round(store, ours: str, theirs: str, n: int) -> bool:
    a, b = (json.loads(store.files(r).read(n).model_dump_json()) for r in (ours, theirs))
    a.pop("run", None), b.pop("run", None)
    return a == b


def hold_trial(workdir: Path, seed: int, latency: float = 1.0) -> tuple[float, int, str]:
    """SIGINT a run mid-round: seconds from the signal to the last request received after
    it, the exit code, and its last line."""
    saves = workdir / f"hold-{seed}"
    with StubLLM(seed=seed, latency=latency) as stub:
        proc = socialsim(saves, "run", SCENARIO, "--rounds", str(ROUNDS), "--run-id", "held",
                         *model(stub))  # fmt: skip
        wait_for(lambda: stub.calls >= 4, proc)
        time.sleep(random.Random(seed).uniform(0, latency))
        signalled = time.monotonic()
        last, seen = signalled, stub.calls
        proc.send_signal(signal.SIGINT)
        while proc.poll() is None:
            if stub.calls != seen:
                last, seen = time.monotonic(), stub.calls
            time.sleep(0.002)
        assert proc.stderr is not None
        err = proc.stderr.read().decode().strip().splitlines()
    shutil.rmtree(saves, ignore_errors=True)
    return last - signalled, proc.returncode, err[-1] if err else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--holds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=36)
    args = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} (1 min)")
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as tmp:
        work = Path(tmp)
        kills = []
        for k in range(args.kills):
            kill = kill_trial(work, args.seed + k)
            kills.append(kill)
            print(
                f"kill {k + 1:2d}: after request {kill.at_request:2d} (round {kill.round}): "
                f"{kill.in_flight} in flight, {kill.journaled} journaled, "
                f"{kill.asked_again} asked again; identical: {kill.identical}",
                flush=True,
            )
        if kills:
            again = sum(k.asked_again for k in kills)
            flying = sum(k.in_flight for k in kills)
            worst = sum(k.asked_again > k.in_flight for k in kills)
            print(
                f"calls asked again after {len(kills)} kills: {again} (in flight at the kills: "
                f"{flying}; target: asked again <= in flight at each kill; kills over it: "
                f"{worst}); identical after resume: "
                f"{sum(k.identical for k in kills)}/{len(kills)}"
            )
        holds = [hold_trial(work, args.seed + h) for h in range(args.holds)]
        if holds:
            times = sorted(t for t, _, _ in holds)
            print(
                f"SIGINT to the last new request (stub 1 s a call): median "
                f"{statistics.median(times):.3f} s [{times[0]:.3f}, {times[-1]:.3f}] "
                f"(target <= 1 s); exit codes {[c for _, c, _ in holds]}"
            )
            print(f"last line: {holds[-1][2]}")
    print(f"load: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
