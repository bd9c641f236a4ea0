"""A slow LLM round live in the app (issue 36): the app in tmux at 100x30 against the local
stub (tests/llm_stub.py, 1 s a call), a whole ``socialsim tui`` process.

    .venv/bin/python bench/bench_live.py            # 3 runs of each figure
    .venv/bin/python bench/bench_live.py --runs 5

Figures, median [min, max] over every sample of the runs, ``uptime``'s load beside:

* an utterance on screen after its reply arrives, whoever speaks: from the moment the stub
  has sent a speak reply until its first words are in the tmux pane (polled every 20 ms: the
  figure includes up to 20 ms of polling); target 0.3 s. At 100x30 one agent pane fits: the
  words of the four others reach the screen through the round's feed only;
* pause (``r``) and quit (``q``), first press, to no new call sent: pressed once the round
  has asked its first 12 calls (the judging is under way: the most calls at once), the last
  request the stub receives after the press, less the press (0 when none came); target 1 s.
  For quit, also the app's exit after the last reply of a call in flight; target 2 s.

The bench never fails on a missed target: it prints each figure beside its target.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from llm_stub import StubLLM  # noqa: E402

SIZE = (100, 30)
CALL_S = 1.0
SHOWN_TARGET_S = 0.3
STOP_TARGET_S = 1.0
EXIT_TARGET_S = 2.0
PRESS_AFTER = 12  # requests received before r or q is pressed
POLL_S = 0.02


class TimedStub(StubLLM):
    """The stub, noting when each request came and when each reply went, with its text."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.arrived: list[float] = []
        self.sent: list[tuple[float, str]] = []
        self._local = threading.local()
        self._times = threading.Lock()

    def _content(self, *args, **kwargs) -> str:
        content = super()._content(*args, **kwargs)
        self._local.content = content
        return content

    def _handle_completion(self, handler, body) -> None:
        with self._times:
            self.arrived.append(time.monotonic())
        self._local.content = None
        super()._handle_completion(handler, body)
        if self._local.content is not None:
            with self._times:
                self.sent.append((time.monotonic(), self._local.content))


def said(content: str) -> str | None:
    """The words of a speak reply (structured ``{"say": ...}`` or text), else None."""
    try:
        value = json.loads(content)
    except ValueError:
        return None if content.lstrip().startswith("{") else content.strip()
    return (
        value.get("say") if isinstance(value, dict) and isinstance(value.get("say"), str) else None
    )


class App:
    """``socialsim tui tavern`` in a tmux session of its own against ``stub``."""

    def __init__(self, stub: TimedStub, saves: Path, name: str) -> None:
        self.name = name
        cmd = (
            f"cd {ROOT} && OPENAI_API_KEY=sk-bench {ROOT}/.venv/bin/socialsim tui tavern "
            f"--model openai/stub --api-base {stub.url} --saves {saves} --confirm-above never"
            "; sleep 30"
        )
        width, height = SIZE
        tmux = ["tmux", "new", "-d", "-s", name, "-x", str(width), "-y", str(height), cmd]
        subprocess.run(tmux, check=True)
        self.wait_for("round 0/")

    def screen(self) -> str:
        out = subprocess.run(
            ["tmux", "capture-pane", "-t", self.name, "-p", "-J"], capture_output=True, text=True
        )
        return out.stdout

    def wait_for(self, text: str, seconds: float = 120.0) -> float:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if text in self.screen():
                return time.monotonic()
            time.sleep(POLL_S)
        raise SystemExit(f"never on screen: {text!r}\n{self.screen()}")

    def press(self, key: str) -> float:
        subprocess.run(["tmux", "send-keys", "-t", self.name, key], check=True)
        return time.monotonic()

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def shown_latencies(runs: int) -> list[float]:
    """Seconds from each speak reply sent to its words on screen, every run's round 1."""
    samples: list[float] = []
    for k in range(runs):
        with TimedStub(latency=CALL_S, seed=k + 1) as stub, tempfile.TemporaryDirectory() as tmp:
            app = App(stub, Path(tmp), f"bench-live-shown-{os.getpid()}-{k}")
            try:
                app.press("n")
                app.wait_for("running")
                seen: dict[str, float] = {}
                end = time.monotonic() + 120
                while time.monotonic() < end and "paused" not in app.screen().splitlines()[0]:
                    screen = " ".join(app.screen().split())
                    now = time.monotonic()
                    for _, content in list(stub.sent):
                        words = said(content)
                        if words and words not in seen and " ".join(words.split()[:5]) in screen:
                            seen[words] = now
                    time.sleep(POLL_S)
                # the header's round moves on at the round's end; a last look for late words
                for sent_at, content in list(stub.sent):
                    words = said(content)
                    if words and words in seen:
                        samples.append(seen[words] - sent_at)
            finally:
                app.close()
    return samples


def stop_figures(key: str, runs: int) -> tuple[list[float], list[float]]:
    """Per run: the last request after the first press (0: none), and (quit) the exit after
    the last reply."""
    stopped, exited = [], []
    for k in range(runs):
        with TimedStub(latency=CALL_S, seed=k + 1) as stub, tempfile.TemporaryDirectory() as tmp:
            app = App(stub, Path(tmp), f"bench-live-{key}-{os.getpid()}-{k}")
            try:
                app.press("n")
                while len(stub.arrived) < PRESS_AFTER:
                    time.sleep(0.005)
                pressed = app.press(key)
                if key == "q":
                    gone = app.wait_for("saved in", 60)
                    last_reply = max((t for t, _ in stub.sent), default=pressed)
                    exited.append(max(0.0, gone - last_reply))
                else:
                    app.wait_for("paused mid-round", 60)
                    time.sleep(3 * CALL_S)  # anything still to come comes now
                after = [t - pressed for t in stub.arrived if t > pressed]
                print(f"  {key}: requests after the press at +{[round(a, 2) for a in after]} s")
                stopped.append(max(after) if after else 0.0)
            finally:
                app.close()
    return stopped, exited


def line(label: str, values: list[float], target: float) -> str:
    if not values:
        return f"{label}: no sample"
    mid = statistics.median(values)
    return (
        f"{label}: {mid:.3f} s [{min(values):.3f}, {max(values):.3f}] (n={len(values)}), "
        f"target <= {target} s{'' if mid <= target else '  MISSED'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed")
    print(f"load: {os.getloadavg()}")
    shown = shown_latencies(args.runs)
    print(line("utterance on screen after its reply (100x30, any speaker)", shown, SHOWN_TARGET_S))
    paused, _ = stop_figures("r", args.runs)
    print(line("pause (r), first press to no new call sent", paused, STOP_TARGET_S))
    quit_, exited = stop_figures("q", args.runs)
    print(line("quit (q), first press to no new call sent", quit_, STOP_TARGET_S))
    print(line("quit (q), exit after the last reply in flight", exited, EXIT_TARGET_S))
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
