"""No dead ends: nothing is queued for a round that cannot come, a finished run is extended
or branched to go on, a branch carries the queue, and queued items are listed and removed
(the engine and ``socialsim queue``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine import ForcedAction, Mode, SaveStore, Scenario, Simulation
from engine.errors import InterventionError, RunFinishedError


def _played(mini: Scenario, store: SaveStore, rounds: int, total: int = 2) -> Simulation:
    sim = Simulation.new(mini, seed=1, store=store, run_id="base", rounds=total)
    asyncio.run(sim.run(rounds))
    return sim


def _force(sim: Simulation) -> ForcedAction:
    return ForcedAction(agent=sim.scenario.names[0], mode=Mode.SILENT)


def test_a_finished_run_queues_nothing_until_extended(mini: Scenario, store: SaveStore):
    sim = _played(mini, store, 2)
    assert sim.finished
    for queue in (
        lambda: sim.inject("The bank calls in the loan."),
        lambda: sim.force(_force(sim)),
    ):
        with pytest.raises(RunFinishedError, match=r"extend it .* or branch it"):
            queue()
    assert sim.queue == [] and store.read_meta("base").pending.events == []
    sim.extend(3)
    sim.inject("The bank calls in the loan.")
    sim.close()
    reopened = Simulation.resume("base", store)  # the extension is saved with its queue
    assert reopened.total_rounds == 5 and not reopened.finished
    assert [e.text for e in reopened.pending.events] == ["The bank calls in the loan."]
    asyncio.run(reopened.step())
    assert [e.text for e in reopened.records[3].events if e.source == "injected"] == [
        "The bank calls in the loan."
    ]
    reopened.close()


def test_queued_items_are_listed_and_removed(mini: Scenario, store: SaveStore):
    sim = _played(mini, store, 1)
    sim.inject("First news.")
    sim.force(_force(sim))
    sim.inject("Second news.")
    assert [getattr(i, "text", "force") for i in sim.queue] == [
        "force",
        "First news.",
        "Second news.",
    ]
    removed = sim.unqueue(1)
    assert removed.text == "First news."  # type: ignore[union-attr]
    assert [getattr(i, "text", "force") for i in sim.queue] == ["force", "Second news."]
    with pytest.raises(InterventionError, match="no queued intervention 3"):
        sim.unqueue(2)
    sim.unqueue(0)
    assert store.read_meta("base").pending.forced == []  # saved at once
    sim.close()


def test_a_branch_at_the_last_round_carries_the_queue(mini: Scenario, store: SaveStore):
    sim = _played(mini, store, 1)
    sim.inject("The bank calls in the loan.", valence=-0.5)
    child = sim.branch()
    assert [(e.text, e.valence) for e in child.pending.events] == [
        ("The bank calls in the loan.", -0.5)
    ]
    earlier = sim.branch(0)
    assert earlier.queue == []  # its next round is another one
    for s in (child, earlier):
        s.close()
    sim.close()


def test_a_finished_runs_branch_goes_on_for_the_rounds_asked(mini: Scenario, store: SaveStore):
    sim = _played(mini, store, 2)
    stuck = sim.branch()
    assert stuck.finished and stuck.queue == []
    child = sim.branch(rounds=3)
    assert (child.round, child.total_rounds, child.finished) == (2, 5, False)
    child.inject("News.")
    asyncio.run(child.run())
    assert child.round == 5
    for s in (stuck, child, sim):
        s.close()


def test_cli_queue_lists_removes_and_refuses_a_bad_number(
    run_cli, mini: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    saves = tmp_path / "saves"
    monkeypatch.setenv("SOCIALSIM_SAVES", str(saves))
    monkeypatch.setenv("COLUMNS", "200")
    sim = _played(mini, SaveStore(saves), 1)
    name = sim.scenario.names[0]
    sim.inject(f"{name} lied to everyone.")
    sim.force(_force(sim))
    sim.close()
    listed = run_cli("queue", "base")
    assert listed.code == 0, listed.err
    assert listed.out.splitlines() == [
        f"1. force {name}: silent",
        f"2. event: {name} lied to everyone. (valence -1.00 read from the text; touches {name}; "
        f"implicates {name})",
    ]
    bad = run_cli("queue", "base", "--remove", "1", "--remove", "3")
    assert bad.code == 2 and bad.err.startswith("socialsim: error: --remove 3")
    assert len(run_cli("queue", "base").out.splitlines()) == 2  # nothing half-done
    gone = run_cli("queue", "base", "--remove", "1")
    assert gone.code == 0 and gone.out.startswith(f"removed 1. force {name}: silent")
    assert run_cli("queue", "base", "--remove", "1").code == 0
    assert run_cli("queue", "base").out.strip() == "nothing queued for run 'base'"


def test_cli_branch_rounds_goes_on_past_the_end(
    run_cli, mini: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    saves = tmp_path / "saves"
    monkeypatch.setenv("SOCIALSIM_SAVES", str(saves))
    _played(mini, SaveStore(saves), 2).close()
    made = run_cli("branch", "base", "--at", "2", "--rounds", "2", "--run-id", "more")
    assert made.code == 0, made.err
    assert SaveStore(saves).read_meta("more").total_rounds == 4
    assert run_cli("resume", "more", "-q").code == 0


async def test_nothing_is_queued_during_the_last_round_for_the_round_after(
    mini: Scenario, store: SaveStore
):
    sim = Simulation.new(mini, seed=1, store=store, run_id="base", rounds=2)
    await sim.step()
    refused: list[str] = []

    def listener(event: object) -> None:  # a person injecting while the last round plays
        if getattr(event, "kind", "") == "round_started":
            try:
                sim.inject("Too late.")
            except RunFinishedError as err:
                refused.append(str(err))

    sim.subscribe(listener)
    await sim.step()
    assert sim.finished and sim.queue == []
    assert refused == [
        "run 'base' ends at round 2: nothing can be queued for round 3; "
        "extend it (resume --rounds N) or branch it"
    ]
    sim.close()
