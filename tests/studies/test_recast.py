"""The casting controller (Sociodrama Sec. 4, Algorithm 1): majority vote, the three
stopping rules, saved episodes, and the ``socialsim tasks`` / ``socialsim recast`` commands.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult

from engine import Archetype, SaveStore, SocialsimError
from engine.saves.runmeta import ExperimentLink, TaskOutcome
from engine.studies.tasks.controller import MAX_RECASTS, Session, majority, recast
from engine.studies.tasks.diagnosis import Evidence, Proposal
from engine.studies.tasks.spec import AGENTS, Task, load_task, task_ids

A = Archetype
ERROR = "socialsim: error: "
EVIDENCE = Evidence(
    turns=2,
    rounds=4,
    attacks=0,
    opposed_by=0,
    emotion_start=0.5,
    emotion_end=0.5,
    emotion_low=0.5,
    registered=1.0,
    outgoing_fav=0.0,
    incoming_fav=0.0,
    incoming_change=0.0,
)


def run_json(saves: Path, run_id: str) -> dict:
    """The run's metadata exactly as stored in ``run.json``."""
    doc = json.loads((saves / run_id / "run.json").read_text(encoding="utf-8"))
    (meta,) = doc["run"].values()
    return meta


def tree(folder: Path) -> dict[str, bytes | None]:
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
    }


# -- majority vote ---------------------------------------------------------------------------


def run_of(*choices: Archetype | None, current: Archetype = A.RESERVED) -> list[Proposal]:
    """One run's proposals for Avery..Drew (None: keep)."""
    return [
        Proposal(
            agent=name,
            current=current,
            archetype=choice,
            rationale=f"{name} -> {choice.value if choice else 'keep'}",
            evidence=EVIDENCE,
        )
        for name, choice in zip(AGENTS, choices, strict=True)
    ]


def test_majority_vote_per_agent() -> None:
    runs = [
        run_of(A.ANALYTICAL, None, A.BALANCED, A.ANALYTICAL),
        run_of(A.ANALYTICAL, None, A.AGREEABLE, None),
        run_of(None, A.BALANCED, None, A.BALANCED),
        run_of(A.ANALYTICAL, None, A.BALANCED, A.AGREEABLE),
    ]
    votes = {v.agent: v for v in majority(runs)}
    assert [v.agent for v in majority(runs)] == list(AGENTS)
    # Clear majorities: Avery 3 of 4 analytical, Blake 3 of 4 keep, Casey 2 balanced
    # against 1 keep and 1 agreeable.
    assert (votes["Avery"].archetype, votes["Avery"].votes, votes["Avery"].of) == (
        A.ANALYTICAL,
        3,
        4,
    )
    assert votes["Avery"].rationale == "Avery -> analytical"
    assert (votes["Blake"].archetype, votes["Blake"].votes) == (None, 3)
    assert votes["Blake"].rationale == "Blake -> keep"
    assert (votes["Casey"].archetype, votes["Casey"].votes) == (A.BALANCED, 2)
    # Drew: analytical, keep, balanced, agreeable -> a four-way tie with three different
    # recasts: keep.
    assert votes["Drew"].archetype is None
    assert votes["Drew"].current is A.RESERVED


def test_majority_tie_between_keep_and_one_recast_goes_to_the_recast() -> None:
    runs = [run_of(A.ANALYTICAL, None, None, None), run_of(None, None, None, None)]
    avery = majority(runs)[0]
    assert (avery.archetype, avery.votes, avery.of) == (A.ANALYTICAL, 1, 2)
    assert avery.rationale == "Avery -> analytical"


def test_majority_tie_between_two_recasts_keeps() -> None:
    runs = [run_of(A.ANALYTICAL, None, None, None), run_of(A.BALANCED, None, None, None)]
    avery = majority(runs)[0]
    assert avery.archetype is None
    # Nobody proposed keeping: the rationale says why it is kept, not why to recast.
    assert "analytical" in avery.rationale and "balanced" in avery.rationale
    assert "keep" in avery.rationale
    # Keep ties with two recasts: keep, with the keeping run's rationale.
    runs.append(run_of(None, None, None, None))
    avery = majority(runs)[0]
    assert (avery.archetype, avery.rationale) == (None, "Avery -> keep")


