"""What a local server says of itself: its context window and its slots.

Asked once, before a run's first round, with a short timeout, and only of the endpoint the
user configured (``--api-base``, or Ollama's own for ``ollama/`` models):

* llama.cpp's ``llama-server``: ``GET /props`` gives ``default_generation_settings.n_ctx``
  (the window of one slot) and ``total_slots``;
* Ollama: ``POST /api/show`` gives the model's ``num_ctx`` parameter when its Modelfile sets
  one, else Ollama's default window (:data:`OLLAMA_DEFAULT_CTX`) applies, whatever the
  model's own ``context_length``;
* vLLM (and SGLang): ``GET /v1/models`` gives each model's ``max_model_len``.

llama-cpp-python's server says neither; a prompt too long for it is refused at the call,
which socialsim reports with the same advice.
"""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .bounds import loads

if TYPE_CHECKING:
    from .settings import LLMSettings

#: Ollama's window when the model's Modelfile sets no ``num_ctx`` (Ollama 0.6 and later).
OLLAMA_DEFAULT_CTX = 4096
OLLAMA_BASE = "http://localhost:11434"
PROBE_TIMEOUT = 3.0
#: What a server may take to say all it says (every question), and the most a reply may
#: hold: past either it says nothing (a body that never ends, or sent a byte at a time).
DESCRIBE_SECONDS = 4 * PROBE_TIMEOUT
MAX_INFO_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ServerInfo:
    """A server's context window (tokens a request may hold: prompt and reply) and its
    slots (requests it decodes at once), where it says them; how to raise the window."""

    window: int | None = None
    slots: int | None = None
    kind: str = ""
    raise_with: str = "the server's context window setting"


def _root(api_base: str) -> str:
    return re.sub(r"/v1/?$", "", api_base.rstrip("/"))


def _ollama(model: str) -> str | None:
    """The Ollama model name of an ``ollama/`` or ``ollama_chat/`` model string."""
    for prefix in ("ollama/", "ollama_chat/"):
        if model.startswith(prefix):
            return model.removeprefix(prefix)
    return None


async def describe(
    model: str, api_base: str | None, headers: dict[str, str] | None = None
) -> ServerInfo:
    """What the server of ``model`` says of itself (an empty :class:`ServerInfo` when it
    says nothing, is not local, or does not answer in time)."""
    name = _ollama(model)
    if api_base is None and name is None:
        return ServerInfo()  # a hosted provider: windows are in litellm's model map
    root = _root(api_base or OLLAMA_BASE)
    try:
        async with asyncio.timeout(DESCRIBE_SECONDS):
            return await _described(model, name, root, headers)
    except TimeoutError:
        return ServerInfo()


async def _described(
    model: str, name: str | None, root: str, headers: dict[str, str] | None
) -> ServerInfo:
    import httpx

    async with httpx.AsyncClient(timeout=PROBE_TIMEOUT, headers=headers or {}) as client:
        if name is not None:
            return await _ask_ollama(client, root, name)
        for ask in (_ask_llama_cpp, _ask_models):
            info = await ask(client, root, model.split("/", 1)[-1])
            if info.window or info.slots:
                return info
        # Ollama's OpenAI-compatible endpoint (``openai/<name>`` at :11434/v1).
        return await _ask_ollama(client, root, model.split("/", 1)[-1])


async def _json(client: Any, method: str, url: str, **kwargs: Any) -> Any:
    """The JSON of a 200 reply of at most :data:`MAX_INFO_BYTES`, else None."""
    try:
        async with client.stream(method, url, **kwargs) as response:
            body = bytearray()  # read whatever the status: the connection is then reused
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_INFO_BYTES:
                    return None
            return loads(body.decode("utf-8")) if response.status_code == 200 else None
    except Exception:  # not this kind of server, or not answering: it says nothing
        return None


async def _ask_llama_cpp(client: Any, root: str, name: str) -> ServerInfo:
    data = await _json(client, "GET", f"{root}/props")
    if not isinstance(data, dict):
        return ServerInfo()
    settings = data.get("default_generation_settings") or {}
    window = _int(settings.get("n_ctx") if isinstance(settings, dict) else None)
    return ServerInfo(window, _int(data.get("total_slots")), "llama.cpp", "--ctx-size")


async def _ask_models(client: Any, root: str, name: str) -> ServerInfo:
    data = await _json(client, "GET", f"{root}/v1/models")
    models = data.get("data") if isinstance(data, dict) else None
    for entry in models or ():
        if isinstance(entry, dict) and entry.get("id") == name:
            window = _int(entry.get("max_model_len"))
            if window:
                return ServerInfo(window, None, "vLLM", "--max-model-len")
    return ServerInfo()


async def _ask_ollama(client: Any, root: str, name: str) -> ServerInfo:
    data = await _json(client, "POST", f"{root}/api/show", json={"model": name})
    if not isinstance(data, dict):
        return ServerInfo()
    match = re.search(r"^num_ctx\s+(\d+)", str(data.get("parameters") or ""), re.MULTILINE)
    window = int(match.group(1)) if match else OLLAMA_DEFAULT_CTX
    info = data.get("model_info") or {}
    native = [_int(v) for k, v in info.items() if k.endswith(".context_length")]
    if native and native[0]:
        window = min(window, native[0])
    return ServerInfo(
        window,
        None,
        "Ollama",
        "num_ctx (PARAMETER num_ctx in a Modelfile, or OLLAMA_CONTEXT_LENGTH)",
    )


async def answers(api_base: str, headers: dict[str, str] | None = None) -> bool:
    """True when the server at ``api_base`` answers ``GET /v1/models`` at all (any status)
    within :data:`PROBE_TIMEOUT`."""
    import httpx

    try:
        async with httpx.AsyncClient(timeout=PROBE_TIMEOUT, headers=headers or {}) as client:
            await client.get(f"{_root(api_base)}/v1/models")
    except Exception:
        return False
    return True


def servers_of(settings: LLMSettings) -> dict[str, ServerInfo]:
    """What each of a run's models' servers says of itself; with several endpoints, the one
    with the narrowest window (runs its own event loop, in a thread when one is running
    here)."""
    from .keys import api_key

    key = api_key(settings)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    models = sorted({settings.model, settings.judge, *settings.agent_models.values()})

    async def ask() -> dict[str, ServerInfo]:
        bases: list[str | None] = [*settings.endpoints] or [None]
        asked = [(m, b) for m in models for b in bases]
        found = await asyncio.gather(*(describe(m, b, headers) for m, b in asked))
        narrowest: dict[str, ServerInfo] = {}
        for (model, _), info in zip(asked, found, strict=True):
            kept = narrowest.get(model)
            if kept is None or (info.window or 1 << 62) < (kept.window or 1 << 62):
                narrowest[model] = info
        return narrowest

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(ask())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, ask()).result()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
