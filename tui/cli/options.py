"""The LLM options of the commands that play a mind: one frozen value, and a decorator that
gives a command the typer options and hands it that value as ``llm``."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from .base import fail

if TYPE_CHECKING:
    from engine.minds.spec import MindSpec

PANEL = "Model"

#: The typer option of each field of :class:`LLMOptions`, in the order of ``--help``.
OPTIONS: dict[str, Any] = {
    "model": Annotated[
        str,
        typer.Option(
            help="'offline' (rule-based) or a litellm model string, e.g. gpt-4o-mini.",
            rich_help_panel=PANEL,
        ),
    ],
    "judge_model": Annotated[
        str | None,
        typer.Option(
            "--judge-model",
            help="Model of the judge (U_S, U_R, needs) [default: --model].",
            rich_help_panel=PANEL,
        ),
    ],
    "agent_model": Annotated[
        list[str],
        typer.Option(
            "--agent-model",
            help="NAME=MODEL for one agent (repeatable; mixed teams).",
            rich_help_panel=PANEL,
        ),
    ],
    "api_base": Annotated[
        list[str],
        typer.Option(
            "--api-base",
            help="Base URL of an OpenAI-compatible server (with openai/NAME); repeatable: "
            "each agent's calls go to one of the servers.",
            rich_help_panel=PANEL,
        ),
    ],
    "endpoints": Annotated[
        Path | None,
        typer.Option(
            "--endpoints",
            help="File of more --api-base URLs, one a line (# comments).",
            rich_help_panel=PANEL,
        ),
    ],
    "api_key_env": Annotated[
        str | None,
        typer.Option(
            "--api-key-env",
            help="Environment variable whose value is sent as the API key (with --api-base, "
            "none is sent unless named).",
            rich_help_panel=PANEL,
        ),
    ],
    "judge_mode": Annotated[
        str,
        typer.Option(
            "--judge-mode",
            help="per-edge (one U_R call per edge) or batched (one per observer).",
            rich_help_panel=PANEL,
        ),
    ],
    "structured": Annotated[
        str,
        typer.Option(
            "--structured",
            help="How structured replies are asked for: auto (probe the server once per "
            "model), schema (json_schema), grammar (json_object carrying the schema, as "
            "llama.cpp enforces it), json or text.",
            rich_help_panel=PANEL,
        ),
    ],
    "structured_model": Annotated[
        list[str],
        typer.Option(
            "--structured-model",
            help="MODEL=MODE: --structured for one of the run's models (repeatable).",
            rich_help_panel=PANEL,
        ),
    ],
    "system_role": Annotated[
        str,
        typer.Option(
            "--system-role",
            help="Where the system text goes: keep (a system message), merge (at the head of "
            "the first user turn, for chat templates without a system role) or auto (merge "
            "for a server seen to drop it).",
            rich_help_panel=PANEL,
        ),
    ],
    "max_concurrency": Annotated[
        int,
        typer.Option(
            "--max-concurrency",
            min=1,
            help="The most LLM calls in flight at once (a local server's limit adapts below it).",
            rich_help_panel=PANEL,
        ),
    ],
    "timeout": Annotated[
        float,
        typer.Option(
            "--timeout",
            min=0.1,
            help="Seconds an LLM call may wait for the server's next byte.",
            rich_help_panel=PANEL,
        ),
    ],
    "call_timeout": Annotated[
        float | None,
        typer.Option(
            "--call-timeout",
            min=0.1,
            help="Seconds an LLM call may take in all, however the server sends; past it "
            "the reply is cut and counted as failed [default: 180; on resume, the run's].",
            rich_help_panel=PANEL,
        ),
    ],
    "max_tokens": Annotated[
        int,
        typer.Option(
            "--max-tokens", min=16, help="Cap on each reply's tokens.", rich_help_panel=PANEL
        ),
    ],
    "retries": Annotated[
        int,
        typer.Option(
            "--retries", min=0, help="Retries on timeout, 429 and 5xx.", rich_help_panel=PANEL
        ),
    ],
    "max_calls": Annotated[
        int | None,
        typer.Option(
            "--max-calls",
            min=1,
            help="Stop after the round that reaches this many LLM calls.",
            rich_help_panel=PANEL,
        ),
    ],
    "budget_usd": Annotated[
        float | None,
        typer.Option(
            "--budget-usd",
            min=0.0,
            help="Stop after the round that reaches this cost.",
            rich_help_panel=PANEL,
        ),
    ],
    "tolerate_fallbacks": Annotated[
        bool,
        typer.Option(
            "--tolerate-fallbacks",
            help="Play on after a round in which most structured answers fell back.",
            rich_help_panel=PANEL,
        ),
    ],
}


@dataclass(frozen=True)
class LLMOptions:
    """The LLM options as given on the command line (the defaults are the options' defaults)."""

    model: str = "offline"
    judge_model: str | None = None
    agent_model: tuple[str, ...] = ()
    api_base: tuple[str, ...] = ()
    endpoints: Path | None = None
    api_key_env: str | None = None
    judge_mode: str = "per-edge"
    structured: str = "auto"
    structured_model: tuple[str, ...] = ()
    system_role: str = "auto"
    max_concurrency: int = 1024  # LLMSettings.max_concurrency: a whole update wave
    timeout: float = 60.0
    call_timeout: float | None = None  # LLMSettings.call_timeout, or the resumed run's
    max_tokens: int = 1024
    retries: int = 3
    max_calls: int | None = None
    budget_usd: float | None = None
    tolerate_fallbacks: bool = False

    @property
    def offline(self) -> bool:
        """Whether ``--model`` names the offline rule-based model."""
        from engine.minds.spec import mind_spec

        return mind_spec(self.model).offline

    def spec(
        self, names: Sequence[str], *, scenario_models: Mapping[str, str] | None = None
    ) -> MindSpec:
        """The mind these options name for agents ``names``; ``scenario_models`` are the
        per-agent models of the scenario file, which ``--agent-model NAME=MODEL`` overrides."""
        from pydantic import ValidationError

        from engine.minds.spec import OFFLINE, mind_spec

        if self.offline:
            given = (self.judge_model, self.agent_model, self.api_base, self.api_key_env)
            if any(given) or self.structured_model or self.endpoints:
                fail(
                    "--judge-model, --agent-model, --api-base, --endpoints, --api-key-env and "
                    "--structured-model need an LLM --model"
                )
            return OFFLINE
        agents = dict(scenario_models or {})
        for item in self.agent_model:  # mixed teams: NAME=MODEL
            name, sep, value = item.partition("=")
            if not sep or not value.strip():
                fail(f"--agent-model {item!r}: use NAME=MODEL")
            if name not in names:
                fail(f"--agent-model {item!r}: no agent {name!r}; agents: {', '.join(names)}")
            agents[name] = value.strip()
        models = {self.model, self.judge_model or self.model, *agents.values()}
        bases = [*self.api_base, *endpoints_file(self.endpoints)]
        try:
            return mind_spec(
                self.model,
                judge_model=self.judge_model,
                agent_models=agents,
                api_base=bases[0] if bases else None,
                api_bases=bases if len(bases) > 1 else [],
                api_key_env=self.api_key_env,
                judge_mode=self.judge_mode,
                structured=self.structured,
                structured_models=structured_models(self.structured_model, models),
                system_role=self.system_role,
                max_concurrency=self.max_concurrency,
                timeout=self.timeout,
                **({} if self.call_timeout is None else {"call_timeout": self.call_timeout}),
                max_tokens=self.max_tokens,
                retries=self.retries,
                max_calls=self.max_calls,
                budget_usd=self.budget_usd,
                tolerate_fallbacks=self.tolerate_fallbacks,
            )
        except ValidationError as err:
            first = err.errors()[0]
            field = str(first["loc"][0])
            option = "api-base" if field == "api_bases" else field.replace("_", "-")
            fail(f"--{option}: {first['msg']}")

    def resumed(self, spec: MindSpec) -> MindSpec | None:
        """The run's ``spec`` with what ``resume`` may change: the caps, ``--call-timeout``
        and ``--tolerate-fallbacks`` (None: nothing given)."""
        from engine.minds.spec import Offline

        given = {
            "max_calls": self.max_calls,
            "budget_usd": self.budget_usd,
            "call_timeout": self.call_timeout,
            "tolerate_fallbacks": self.tolerate_fallbacks or None,
        }
        if all(v is None for v in given.values()):
            return None
        if isinstance(spec, Offline):
            fail(
                "--max-calls, --budget-usd, --call-timeout and --tolerate-fallbacks apply to "
                "LLM runs"
            )
        return spec.model_copy(update={k: v for k, v in given.items() if v})


def endpoints_file(path: Path | None) -> list[str]:
    """The URLs of an ``--endpoints`` file: one a line, blank lines and ``#`` comments
    skipped (one-line errors)."""
    if path is None:
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        fail(f"--endpoints {path}: cannot read it ({type(err).__name__})")
    urls = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    urls = [url for url in urls if url]
    if not urls:
        fail(f"--endpoints {path}: no URL in it (one a line)")
    for url in urls:
        if len(url.split()) > 1:
            fail(f"--endpoints {path}: {url!r} is not one URL (one a line)")
    return urls


def structured_models(items: Sequence[str], models: set[str]) -> dict[str, str]:
    """``--structured-model MODEL=MODE`` items as a dict, each checked (one-line errors)."""
    from typing import get_args

    from engine.llm.settings import StructuredMode

    modes = get_args(StructuredMode)
    chosen = {}
    for item in items:
        model, sep, mode = (part.strip() for part in item.rpartition("="))
        if not sep or not model:
            fail(f"--structured-model {item!r}: use MODEL=MODE")
        if mode not in modes:
            fail(f"--structured-model {item!r}: MODE is one of {', '.join(modes)}")
        if model not in models:
            fail(
                f"--structured-model {item!r}: {model!r} plays no part in this run; "
                f"models: {', '.join(sorted(models))}"
            )
        chosen[model] = mode
    return chosen


# -- validators of the other options (paths: base.folder; each error quotes the value) -----


def seed(value: int) -> int:
    """``--seed``: a whole number from 0 to 2**63 - 1."""
    from engine.core.limits import MAX_SEED

    if not 0 <= value <= MAX_SEED:
        raise typer.BadParameter(f"a seed is a whole number from 0 to 2**63 - 1 ({MAX_SEED})")
    return value


def label(value: str) -> str:
    """``--name``: one line of printable text (empty: no label)."""
    from engine.core.limits import MAX_LABEL_CHARS
    from engine.core.textsafe import char_name, unsafe_char

    bad = unsafe_char(value)
    if bad is not None:
        raise typer.BadParameter(f"contains the control character {char_name(bad)}")
    if len(value) > MAX_LABEL_CHARS:
        raise typer.BadParameter(f"longer than {MAX_LABEL_CHARS} characters")
    return value


Command = TypeVar("Command", bound=Callable[..., Any])
DEFAULTS = {f.name: f.default for f in fields(LLMOptions)}


def llm_options(*names: str) -> Callable[[Command], Command]:
    """Give a command the LLM options ``names`` (all of them when none are named); the
    command receives them as one ``llm: LLMOptions`` argument."""
    chosen = names or tuple(OPTIONS)

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        params = [p for p in signature.parameters.values() if p.name != "llm"]
        params += [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=DEFAULTS[name],
                annotation=OPTIONS[name],
            )
            for name in chosen
        ]

        @functools.wraps(command)
        def with_options(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in chosen}
            for repeated in ("agent_model", "structured_model", "api_base"):
                if repeated in given:  # typer gives a list; the options are frozen
                    given[repeated] = tuple(given[repeated])
            return command(*args, llm=LLMOptions(**given), **kwargs)

        with_options.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        with_options.__annotations__ = {p.name: p.annotation for p in params}
        return with_options  # type: ignore[return-value]

    return decorate
