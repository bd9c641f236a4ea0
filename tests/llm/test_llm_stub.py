"""The OpenAI-compatible stub (tests/llm_stub.py), exercised through real HTTP with httpx and
litellm."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported: no network

import asyncio
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Callable
from datetime import date, datetime
from enum import StrEnum
from random import Random
from typing import Annotated, Any, Literal
from uuid import UUID

import httpx
import litellm
import pytest
from llm_stub import (
    PAST_BOUND,
    SCHEMA_MARKER,
    StubLLM,
    generate_from_schema,
    violate_schema,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError

litellm.suppress_debug_info = True  # no "Give Feedback" banner on every exception


class Mood(StrEnum):
    calm = "calm"
    angry = "angry"
    wary = "wary"


class Target(BaseModel):
    name: str = Field(min_length=1, max_length=24)
    trust: int = Field(ge=-5, le=5)


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["speak", "stay_silent", "leave"]
    mood: Mood
    intensity: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(gt=0.0, lt=1.0)
    target: Target
    aside: str | None = None
    topics: list[str] = Field(min_length=1, max_length=3)
    feelings: dict[Mood, float] = {}


SCHEMA = Decision.model_json_schema()
#: How the stub counts tokens: words and punctuation marks.
PIECES = re.compile(r"\w+|[^\w\s]")
RESPONSE_FORMAT = {"type": "json_schema", "json_schema": {"name": "decision", "schema": SCHEMA}}
MESSAGES = [
    {"role": "system", "content": "You are Ann, the chair of a committee."},
    {"role": "user", "content": "The roof leaks again. What do you do?"},
]

MakeStub = Callable[..., StubLLM]


@pytest.fixture
async def make_stub() -> AsyncIterator[MakeStub]:
    """Start stubs on demand; stop them (and litellm's cached async clients) afterwards."""
    stubs: list[StubLLM] = []

    def make(**kwargs: Any) -> StubLLM:
        stub = StubLLM(**kwargs)
        stub.start()
        stubs.append(stub)
        return stub

    yield make
    await litellm.close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()
    for stub in stubs:
        stub.stop()


async def complete(stub: StubLLM, **kwargs: Any) -> Any:
    kwargs.setdefault("messages", MESSAGES)
    return await litellm.acompletion(
        model="openai/stub", api_base=stub.url, api_key="sk-test", **kwargs
    )


async def stream_text(stub: StubLLM, **kwargs: Any) -> tuple[str, list[Any]]:
    response = await complete(stub, stream=True, **kwargs)
    chunks = [chunk async for chunk in response]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, chunks


# --------------------------------------------------------------------------- (1) raw HTTP


async def test_httpx_non_streaming_is_openai_shaped(make_stub: MakeStub) -> None:
    stub = make_stub(seed=1)
    assert stub.url.startswith("http://127.0.0.1:") and stub.url.endswith("/v1")
    body = {"model": "stub", "messages": MESSAGES}
    async with httpx.AsyncClient(timeout=5) as client:
        models = (await client.get(f"{stub.url}/models")).json()
        first = await client.post(f"{stub.url}/chat/completions", json=body)
        root = stub.url.removesuffix("/v1")
        second = await client.post(f"{root}/chat/completions", json=body)
        missing = await client.post(f"{root}/v1/nope", json=body)

    assert models["object"] == "list" and models["data"][0]["id"] == "stub"
    assert first.status_code == second.status_code == 200
    assert first.headers["content-type"] == "application/json"
    data = first.json()
    assert data["id"] and data["object"] == "chat.completion" and data["model"] == "stub"
    assert isinstance(data["created"], int)
    choice = data["choices"][0]
    assert choice["index"] == 0 and choice["finish_reason"] == "stop"
    assert choice["message"]["role"] == "assistant"
    content = choice["message"]["content"]
    assert 8 <= len(content.split()) <= 20 and content.endswith(".")
    prompt_pieces = sum(len(PIECES.findall(m["content"])) for m in MESSAGES)
    answer_pieces = len(PIECES.findall(content))
    assert data["usage"] == {
        "prompt_tokens": prompt_pieces,
        "completion_tokens": answer_pieces,
        "total_tokens": prompt_pieces + answer_pieces,
    }
    assert missing.status_code == 404 and "error" in missing.json()
    assert stub.calls == 2 and stub.requests == [body, body]
    assert sum(stub.faults_served.values()) == 0


async def test_httpx_streaming_wire_format(make_stub: MakeStub) -> None:
    stub = make_stub(seed=2)
    body = {
        "model": "stub",
        "messages": MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    async with (
        httpx.AsyncClient(timeout=5) as client,
        client.stream("POST", f"{stub.url}/chat/completions", json=body) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line async for line in response.aiter_lines() if line]

    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    events = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert all(e["object"] == "chat.completion.chunk" for e in events)
    assert events[0]["choices"][0]["delta"]["role"] == "assistant"
    words = [e["choices"][0]["delta"]["content"] for e in events[1:-2]]
    assert len(words) >= 8
    assert events[-2]["choices"][0]["finish_reason"] == "stop"
    pieces = len(PIECES.findall("".join(words)))
    assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == pieces


# --------------------------------------------------------------------------- (2) structured output


async def test_litellm_json_schema_response_validates(make_stub: MakeStub) -> None:
    stub = make_stub(seed=3)
    decisions = []
    for _ in range(12):  # each call index draws different values
        response = await complete(stub, response_format=RESPONSE_FORMAT)
        decisions.append(Decision.model_validate_json(response.choices[0].message.content))

    # litellm forwards response_format unchanged for openai/* models
    assert stub.requests[0]["response_format"] == RESPONSE_FORMAT
    assert len({d.model_dump_json() for d in decisions}) > 1
    assert {d.aside is None for d in decisions} == {True, False}  # optional field: both ways


async def test_schema_from_prompt_marker(make_stub: MakeStub) -> None:
    stub = make_stub(seed=4)
    system = (
        "Answer with one JSON object.\nJSON schema:\n"
        f"{json.dumps(SCHEMA, indent=2)}\nEND SCHEMA\nKeep it short."
    )
    in_system = await complete(stub, messages=[{"role": "system", "content": system}, MESSAGES[1]])
    user = f"What now? Reply in JSON.\nJSON schema: {json.dumps(Target.model_json_schema())}"
    in_user = await complete(stub, messages=[MESSAGES[0], {"role": "user", "content": user}])

    assert "response_format" not in stub.requests[0]
    Decision.model_validate_json(in_system.choices[0].message.content)
    Target.model_validate_json(in_user.choices[0].message.content)


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = Field(gt=0, lt=10, multiple_of=3)


class Dog(BaseModel):
    kind: Literal["dog"]
    bark: float = Field(gt=-1.5, le=-1.0)


class Node(BaseModel):
    label: str = Field(max_length=6)
    children: list[Node] = []


class Everything(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    other: Cat | Dog | None
    tree: Node
    pair: tuple[int, str]
    ids: set[int] = Field(min_length=2)
    scores: dict[str, Annotated[int, Field(ge=0, le=3)]]
    by_mood: dict[Mood, Target] = Field(max_length=2)
    when: datetime
    day: date
    uid: UUID
    ratio: float = Field(multiple_of=0.25, ge=0.1, le=2)
    short: str = Field(min_length=2, max_length=2)


def test_generator_covers_the_pydantic_schema_subset() -> None:
    """No HTTP: many seeds through the value generator and the schema-violation maker."""
    for model in (Decision, Everything):
        schema = model.model_json_schema()
        for seed in range(150):
            model.model_validate_json(json.dumps(generate_from_schema(schema, Random(seed))))
            with pytest.raises(ValidationError):
                model.model_validate_json(json.dumps(violate_schema(schema, Random(seed))))


# --------------------------------------------------------------------------- (3) streaming


async def test_litellm_streaming_joins_into_sentence(make_stub: MakeStub) -> None:
    stub = make_stub(seed=5)
    text, chunks = await stream_text(stub, stream_options={"include_usage": True})
    plain = await complete(stub)  # same seed and call index -> same sentence

    assert len(chunks) >= 8
    assert 8 <= len(text.split()) <= 20 and text.endswith(".")
    assert chunks[-1].usage.completion_tokens == len(PIECES.findall(text))
    stub.reset()  # call index back to 0
    assert (await stream_text(stub))[0] == text
    assert plain.choices[0].message.content != text  # index 1 differs from index 0


# --------------------------------------------------------------------------- (4) faults


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("500", litellm.InternalServerError),
        ("429", litellm.RateLimitError),
        ("timeout", litellm.Timeout),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_transport_faults_raise(
    make_stub: MakeStub, kind: str, error: type[Exception], stream: bool
) -> None:
    stub = make_stub(seed=6, hang_seconds=30)
    stub.script([kind, None])
    kwargs: dict[str, Any] = {"timeout": 0.5, "max_retries": 0, "stream": stream}
    started = time.perf_counter()
    with pytest.raises(error):
        response = await complete(stub, **kwargs)
        if stream:
            [chunk async for chunk in response]
    assert time.perf_counter() - started < 15  # the timeout's doing, not the 30 s hang
    ok = await complete(stub, **kwargs)  # the script's None: second call is fine
    if stream:
        assert [chunk async for chunk in ok]
    assert stub.faults_served == {kind: 1} and stub.fault_log == [kind, None]


@pytest.mark.parametrize("kind", ["malformed", "schema", "empty"])
async def test_content_faults_fail_validation(make_stub: MakeStub, kind: str) -> None:
    stub = make_stub(seed=7)
    stub.script([kind] * 6)
    for _ in range(6):
        response = await complete(stub, response_format=RESPONSE_FORMAT)
        content = response.choices[0].message.content
        with pytest.raises(ValidationError):
            Decision.model_validate_json(content or "")
        if kind == "malformed":
            with pytest.raises(json.JSONDecodeError):
                json.loads(content)
        elif kind == "schema":
            json.loads(content)  # valid JSON, wrong shape
        else:
            assert not content
    assert stub.faults_served == {kind: 6}


async def test_fault_kinds_that_do_not_apply_are_not_served(make_stub: MakeStub) -> None:
    stub = make_stub(seed=8)
    stub.script(["malformed", "schema", "empty"])
    plain = await complete(stub)  # no schema: malformed is not served
    text, _ = await stream_text(stub)  # no schema: nor is a schema violation
    empty, _ = await stream_text(stub)  # empty applies to streams

    assert len(plain.choices[0].message.content.split()) >= 8
    assert len(text.split()) >= 8
    assert empty == ""
    assert stub.fault_log == [None, None, "empty"] and stub.faults_served == {"empty": 1}


async def test_schema_faults_apply_to_streamed_schema_requests(make_stub: MakeStub) -> None:
    """A local server's structured replies are streamed too (for the idle timeout), so the
    faults of a schema request reach them."""
    stub = make_stub(seed=8)
    stub.script(["malformed", "schema"])
    broken, _ = await stream_text(stub, response_format=RESPONSE_FORMAT)
    wrong, _ = await stream_text(stub, response_format=RESPONSE_FORMAT)

    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)
    with pytest.raises(ValidationError):
        Decision.model_validate_json(wrong)
    assert stub.faults_served == {"malformed": 1, "schema": 1}


async def test_random_faults_are_drawn_and_counted(make_stub: MakeStub) -> None:
    stub = make_stub(seed=9, faults={"500": 0.3, "malformed": 0.3})
    errors = invalid = 0
    for _ in range(30):
        try:
            response = await complete(stub, response_format=RESPONSE_FORMAT, max_retries=0)
        except litellm.InternalServerError:
            errors += 1
            continue
        try:
            Decision.model_validate_json(response.choices[0].message.content)
        except ValidationError:
            invalid += 1
    assert stub.faults_served == {"500": errors, "malformed": invalid}
    assert errors > 0 and invalid > 0 and errors + invalid < 30
    with pytest.raises(ValueError, match="unknown fault"):
        StubLLM(faults={"503": 0.1})


# --------------------------------------------------------------------------- (5) rejection


async def test_reject_json_schema_is_a_bad_request(make_stub: MakeStub) -> None:
    stub = make_stub(reject_json_schema=True)
    with pytest.raises(litellm.BadRequestError) as caught:
        await complete(stub, response_format=RESPONSE_FORMAT, max_retries=0)
    assert caught.value.status_code == 400
    assert "response_format" in str(caught.value)
    assert "json_schema is not supported" in str(caught.value)
    fallback = f"Reply in JSON.\nJSON schema:\n{json.dumps(SCHEMA)}"
    response = await complete(stub, messages=[{"role": "user", "content": fallback}])
    Decision.model_validate_json(response.choices[0].message.content)
    assert stub.fault_log == ["rejected", None] and stub.calls == 2


@pytest.mark.parametrize(
    ("rejects", "allowed"),
    [({"json_schema"}, "'text' or 'json_object'"), ({"json_schema", "json_object"}, "'text'")],
)
async def test_rejects_answers_as_llama_cpp_python_does(
    make_stub: MakeStub, rejects: set[str], allowed: str
) -> None:
    """llama-cpp-python's server: HTTP 500 carrying FastAPI's validation error."""
    stub = make_stub(rejects=rejects)
    async with httpx.AsyncClient(timeout=5) as client:
        body = {"model": "stub", "messages": MESSAGES, "response_format": RESPONSE_FORMAT}
        refused = await client.post(f"{stub.url}/chat/completions", json=body)
        body["response_format"] = {"type": "json_object"}
        as_object = await client.post(f"{stub.url}/chat/completions", json=body)
    assert refused.status_code == 500
    error = refused.json()["error"]
    assert error["type"] == "internal_server_error" and error["code"] is None
    assert error["message"].startswith("1 validation error:\n")
    assert f"'msg': \"Input should be {allowed}\", 'input': 'json_schema'" in error["message"]
    assert "('body', 'response_format', 'type')" in error["message"]
    assert as_object.status_code == (500 if "json_object" in rejects else 200)
    with pytest.raises(litellm.InternalServerError, match="Input should be"):
        await complete(stub, response_format=RESPONSE_FORMAT, max_retries=0)
    expected = ["rejected", "rejected" if "json_object" in rejects else None, "rejected"]
    assert stub.fault_log == expected and sum(stub.faults_served.values()) == 0
    with pytest.raises(ValueError, match="rejects"):
        StubLLM(rejects={"text"})


async def test_request_headers_are_kept(make_stub: MakeStub) -> None:
    stub = make_stub()
    await complete(stub)
    (headers,) = stub.headers
    assert {k.lower(): v for k, v in headers.items()}["authorization"] == "Bearer sk-test"
    stub.reset()
    assert stub.headers == []


class Edge(BaseModel):
    target: Literal["Bo", "Cy", "Di"]
    delta: float = Field(ge=-0.3, le=0.3)


class Judged(BaseModel):
    delta: float
    judgements: list[Edge] = Field(json_schema_extra={"minItems": 3, "maxItems": 3})


KEYED = {"type": "json_schema", "json_schema": {"name": "j", "schema": Judged.model_json_schema()}}


async def test_keyed_lists_hold_each_key_once_unless_incomplete(make_stub: MakeStub) -> None:
    stub = make_stub(seed=10)
    for _ in range(5):
        response = await complete(stub, response_format=KEYED)
        judged = Judged.model_validate_json(response.choices[0].message.content)
        assert [e.target for e in judged.judgements] == ["Bo", "Cy", "Di"]
    stub.script(["incomplete", "incomplete"])
    response = await complete(stub, response_format=KEYED)
    cut = Judged.model_validate_json(response.choices[0].message.content)
    assert [e.target for e in cut.judgements] == ["Bo", "Bo"]  # Cy, Di left out; Bo twice
    plain = await complete(stub, response_format=RESPONSE_FORMAT)  # no keyed list: not served
    Decision.model_validate_json(plain.choices[0].message.content)
    assert stub.fault_log[-2:] == ["incomplete", None]
    assert stub.faults_served == {"incomplete": 1}


# --------------------------------------------------------------------------- (6) concurrency


async def test_concurrent_requests_overlap(make_stub: MakeStub) -> None:
    stub = make_stub(latency=1.0)
    await complete(stub)  # warm up litellm's client
    results = await asyncio.gather(*(complete(stub) for _ in range(5)))
    assert len(results) == 5 and stub.calls == 6
    assert stub.peak_in_flight >= 2  # answered side by side, not one after another

    # a burst of fresh connections (bench-style) is not throttled by the listen backlog
    burst_stub = make_stub(latency=1.0)
    body = {"model": "stub", "messages": MESSAGES}
    async with httpx.AsyncClient(timeout=30) as client:
        burst = await asyncio.gather(
            *(client.post(f"{burst_stub.url}/chat/completions", json=body) for _ in range(50))
        )
    assert {r.status_code for r in burst} == {200}
    assert burst_stub.peak_in_flight > 5  # more at once than a default backlog of 5 lets in


async def test_stop_is_bounded_while_a_request_hangs(make_stub: MakeStub) -> None:
    stub = make_stub(hang_seconds=30)
    stub.script(["timeout"])
    outcome: list[BaseException | int] = []

    def call() -> None:
        try:
            body = {"model": "stub", "messages": MESSAGES}
            outcome.append(httpx.post(f"{stub.url}/chat/completions", json=body, timeout=10))
        except httpx.HTTPError as exc:
            outcome.append(exc)

    client = threading.Thread(target=call)
    client.start()
    while stub.calls == 0:
        await asyncio.sleep(0.01)
    started = time.perf_counter()
    stub.stop()
    client.join(20)
    assert time.perf_counter() - started < 20  # not the 30 s hang
    assert not client.is_alive() and isinstance(outcome[0], httpx.HTTPError)


# --------------------------------------------------------------------------- (8) determinism


async def test_same_seed_same_answers(make_stub: MakeStub) -> None:
    async def run(seed: int) -> list[str]:
        stub = make_stub(seed=seed, faults={"500": 0.2, "schema": 0.2})
        out = []
        for i in range(8):
            kwargs: dict[str, Any] = {"max_retries": 0}
            if i % 2:
                kwargs["response_format"] = RESPONSE_FORMAT
            try:
                response = await complete(stub, **kwargs)
                out.append(response.choices[0].message.content)
            except litellm.InternalServerError:
                out.append("<500>")
        return out

    first, again, other = await run(11), await run(11), await run(12)
    assert first == again
    assert first != other


# --------------------------------------------------------------------------- (9) local servers


def test_json_object_schema_is_enforced_like_llama_cpp_python(make_stub: MakeStub) -> None:
    llama = make_stub(server="llama.cpp", rejects={"json_schema"})
    plain = make_stub()
    fmt = {"type": "json_object", "schema": SCHEMA}
    body = {"model": "stub", "messages": MESSAGES, "response_format": fmt}
    enforced = httpx.post(f"{llama.url}/chat/completions", json=body, timeout=5).json()
    ignored = httpx.post(f"{plain.url}/chat/completions", json=body, timeout=5).json()
    refused = httpx.post(
        f"{llama.url}/chat/completions",
        json={**body, "response_format": RESPONSE_FORMAT},
        timeout=5,
    )
    Decision.model_validate_json(enforced["choices"][0]["message"]["content"])
    assert set(json.loads(ignored["choices"][0]["message"]["content"])) == {"answer"}
    assert refused.status_code == 500 and "Input should be 'text' or 'json_object'" in refused.text


def test_drop_system_reads_and_counts_only_the_rest(make_stub: MakeStub) -> None:
    stub = make_stub(drop_system=True)
    system = {"role": "system", "content": f"You are Ann.\n{SCHEMA_MARKER} {json.dumps(SCHEMA)}"}
    user = {"role": "user", "content": "The roof leaks again. What do you do?"}
    merged = {"role": "user", "content": f"{system['content']}\n\n{user['content']}"}
    dropped = httpx.post(
        f"{stub.url}/chat/completions", json={"messages": [system, user]}, timeout=5
    ).json()
    kept = httpx.post(f"{stub.url}/chat/completions", json={"messages": [merged]}, timeout=5)
    assert dropped["usage"]["prompt_tokens"] == len(PIECES.findall(user["content"]))
    assert dropped["choices"][0]["message"]["content"].endswith(".")  # prose: no schema seen
    kept_json = kept.json()
    assert kept_json["usage"]["prompt_tokens"] == len(PIECES.findall(merged["content"]))
    Decision.model_validate_json(kept_json["choices"][0]["message"]["content"])


def test_stream_without_usage_even_when_asked(make_stub: MakeStub) -> None:
    stub = make_stub(stream_usage=False)
    body = {
        "model": "stub",
        "messages": MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with httpx.stream("POST", f"{stub.url}/chat/completions", json=body, timeout=5) as response:
        lines = [line for line in response.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert len([e for e in events if e["choices"] and e["choices"][0]["delta"].get("content")]) >= 8
    assert not any("usage" in e for e in events)


@pytest.mark.parametrize(("fault", "intensity"), [("range", 4), ("scale", 366)])
def test_value_faults_break_a_bound_in_the_schema_shape(
    make_stub: MakeStub, fault: str, intensity: float
) -> None:
    stub = make_stub()
    stub.script([fault, fault])
    body = {"model": "stub", "messages": MESSAGES, "response_format": RESPONSE_FORMAT}
    data = httpx.post(f"{stub.url}/chat/completions", json=body, timeout=5).json()
    value = json.loads(data["choices"][0]["message"]["content"])
    # the first bounded number (0 to 1), past its maximum by PAST_BOUND[fault] times 1
    assert value["intensity"] == intensity == 1 + PAST_BOUND[fault]
    with pytest.raises(ValidationError):
        Decision.model_validate(value)
    Decision.model_validate({**value, "intensity": 1.0})  # only the value is wrong
    prose = httpx.post(f"{stub.url}/chat/completions", json={"messages": MESSAGES}, timeout=5)
    assert prose.json()["choices"][0]["message"]["content"].endswith(".")  # not served: no schema
    assert stub.faults_served == {fault: 1} and stub.fault_log == [fault, None]


def test_servers_report_their_window_and_slots(make_stub: MakeStub) -> None:
    llama = make_stub(server="llama.cpp", n_ctx=2048, slots=3)
    vllm = make_stub(server="vllm", n_ctx=8192)
    ollama = make_stub(server="ollama", n_ctx=32768)
    plain = make_stub()
    root = {s: s.url.removesuffix("/v1") for s in (llama, vllm, ollama, plain)}
    props = httpx.get(f"{root[llama]}/props", timeout=5).json()
    assert props["default_generation_settings"]["n_ctx"] == 2048 and props["total_slots"] == 3
    models = httpx.get(f"{vllm.url}/models", timeout=5).json()
    assert models["data"][0]["max_model_len"] == 8192
    show = httpx.post(f"{root[ollama]}/api/show", json={"model": "stub"}, timeout=5).json()
    assert show["model_info"]["stub.context_length"] == 32768
    assert httpx.get(f"{root[plain]}/props", timeout=5).status_code == 404
    assert httpx.post(f"{root[plain]}/api/show", json={}, timeout=5).status_code == 404
    assert "max_model_len" not in httpx.get(f"{plain.url}/models", timeout=5).json()["data"][0]


def test_ollama_native_chat_follows_the_format_schema(make_stub: MakeStub) -> None:
    stub = make_stub(server="ollama")
    root = stub.url.removesuffix("/v1")
    body = {"model": "stub", "messages": MESSAGES, "format": SCHEMA, "stream": False}
    data = httpx.post(f"{root}/api/chat", json=body, timeout=5).json()
    assert data["done"] is True and data["message"]["role"] == "assistant"
    Decision.model_validate_json(data["message"]["content"])
    assert data["prompt_eval_count"] == sum(len(PIECES.findall(m["content"])) for m in MESSAGES)
    assert data["eval_count"] == len(PIECES.findall(data["message"]["content"]))

    with httpx.stream("POST", f"{root}/api/chat", json={**body, "stream": True}, timeout=5) as r:
        assert r.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    Decision.model_validate_json("".join(line["message"]["content"] for line in lines))
    assert lines[-1]["eval_count"] > 0


def test_slots_queue_requests_first_in_first_out(make_stub: MakeStub) -> None:
    # 10 words a request at 100 words/s: 0.1 s each in the single slot
    stub = make_stub(slots=1, prompt_rate=100.0, generate_rate=1000.0)
    messages = [{"role": "user", "content": " ".join(["word"] * 10)}]
    done: list[int] = []

    def call(i: int) -> None:
        httpx.post(f"{stub.url}/chat/completions", json={"messages": messages}, timeout=10)
        done.append(i)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
        while stub.calls <= threads.index(thread):  # arrival in thread order
            time.sleep(0.005)
    for thread in threads:
        thread.join(10)
    elapsed = time.perf_counter() - started
    assert stub.granted == [0, 1, 2, 3] and done == [0, 1, 2, 3]
    assert elapsed >= 4 * 0.1, f"four 0.1 s requests through one slot took {elapsed:.2f} s"
