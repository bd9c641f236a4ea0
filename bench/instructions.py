"""Instructions an unsaved offline round costs, counted by valgrind's callgrind: the one
round figure this machine's drifting CPU speed does not move (repeat runs differ ~0.1%).

    .venv/bin/python bench/instructions.py                       # 100 agents, this tree
    .venv/bin/python bench/instructions.py --agents 300 --root /tmp/before
    .venv/bin/python bench/instructions.py --saved   # each round saved (user space only)

A generated cast (bench/casts.py, seed 1) plays 20 rounds in one ``Simulation``, then N more;
the figure is (Ir(N = 25) - Ir(N = 5)) / 20, the start-up and first rounds cancelling.
``--saved`` saves each round as ``socialsim run`` does (the kernel's share of writing a
file, two fsyncs among it, is not counted: user space only).
``PYTHONHASHSEED=0`` fixes the interpreter's hashing. Needs ``valgrind`` on the PATH (each
count takes about a minute at 100 agents).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench")]

from casts import write_cast  # noqa: E402

#: Rounds played before the counted ones, and the two counts of rounds after them.
WARM, FEW, MANY = 20, 5, 25

_PLAY = """
import asyncio, sys
from pathlib import Path
from engine.core.scenario import load_scenario_file
from engine.round.simulation import Simulation
from engine.saves.store import SaveStore
store = SaveStore(sys.argv[5]) if len(sys.argv) > 5 else None
scenario = load_scenario_file(Path(sys.argv[1]))
sim = Simulation.new(scenario, seed=1, rounds=int(sys.argv[2]), store=store)
async def main():
    await sim.run(int(sys.argv[3]))
    await sim.run(int(sys.argv[4]))
asyncio.run(main())
"""


def instructions(root: Path, cast: Path, more: int, folder: Path, saved: bool = False) -> int:
    """Instructions of a whole process playing ``WARM`` then ``more`` rounds of ``cast``
    (``saved``: into a save folder of its own, as ``socialsim run`` does)."""
    out = folder / f"callgrind.{more}"
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(root)}
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
    argv += ["-c", _PLAY, str(cast), str(WARM + MANY), str(WARM), str(more)]
    if saved:
        argv.append(tempfile.mkdtemp(prefix=f"saves-{more}-", dir=folder))
    subprocess.run(argv, env=env, cwd=root, check=True, capture_output=True)
    found = re.search(r"^summary: (\d+)", out.read_text(), re.M)
    if found is None:
        raise SystemExit(f"{out}: no summary line")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to play")
    parser.add_argument("--saved", action="store_true", help="each round saved")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cast = write_cast(folder / "cast.toml", args.agents, 1, WARM + MANY)
        few, many = (instructions(args.root, cast, n, folder, args.saved) for n in (FEW, MANY))
    per = (many - few) / (MANY - FEW)
    kind = "a saved" if args.saved else "an unsaved"
    print(f"{args.root}: {kind} round of {args.agents} agents, {per / 1e6:.2f} M instructions")


if __name__ == "__main__":
    main()
