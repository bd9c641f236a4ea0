"""What a model returns never brings a control character to the terminal or the save: the
stub's replies carry escape sequences, the LLM client hands on text, streamed tokens and
structured answers without them."""

from __future__ import annotations

import llm_stub
import pytest
from pydantic import BaseModel

from engine.core.textsafe import unsafe_char

HOSTILE = "Hi \x1b[31mRED\x1b]0;PWNED\x07 there\r\nnext\x9b2J line."
MESSAGES = [{"role": "user", "content": "Say something."}]


class Answer(BaseModel):
    intent: str
    notes: list[str]


@pytest.fixture
def hostile_stub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every free-text reply and every generated JSON string carries control characters."""
    monkeypatch.setattr(llm_stub, "_sentence", lambda rng: HOSTILE)
    monkeypatch.setattr(
        llm_stub._Generator, "_gen_string", lambda self, s, depth: "ev\x1b[2Jil\u202e\x00"
    )


@pytest.mark.usefixtures("hostile_stub")
async def test_free_text_and_its_streamed_tokens_are_stripped(make_client):
    client, stub = make_client()
    tokens: list[str] = []
    text = await client.text(
        key="r0001:speak:Ann",
        purpose="speak",
        agent="Ann",
        model="openai/stub",
        messages=MESSAGES,
        sink=tokens.append,
    )
    assert stub.calls == 1
    assert text == "Hi [31mRED]0;PWNED there\nnext2J line."
    assert tokens and all(unsafe_char(t, multiline=True) is None for t in tokens)


@pytest.mark.usefixtures("hostile_stub")
async def test_structured_answers_are_stripped(make_client):
    client, stub = make_client()
    out = await client.structured(
        key="r0001:decide:Ann",
        purpose="decide",
        agent="Ann",
        model="openai/stub",
        messages=MESSAGES,
        schema=Answer,
        default=Answer(intent="fallback", notes=[]),
    )
    assert stub.calls >= 1
    assert out.intent == "ev[2Jil"
    assert all(note == "ev[2Jil" for note in out.notes)
