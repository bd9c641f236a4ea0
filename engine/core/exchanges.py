"""What is kept of every LLM exchange, and the per-round usage summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

#: ``degenerate``: a reply in the schema's shape that said nothing worth counting (see
#: ``engine.core.quality``); asked again once, then fallen back.
Outcome = Literal["ok", "repaired", "reasked", "degenerate", "fallback", "error"]
#: Key suffixes of an exchange asked again: after an invalid reply, after a degenerate one.
REASK, AGAIN = ":reask", ":again"
#: How an exchange asked for its reply: ``response_format`` json_schema, ``response_format``
#: json_object carrying the schema (llama.cpp's servers enforce it with a grammar),
#: ``response_format`` json_object (schema in the prompt), JSON instructions and schema in the
#: prompt only, or free text (utterances, narration).
Structured = Literal[
    "json_schema", "json_object_schema", "json_object", "json_instructions", "text"
]
#: Who counted an exchange's tokens: the server's usage, or socialsim (a streamed reply the
#: server sent no usage for; see ``engine.llm.tokens``).
CountedBy = Literal["server", "socialsim"]
#: More than this share of a round's structured answers fell back: the run stops, loudly.
DEGRADED_SHARE = 0.5
#: More than this share fell back: the app warns.
WARNING_SHARE = 0.1


class LLMCall(BaseModel):
    """One exchange with a model: request, response, usage, latency and how it ended.

    ``key`` names the exchange deterministically (round, purpose, agent, target), so a
    replay can serve the same response to the same request whatever the call order.
    ``missing``: the triggered edges a batched judgement still left out after its re-ask
    (they fell back to no change). ``clamped``: the fields of a reply in the schema's shape
    whose values broke a bound and were clamped to it (re-asked only when a signed change
    was far off its scale: ``flaw`` ``scale``). ``sent_tokens``: the prompt's tokens as
    socialsim counts them, beside the ``prompt_tokens`` the server read. ``flaw``: the kind
    of a degenerate reply (:data:`FLAWS`). ``at_cap``: every signed change the reply gave
    sat at its cap. ``left_out``: on a batched judge's re-ask of missing edges, the edges
    its first reply left out. ``cached_tokens``: those of them the server says it took from
    its prefix cache (None: the server did not say; engine/llm/servercache.py).
    ``endpoint``: the server that answered (or failed) in a run of several; ``moved_from``:
    the one that stopped answering and whose call this was (engine/llm/endpoints.py); both
    empty, and not saved, otherwise. ``read``: ``lenient`` for a reply whose JSON was read
    with line breaks in its strings (json-repair misread them; a record made before, empty
    here, replays so).
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    key: str
    purpose: str
    agent: str
    model: str
    messages: list[dict[str, str]]
    response: str | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    attempts: int = 1
    structured: Structured = "text"
    outcome: Outcome = "ok"
    missing: list[str] = []
    clamped: list[str] = []
    counted_by: CountedBy = "server"
    sent_tokens: int = 0
    flaw: str = ""
    at_cap: bool = False
    left_out: list[str] = []
    cached_tokens: int | None = None
    endpoint: str = Field("", exclude_if=lambda value: not value)
    moved_from: str = Field("", exclude_if=lambda value: not value)
    read: str = Field("", exclude_if=lambda value: not value)

    @property
    def settles(self) -> bool:
        """True for the exchange that settles its question (its last one): a reply taken,
        a failure, or a degenerate reply asked again in vain."""
        if self.outcome == "degenerate":
            return self.key.endswith((REASK, AGAIN))
        return self.outcome in ("ok", "repaired", "fallback")

    @property
    def degenerate(self) -> bool:
        """True for a degenerate reply: asked again (outcome ``degenerate``), or not asked
        again, as the model's re-asks had come to nothing (engine/llm/reasks.py), and taken
        mended or fallen back at once (its flaw kept on a question's first exchange)."""
        if self.outcome == "degenerate":
            return True
        held = self.outcome in ("fallback", "repaired") and not self.key.endswith((REASK, AGAIN))
        return held and bool(self.flaw)

    @property
    def fell_back(self) -> bool:
        """True for the exchange whose question fell back to its default: a failure, or a
        degenerate reply asked again in vain."""
        return self.settles and self.outcome in ("fallback", "degenerate")

    @property
    def answers(self) -> bool:
        """True for the exchange that settles a structured question (its last one)."""
        return self.structured != "text" and self.settles

    @property
    def reasked(self) -> bool:
        """True for an exchange that counts as a re-ask: its reply was asked again (invalid,
        or degenerate), or it is the batched judge's re-ask of the edges a reply left out."""
        if self.outcome == "degenerate":
            return not self.settles
        return self.outcome == "reasked" or bool(self.left_out)