def test_majority_single_run() -> None:
    (avery, blake, *_) = majority([run_of(A.DOMINANT, None, None, None)])
    assert (avery.archetype, avery.votes, avery.of) == (A.DOMINANT, 1, 1)
    assert (blake.archetype, blake.votes, blake.of) == (None, 1, 1)


# -- the three stopping rules ---------------------------------------------------------------


async def test_target_reached_from_hetero_and_every_episode_is_saved(tmp_path: Path) -> None:
    saves = tmp_path / "saves"
    store = SaveStore(saves)
    task = load_task("student-council")
    seen: list[int] = []
    session = await recast(
        task, task.casting.hetero, 3, store=store, on_iteration=lambda it: seen.append(it.iteration)
    )
    assert isinstance(session, Session)
    assert session.stop == "target reached"
    assert seen == [it.iteration for it in session.iterations] == list(range(len(seen)))
    first, last = session.iterations[0], session.iterations[-1]
    assert first.casting == task.casting.hetero
    assert last.mean == 1.0 and last.utilities == [1.0, 1.0, 1.0] and last.sd == 0.0
    assert first.mean < 1.0  # the hetero casting does not solve it by itself
    # Each recast applies exactly the majority decisions of the iteration before.
    for before, after in zip(session.iterations, session.iterations[1:], strict=False):
        changes = {v.agent: v.archetype for v in before.decisions if v.archetype}
        assert changes
        expected = [changes.get(n, c) for n, c in zip(AGENTS, before.casting, strict=True)]
        assert after.casting == expected
    # The quiet holder Avery, withdrawn with her knowledge (her S falls while she keeps
    # silent, offline dynamics 2), is recast to the persona that puts evidence on the table.
    assert session.iterations[1].casting[0] is A.ANALYTICAL
    # Every episode of every iteration is a saved run linked to the session.
    runs = {p.name for p in saves.iterdir() if not p.name.startswith(".")}
    assert len(runs) == sum(len(it.run_ids) for it in session.iterations) == 3 * len(seen)
    for it in session.iterations:
        assert len(it.run_ids) == 3
        for e, run_id in enumerate(it.run_ids):
            meta = run_json(saves, run_id)
            link = ExperimentLink.model_validate(meta["experiment"])
            assert link == ExperimentLink(
                session=session.session, task=task.id, iteration=it.iteration, episode=e
            )
            outcome = TaskOutcome.model_validate(meta["outcome"])
            assert outcome.utility == it.utilities[e]
            assert outcome.casting == it.casting
            assert [a["archetype"] for a in meta["scenario"]["agents"]] == [
                a.value for a in it.casting
            ]
            assert meta["seed"] == e and meta["ablation"] is False
            assert meta["scenario_ref"] == "task:student-council"
            assert len(list((saves / run_id / "rounds").iterdir())) == task.rounds + 1


async def test_no_change_proposed_stops_after_one_iteration() -> None:
    task = load_task("nasa-moon")
    session = await recast(task, [A.ANALYTICAL] * 4, 2)
    assert session.stop == "no change proposed"
    (only,) = session.iterations
    assert only.mean < 0  # not at the target (L1 = 0), yet nobody is recast
    assert all(v.archetype is None for v in only.decisions)


