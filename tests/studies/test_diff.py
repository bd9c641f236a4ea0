"""engine.studies.diff: where two runs part, and how far apart their states and transcripts are."""

from __future__ import annotations

import asyncio

import pytest
from cast import count_reads

from engine import (
    ForcedAction,
    Mode,
    SaveStore,
    Scenario,
    Simulation,
    SocialsimError,
    resolve_scenario,
)
from engine.errors import SaveError
from engine.saves.runfiles import RunFiles
from engine.studies.diff import (
    RunComparison,
    copied_prefix,
    lineage_note,
    round_of,
    same_round,
    same_state,
    transcript,
)
from tui.diff_text import signed

INSULT = "You are a liar and a thief, and you wrecked this committee."


def play(sim: Simulation, rounds: int) -> Simulation:
    asyncio.run(sim.run(rounds))
    return sim


def new_run(store: SaveStore, scenario: Scenario, run_id: str, rounds: int = 0) -> Simulation:
    return play(Simulation.new(scenario, seed=3, store=store, run_id=run_id), rounds)


def test_a_branch_with_an_intervention_parts_the_round_after_the_fork(store: SaveStore) -> None:
    bullying = resolve_scenario("bullying")
    parent = new_run(store, bullying, "parent", 4)
    child = play(parent.branch(2, run_id="child", intervention="neglect"), 2)
    parent.close()
    child.close()
    diff = RunComparison(store, "parent", "child")
    assert diff.first_divergence == 3
    assert diff.default_round() == 3
    assert diff.lineage() == "B branched from A at round 2"
    assert RunComparison(store, "child", "parent").lineage() == "A branched from B at round 2"
    # The intervention's event is in B's transcript of round 3 and not in A's.
    rd = diff.round_diff(3)
    events_b = [t.text for t in rd.transcript_b if t.speaker is None]
    events_a = [t.text for t in rd.transcript_a if t.speaker is None]
    assert any("Ms. Hale glances" in text for text in events_b)
    assert not any("Ms. Hale glances" in text for text in events_a)
    # EduMirror's needs move: differences per agent and need, largest first, none below 0.005.
    last = diff.round_diff(4)
    a, b = store.read_round("parent", 4).state, store.read_round("child", 4).state
    moved = {name: p.need_deltas() for name, p in last.people.items() if p.need_deltas()}
    assert moved
    for name, deltas in moved.items():
        assert [abs(d) for _, d in deltas] == sorted((abs(d) for _, d in deltas), reverse=True)
        for need, delta in deltas:
            expected = b.agents[name].needs[need].current - a.agents[name].needs[need].current
            assert delta == pytest.approx(expected) and abs(delta) >= 0.005


def test_an_injected_event_on_a_branch_parts_at_the_next_round(
    store: SaveStore, mini: Scenario
) -> None:
    parent = new_run(store, mini, "p", 4)
    child = parent.branch(1, run_id="c")
    child.inject("The treasurer resigns.")
    play(child, 3)
    diff = RunComparison(store, "p", "c")
    assert diff.first_divergence == 2
    assert diff.last_common == 4
    before = diff.round_diff(1)
    assert before.mean_abs_fav() == 0 and before.largest() is None
    assert all(p.emotion_delta == 0 and not p.need_deltas() for p in before.people.values())


def test_a_branch_played_on_unchanged_never_parts(store: SaveStore, mini: Scenario) -> None:
    parent = new_run(store, mini, "p", 4)
    play(parent.branch(2, run_id="c"), 1)
    diff = RunComparison(store, "p", "c")
    assert diff.first_divergence is None
    assert diff.last_common == 3  # the branch has rounds 0..3, the parent 0..4
    assert diff.default_round() == 3
    assert list(diff.profile()) == []
    same = RunComparison(store, "p", "p")
    assert same.first_divergence is None and same.last_common == 4


