"""An LLM run cut mid-round, as whole ``socialsim`` processes against the local stub
(bench/bench_journal.py does the work):

* SIGKILL after a random number of requests (seeded; ``KILL_SEED`` chooses it), then
  ``resume``: the calls asked again are at most those in flight at the kill, and the run
  replays identically, its round files equal to the replay's but for the run's id. A few
  kills by default, :data:`SLOW_KILLS` behind the ``slow`` marker;
* Ctrl+C: no new call, the calls in flight answered and journaled, exit 130 saying how
  many exchanges are kept; SIGTERM twice: the calls in flight abandoned at once, exit 143.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_journal import kill_trial, model, socialsim, wait_for
from llm_stub import StubLLM

from engine import SaveStore
from engine.llm.journal import Journal

SEED = int(os.environ.get("KILL_SEED", "36"))
KILLS = 2
SLOW_KILLS = 20


def check_kills(tmp_path: Path, seeds: range) -> None:
    for seed in seeds:
        kill = kill_trial(tmp_path, seed, latency=0.2)
        assert kill.asked_again <= kill.in_flight, (seed, kill)
        assert kill.identical, (seed, kill)


def test_a_killed_llm_run_resumes_asking_again_only_what_was_in_flight(tmp_path: Path):
    check_kills(tmp_path, range(SEED, SEED + KILLS))


@pytest.mark.slow
def test_twenty_kills_at_random_points_of_llm_rounds(tmp_path: Path):
    check_kills(tmp_path, range(SEED + KILLS, SEED + KILLS + SLOW_KILLS))


def interrupt(tmp_path: Path, signum: int, times: int) -> tuple[int, list[str], int, int]:
    """Signal a two-round run mid-round ``times`` times; its exit code, its lines, the
    requests the stub received and the exchanges of the round kept in the journal."""
    saves = tmp_path / "saves"
    with StubLLM(seed=3, latency=1.0) as stub:
        proc = socialsim(saves, "run", "helicopter-parent", "--rounds", "2", "--run-id", "cut",
                         *model(stub))  # fmt: skip
        assert wait_for(lambda: stub.calls >= 4 and stub.in_flight > 0, proc)
        proc.send_signal(signum)
        assert proc.stderr is not None
        first = proc.stderr.readline().decode()  # the run holds, waiting for its calls
        if times > 1:
            proc.send_signal(signum)
        err = first + proc.stderr.read().decode()
        proc.wait(timeout=120)
        requests = stub.calls
    assert "Traceback" not in err, err
    store = SaveStore(saves)
    saved = store.history("cut")
    kept = Journal(store.run_dir("cut")).begin(len(saved))
    asked = requests - sum(len(r.llm_calls) for r in saved)
    assert kept <= asked
    return proc.returncode, err.splitlines(), asked, kept


def test_ctrl_c_waits_for_the_calls_in_flight_and_keeps_them(tmp_path: Path):
    code, lines, asked, kept = interrupt(tmp_path, signal.SIGINT, 1)
    assert code == 130
    assert kept == asked  # every request sent was answered and journaled
    assert re.fullmatch(
        r"socialsim: interrupted: no new call; waiting for \d+ calls? in flight "
        r"\(Ctrl\+C again: abandon them\)",
        lines[0],
    ), lines
    assert re.fullmatch(
        rf"socialsim: interrupted; run cut is saved up to round \d/2 in .+; {kept} "
        rf"exchanges? of round \d kept for the next open; socialsim resume cut continues it",
        lines[1],
    ), lines


def test_a_second_sigterm_abandons_the_calls_in_flight(tmp_path: Path):
    code, lines, _, _ = interrupt(tmp_path, signal.SIGTERM, 2)
    assert code == 143
    assert "socialsim: terminated again: abandoning the calls in flight" in lines, lines
    assert lines[-1].startswith("socialsim: terminated; run cut is saved up to round"), lines