class RoundUsage(BaseModel):
    """Totals of one round's LLM calls, for the header, the save and the CSV."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    repairs: int = 0
    reasks: int = 0
    fallbacks: int = 0
    errors: int = 0  # exchanges that got no reply (timeouts, 5xx, 429 after retries, rejections)
    judge_mode: str = ""
    #: Structured questions settled this round, and how many of them fell back.
    structured: int = 0
    structured_fallbacks: int = 0
    #: Triggered edges the batched judge left out even after its re-ask (no change applied).
    missing_edges: int = 0
    #: Replies in the schema's shape whose out-of-bound values were clamped.
    clamped: int = 0
    #: Replies that fit their schema but said nothing worth counting (each one, first asks
    #: and re-asks alike).
    degenerate: int = 0
    #: Replies whose every signed change sat at its cap.
    at_cap: int = 0
    #: Edges a batched judge's first reply left out, asked again (``missing_edges``: those
    #: still missing after that).
    left_out: int = 0
    #: The prompt tokens servers said they took from their prefix cache, and the prompt
    #: tokens of the exchanges whose server said it (engine/llm/servercache.py).
    cached_tokens: int = 0
    cache_reported: int = 0
    #: The prompt tokens that repeat an earlier prompt's prefix (engine/llm/prefix.py): what
    #: a prefix cache could reuse.
    shared_prefix: int = 0

    @classmethod
    def summed(cls, usages: Iterable[RoundUsage]) -> RoundUsage:
        """The field-by-field sum of several rounds' usage (``judge_mode`` left empty)."""
        names = [name for name in cls.model_fields if name != "judge_mode"]
        rows = list(usages)
        return cls(**{name: sum(getattr(u, name) for u in rows) for name in names})

    @classmethod
    def of(cls, calls: list[LLMCall], judge_mode: str, shared_prefix: int = 0) -> RoundUsage:
        """Sum a round's calls (``shared_prefix``: their prompts' tokens that repeat an
        earlier prompt's prefix)."""
        answers = [c for c in calls if c.answers]
        reported = [c for c in calls if c.cached_tokens is not None]
        return cls(
            calls=len(calls),
            prompt_tokens=sum(c.prompt_tokens for c in calls),
            completion_tokens=sum(c.completion_tokens for c in calls),
            cost_usd=sum(c.cost_usd for c in calls),
            retries=sum(c.attempts - 1 for c in calls),
            repairs=sum(c.outcome == "repaired" for c in calls),
            reasks=sum(c.reasked for c in calls),
            fallbacks=sum(c.fell_back for c in calls),
            errors=sum(c.response is None for c in calls),
            judge_mode=judge_mode,
            structured=len(answers),
            structured_fallbacks=sum(c.fell_back for c in answers),
            missing_edges=sum(len(c.missing) for c in calls),
            clamped=sum(bool(c.clamped) for c in calls),
            degenerate=sum(c.degenerate for c in calls),
            at_cap=sum(c.at_cap for c in calls),
            left_out=sum(len(c.left_out) for c in calls),
            cached_tokens=sum(c.cached_tokens or 0 for c in reported),
            cache_reported=sum(c.prompt_tokens for c in reported),
            shared_prefix=shared_prefix,
        )

    @property
    def fallback_share(self) -> float:
        """Share of the round's structured answers that fell back; each edge a batched
        judgement left out counts as one more answer, fallen back."""
        total = self.structured + self.missing_edges
        return (self.structured_fallbacks + self.missing_edges) / total if total else 0.0

    @property
    def warning(self) -> bool:
        """More than 10% fell back: results are shaky, the app says so."""
        return self.fallback_share > WARNING_SHARE

    @property
    def degraded(self) -> bool:
        """More than half fell back: the run is no longer measuring the model."""
        return self.fallback_share > DEGRADED_SHARE