def test_two_arms_of_a_trial_share_round_zero(store: SaveStore, mini: Scenario) -> None:
    new_run(store, mini, "control", 3)
    treated = new_run(store, mini, "treated")
    treated.inject("A storm tears off the roof.", ["Bob"])
    treated.force(ForcedAction(agent="Ann", mode=Mode.PUBLIC, target="Bob", utterance=INSULT))
    play(treated, 3)
    diff = RunComparison(store, "control", "treated")
    assert diff.lineage() == "independent runs"
    assert diff.first_divergence == 1
    first = (round_of(store.history(run), 0) for run in ("control", "treated"))
    assert same_round(*first)
    rd = diff.round_diff(3)
    a, b = store.read_round("control", 3).state, store.read_round("treated", 3).state
    for (i, j), edge in rd.edges.items():
        assert edge.fav_a == a.agents[i].relations[j].fav
        assert edge.delta == pytest.approx(b.agents[i].relations[j].fav - edge.fav_a)
    assert len(rd.edges) == 6  # 3 agents, directed, no self edges
    for name, person in rd.people.items():
        assert person.emotion_delta == pytest.approx(
            b.agents[name].emotion - a.agents[name].emotion
        )
        for need, delta in person.need_deltas():
            expected = b.agents[name].needs[need].current - a.agents[name].needs[need].current
            assert delta == pytest.approx(expected)
    assert rd.mean_abs_fav() > 0
    profile = {n: (mean, top) for n, mean, top in diff.profile()}
    assert list(profile) == [1, 2, 3]
    assert profile[3][0] == pytest.approx(rd.mean_abs_fav())
    assert profile[3][1] == max(abs(e.delta) for e in rd.edges.values())
    # The private event is in the treated run's transcript of round 1, marked private.
    (event,) = [
        t for t in diff.round_diff(1).transcript_b if t.speaker is None and "storm" in t.text
    ]
    assert event.private_to == ("Bob",)


def test_states_are_compared_as_their_models_are(store: SaveStore, mini: Scenario) -> None:
    """Equal whatever the agents' order or the rings' widths; a single memory slot, a
    status or a need apart is a difference."""
    import dataclasses

    import numpy as np

    play(new_run(store, mini, "p"), 3)
    _, state = round_of(store.history("p"), 3)
    assert state.world() == store.read_round("p", 3).state
    order = [2, 0, 1]
    turned = dataclasses.replace(
        state,
        names=[state.names[k] for k in order],
        fav=state.fav[np.ix_(order, order)],
        status=state.status[np.ix_(order, order)],
        memory=np.pad(state.memory[np.ix_(order, order)], ((0, 0), (0, 0), (2, 0))),
        emotion=[state.emotion[k] for k in order],
        needs=[state.needs[k] for k in order],
        theta=[state.theta[k] for k in order],
        _index=None,
    )
    assert same_state(state, turned) and same_state(turned, state)
    filled = np.argwhere(state.memory > 0)
    i, j, k = filled[0]
    other = next(
        c
        for c in range(1, len(state.notes))
        if state.notes.summaries[c] != state.notes.summaries[state.memory[i, j, k]]
    )
    memory = state.memory.copy()
    memory[i, j, k] = other
    assert not same_state(state, dataclasses.replace(state, memory=memory, _index=None))
    status = state.status.copy()
    status[0, 1] = (status[0, 1] + 1) % 4
    assert not same_state(state, dataclasses.replace(state, status=status, _index=None))
    needs = [dict(n) for n in state.needs]
    name = next(iter(needs[1]))
    needs[1][name] = needs[1][name]._replace(current=needs[1][name].current + 0.5)
    assert not same_state(state, dataclasses.replace(state, needs=needs, _index=None))