def impossible_task(**changes: Any) -> Task:
    """A ranking whose answer no casting can reach: every fact favours the other item."""
    data: dict[str, Any] = {
        "id": "impossible",
        "title": "Impossible",
        "kind": "ranking",
        "utility": "top1",
        "description": "Pick A or B.",
        "rounds": 2,
        "casting": {"hetero": ["reserved"] * 4, "random": ["reserved"] * 4},
        "roles": {name: "member" for name in AGENTS},
        "items": ["A", "B"],
        "answer": "B",
        "facts": [
            {"text": "A is what everyone wants", "item": "A", "weight": 5.0},
            {"text": "B was late once", "item": "B", "weight": -1.0, "holders": ["Avery"]},
        ],
    }
    data.update(changes)
    return Task.model_validate(data)


async def test_an_unreachable_target_still_stops_offline() -> None:
    """With the offline diagnosis an analytical team is never recast again, so a session
    on an impossible task stops with "no change proposed" before the recast limit."""
    session = await recast(impossible_task(), [A.RESERVED] * 4, 2)
    assert session.stop == "no change proposed"
    assert all(u == 0.0 for it in session.iterations for u in it.utilities)
    assert len(session.iterations) <= MAX_RECASTS + 1


async def test_episodes_below_one_and_wrong_castings_are_errors(tmp_path: Path) -> None:
    task = load_task("student-council")
    saves = tmp_path / "saves"
    for episodes in (0, -2):
        with pytest.raises(SocialsimError, match="at least 1"):
            await recast(task, task.casting.hetero, episodes, store=SaveStore(saves))
    with pytest.raises(SocialsimError, match="4 archetypes"):
        await recast(task, [A.RESERVED] * 3, 1, store=SaveStore(saves))
    assert tree(saves) == {}


async def test_ablation_session_saves_ablation_runs(tmp_path: Path) -> None:
    saves = tmp_path / "saves"
    task = load_task("student-council")
    session = await recast(task, task.casting.hetero, 2, store=SaveStore(saves), ablation=True)
    assert session.ablation and session.stop is not None
    for it in session.iterations:
        for run_id in it.run_ids:
            meta = run_json(saves, run_id)
            assert meta["ablation"] is True and meta["outcome"] is not None


# -- three recasts: an LLM judge that always recasts ----------------------------------------
#
# The offline diagnosis never recasts an analytical agent again (task scenarios start
# neutral and the offline model never turns hostile), so it cannot drive a session to the
# recast limit. An LLM judge can: the local OpenAI-compatible stub plays the LLM, and its
# diagnosis answer recasts every agent to the next archetype of the library.

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
CYCLE = [a.value for a in Archetype]