#: Each kind of degenerate reply, in a few words (for the line that names a round's most
#: common failure): an utterance's, in the order ``engine.core.quality`` checks them, then a
#: structured reply's signed change far off its scale (``engine.llm.clamp``).
FLAWS = {
    "empty": "nothing said",
    "debris": "JSON, template or code debris",
    "wordless": "not words",
    "echo": "its prompt echoed",
    "loop": "begun over again",
    "unfinished": "cut off mid-sentence",
    "copy": "another's line copied",
    "self": "the speaker spoken to or of as another",
    "repeat": "a sentence said over and over",
    "description": "the schema's description copied",
    "contradicts": "a reply against itself (an intent its act, a status its change)",
    "scale": "changes far off their scale",
}


def main_failure(calls: list[LLMCall]) -> tuple[str, str, int]:
    """(model, error, count): the most common reason a round's structured answers fell
    back (without the model's name the transport puts first), and the model that gave it
    most."""
    failed = [c for c in calls if c.answers and c.fell_back]
    causes = Counter(
        f"degenerate ({c.flaw}: {FLAWS.get(c.flaw, 'flawed')})"
        if c.degenerate
        else c.error or "no valid reply"
        for c in failed
    )
    missing = [c for c in calls if c.missing]
    edges = sum(len(c.missing) for c in missing)
    error, count = causes.most_common(1)[0] if causes else ("", 0)
    if edges > count:
        error, count, failed = "the batched judge left out triggered edges", edges, missing
    model = Counter(c.model for c in failed).most_common(1)[0][0] if failed else ""
    return model, error.removeprefix(f"{model}: "), count


class _Played(Protocol):
    """A played round, as far as its exchanges go (a ``RoundRecord``)."""

    @property
    def round(self) -> int: ...
    @property
    def usage(self) -> RoundUsage | None: ...
    @property
    def llm_calls(self) -> list[LLMCall]: ...


def degraded_line(record: _Played, api_base: str | None) -> str | None:
    """Why a round in which more than half of the structured answers fell back stops the run
    (``None`` for a round that did not): the share, the model and server, the most common
    error and how to go on."""
    usage = record.usage
    if usage is None or not usage.degraded:
        return None
    model, error, count = main_failure(record.llm_calls)
    provider = f"provider {model.split('/')[0]}" if "/" in model else "its provider"
    return (
        f"round {record.round}: {usage.fallback_share:.0%} of the structured answers fell "
        f"back ({model} at {api_base or provider}; most common error, {count}x: "
        f"{error}); the round is saved; fix the server, or go on with --tolerate-fallbacks"
    )


def cache_line(cached: int, reported: int, shared: int, prompt: int) -> str:
    """The prefix cache as the server reported it (``cached`` of the ``reported`` prompt
    tokens of the exchanges whose server said), beside the prompts' own shared prefix
    (``shared`` of ``prompt``): ``server reused 3,130 of 25,152 prompt tokens (12.4%); the
    prompts repeat 9,870 (39.2%) of an earlier prompt``."""
    own = f"the prompts repeat {shared:,} ({shared / max(1, prompt):.1%}) of an earlier prompt"
    if not reported:
        return f"not reported by the server; {own}" if prompt else "not reported by the server"
    said = f"server reused {cached:,} of {reported:,} prompt tokens ({cached / reported:.1%})"
    return f"{said}; {own}" if prompt else said


def endpoints_line(calls: Iterable[LLMCall]) -> str | None:
    """How a run of several endpoints spread its calls, and the calls moved off an endpoint
    that stopped answering: ``127.0.0.1:8101 40 calls, 127.0.0.1:8102 38; 3 calls moved
    off 127.0.0.1:8102`` (None with one endpoint)."""
    served: Counter[str] = Counter()
    moved: Counter[str] = Counter()
    for call in calls:
        if call.endpoint:
            served[_host(call.endpoint)] += 1
        if call.moved_from:
            moved[_host(call.moved_from)] += 1
    if not served:
        return None
    spread = ", ".join(f"{host} {n}" for host, n in sorted(served.items()))
    line = f"{spread} calls"
    for host, n in sorted(moved.items()):
        line += f"; {n} call{'s' * (n > 1)} moved off {host}"
    return line


def _host(url: str) -> str:
    """``127.0.0.1:8101`` of ``http://127.0.0.1:8101/v1``."""
    return urlsplit(url).netloc or url