def test_transcript_keeps_the_speaking_order(store: SaveStore, mini: Scenario) -> None:
    play(new_run(store, mini, "p"), 2)
    record = store.read_round("p", 2)
    turns = transcript(record)
    assert [t.text for t in turns[: len(record.events)]] == [e.text for e in record.events]
    spoken = sorted((a for a in record.actions if a.order is not None), key=lambda a: a.order)
    actions = turns[len(record.events) :]
    assert [t.speaker for t in actions[: len(spoken)]] == [a.speaker for a in spoken]
    assert {t.speaker for t in actions} == set(mini.names)
    assert all(t.mode == "silent" for t in actions[len(spoken) :])


def test_copied_rounds_come_from_the_lineage(store: SaveStore, mini: Scenario) -> None:
    root = new_run(store, mini, "root", 5)
    mid = play(root.branch(4, run_id="mid"), 0)
    leaf = mid.branch(2, run_id="leaf")
    sibling = root.branch(3, run_id="sibling")
    metas = {r: store.read_meta(r) for r in ("root", "mid", "leaf", "sibling")}
    assert copied_prefix(metas["root"], metas["leaf"]) == 2
    assert copied_prefix(metas["mid"], metas["leaf"]) == 2
    assert copied_prefix(metas["leaf"], metas["sibling"]) == 2
    assert copied_prefix(metas["mid"], metas["sibling"]) == 3
    assert lineage_note(metas["root"], metas["leaf"]) == "one descends from the other"
    assert lineage_note(metas["mid"], metas["sibling"]) == "both descend from root"
    for sim in (leaf, sibling):
        sim.close()