@pytest.fixture
def stub_judge(monkeypatch: pytest.MonkeyPatch):
    """A running stub whose diagnosis always recasts everyone and whose agents always rank
    the items in file order; no network beyond the loopback interface."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and name not in LOOPBACK:
            raise socket.gaierror(socket.EAI_NONAME, f"test network guard: {name!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    from llm_stub import StubLLM, _message_text

    class JudgeStub(StubLLM):
        diagnoses = 0

        def answer(self, body: dict[str, Any]) -> str | None:
            text = "\n".join(_message_text(m) for m in body.get("messages") or [])
            if "You are the casting controller" in text:
                now = dict(re.findall(r"^- (\w+) \((\w+)\):", text, re.M))
                decisions = [
                    {
                        "agent": name,
                        "action": "recast",
                        "archetype": CYCLE[(CYCLE.index(now[name]) + 1) % len(CYCLE)],
                        "rationale": f"{name} should try the next archetype.",
                    }
                    for name in AGENTS
                ]
                type(self).diagnoses += 1
                return json.dumps({"decisions": decisions})
            if "Rank ALL the options" in text:
                return json.dumps({"ranking": ["A", "B"]})
            return None

    with JudgeStub(seed=3) as stub:
        yield stub


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_three_recasts_then_stop(stub_judge, tmp_path: Path) -> None:
    from engine.llm.settings import LLMSettings

    saves = tmp_path / "saves"
    task = impossible_task(rounds=1)
    llm = LLMSettings(model="openai/stub", api_base=stub_judge.url, retries=0, timeout=5)
    try:
        session = await recast(task, [A.RESERVED] * 4, 1, mind=llm, store=SaveStore(saves))
    finally:
        from engine.llm.transport import close_clients

        await close_clients()  # as the CLI does before its event loop ends
    assert session.stop == "three recasts"
    assert len(session.iterations) == MAX_RECASTS + 1 == 4
    assert [it.casting for it in session.iterations] == [
        [Archetype(CYCLE[(CYCLE.index("reserved") + k) % len(CYCLE)])] * 4 for k in range(4)
    ]
    assert all(it.utilities == [0.0] for it in session.iterations)
    # Every iteration was diagnosed by the judge (no silent fallback to the rules) ...
    assert stub_judge.diagnoses == 4
    last = session.iterations[-1]
    assert all(v.archetype is not None for v in last.decisions)
    assert all(v.rationale.endswith("should try the next archetype.") for v in last.decisions)
    # ... and each iteration's episode is a saved LLM run linked to the session.
    for it in session.iterations:
        (run_id,) = it.run_ids
        meta = run_json(saves, run_id)
        assert meta["experiment"] == {
            "session": session.session,
            "task": "impossible",
            "iteration": it.iteration,
            "episode": 0,
        }
        assert meta["model"] == "openai/stub" and meta["outcome"]["utility"] == 0.0


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
async def test_llm_proposal_and_votes_are_questions_to_the_mind(stub_judge) -> None:
    """After the talk the negotiators' proposal and votes are asked of their models, seeing
    what they saw, and recorded under the keys replays look them up by."""
    from engine import Simulation
    from engine.llm.settings import LLMSettings
    from engine.llm.transport import close_clients
    from engine.minds.llm import LLMMind
    from engine.studies.tasks.episode import final_outcome, task_scenario

    task = load_task("solar-negotiation")
    casting = task.casting.hetero
    mind = LLMMind(LLMSettings(model="openai/stub", api_base=stub_judge.url, retries=0, timeout=5))
    sim = Simulation.new(task_scenario(task, casting), seed=0, mind=mind)
    try:
        outcome = await final_outcome(task, sim, None, casting)
    finally:
        await close_clients()
    calls = [c for c in mind.take_calls() if not c.key.endswith(":reask")]
    # Nobody has spoken yet: the first agent is the most active speaker and proposes.
    assert [(c.purpose, c.key, c.agent) for c in calls] == [
        ("propose", "final:propose:Avery", "Avery"),
        *(("vote", f"final:vote:{n}", n) for n in AGENTS),
    ]
    assert all(c.model == "openai/stub" and c.outcome == "ok" for c in calls)
    assert outcome.proposer == "Avery"
    assert outcome.proposal == json.loads(calls[0].response or "")
    assert outcome.votes == {c.agent: json.loads(c.response or "")["accept"] for c in calls[1:]}
    assert outcome.settled == all(outcome.votes.values())


# -- the command line -------------------------------------------------------------------------


Result = CliResult


@pytest.fixture
def socialsim(run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path):
    """Call the console-script entry point in-process: ``socialsim(*args) -> Result``."""
    monkeypatch.setenv("COLUMNS", "400")
    for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "SOCIALSIM_SAVES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)

    return run_cli


def test_tasks_lists_every_task(socialsim) -> None:
    result = socialsim("tasks")
    assert result.code == 0, result.err
    rows = {line.split()[0]: line for line in result.out.splitlines()[1:] if line.strip()}
    assert set(rows) == set(task_ids())
    council = rows["student-council"]
    assert "Student council hidden profile" in council and "top1" in council
    assert "reserved/dominant/analytical/agreeable" in council
    assert "neg-l1" in rows["nasa-moon"]


def test_recast_prints_every_iteration_and_the_stop_reason(socialsim, tmp_path: Path) -> None:
    saves = tmp_path / "runs"
    args = ("recast", "student-council", "--init", "hetero", "--episodes", "3")
    result = socialsim(*args, "--saves", str(saves))
    assert result.code == 0, result.err
    assert result.err == ""
    out = result.out
    assert "Student council hidden profile" in out and "3 episodes per casting" in out
    headers = [(k, c.strip()) for k, c in re.findall(r"^iteration (\d+): (.+)$", out, re.M)]
    assert headers[0] == ("0", "reserved / dominant / analytical / agreeable")
    assert [int(k) for k, _ in headers] == list(range(len(headers)))
    assert len(headers) >= 2
    utilities = re.findall(r"^utility (\S+) ± (\S+) over 3 episodes: (.+)$", out, re.M)
    assert len(utilities) == len(headers)
    for mean, sd, values in utilities:
        us = [float(u) for u in values.split(", ")]
        assert len(us) == 3 and float(mean) == pytest.approx(sum(us) / 3, abs=5e-4)
        assert float(sd) >= 0
    assert utilities[-1][0] == "1.000"
    # Each table lists the four agents with the proposal, the votes and the rationale; the
    # same session run in-process gives the same decisions.
    import asyncio

    task = load_task("student-council")
    session = asyncio.run(recast(task, task.casting.hetero, 3))
    assert [it.casting for it in session.iterations] == [
        [Archetype(a.strip()) for a in casting.split("/")] for _, casting in headers
    ]
    for it in session.iterations:
        for v in it.decisions:
            row = re.search(
                rf"^\W*{v.agent}\W+{v.current.value}\W+"
                rf"{v.archetype.value if v.archetype else 'keep'}\W+{v.votes}/{v.of}\W+(.+?)\W*$",
                out,
                re.M,
            )
            assert row, (v, out)
            assert v.rationale.rstrip(".") in out
    last = out.strip().splitlines()[-1]
    assert last.startswith("stopped: target reached. best casting ")
    assert "analytical / dominant / analytical / agreeable" in last and "utility 1.000" in last
    # Every episode was saved.
    runs = [p for p in saves.iterdir() if not p.name.startswith(".")]
    assert len(runs) == 3 * len(headers)


def test_recast_ablation(socialsim, tmp_path: Path) -> None:
    saves = tmp_path / "runs"
    result = socialsim(
        "recast", "student-council", "--init", "random", "-r", "1", "--ablation", "--saves",
        str(saves),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "ablation: w/o social dynamics" in result.out
    assert "iteration 0: reserved / analytical / dominant / agreeable" in result.out
    assert "stopped: " in result.out.strip().splitlines()[-1]
    metas = [run_json(saves, p.name) for p in saves.iterdir() if not p.name.startswith(".")]
    assert metas and all(m["ablation"] is True for m in metas)


def test_recast_accepts_an_explicit_casting(socialsim, tmp_path: Path) -> None:
    result = socialsim(
        "recast", "nasa-moon", "--init", "analytical,analytical,analytical,analytical",
        "--episodes", "1", "--saves", str(tmp_path / "runs"),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "iteration 0: analytical / analytical / analytical / analytical" in result.out
    assert result.out.strip().splitlines()[-1].startswith("stopped: no change proposed.")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["no-such-task"], "unknown task 'no-such-task'"),
        (["student-council", "--init", "reserved,oops,analytical,agreeable"], "unknown archetype"),
        (["student-council", "--init", "reserved,dominant"], "give 4 archetypes"),
        (["student-council", "--episodes", "0"], "--episodes 0: must be at least 1"),
    ],
    ids=["unknown-task", "unknown-archetype", "two-archetypes", "zero-episodes"],
)
def test_recast_bad_input_is_one_error_line_and_writes_nothing(
    socialsim, tmp_path: Path, args: list[str], fragment: str
) -> None:
    saves = tmp_path / "runs"
    before = tree(tmp_path)
    result = socialsim("recast", *args, "--saves", str(saves))
    assert result.code == 2, (result.out, result.err)
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR), result.err
    assert fragment in lines[0]
    assert "Traceback" not in result.out + result.err
    assert not saves.exists()
    assert tree(tmp_path) == before
