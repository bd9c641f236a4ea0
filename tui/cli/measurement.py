"""Measuring a saved run without changing it (EduMirror): ``survey`` and ``rate``, answered
by the run's own kind of mind (LLM runs are measured by LLM)."""

from __future__ import annotations

from typing import Annotated

import typer

from .base import RunArg, SavesOpt, fail, open_store, run_async


def survey(
    run_id: RunArg,
    questionnaire: Annotated[
        str,
        typer.Option(
            "--questionnaire", help="rses, svo (the slider) or a questionnaire id of the scenario."
        ),
    ],
    agent: Annotated[str, typer.Option("--agent", help="The agent to survey.")],
    rounds: Annotated[
        str,
        typer.Option(
            "--rounds", help="Comma-separated rounds, e.g. 0,8 (the state logged after them)."
        ),
    ],
    saves: SavesOpt = None,
) -> None:
    """Administer a questionnaire to an agent from its logged state (the run is untouched)."""
    from engine.studies.surveys import survey as run_survey

    store = open_store(saves)
    meta = store.read_meta(run_id)
    try:
        wanted = [int(r) for r in rounds.split(",") if r.strip()]
    except ValueError:
        fail(f"--rounds {rounds!r}: give round numbers like 0,8")
    if not wanted:
        fail("--rounds: give at least one round")
    records = store.read_rounds(run_id)
    results = run_async(run_survey(meta.scenario, records, questionnaire, agent, wanted, meta.mind))
    store.add_measurements(run_id, "surveys", results)
    for r in results:
        extra = f" angle {r.angle:.1f}° ({r.category})" if r.angle is not None else ""
        typer.echo(
            f"{r.agent} round {r.round} {r.questionnaire}: score {r.score:g}{extra} "
            f"answers {' '.join(map(str, r.answers))} [{r.respondent}]"
        )


def rate(run_id: RunArg, saves: SavesOpt = None) -> None:
    """Score every agent's observable behaviour on the scenario's Rater criteria."""
    from engine.studies.surveys import rate as run_rate

    store = open_store(saves)
    meta = store.read_meta(run_id)
    records = store.read_rounds(run_id)
    ratings = run_async(run_rate(meta.scenario, records, meta.mind))
    store.add_measurements(run_id, "ratings", ratings)
    for r in ratings:
        typer.echo(f"{r.criterion:<24} {r.agent:<10} {r.score}  {r.evidence[:60]} [{r.rater}]")
