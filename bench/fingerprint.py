"""Fingerprints of seeded offline runs: every round record (its state included) and every
metric of 76 runs, hashed, one line a run; two trees give the same lines when they play the
same results.

    .venv/bin/python bench/fingerprint.py > after.txt
    git worktree add /tmp/before <rev>
    .venv/bin/python bench/fingerprint.py --root /tmp/before > before.txt
    diff before.txt after.txt

The runs: each library scenario with seeds 1 and 2 (6 rounds), four generated casts
(bench/casts.py) and the two bench casts (14 rounds), four scenarios under each of the
attitude, trust and influence priors and with injected events, and a generated cast with
injected events and with a trust prior. ``--root`` plays the engine of another checkout
(its own bench casts and generator). ``--dynamics N`` plays version N of the offline
model's dynamics (engine/minds/offline/params.py; default: the newest): ``--dynamics 1``
must print what the tree before versions (2237532) printed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS_SCENARIOS = ("tavern", "village-assembly", "hospital", "friendship")
PRIORS = ("attitude", "trust", "influence")


#: Simulation.new's mind, when --dynamics names a version.
MIND: dict[str, object] = {}


async def _one(sc, seed: int, rounds: int, prior: str | None = None, inject: bool = False) -> str:
    from engine.core.priors import parse_prior
    from engine.round.simulation import Simulation

    lens = parse_prior(prior, sc.names[:4]) if prior else None
    sim = Simulation.new(sc, seed=seed, rounds=rounds, prior=lens, **MIND)
    if inject:
        await sim.run(2)
        a, b = sc.names[:2]
        sim.inject(f"{a} was caught lying about {b}.")
        await sim.run(1)
        sim.inject(f"{b} helped everyone.", valence=0.8, implicates=[b])
    await sim.run()
    digest = hashlib.sha256()
    for r in range(len(sim.history)):
        digest.update(sim.history[r].model_dump_json().encode())
        digest.update(sim.metrics(r).model_dump_json().encode())
    return digest.hexdigest()[:16]


async def fingerprints(root: Path) -> list[str]:
    from bench_engine import make_scenario
    from casts import cast_data

    from engine.core.scenario import load_scenario_file, parse_scenario  # root's engine first
    from engine.round.simulation import Simulation  # noqa: F401

    library = sorted((root / "scenarios").glob("*.toml"))
    out = []
    for path in library:
        for seed in (1, 2):
            out.append(f"{path.name}:{seed} {await _one(load_scenario_file(path), seed, 6)}")
    for n, seed in ((12, 1), (30, 2), (40, 3), (20, 4)):
        cast = parse_scenario(cast_data(n, seed=seed, rounds=14), "<cast>")
        out.append(f"cast{n}:{seed} {await _one(cast, seed, 14)}")
    for n in (5, 30):
        out.append(f"bench{n} {await _one(make_scenario(n, 14), 7, 14)}")
    for name in RUNS_SCENARIOS:
        sc = load_scenario_file(root / "scenarios" / f"{name}.toml")
        for rel in PRIORS:
            out.append(f"{name}:{rel} {await _one(sc, 3, 8, f'{rel}:complete:+,-,-,+,+,-')}")
        out.append(f"{name}:inject {await _one(sc, 4, 8, inject=True)}")
    cast = parse_scenario(cast_data(30, seed=5, rounds=10), "<cast>")
    out.append(f"cast30:inject {await _one(cast, 5, 10, inject=True)}")
    out.append(f"cast30:trust {await _one(cast, 5, 10, 'trust:complete:+,-,-,+,+,-')}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=HERE.parent, help="the checkout to play")
    parser.add_argument("--dynamics", type=int, help="the offline dynamics' version")
    args = parser.parse_args()
    root = args.root.resolve()
    sys.path[:0] = [str(root), str(root / "bench")]
    if args.dynamics is not None:
        from engine.minds.spec import Offline

        MIND["mind"] = Offline(dynamics=args.dynamics)
    print("\n".join(asyncio.run(fingerprints(root))))


if __name__ == "__main__":
    main()
