"""LLM runs end to end: the real ``socialsim`` entry point, litellm and real HTTP to the
local OpenAI-compatible stub (tests/llm_stub.py). Nothing of ours is patched: assertions
are made on what the stub received and on the records saved on disk.

A network guard (module fixture ``net``) refuses every connection and name lookup that is
not on the loopback interface, and logs every connect, so "no network" is checked too.
"""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import contextlib
import csv
import io
import json
import random
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock
from llm_stub import FAULT_KINDS, StubLLM, _sentence

from engine import SaveStore, Simulation
from engine.core.exchanges import LLMCall, RoundUsage
from engine.core.rules import relation_triggers
from engine.core.state import RoundRecord
from tui import cli

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-secret-test"
ERROR = "socialsim: error: "
SCENARIO = "tavern"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")


# --------------------------------------------------------------------------- plumbing


@dataclass
class NetLog:
    """Every connect attempt (address) and everything the guard refused."""

    connects: list[Any] = field(default_factory=list)
    refused: list[Any] = field(default_factory=list)


@pytest.fixture(scope="module")
def net() -> Iterator[NetLog]:
    """Refuse non-loopback connections and name lookups for the whole module."""
    log = NetLog()
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(address: Any) -> None:
        if isinstance(address, tuple):  # AF_INET / AF_INET6; AF_UNIX paths are local
            log.connects.append(address)
            if address[0] not in LOOPBACK:
                log.refused.append(address)
                raise ConnectionRefusedError(f"test network guard: {address} is not loopback")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and name not in LOOPBACK:
            log.refused.append(name)
            raise socket.gaierror(socket.EAI_NONAME, f"test network guard: {name!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", connect)
        mp.setattr(socket.socket, "connect_ex", connect_ex)
        mp.setattr(socket, "getaddrinfo", getaddrinfo)
        mp.setenv("OPENAI_API_KEY", SECRET)  # must never reach the saves or the exports
        mp.setenv("COLUMNS", "250")
        mp.delenv("SOCIALSIM_SAVES", raising=False)
        for var in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
            mp.delenv(var, raising=False)
        yield log
    assert not log.refused, f"non-loopback network use: {log.refused}"


@dataclass
class Result:
    code: int
    out: str
    err: str


