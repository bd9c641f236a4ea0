"""Debate bootstrap bench: one App. B.3 endpoint contrast with 100,000 paired resamples.

Run from the repository root::

    .venv/bin/python bench/bench_bootstrap.py            # 3 repeats
    .venv/bin/python bench/bench_bootstrap.py --repeats 5

The offline debate plays the bundled questions under all-negative and all-positive
Influence priors; the bench times ``bootstrap_contrast`` (paired, question-level, ACC, CR,
CCR and WCF with their denominators recomputed in every resample) on those traces, and on
the same traces tiled to 1,000 questions to show how it scales. Each figure is the median
of the repeats with min and max, wall and CPU time, against its target. The bench prints
figures and never fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from engine.core.priors import signed_priors
from engine.studies.debate import DebateQuestion, DebateTrace, run_debate, sample_questions
from engine.studies.debate.stats import bootstrap_contrast

RESAMPLES = 100_000
#: Wall-time targets (seconds) for one contrast, by number of questions.
TARGETS = {"bundled": 0.5, "1000": 5.0}


def _tiled(
    questions: list[DebateQuestion], base: list[DebateTrace], other: list[DebateTrace], n: int
) -> tuple[list[DebateQuestion], list[DebateTrace], list[DebateTrace]]:
    """The traces repeated under new ids until there are ``n`` questions."""
    qs, a, b = [], [], []
    for k in range(n):
        i = k % len(questions)
        qid = f"{questions[i].id}#{k}"
        qs.append(questions[i].model_copy(update={"id": qid}))
        a.append(base[i].model_copy(update={"question_id": qid}))
        b.append(other[i].model_copy(update={"question_id": qid}))
    return qs, a, b


def _time(
    questions: list[DebateQuestion], a: list[DebateTrace], b: list[DebateTrace], repeats: int
):
    walls, cpus = [], []
    for seed in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        bootstrap_contrast(a, b, questions, resamples=RESAMPLES, seed=seed)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return walls, cpus


def _line(label: str, values: list[float]) -> str:
    return f"{label} {statistics.median(values):.3f} s [{min(values):.3f}, {max(values):.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    questions = sample_questions()
    names = ["Agent1", "Agent2", "Agent3"]
    (neg,) = signed_priors(names, "influence", "complete", 0.0)
    (pos,) = signed_priors(names, "influence", "complete", 1.0)
    base = asyncio.run(run_debate(neg, questions)).traces
    other = asyncio.run(run_debate(pos, questions)).traces
    print(f"load average {os.getloadavg()[0]:.2f}; {RESAMPLES:,} paired resamples, 4 metrics")
    cases = {
        "bundled": (questions, base, other),
        "1000": _tiled(questions, base, other, 1000),
    }
    for name, (qs, a, b) in cases.items():
        walls, cpus = _time(qs, a, b, args.repeats)
        print(
            f"{len(qs):>5} questions: {_line('wall', walls)}, {_line('CPU', cpus)}; "
            f"target wall <= {TARGETS[name]} s"
        )


if __name__ == "__main__":
    main()
