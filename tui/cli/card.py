"""``card``: a run's methods-section card, as a table or as the JSON export writes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .base import FormatOpt, RunArg, SavesOpt, make_console, open_store

if TYPE_CHECKING:
    from rich.table import Table

    from engine.reports.card import RunCard


def card(
    run_id: RunArg,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print card.json as export writes it.")
    ] = False,
    saves: SavesOpt = None,
    fmt: FormatOpt = "table",
) -> None:
    """Print a run's card: scenario and prompt hashes, models, decoding, seed, judge mode,
    versions, interventions and forks, LLM totals, and whether it is deterministic."""
    from engine.reports.card import run_card

    store = open_store(saves)
    meta = store.read_meta(run_id)
    found = run_card(meta, store.history(run_id, meta).logs(relations=False))
    if as_json:
        typer.echo(found.to_json(), nl=False)
        return
    from .output import emit

    emit(make_console(), [card_table(found)], fmt)
    from rich.markup import escape

    for line in found.quality_warnings:
        make_console(stderr=fmt != "table").print(f"[bold red]⚠ {escape(line)}[/]")
    if found.warning:
        make_console(stderr=fmt != "table").print(f"[bold yellow]⚠ {escape(found.warning)}[/]")


def card_table(c: RunCard) -> Table:
    """The card as rows of field and value (hashes shortened to 16 characters)."""
    from rich.markup import escape
    from rich.table import Table

    from engine.core.exchanges import cache_line
    from engine.core.tally import quality_line

    t = c.totals
    rows: list[tuple[str, str]] = [
        ("run", f"{c.run_id} {c.name}".strip()),
        ("rounds", f"{c.rounds}/{c.total_rounds}"),
        ("scenario", f"{c.scenario_id or c.scenario_ref} · {c.scenario_title}"),
        ("scenario sha256", c.scenario_sha256),
        (
            "prompt templates",
            " ".join(f"{k}:{v[:16]}" for k, v in c.prompt_templates_sha256.items()),
        ),
        ("model", c.model),
        ("judge model", c.judge_model),
        ("agent models", _pairs(c.agent_models)),
        ("api base", c.api_base or "-"),
        ("structured", " ".join(x for x in (c.structured, _pairs(c.structured_models)) if x)),
        ("structured modes", _pairs(c.structured_modes)),
        ("decoding", _decoding(c)),
        ("seed", str(c.seed)),
        ("judge mode", c.judge_mode),
        ("history window", f"{c.history_window} rounds"),
        ("memory size", str(c.memory_size)),
        ("ablation", "yes" if c.ablation else "no"),
        ("prior", c.prior or "-"),
        ("versions", _pairs(c.versions)),
        ("forks", ", ".join(f"{f['run_id']}@{f['round']}" for f in c.forks) or "-"),
        (
            "interventions",
            "\n".join(
                f"R{i.round} {i.kind}" + (f" {i.agent}" if i.agent else "") + f": {i.text}"
                for i in c.interventions
            )
            or "-",
        ),
        (
            "LLM totals",
            f"{t.calls:,} calls, {t.prompt_tokens + t.completion_tokens:,} tokens "
            f"({t.prompt_tokens:,} prompt, {t.completion_tokens:,} completion), "
            f"${t.cost_usd:.4f}; {t.repairs} repaired, {t.clamped} clamped, "
            f"{t.degenerate} degenerate, {t.at_cap} at the caps, {t.reasks} re-asked, "
            f"{t.fallbacks} fallbacks, {t.retries} retries, {t.errors} errors, "
            f"{t.left_out} edges left out, {t.missing_edges} still missing",
        ),
        ("reply quality", "\n".join(f"{q.model} {quality_line(q)}" for q in c.quality)),
        ("quality warning", "\n".join(c.quality_warnings)),
        (
            "prefix cache",
            cache_line(t.cached_tokens, t.cache_reported, t.shared_prefix, t.prompt_tokens)
            if t.calls
            else "-",
        ),
        ("deterministic", "yes" if c.deterministic else "no"),
    ]
    table = Table(title="Run card", title_justify="left", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for field, value in rows:
        table.add_row(field, escape(value or "-"))
    return table


def _decoding(c: RunCard) -> str:
    if c.temperature is None:
        return "rules"
    return (
        f"temperature {c.temperature:g}, max_tokens {c.max_tokens}, timeout {c.timeout_s:g} s, "
        f"retries {c.retries}"
    )


def _pairs(values: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())