def socialsim(*args: str) -> Result:
    """Call the console-script entry point in-process, capturing stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    with (
        pytest.MonkeyPatch.context() as mp,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        mp.setattr(sys, "argv", ["socialsim", *args])
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code
    assert isinstance(code, int | None), code
    return Result(code or 0, out.getvalue(), err.getvalue())


def clean_exit(result: Result) -> None:
    assert result.code == 0, result.err
    assert "Traceback" not in result.out + result.err


def one_error_line(result: Result) -> str:
    """The single ``socialsim: error: ...`` line of a refused command (exit code 2)."""
    assert result.code == 2, (result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(ERROR), result.err
    assert "Traceback" not in result.out + result.err
    return lines[0]


@dataclass
class Run:
    """A run played against its own stub; ``n_requests`` = stub requests it made."""

    run_id: str
    stub: StubLLM
    saves: Path
    result: Result
    n_requests: int

    @property
    def store(self) -> SaveStore:
        return SaveStore(self.saves)

    @property
    def dir(self) -> Path:
        return self.saves / self.run_id

    def records(self, run_id: str | None = None) -> list[RoundRecord]:
        return self.store.read_rounds(run_id or self.run_id)

    def requests(self) -> list[tuple[int, dict[str, Any]]]:
        """(stub call index, request body) of the requests this run made."""
        return list(enumerate(self.stub.requests[: self.n_requests]))


def llm_args(stub: StubLLM, saves: Path, run_id: str, rounds: int, *extra: str) -> list[str]:
    return [
        "run",
        SCENARIO,
        "--model",
        "openai/stub",
        "--api-base",
        stub.url,
        "--rounds",
        str(rounds),
        "--saves",
        str(saves),
        "--run-id",
        run_id,
        "--timeout",
        "2",
        *extra,
    ]


def play(stub: StubLLM, saves: Path, run_id: str, rounds: int, *extra: str) -> Run:
    result = socialsim(*llm_args(stub, saves, run_id, rounds, *extra))
    return Run(run_id, stub, saves, result, stub.calls)


@pytest.fixture(scope="module")
def saves(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("llm") / "saves"


@pytest.fixture
def stub(net: NetLog) -> Iterator[StubLLM]:
    with StubLLM(seed=5) as s:
        yield s


@pytest.fixture(scope="module")
def clean(net: NetLog, saves: Path) -> Iterator[Run]:
    """A fault-free 3-round run with the per-edge judge."""
    with StubLLM(seed=1) as s:
        yield play(s, saves, "clean", 3)


@pytest.fixture(scope="module")
def faulty(net: NetLog, saves: Path) -> Iterator[Run]:
    """A 3-round run with 20% injected faults; each kind is also served once up front."""
    faults = dict.fromkeys(FAULT_KINDS, 0.2 / len(FAULT_KINDS))
    with StubLLM(seed=7, faults=faults, hang_seconds=3) as s:
        # The first requests are the round-1 decisions (JSON, not streamed) and their
        # retries or re-asks: every fault kind applies to them.
        s.script(FAULT_KINDS)
        yield play(s, saves, "faulty", 3, "--timeout", "1", "--retries", "2", "-q")


def calls_of(records: list[RoundRecord]) -> list[LLMCall]:
    return [c for r in records for c in r.llm_calls]


def by_messages(calls: list[LLMCall]) -> dict[str, list[LLMCall]]:
    """Calls by their exact request messages (a request and its retries share them)."""
    index: dict[str, list[LLMCall]] = {}
    for c in calls:
        index.setdefault(json.dumps(c.messages), []).append(c)
    return index


def spoken(record: RoundRecord) -> list:
    return sorted((a for a in record.actions if a.order), key=lambda a: a.order)


def assert_state_in_range(records: list[RoundRecord]) -> None:
    for r in records:
        for agent in r.state.agents.values():
            assert 0.0 <= agent.emotion <= 1.0
            assert all(-1.0 <= rel.fav <= 1.0 for rel in agent.relations.values())
            assert all(0.0 <= n.current <= 10.0 for n in agent.needs.values())


def assert_unlocked(run_dir: Path) -> None:
    lock = FileLock(str(run_dir / ".lock"))
    lock.acquire(timeout=0)
    lock.release()


def files_containing(folder: Path, text: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


# --------------------------------------------------------------------------- 1. a clean run


def test_llm_run_end_to_end(clean: Run, tmp_path: Path, net: NetLog) -> None:
    clean_exit(clean.result)
    assert ("127.0.0.1", clean.stub.port) in net.connects  # the guard sees litellm's traffic
    header = clean.result.out.splitlines()[0]
    assert header.startswith("Tavern inheritance dispute — LLM openai/stub, seed 0, run clean")
    assert "clean: round 3/3 saved in" in clean.result.out
    assert "(openai/stub)" in clean.result.out
    assert sorted(p.name for p in (clean.dir / "rounds").iterdir()) == [
        f"{n:06d}.json.gz" for n in range(4)
    ]

    records = clean.records()
    names = records[0].state.agents.keys()
    assert records[0].llm_calls == [] and records[0].usage is None
    for r in records[1:]:
        t = f"r{r.round:04d}"
        speakers = spoken(r)
        base = {f"{t}:{p}:{n}" for p in ("decide", "emotion", "needs") for n in names}
        base |= {f"{t}:speak:{a.speaker}" for a in speakers}
        base |= {
            f"{t}:relation:{n}:{other}"
            for n in names
            for other in relation_triggers(n, speakers, list(names))
        }
        keys = [c.key for c in r.llm_calls]
        assert len(keys) == len(set(keys))
        assert base <= set(keys), base - set(keys)
        # The stub ignores the decision's mode/target rule, so some decisions are re-asked.
        for c in r.llm_calls:
            if c.key not in base:
                assert c.key.endswith(":reask") and c.key.removesuffix(":reask") in base
        reasked = {c.key for c in r.llm_calls if c.outcome == "reasked"}
        assert {k for k in keys if k.endswith(":reask")} == {f"{k}:reask" for k in reasked}
        assert all(c.purpose == "decide" for c in r.llm_calls if c.outcome == "reasked")
        for c in r.llm_calls:
            assert c.model == "openai/stub" and c.attempts == 1 and c.response
            assert c.prompt_tokens > 0 and c.completion_tokens > 0 and c.latency_s > 0
            assert "[socialsim:" not in c.messages[0]["content"]  # no marker the model sees
            assert c.structured == ("text" if c.purpose == "speak" else "json_schema")
        assert r.usage == RoundUsage.of(r.llm_calls, "per-edge", r.usage.shared_prefix)
        assert r.usage.calls == len(r.llm_calls) and r.usage.errors == 0
        assert len(r.relation_changes) <= sum(k.startswith(f"{t}:relation:") for k in keys)
        speak = {c.agent: c for c in r.llm_calls if c.purpose == "speak"}
        assert {a.speaker: a.utterance for a in speakers} == {
            a: c.response.strip() for a, c in speak.items()
        }
    assert_state_in_range(records)

    # Every HTTP request is one recorded exchange with the very same messages.
    calls = calls_of(records)
    requests = clean.requests()
    assert len(requests) == len(calls) == sum(c.attempts for c in calls)
    index = by_messages(calls)
    assert all(len(v) == 1 for v in index.values())
    for n, (_, body) in enumerate(requests):
        (call,) = index[json.dumps(body["messages"])]
        # Speech streams; so does every structured reply after the model's first exchange
        # (an api_base server's replies are streamed for the idle timeout).
        assert body["model"] == "stub"
        assert bool(body.get("stream")) == (call.purpose == "speak" or n > 0)
        assert ("response_format" in body) == (call.structured == "json_schema")

    # The utterances are exactly the sentences the stub streamed.
    streamed = [
        _sentence(random.Random(f"{clean.stub.seed}/{i}/content"))
        for i, body in requests
        if body.get("stream") and "response_format" not in body
    ]
    utterances = [a.utterance for r in records for a in spoken(r)]
    assert streamed and Counter(utterances) == Counter(streamed)

    # The app header shows the model and the run's usage.
    from tui.widgets.header import header_text

    with Simulation.resume("clean", clean.store) as sim:
        top, bottom = header_text(sim, running=False).plain.splitlines()
    assert "round 3/3" in top
    assert bottom.startswith(f"LLM openai/stub · schema {len(calls)} calls ")

    # Exports: one row per exchange and per round; no API key anywhere.
    out = tmp_path / "export"
    clean_exit(socialsim("export", "clean", "--saves", str(clean.saves), "--out", str(out)))
    with (out / "llm_calls.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["key"] for r in rows] == [c.key for c in calls]
    with (out / "usage.csv").open() as fh:
        usage = list(csv.DictReader(fh))
    assert [(u["round_no"], int(u["calls"])) for u in usage] == [
        (str(r.round), len(r.llm_calls)) for r in records[1:]
    ]
    assert files_containing(clean.dir, SECRET) == []
    assert files_containing(out, SECRET) == []
    assert SECRET not in clean.result.out + clean.result.err


# --------------------------------------------------------------------------- 2. batched judge


def test_batched_judge_one_call_per_observer(net: NetLog, saves: Path, stub: StubLLM) -> None:
    run = play(stub, saves, "batched", 2, "--judge-mode", "batched", "-q")
    clean_exit(run.result)
    records = run.records()
    assert run.store.read_meta("batched").llm.judge_mode == "batched"
    triggered = 0
    for r in records[1:]:
        names = list(r.state.agents)
        # One unified judge call per observer: emotion, every triggered edge and the needs.
        assert not [c for c in r.llm_calls if c.purpose in ("relation", "emotion", "needs")]
        judged = {
            c.agent: c for c in r.llm_calls if c.purpose == "judge" and not c.key.endswith(":reask")
        }
        assert set(judged) == set(names)
        expected = {n: relation_triggers(n, spoken(r), names) for n in names}
        for n, call in judged.items():
            assert call.key == f"r{r.round:04d}:judge:{n}"
            for other in expected[n]:
                assert f"Toward {other}:" in call.messages[1]["content"]
            triggered += bool(expected[n])
        assert r.usage is not None and r.usage.judge_mode == "batched"
        assert r.usage == RoundUsage.of(r.llm_calls, "batched", r.usage.shared_prefix)
    assert triggered > 0
    assert run.n_requests == sum(c.attempts for c in calls_of(records))
    assert_state_in_range(records)


# --------------------------------------------------------------------------- 3. faults


def test_faulty_run_completes_and_records_every_fault(faulty: Run) -> None:
    clean_exit(faulty.result)
    records = faulty.records()
    assert [r.round for r in records] == [0, 1, 2, 3]
    assert_state_in_range(records)
    stub = faulty.stub
    served = Counter(f for f in stub.fault_log[: faulty.n_requests] if f)
    assert set(served) == set(FAULT_KINDS) and sum(served.values()) >= 10, served

    calls = calls_of(records)
    # Every request the stub answered (or hung on) is an attempt of a recorded exchange.
    assert faulty.n_requests == sum(c.attempts for c in calls)
    index = by_messages(calls)
    for i, body in faulty.requests():
        kind = stub.fault_log[i]
        candidates = index.get(json.dumps(body["messages"]), [])
        assert candidates, f"request {i} ({kind}) is not in the record"
        if kind is None:
            continue
        if kind in ("500", "429", "timeout"):
            assert any(c.attempts > 1 or c.outcome == "fallback" for c in candidates), (i, kind)
        elif kind == "malformed":
            assert any(c.outcome in ("repaired", "reasked", "fallback") for c in candidates)
        elif kind == "schema":
            assert any(
                c.outcome in ("reasked", "fallback")
                and json.loads(c.response or "null") is not None  # JSON, even "{}"
                for c in candidates
            ), (i, kind)
        else:  # empty
            assert any(c.response == "" for c in candidates), (i, kind)
    for r in records[1:]:
        assert r.usage == RoundUsage.of(r.llm_calls, "per-edge", r.usage.shared_prefix)
        keys = {c.key for c in r.llm_calls}
        actions = {a.speaker: a for a in r.actions}
        for c in r.llm_calls:
            if c.outcome == "reasked":
                assert f"{c.key}:reask" in keys
            if c.response is None:  # no reply after the retries: a default was used
                assert c.outcome == "fallback" and c.error
            if c.purpose == "speak" and c.outcome == "fallback":  # failed or empty: silence
                assert actions[c.agent].mode == "silent" and actions[c.agent].utterance == ""
                assert actions[c.agent].intent == "(no utterance: silent)"
    totals = [r.usage for r in records[1:] if r.usage]
    assert sum(u.retries for u in totals) > 0
    assert sum(u.reasks + u.repairs for u in totals) > 0


# --------------------------------------------------------------------------- 4. replay


@pytest.mark.parametrize("which", ["clean", "faulty"])
def test_replay_is_identical_and_offline(
    which: str, request: pytest.FixtureRequest, net: NetLog
) -> None:
    run: Run = request.getfixturevalue(which)
    calls_before, connects_before = run.stub.calls, len(net.connects)
    new_id = f"{which}-replay"
    result = socialsim("replay", run.run_id, "--saves", str(run.saves), "--run-id", new_id)
    clean_exit(result)
    assert result.out.strip().endswith("no network calls; identical state")
    assert run.stub.calls == calls_before  # zero HTTP requests
    assert len(net.connects) == connects_before  # not even a connection attempt

    old, new = run.records(), run.records(new_id)
    assert f"from {sum(len(r.llm_calls) for r in old)} recorded LLM exchanges" in result.out
    assert [r.state for r in new] == [r.state for r in old]
    assert [r.actions for r in new] == [r.actions for r in old]

    def kept(r: RoundRecord) -> list[tuple]:
        return [(c.key, c.outcome, c.response, c.attempts, c.error) for c in r.llm_calls]

    assert [kept(r) for r in new] == [kept(r) for r in old]


# --------------------------------------------------------------------------- 5. budget


def test_max_calls_stops_cleanly_and_resume_respects_the_cap(
    net: NetLog, saves: Path, stub: StubLLM
) -> None:
    run = play(stub, saves, "capped", 3, "--max-calls", "30")
    clean_exit(run.result)
    records = run.records()
    done = records[-1].round
    per_round = [len(r.llm_calls) for r in records[1:]]
    assert done < 3 and sum(per_round[:-1]) < 30 <= sum(per_round)
    total = sum(per_round)
    *phases, stopped = run.result.err.strip().splitlines()  # piped: a line per phase, then
    assert stopped == (
        f"socialsim: stopped: {total} LLM calls reached --max-calls 30; the save holds round {done}"
    )
    assert len(phases) == 3 * done and all(line.startswith("round ") for line in phases)
    assert f"capped: round {done}/3 saved in" in run.result.out
    # The save is intact, readable and unlocked.
    clean_exit(socialsim("show", "capped", "--saves", str(saves)))
    assert_unlocked(run.dir)
    assert stub.calls == run.n_requests == total

    before = sorted(p.name for p in (run.dir / "rounds").iterdir())
    refused = one_error_line(socialsim("resume", "capped", "--saves", str(saves), "-q"))
    assert f"{total} LLM calls reached --max-calls 30" in refused
    assert stub.calls == total  # refused before any request
    assert sorted(p.name for p in (run.dir / "rounds").iterdir()) == before

    more = socialsim(
        "resume", "capped", "--saves", str(saves), "--max-calls", "1000", "--rounds", "1", "-q"
    )
    clean_exit(more)
    assert more.err == ""
    records = run.records()
    assert records[-1].round == done + 1
    assert stub.calls == total + len(records[-1].llm_calls)
    assert run.store.read_meta("capped").llm.max_calls == 1000

    # A cap lowered after the fact refuses to play on, but the recorded rounds still replay.
    lowered = socialsim(
        "resume", "capped", "--saves", str(saves), "--max-calls", "5", "--rounds", "1", "-q"
    )
    assert "reached --max-calls 5" in one_error_line(lowered)
    calls = stub.calls
    replay = socialsim("replay", "capped", "--saves", str(saves), "--run-id", "capped-replay")
    clean_exit(replay)
    assert "identical state" in replay.out and stub.calls == calls


# --------------------------------------------------------------------------- 6. json_schema refused


def test_rejected_json_schema_switches_to_json_object_with_the_schema(
    net: NetLog, saves: Path
) -> None:
    with StubLLM(seed=3, rejects={"json_schema"}, server="llama.cpp") as stub:  # llama-cpp-python
        run = play(stub, saves, "rejecting", 2, "-q")
        clean_exit(run.result)
        records = run.records()
        rejected = [i for i, f in enumerate(stub.fault_log) if f == "rejected"]
        formats = [body.get("response_format", {}).get("type") for _, body in run.requests()]
        # Only the probe (the model's first exchange, a round-1 decision, sent alone) is
        # refused; every other request, utterances included (held to a JSON string by the
        # grammar), asks for json_object carrying the schema.
        assert rejected == [i for i, f in enumerate(formats) if f == "json_schema"] == [0]
        assert set(formats[1:]) == {"json_object"}
        first_wave = set()
        for i in rejected:
            system, user = (m["content"] for m in stub.requests[i]["messages"])
            assert "\nNow:\nRound 1 of " in user and "Phase 1: decide" in user
            first_wave.add(system)
        assert len(first_wave) == len(rejected)  # one agent each

        calls = calls_of(records)
        marked = [c for c in calls if c.key.endswith(":rejected")]
        assert len(marked) == len(rejected)
        keys = {c.key: c for c in calls}
        for c in marked:
            assert c.key.startswith("r0001:decide:") and c.outcome == "error"
            assert c.structured == "json_schema" and c.response is None
            assert "response_format" in (c.error or "")
            retried = keys[c.key.removesuffix(":rejected")]
            assert retried.structured == "json_object_schema" and retried.response
        rest = [c for c in calls if c not in marked]
        assert {c.structured for c in rest} == {"json_object_schema"}  # utterances too
        assert stub.calls == sum(c.attempts for c in calls)
        assert records[-1].round == 2

        before = stub.calls
        replay = socialsim("replay", "rejecting", "--saves", str(saves), "--run-id", "rej-rp")
        clean_exit(replay)
        assert "identical state" in replay.out and stub.calls == before


# --------------------------------------------------------------------------- 7. bad input


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("case", "args", "message"),
    [
        ("unknown-model", ["--model", "foo"], "--model 'foo': unknown model or provider"),
        ("missing-key", ["--model", "gpt-4o-mini"], "set OPENAI_API_KEY in the environment"),
        (
            "unreachable",
            ["--model", "openai/stub", "--api-base", "CLOSED", "--retries", "0"],
            "openai/stub: cannot reach http://127.0.0.1:",
        ),
        (
            "unknown-agent",
            ["--model", "openai/stub", "--agent-model", "Nobody=x"],
            "--agent-model 'Nobody=x': no agent 'Nobody'",
        ),
        ("agent-model-form", ["--model", "openai/stub", "--agent-model", "Nell"], "NAME=MODEL"),
        ("offline-api-base", ["--api-base", "http://127.0.0.1:1/v1"], "need an LLM --model"),
        ("judge-mode", ["--model", "openai/stub", "--judge-mode", "all"], "--judge-mode: "),
    ],
)
def test_bad_llm_input_is_one_clean_line(
    case: str,
    args: list[str],
    message: str,
    net: NetLog,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if case == "missing-key":
        monkeypatch.delenv("OPENAI_API_KEY")
    args = [f"http://127.0.0.1:{closed_port()}/v1" if a == "CLOSED" else a for a in args]
    saves = tmp_path / "saves"
    run_id = f"bad-{case}"
    result = socialsim(
        "run", SCENARIO, "--rounds", "2", "--saves", str(saves), "--run-id", run_id, "-q", *args
    )
    assert message in one_error_line(result)
    assert result.out == ""
    # No run is left behind: one the server failed before its first round is removed.
    assert not (saves / run_id).exists()
    assert not saves.exists() or not [p for p in saves.iterdir() if p.name != ".trials"]
    if case == "unreachable":
        assert f"no round was played, so run {run_id} was not kept" in result.err


# --------------------------------------------------------------------------- 8. start-up


def test_help_and_offline_run_never_import_litellm(tmp_path: Path) -> None:
    probe = (
        "import sys\nfrom tui import cli\nsys.argv = ['socialsim', *sys.argv[1:]]\n"
        "try:\n    cli.main()\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n"
        "    code = 0\nprint('PROBE', code, 'litellm' in sys.modules)\n"
    )
    env = {**os.environ, "SOCIALSIM_SAVES": str(tmp_path / "saves"), "COLUMNS": "200"}
    commands = [["--help"], ["run", "hospital", "--rounds", "1", "-q"]]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", probe, *argv],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in commands
    ]
    for argv, proc in zip(commands, procs, strict=True):
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out.strip().splitlines()[-1] == "PROBE 0 False", (argv, out, err)
    assert (tmp_path / "saves").is_dir()


# --------------------------------------------------------------------------- 9. branches


def test_branch_copies_the_record_and_resumes_with_new_calls_only(clean: Run) -> None:
    saves = str(clean.saves)
    clean_exit(socialsim("branch", "clean", "--at", "1", "--run-id", "clean-b1", "--saves", saves))
    original, branch = clean.records(), clean.records("clean-b1")
    assert [r.round for r in branch] == [0, 1]
    assert branch == original[:2]  # round 1 with its recorded exchanges and usage
    assert branch[1].llm_calls

    before = clean.stub.calls
    clean_exit(socialsim("resume", "clean-b1", "--saves", saves, "-q"))
    branch = clean.records("clean-b1")
    assert [r.round for r in branch] == [0, 1, 2, 3]
    assert branch[1] == original[1]
    new_calls = calls_of(branch[2:])
    assert clean.stub.calls - before == len(new_calls) == sum(c.attempts for c in new_calls)
    index = by_messages(new_calls)
    for body in clean.stub.requests[before:]:
        assert json.dumps(body["messages"]) in index  # only rounds 2 and 3 were asked
    assert all(c.key.startswith(("r0002:", "r0003:")) for c in new_calls)


# --------------------------------------------------------------------------- 10. mixed team


def test_agent_model_plays_one_agent(net: NetLog, saves: Path, stub: StubLLM) -> None:
    run = play(stub, saves, "mixed", 2, "--agent-model", "Nell=openai/other")
    clean_exit(run.result)
    assert "LLM openai/stub (mixed team)" in run.result.out.splitlines()[0]
    assert run.store.read_meta("mixed").llm.agent_models == {"Nell": "openai/other"}
    calls = calls_of(run.records())
    index = by_messages(calls)
    nell = Counter()
    for _, body in run.requests():
        (call,) = index[json.dumps(body["messages"])]
        plays_nell = call.agent == "Nell" and call.purpose in ("decide", "speak")
        assert call.model == ("openai/other" if plays_nell else "openai/stub")
        assert body["model"] == ("other" if plays_nell else "stub")
        nell[call.purpose] += plays_nell
    assert nell["decide"] >= 2  # one decision per round (re-asks go to the same model)
    judged = [c for c in calls if c.agent == "Nell" and c.purpose in ("emotion", "needs")]
    assert judged and {c.model for c in judged} == {"openai/stub"}


# --------------------------------------------------------------------------- secrets


def test_no_api_key_in_any_save(clean: Run, faulty: Run, saves: Path) -> None:
    """Every run of this module (and its replays, branches) was played with the key set."""
    assert len([p for p in saves.iterdir() if p.is_dir()]) >= 2
    assert os.environ["OPENAI_API_KEY"] == SECRET
    assert files_containing(saves, SECRET) == []
