"""A scripted stub run where every kind of degenerate reply appears once (issue 37): each is
asked again once with its note, then counted or fallen back; the printed summary, usage.csv,
llm_calls.csv and the run card give the same figures (degenerate, re-asks with the batched
judge's re-ask of a left-out edge, retries, clamps, replies at the caps); nothing degenerate
reaches the transcript, a later prompt or a memory."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import csv
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_stub import StubLLM, consistent, generate_from_schema

from engine import SaveStore
from engine.core.exchanges import LLMCall
from engine.core.state import RoundRecord
from engine.llm.verdict import FLAWED_TOO

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm")

ROOF = "The roof must be fixed before the winter rains come."
AGAIN = "Then let us vote on the roof tonight, all of us."
BAD_SUMMARY = '": 0, "'
#: What each agent says when first asked, round by round (None: the stub's own answer).
SPEECH = {
    (1, "Ann"): "",  # empty
    (1, "Bob"): "Numbers first.\n}, ",  # debris
    (1, "Cy"): ROOF,  # a copy of Ann's line, heard this round
    (2, "Ann"): ROOF,  # her own last line again
}
#: What each agent says when asked again after a degenerate first reply.
SPEECH_AGAIN = {
    (1, "Ann"): ROOF,
    (1, "Bob"): "Say what you decided to say, in one to three sentences.",  # an echo: falls back
    (1, "Cy"): "We should hear everyone before we vote tonight.",
    (2, "Ann"): AGAIN,
}


def _text(message: dict[str, Any]) -> str:
    return str(message.get("content") or "")


def _asked_again(messages: list[dict[str, Any]]) -> bool:
    """Whether a request asks again after a degenerate reply: its task says what was wrong,
    and the reply is not sent back."""
    asked = "A reply to this was not usable: " in _text(messages[-1])
    return asked and all(m["role"] != "assistant" for m in messages)


class Scripted(StubLLM):
    """The mini committee's replies by request, whatever the order they arrive in."""

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        system, task = _text(messages[0]), _text(messages[1])
        again = _asked_again(messages)
        rnd = int(m.group(1)) if (m := re.search(r"Round (\d+) of", task)) else 0
        if "Decide now" in task:
            name = re.search(r"You are (\w+),", system).group(1)  # type: ignore[union-attr]
            if rnd == 2 and name != "Ann":
                return json.dumps({"urgency": 0, "action": {"mode": "silent"}})
            intent = "one sentence" if (rnd, name) == (1, "Ann") and not again else "Be heard."
            urgency = {"Ann": 9, "Bob": 8, "Cy": 7}[name]
            action = {"mode": "public", "target": "all"}
            return json.dumps({"urgency": urgency, "action": action, "intent": intent})
        if "Say it now." in task:
            name = re.search(r"You are (\w+),", system).group(1)  # type: ignore[union-attr]
            return (SPEECH_AGAIN if again else SPEECH)[rnd, name]
        if system.startswith("You are the impartial judge") and rnd == 0:
            name = re.search(r"Character: (\w+),", system).group(1)  # type: ignore[union-attr]
            schema = body["response_format"]["json_schema"]["schema"]
            value = generate_from_schema(schema, random.Random(0))
            first = (
                "Events" in task
                and not again
                and not any("not valid" in _text(x) for x in messages[2:])
            )
            if not first or "judgements" not in value or ROOF not in task:
                return json.dumps(consistent(value))
            if name == "Ann":  # her memory of Cy would be punctuation
                value["judgements"] = [{**j, "summary": BAD_SUMMARY} for j in value["judgements"]]
            elif name == "Bob":  # every change at its cap, the emotion beyond it (clamped)
                value["delta"], value["needs"] = 2, {}
                value["judgements"] = [{**j, "delta_fav": 0.3} for j in value["judgements"]]
            elif name == "Cy":  # an edge left out
                value["judgements"] = []
            return json.dumps(consistent(value))
        return None


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[Scripted]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with Scripted(seed=3) as s:
        yield s


