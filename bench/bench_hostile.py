"""A hostile or broken server against whole ``socialsim run`` processes (issue 36's sweep).

* ``endless``: every reply streams ``"la "`` every 10 ms and never ends (the stub's
  ``endless`` fault), ``socialsim run tavern --rounds 1 --timeout 5 --retries 0
  --call-timeout 20``: each call must fail within ``--call-timeout`` and the run end.
* ``huge``: one reply of 10 MB (the first utterance asked, as the issue's ``one 10 MB
  utterance``), a 3-agent 2-round run (``helicopter-parent``), beside the same run without
  it: peak RSS (target 150 MB), the largest request sent, the save's size.

Run from the repository root (3 runs each; median [min, max])::

    .venv/bin/python bench/bench_hostile.py
    .venv/bin/python bench/bench_hostile.py --case huge --root /work/main   # another tree

``--root`` runs that checkout's ``tui.cli`` (the ``huge`` case only: before
``--call-timeout`` an endless stream holds a run for ever).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT / "bench", ROOT / "tests"):
    sys.path.insert(0, str(_path))

from llm_stub import StubLLM  # noqa: E402
from whole import run_whole  # noqa: E402

CALL_TIMEOUT = 20.0
PEAK_TARGET_MB = 150.0


class Timed(StubLLM):
    """The stub, keeping how long each endless reply went on before its client left."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spans: list[float] = []

    def _endless(self, handler: Any, ident: str, model: str, stream: bool) -> None:
        start = time.monotonic()
        try:
            super()._endless(handler, ident, model, stream)
        finally:
            with self._lock:
                self.spans.append(time.monotonic() - start)


class OneHuge(StubLLM):
    """The stub, giving its ``huge`` fault (10 MB) to the first free-text request (an
    utterance) when ``huge``; keeps the largest request it received."""

    def __init__(self, huge: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.huge = huge
        self.largest = 0

    def _admit(self, handler: Any, body: dict[str, Any], draw: bool, schema: Any, *rest: Any):
        index, fault = super()._admit(handler, body, draw, schema, *rest)
        with self._lock:
            self.largest = max(self.largest, len(json.dumps(body.get("messages"))))
            if self.huge and schema is None and not self.faults_served["huge"]:
                self.faults_served["huge"] += 1
                fault = "huge"
        return index, fault


def spread(values: Sequence[float], unit: str = "", digits: int = 1) -> str:
    med = statistics.median(values)
    return f"{med:.{digits}f} [{min(values):.{digits}f}, {max(values):.{digits}f}]{unit}"


def play(root: Path, stub: StubLLM, args: list[str], saves: Path, limit: float) -> Any:
    env = {**os.environ, "PYTHONPATH": str(root), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    argv = [sys.executable, "-m", "tui.cli", "run", *args, "--model", "openai/x"]
    argv += ["--api-base", stub.url, "--saves", str(saves), "-q"]
    return run_whole(argv, env, root, timeout=limit)


def folder_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def endless(root: Path, runs: int, scratch: Path, limit: float) -> None:
    args = ["tavern", "--rounds", "1", "--timeout", "5", "--retries", "0"]
    args += ["--call-timeout", f"{CALL_TIMEOUT:g}"]
    print(f"\n## endless stream: socialsim run {' '.join(args)} (target: each call ends within "
          f"--call-timeout {CALL_TIMEOUT:g} s; the run ends)")  # fmt: skip
    walls, cpus, longest, calls = [], [], [], []
    for k in range(runs):
        with Timed(faults={"endless": 1.0}, seed=2) as stub:
            got = play(root, stub, args, scratch / f"endless-{k}", limit)
            time.sleep(0.1)  # the last handler notices its client left
            spans = list(stub.spans)
        walls.append(got.wall)
        cpus.append(got.cpu)
        longest.append(max(spans))
        calls.append(len(spans))
        last = got.stderr.strip().splitlines()[-1] if got.stderr.strip() else ""
        print(f"  run {k + 1}: exit {got.code}, {len(spans)} calls, longest {max(spans):.1f} s; "
              f"{last[:160]}")  # fmt: skip
    if walls:
        print(f"  wall {spread(walls, ' s')}, CPU {spread(cpus, ' s')}, calls "
              f"{spread(calls, '', 0)}, longest call {spread(longest, ' s')} "
              f"(target <= {CALL_TIMEOUT:g} s)")  # fmt: skip


def huge(root: Path, runs: int, scratch: Path, limit: float) -> None:
    args = ["helicopter-parent", "--rounds", "2", "--retries", "0"]
    print(f"\n## one 10 MB utterance: socialsim run {' '.join(args)} (3 agents; target: peak "
          f"RSS <= {PEAK_TARGET_MB:g} MB, prompts bounded)")  # fmt: skip
    for hostile in (False, True):
        walls, cpus, peaks, largest, disk, said = [], [], [], [], [], []
        for k in range(runs):
            saves = scratch / f"huge-{hostile}-{k}"
            with OneHuge(hostile, seed=2) as stub:
                got = play(root, stub, args, saves, limit)
                largest.append(stub.largest / 1e3)
            said.append("ran past" in got.stderr)
            if got.code:
                print(f"  exit {got.code}: {got.stderr.strip()[-300:]}")
            walls.append(got.wall)
            cpus.append(got.cpu)
            peaks.append(got.peak_mb)
            disk.append(folder_mb(saves))
        name = "with the 10 MB reply" if hostile else "without (honest server)"
        print(f"  {name}: peak RSS {spread(peaks, ' MB', 0)}, wall {spread(walls, ' s')}, CPU "
              f"{spread(cpus, ' s')}, largest prompt {spread(largest, ' kB', 0)}, save "
              f"{spread(disk, ' MB', 2)}; a cut said in {sum(said)} of {runs}")  # fmt: skip
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    floor = run_whole([sys.executable, "-c", "import litellm"], env, root)
    print(f"  (a process that only imports litellm peaks at {floor.peak_mb:.0f} MB)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=("endless", "huge", "both"), default="both")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to run")
    parser.add_argument("--limit", type=float, default=1800, help="seconds a run may take")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if root != ROOT and args.case != "huge":
        parser.error("--root runs the huge case only (--case huge)")
    now = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    print(f"uptime load {os.getloadavg()}; {now}; tree {root}")
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as scratch:
        if args.case in ("huge", "both"):
            huge(root, args.runs, Path(scratch), args.limit)
        if args.case in ("endless", "both"):
            endless(root, args.runs, Path(scratch), args.limit)
    print(f"uptime load {os.getloadavg()}")


if __name__ == "__main__":
    main()