def test_the_divergence_search_skips_the_copied_rounds(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    long = mini.model_copy(update={"rounds": 12})
    parent = new_run(store, long, "p", 12)
    child = parent.branch(10, run_id="c")  # round 10: a keyframe in both runs
    child.inject("The hall is sold.")
    play(child, 1)
    reads: list[tuple[str, int]] = []
    read = RunFiles.read

    def counting(self: RunFiles, n: int, entry=None):
        reads.append((self.folder.name, n))
        return read(self, n, entry)

    monkeypatch.setattr(RunFiles, "read", counting)
    diff = RunComparison(store, "p", "c")
    assert diff.first_divergence == 11
    # Round 10 to check the lineage, then round 11 rolled on from it: never rounds 0..9.
    assert sorted(set(reads)) == [("c", 10), ("c", 11), ("p", 10), ("p", 11)]


def test_a_parent_replaced_under_the_same_id_is_compared_from_round_0(
    store: SaveStore, mini: Scenario
) -> None:
    parent = new_run(store, mini, "p", 3)
    play(parent.branch(2, run_id="c"), 1).close()
    parent.close()
    store.delete("p")
    impostor = new_run(store, mini, "p")  # same id and scenario, another first round
    impostor.force(ForcedAction(agent="Ann", mode=Mode.PUBLIC, target="Bob", utterance=INSULT))
    play(impostor, 3)
    diff = RunComparison(store, "p", "c")
    assert copied_prefix(diff.meta_a, diff.meta_b) == 2  # what the lineage claims
    assert diff.first_divergence == 1


def test_rounds_shown_are_kept_not_read_again(
    store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_run(store, mini, "a", 5)
    new_run(store, mini, "b", 5)
    diff = RunComparison(store, "a", "b")
    first = diff.round_diff(4)
    reads = count_reads(monkeypatch)
    assert diff.round_diff(3).round == 3 and reads
    reads.clear()
    assert diff.round_diff(4) is first and diff.round_diff(3).round == 3
    assert reads == []


def test_rounds_outside_both_runs_are_refused(store: SaveStore, mini: Scenario) -> None:
    new_run(store, mini, "a", 3)
    new_run(store, mini, "b", 1)
    diff = RunComparison(store, "a", "b")
    assert diff.round_diff(1).round == 1
    for bad in (-1, 2):
        with pytest.raises(SocialsimError, match=r"both have rounds 0\.\.1"):
            diff.round_diff(bad)


def test_unknown_runs_and_foreign_casts_are_errors(
    store: SaveStore, mini: Scenario, mini_data: dict
) -> None:
    new_run(store, mini, "a")
    with pytest.raises(SaveError, match="no run 'ghost'"):
        RunComparison(store, "a", "ghost")
    for agent in mini_data["agents"]:
        agent["name"] += "x"
    from engine.core.scenario import parse_scenario

    mini_data["relations"] = []
    mini_data["factions"] = {}
    mini_data["events"] = []
    other = parse_scenario(mini_data, "other")
    new_run(store, other, "b")
    with pytest.raises(SocialsimError, match="share no agents"):
        RunComparison(store, "a", "b")


# -- socialsim diff ---------------------------------------------------------------------------


@pytest.fixture
def pair(store: SaveStore, mini: Scenario, monkeypatch: pytest.MonkeyPatch) -> SaveStore:
    """Runs "p" (rounds 0..4) and its branch "c" at round 1 with a forced insult (0..3)."""
    monkeypatch.setenv("COLUMNS", "200")
    parent = new_run(store, mini, "p", 4)
    child = parent.branch(1, run_id="c")
    child.force(ForcedAction(agent="Ann", mode=Mode.PUBLIC, target="Bob", utterance=INSULT))
    play(child, 2)
    parent.close()
    child.close()
    return store


def test_cli_diff_prints_the_first_divergence_and_its_round(run_cli, pair: SaveStore) -> None:
    result = run_cli("diff", "p", "c", "--saves", str(pair.root))
    assert result.code == 0, result.err
    out = result.out
    assert "B branched from A at round 1" in out
    assert "first divergence: round 2" in out
    assert "Round 2 (Δ = B − A)" in out
    rd = RunComparison(pair, "p", "c").round_diff(2)
    # The heatmap row of Bob (who was insulted; his faction's code first) has his differences.
    row = next(line for line in out.splitlines() if line.startswith("ME Bob "))
    assert row.split()[2:] == [
        "—"
        if j == "Bob"
        else signed(rd.edges[("Bob", j)].delta)
        + ("*" if rd.edges[("Bob", j)].status_a != rd.edges[("Bob", j)].status_b else "")
        for j in rd.agents
    ]
    assert rd.edges[("Bob", "Ann")].delta < 0
    assert INSULT[:30] in out  # B's transcript of round 2, beside A's
    assert "≠" in out


def test_cli_diff_round_option(run_cli, pair: SaveStore) -> None:
    result = run_cli("diff", "p", "c", "--round", "0", "--saves", str(pair.root))
    assert result.code == 0 and "Round 0 (Δ = B − A)" in result.out
    assert INSULT[:30] not in result.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["p", "ghost"], "no run 'ghost'"),
        (["p", "c", "--round", "4"], "--round 4: runs 'p' and 'c' both have rounds 0..3"),
        (["p", "c", "--round", "-1"], "--round -1"),
        (["p", "../c"], "not a plain name"),
    ],
)
def test_cli_diff_bad_input_is_one_line(
    run_cli, pair: SaveStore, args: list[str], message: str
) -> None:
    result = run_cli("diff", *args, "--saves", str(pair.root))
    assert result.code == 2 and result.out == ""
    (line,) = result.err.strip().splitlines()
    assert line.startswith("socialsim: error: ") and message in line


def test_cli_diff_of_identical_runs(run_cli, store: SaveStore, mini: Scenario) -> None:
    parent = new_run(store, mini, "p", 3)
    play(parent.branch(1, run_id="c"), 2)
    result = run_cli("diff", "p", "c", "--saves", str(store.root))
    assert result.code == 0
    assert "no divergence: the runs are identical over rounds 0..3" in result.out
    assert "Round 3 (Δ = B − A)" in result.out


def test_signed_differences_read_without_colour() -> None:
    assert [signed(d) for d in (0.0, -0.001, 0.004, -0.3, 0.12, 1.2, -2.0)] == [
        "·",
        "·",
        "·",
        "-.30",
        "+.12",
        "+1.2",
        "-2.0",
    ]