def test_every_degenerate_kind_once_is_counted_exactly_and_alike_everywhere(
    run_cli, stub: Scripted, tmp_path: Path, mini_data: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    mini_data["events"] = []  # the judges see the speech only
    toml = tmp_path / "mini.toml"
    toml.write_text(_as_toml(mini_data))
    saves = tmp_path / "saves"
    monkeypatch.setenv("SOCIALSIM_SAVES", str(saves))
    stub.script(["500"])  # one retry
    model = ["--model", "openai/stub", "--api-base", stub.url, "--judge-mode", "batched"]
    result = run_cli("run", str(toml), "--rounds", "2", "--run-id", "q", "-q", *model)
    assert result.code == 0, result.err
    store = SaveStore(saves)
    calls = [c for r in store.read_rounds("q")[1:] for c in r.llm_calls]
    degenerate = Counter(c.flaw for c in calls if c.outcome == "degenerate")
    assert degenerate == dict.fromkeys(
        ["description", "empty", "debris", "echo", "copy", "wordless", "repeat"], 1
    )
    # Re-asked: six degenerate replies (Bob's echo, asked again already, fell back) and the
    # batched judge's re-ask of the edge Cy's judgement left out.
    figures = {
        "degenerate": 7, "reasks": 7, "retries": 1, "clamped": 1, "at_cap": 1, "left_out": 1,
        "missing_edges": 0, "fallbacks": 1,
    }  # fmt: skip

    # Each degenerate reply was asked again with one line saying what was wrong.
    notes = [_text(req["messages"][-1]) for req in stub.requests if _asked_again(req["messages"])]
    assert sum("not usable: it said nothing, though you decided to speak" in n for n in notes) == 1
    assert sum("not usable: 'one sentence' is the schema's description" in n for n in notes) == 1
    # printed
    answers = re.sub(r"\s+", " ", result.out.split("answers", 1)[1].split("fell back")[0])
    assert (
        "7 degenerate, 1 at the caps, 7 re-asked, 1 retries, 1 fallbacks, 1 edges left out, "
        "0 still missing"
    ) in answers and "1 clamped" in answers
    # exported
    out = tmp_path / "export"
    assert run_cli("export", "q", "--out", str(out)).code == 0
    with (out / "usage.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {k: sum(int(r[k]) for r in rows) for k in figures} == figures
    with (out / "llm_calls.csv").open() as f:
        logged = list(csv.DictReader(f))
    assert Counter(r["flaw"] for r in logged if r["outcome"] == "degenerate") == degenerate
    assert sum(int(r["at_cap"]) for r in logged) == 1
    assert sum(int(r["attempts"]) - 1 for r in logged) == 1
    assert [r["left_out"] for r in logged if r["left_out"]] == ["Ann"]
    # the card
    card = json.loads((out / "card.json").read_text())
    assert {k: card["totals"][k] for k in figures} == figures
    speak = next(q for q in card["quality"] if q["purpose"] == "speak")
    assert (speak["replies"], speak["degenerate"], speak["questions"], speak["fallen_back"]) == (
        8,
        5,
        4,
        1,
    )
    # Nothing degenerate reached the transcript, a prompt or a memory.
    said = [a.utterance for r in store.read_rounds("q")[1:] for a in r.actions if a.utterance]
    assert said == [ROOF, "We should hear everyone before we vote tonight.", AGAIN]
    # (a re-ask's task names its reply's flaw; what every prompt carries is read without it)
    tasks = [
        [_text(m).split("\n\nA reply to this was not usable")[0] for m in req["messages"][:2]]
        for req in stub.requests
    ]
    prompts = " ".join(t for task in tasks for t in task)
    assert "}, " not in prompts.replace(BAD_SUMMARY, "") and "one sentence\n" not in prompts
    assert BAD_SUMMARY not in prompts
    final = store.read_rounds("q")[-1]
    notes = [m.summary for rel in final.state.agents["Ann"].relations.values() for m in rel.memory]
    assert BAD_SUMMARY not in notes


def _as_toml(data: dict) -> str:
    def value(v: object) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    return "".join(f"{json.dumps(k)} = {value(v)}\n" for k, v in data.items())


class _CutShort(Scripted):
    """Every speaker first stops mid-sentence (Gemma's real line), then says a whole one."""

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        if "Say it now." in _text(messages[1]):
            return "We fix the roof." if _asked_again(messages) else CUT
        return super().answer(body)


class _Parrot(Scripted):
    """Ann's round-2 line is first Cy's round-1 line word for word."""

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        system, task = _text(messages[0]), _text(messages[1])
        if "Say it now." in task and "Round 2 of" in task and "You are Ann," in system:
            return AGAIN if _asked_again(messages) else SPEECH_AGAIN[1, "Cy"]
        return super().answer(body)


#: Gemma 3 270M's re-asked line on llama-server, cut off.
CUT = "The executor's duty is to the will not,"


def _played(
    stub_type: type[Scripted], rounds: int, run_cli, tmp_path: Path, mini_data: dict
) -> tuple[list, list[str]]:
    """The rounds of a run of the mini committee (no events) against ``stub_type``, and the
    notes of every re-ask it was sent."""
    mini_data["events"] = []
    toml = tmp_path / "mini.toml"
    toml.write_text(_as_toml(mini_data))
    saves = tmp_path / "saves"
    with stub_type(seed=3) as stub:
        model = ["--model", "openai/stub", "--api-base", stub.url, "--judge-mode", "batched"]
        args = ("run", str(toml), "--rounds", str(rounds), "--run-id", "r", "--saves", str(saves))
        result = run_cli(*args, "-q", *model)
        notes = [_text(r["messages"][-1]) for r in stub.requests if _asked_again(r["messages"])]
    assert result.code == 0, result.err
    return SaveStore(saves).read_rounds("r")[1:], notes


def test_a_line_cut_off_mid_sentence_is_asked_again_and_never_said(
    run_cli, tmp_path: Path, mini_data: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (played,), notes = _played(_CutShort, 1, run_cli, tmp_path, mini_data)
    speech = [c for c in played.llm_calls if c.purpose == "speak"]
    speakers = [a for a in played.actions if a.order is not None]
    assert speakers and [a.utterance for a in speakers] == ["We fix the roof."] * len(speakers)
    assert [c.flaw for c in speech if c.outcome == "degenerate"] == ["unfinished"] * len(speakers)
    assert [c.response for c in speech if c.outcome == "degenerate"] == [CUT] * len(speakers)
    assert sum("it stops mid-sentence, on ','" in n for n in notes) == len(speakers)


def test_a_line_another_said_in_an_earlier_round_is_not_said_again(
    run_cli, tmp_path: Path, mini_data: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (one, two), notes = _played(_Parrot, 2, run_cli, tmp_path, mini_data)
    cy = SPEECH_AGAIN[1, "Cy"]
    assert cy in [a.utterance for a in one.actions if a.speaker == "Cy"]
    assert [a.utterance for a in two.actions if a.speaker == "Ann"] == [AGAIN]
    flaws = [c.flaw for c in two.llm_calls if c.purpose == "speak" and c.outcome == "degenerate"]
    assert flaws == ["copy"]
    assert sum("copies a line another said in an earlier round" in n for n in notes) == 1


#: Each agent's own line (lines alike in most of their words would be copies); Cy's is cut
#: off after a whole sentence.
LINES = {
    "Ann": "We paint the hall for the spring fair.",
    "Bob": "Bob thinks the roof comes first, before the winter.",
    "Cy": "We fix the roof before the winter rains. Then the hall, and then,",
}


#: Each test so marked plays its stub as a plain server (the words asked as text) and as
#: llama-cpp-python (json_schema refused: the words asked as JSON, held to it by a grammar).
SERVERS = pytest.mark.parametrize(
    "server", [{}, {"server": "llama.cpp", "rejects": {"json_schema"}}], ids=["text", "grammar"]
)


class CopiedIntent(StubLLM):
    """Bob copies the schema's description into his intent, asked again too, and the judge
    of what he observed writes debris for its summaries, asked again too; Cy's line is cut
    off after a whole sentence, asked again too; each agent says its own line."""

    #: Bob's intent, and each summary of the judge of what he observed.
    INTENT, SUMMARY = "one sentence", ":0, "

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        system, task = _text(messages[0]), _text(messages[1])
        name = re.search(r"You are (\w+),", system)
        form = body.get("response_format") or {}
        schema = form.get("json_schema", {}).get("schema") or form.get("schema")
        if "Decide now" in task and name:
            intent = self.INTENT if name.group(1) == "Bob" else "Be heard."
            action = {"mode": "public", "target": "all"}
            return json.dumps({"urgency": 7, "action": action, "intent": intent})
        if "Say it now." in task and name:
            line = LINES[name.group(1)]
            return json.dumps({"say": line}) if schema else line  # (asked as JSON: a grammar)
        if system.startswith("You are the impartial judge"):
            value = generate_from_schema(schema, random.Random(0))
            if "Character: Bob," in system:  # Bob's summaries debris, asked again too
                for judgement in value.get("judgements", []):
                    judgement["summary"] = self.SUMMARY
            return json.dumps(value)
        return None


class BareValues(CopiedIntent):
    """As :class:`CopiedIntent`, with Gemma 3 270M's bare values: Bob's intent "all", and
    the summaries of what he observed only a name of those present."""

    INTENT, SUMMARY = "all", "Ann"


class SilentIntent(CopiedIntent):
    """As :class:`CopiedIntent`, with Gemma 3 270M's Marco's intent: Bob decides to speak to
    everyone and means to "stay silent"."""

    INTENT = "stay silent"


class EchoedAgain(CopiedIntent):
    """As :class:`CopiedIntent`, but Cy asked again tells himself his task (Gemma 3 270M's
    Jade cut "…the best person I know. You deserve it and I'll be there for you every step
    of the way," and, asked again, echoed hers)."""

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        again = _asked_again(messages)
        if again and "Say it now." in _text(messages[1]) and "You are Cy," in _text(messages[0]):
            line = "You decided to speak publicly to everyone."
            return json.dumps({"say": line}) if body.get("response_format") else line
        return super().answer(body)


class FlawToldBack(CopiedIntent):
    """As :class:`CopiedIntent`, but Bob's intent is a name, and asked again he says its flaw
    back (Gemma 3 270M's Omar, family-pressure, told "the intent 'Michael' is only a name,
    not words", planned "Michael is only a name."); Cy asked again says his line's flaw back."""

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        system, task, again = _text(messages[0]), _text(messages[1]), _asked_again(messages)
        if "Decide now" in task and "You are Bob," in system:
            intent = "Cy is only a name." if again else "Cy"
            action = {"mode": "public", "target": "all"}
            return json.dumps({"urgency": 7, "action": action, "intent": intent})
        if again and "Say it now." in task and "You are Cy," in system:
            line = "I stopped mid-sentence, so now I say the whole sentence."
            return json.dumps({"say": line}) if body.get("response_format") else line
        return super().answer(body)


class ClauseCut(CopiedIntent):
    """As :class:`CopiedIntent`, but Cy's line is one clause cut on its comma, asked again
    too (Gemma 3 270M's Sandra said "I'll be back,")."""

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        if "Say it now." in _text(messages[1]) and "You are Cy," in _text(messages[0]):
            line = "We fix the roof before the winter rains,"
            return json.dumps({"say": line}) if body.get("response_format") else line
        return super().answer(body)


class Announced(CopiedIntent):
    """As :class:`CopiedIntent`, but Cy's line opens by announcing it, asked again too
    (Gemma 3 270M's Nell said "I have decided to say, as you wish: the following: …")."""

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        if "Say it now." in _text(messages[1]) and "You are Cy," in _text(messages[0]):
            line = (
                "I have decided to say, as you wish: the following: we fix the roof before "
                "the winter rains."
            )
            return json.dumps({"say": line}) if body.get("response_format") else line
        return super().answer(body)


class ToldThenEchoed(EchoedAgain):
    """As :class:`EchoedAgain`, but Cy's first line opens by telling back its task and is
    cut after whole sentences (Gemma 3 270M's Helena, hospital: "I have decided to speak in
    person, this time. …,")."""

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        first = not _asked_again(messages)
        if first and "Say it now." in _text(messages[1]) and "You are Cy," in _text(messages[0]):
            line = "I have decided to speak in person. We fix the roof before the rains. And the"
            return json.dumps({"say": line}) if body.get("response_format") else line
        return super().answer(body)


class CopiedThenBroken(CopiedIntent):
    """As :class:`CopiedIntent`, but Bob's decision asked again comes back not valid."""

    def answer(self, body: dict[str, Any]) -> str | None:
        messages = body["messages"]
        again = _asked_again(messages)
        if again and "Decide now" in _text(messages[1]) and "You are Bob," in _text(messages[0]):
            return '{"urgency": "very", "action": {"mode": "public"'
        return super().answer(body)


def _calls(played: RoundRecord, purpose: str, agent: str) -> list[LLMCall]:
    """The round's exchanges of ``agent``'s question ``purpose``, in order."""
    return [c for c in played.llm_calls if c.purpose == purpose and c.agent == agent]


#: Plays round 1 of the mini scenario against a stub (:func:`one_round`).
OneRound = Callable[[StubLLM], RoundRecord]


@pytest.fixture
def one_round(
    run_cli, tmp_path: Path, mini_data: dict, monkeypatch: pytest.MonkeyPatch
) -> OneRound:
    """Round 1 of the mini scenario (no events) played as run ``q`` against a stub."""

    def play(stub: StubLLM) -> RoundRecord:
        mini_data["events"] = []
        toml = tmp_path / "mini.toml"
        toml.write_text(_as_toml(mini_data))
        monkeypatch.setenv("SOCIALSIM_SAVES", str(tmp_path / "saves"))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        with stub:
            model = ["--model", "openai/stub", "--api-base", stub.url, "--judge-mode", "batched"]
            result = run_cli("run", str(toml), "--rounds", "1", "--run-id", "q", "-q", *model)
        assert result.code == 0, result.err
        (played,) = SaveStore(tmp_path / "saves").read_rounds("q")[1:]
        return played

    return play


def _mended_on_reask(
    played: RoundRecord, purpose: str, agent: str, kind: str, mending: str
) -> None:
    """``agent``'s ``purpose`` was flawed (``kind``) when first asked, flawed again when
    asked again, and taken mended: recorded as repaired, saying what was left out."""
    calls = _calls(played, purpose, agent)
    assert [(c.outcome, c.flaw) for c in calls] == [("degenerate", kind), ("repaired", kind)]
    assert mending in (calls[1].error or "")


@SERVERS
def test_a_flawed_part_that_can_be_left_out_is_left_out_after_the_re_ask(
    one_round: OneRound, server: dict[str, Any]
) -> None:
    """The intent is optional: Bob's decision, its intent the schema's description when
    first asked and again, is kept without the intent (recorded as repaired), and he speaks,
    where it used to fall back to silence. Cy's line cut off mid-sentence twice is kept to
    its whole sentences, where it used to fall back to silence too."""
    played = one_round(CopiedIntent(seed=3, **server))
    bob = next(a for a in played.actions if a.speaker == "Bob")
    assert (bob.mode, bob.target, bob.intent) == ("public", "all", "")
    assert bob.utterance == "Bob thinks the roof comes first, before the winter."
    _mended_on_reask(played, "decide", "Bob", "description", "the intent left out")
    # The summaries are optional too: Bob's judgement is kept without them, its changes taken.
    _mended_on_reask(played, "judge", "Bob", "wordless", "the summary left out")
    assert played.usage is not None and played.usage.fallbacks == 0
    assert all("one sentence" not in a.intent for a in played.actions)
    # Cy's line, cut off again when asked again, is kept to its last whole sentence.
    cy = next(a for a in played.actions if a.speaker == "Cy")
    assert cy.utterance == "We fix the roof before the winter rains."
    _mended_on_reask(played, "speak", "Cy", "unfinished", "cut after its last whole sentence")


@SERVERS
@pytest.mark.parametrize(
    ("stub", "mending"),
    [
        # cut after a whole sentence, then (asked again) an echo of its task: no mend
        (EchoedAgain, "cut after its last whole sentence, as its re-ask was flawed too"),
        # one whole clause cut on its comma, twice
        (ClauseCut, "ended at its last comma, a whole clause"),
        # announced ("I have decided to say, …: the following: …"), twice
        (Announced, "cut after the words announcing it"),
    ],
    ids=["re-ask-echoes", "clause-cut", "announced"],
)
def test_a_cut_line_is_said_mended_not_dropped_for_silence(
    one_round: OneRound, run_cli, server: dict[str, Any], stub: type[CopiedIntent], mending: str
) -> None:
    """Cy's line is cut mid-sentence or announced, and his re-ask is no better: his line is
    said mended (to its whole sentence, ended where its clause ends, or without the words
    announcing it), not dropped for silence, and a replay of the run plays it so."""
    played = one_round(stub(seed=3, **server))
    cy = next(a for a in played.actions if a.speaker == "Cy")
    assert cy.utterance == "We fix the roof before the winter rains."
    kind = "echo" if stub is Announced else "unfinished"
    _mended_on_reask(played, "speak", "Cy", kind, mending)
    assert played.usage is not None and played.usage.fallbacks == 0
    replayed = run_cli("replay", "q")
    assert replayed.code == 0 and "identical state" in replayed.out, replayed.err


@SERVERS
def test_a_re_ask_saying_its_flaw_back_is_flawed_too(
    one_round: OneRound, run_cli, server: dict[str, Any]
) -> None:
    """Bob's intent is only a name, and asked again he writes "Cy is only a name.": that
    tells back what the re-ask told him, not his intent, so his first reply is kept with
    its intent left out. Cy's line is cut off, and asked again he says "…I say the whole
    sentence.": his first line is said mended. A replay plays the run so."""
    played = one_round(FlawToldBack(seed=3, **server))
    bob = next(a for a in played.actions if a.speaker == "Bob")
    assert (bob.mode, bob.target, bob.intent) == ("public", "all", "")
    _mended_on_reask(played, "decide", "Bob", "wordless", FLAWED_TOO)
    cy = next(a for a in played.actions if a.speaker == "Cy")
    assert cy.utterance == "We fix the roof before the winter rains."
    _mended_on_reask(played, "speak", "Cy", "unfinished", FLAWED_TOO)
    assert played.usage is not None and played.usage.fallbacks == 0
    replayed = run_cli("replay", "q")
    assert replayed.code == 0 and "identical state" in replayed.out, replayed.err


def test_a_replay_keeps_a_first_reply_s_mend_the_record_took_after_a_check_was_added(
    one_round: OneRound, run_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cy's first line was cut off, and his re-ask echoed his task: the record took the
    first line mended. Replayed after a check that finds his first line an echo (its
    opening tells back his task; no mend) was added, the run plays as recorded: the
    record's flaw, mended as then."""
    from engine.core import quality

    with monkeypatch.context() as before:  # the checks before the task told back was one
        before.setattr(quality, "_TASK", re.compile(r"(?!)"))
        played = one_round(ToldThenEchoed(seed=3))
    cy = next(a for a in played.actions if a.speaker == "Cy")
    assert cy.utterance == "I have decided to speak in person. We fix the roof before the rains."
    _mended_on_reask(played, "speak", "Cy", "unfinished", FLAWED_TOO)
    now = quality.utterance_flaw(cy.utterance + " And the", "", (), None)
    assert now is not None and now.kind == "echo"  # (what the checks find now)
    replayed = run_cli("replay", "q")
    assert replayed.code == 0 and "identical state" in replayed.out, replayed.err


def test_a_decision_to_speak_meaning_to_keep_silent_is_silence(one_round: OneRound) -> None:
    """Bob decides to speak to everyone, his intent "stay silent", asked again and the same
    again: he keeps silent, as his intent says, and is asked for no words."""
    played = one_round(SilentIntent(seed=3))
    bob = next(a for a in played.actions if a.speaker == "Bob")
    assert (bob.mode, bob.target, bob.intent, bob.utterance) == ("silent", None, "stay silent", "")
    assert not _calls(played, "speak", "Bob")
    assert played.usage is not None and played.usage.fallbacks == 0
    _mended_on_reask(played, "decide", "Bob", "contradicts", "kept silent, as its intent says")
    assert "'stay silent' keeps silent, but it speaks" in (
        _calls(played, "decide", "Bob")[0].error or ""
    )


def test_a_bare_value_or_a_name_is_no_intent_and_no_memory(one_round: OneRound) -> None:
    """Gemma 3 270M wrote "all" as an intent and "Paul" or "None" as summaries, which were
    taken and became memories: Bob's intent "all" and his judge's summaries "Ann", asked
    again and the same again, are left out, his act and the changes kept."""
    played = one_round(BareValues(seed=3))
    bob = next(a for a in played.actions if a.speaker == "Bob")
    assert (bob.mode, bob.target, bob.intent) == ("public", "all", "")
    _mended_on_reask(played, "decide", "Bob", "wordless", "the intent left out")
    _mended_on_reask(played, "judge", "Bob", "wordless", "the summary left out")
    judged = _calls(played, "judge", "Bob")
    assert "'all' is a bare value" in (_calls(played, "decide", "Bob")[0].error or "")
    assert "'Ann' is only a name" in (judged[0].error or "")
    assert played.usage is not None and played.usage.fallbacks == 0
    memories = [c.summary for c in played.relation_changes if c.source == "Bob"]
    assert memories and all(m == "" for m in memories)  # (no "Ann" to remember)


def test_a_flawed_part_is_left_out_when_the_re_ask_is_not_valid(
    one_round: OneRound, run_cli
) -> None:
    """Bob's decision copies the schema's description into its intent and its re-ask is
    not valid JSON: the first decision is kept without the intent (repaired, saying why),
    not dropped for silence; a replay of the run plays it so."""
    played = one_round(CopiedThenBroken(seed=3))
    bob = next(a for a in played.actions if a.speaker == "Bob")
    assert (bob.mode, bob.target, bob.intent) == ("public", "all", "")
    assert bob.utterance == "Bob thinks the roof comes first, before the winter."
    _mended_on_reask(played, "decide", "Bob", "description", "as its re-ask was not valid")
    replayed = run_cli("replay", "q")
    assert replayed.code == 0 and "identical state" in replayed.out, replayed.err
