"""A comparison of two runs as rich text, shared by ``socialsim diff`` and the diff view:
difference cells (sign and size in the text, colour only on top, so they read the same
with ``NO_COLOR``), the legend, the summary lines, agent rows and transcript lines."""

from __future__ import annotations

from rich.text import Text

from engine.core.needs import need_label
from engine.saves.runmeta import RunMeta
from engine.studies.diff import EPSILON, AgentDiff, EdgeDiff, RunComparison, Turn

LEGEND = "Δ fav = B − A: + warmer in B, - cooler, · same; * status differs"
TALK_LEGEND = "≠ a line the other run does not have"
SPARKS = "▁▂▃▄▅▆▇█"


def signed(delta: float, digits: int = 2) -> str:
    """``+.12``, ``-.30``, ``+1.2``; ``·`` for no difference (never ``-0.00``)."""
    if abs(delta) < EPSILON:
        return "·"
    if abs(delta) >= 0.995:
        return f"{delta:+.1f}"
    return f"{delta:+.{digits}f}".replace("0.", ".", 1)


def delta_style(delta: float) -> str:
    """Colour by sign and size: green warmer, red cooler, bold from 0.25."""
    if abs(delta) < EPSILON:
        return "dim"
    strong = "bold " if abs(delta) >= 0.25 else ""
    return strong + ("green" if delta > 0 else "red")


def edge_cell(edge: EdgeDiff) -> Text:
    """One heatmap cell: the signed difference, ``*`` when the status differs."""
    mark = "*" if edge.status_a != edge.status_b else ""
    return Text(signed(edge.delta) + mark, style=delta_style(edge.delta))


def edge_line(source: str, target: str, edge: EdgeDiff) -> Text:
    """The exact values of one edge in both runs."""
    return Text.assemble(
        (f"{source} → {target}", "bold"),
        f"  A {edge.fav_a:+.3f} {edge.status_a.value}",
        f"  B {edge.fav_b:+.3f} {edge.status_b.value}",
        "  Δ ",
        (f"{edge.delta:+.3f}" if abs(edge.delta) >= EPSILON else "none", delta_style(edge.delta)),
    )


def sparkline(values: list[float]) -> str:
    """Block heights scaled to the largest value (all lowest blocks when every value is 0)."""
    top = max(values, default=0.0)
    if top <= 0:
        return SPARKS[0] * len(values)
    return "".join(SPARKS[min(7, round(v / top * 7))] for v in values)


def side_text(tag: str, meta: RunMeta, done: int, detail: bool = True) -> Text:
    """``A parent  tavern · rounds 0..4 · a name``; without ``detail``: ``A parent (0..4)``."""
    line = Text.assemble((f"{tag} ", "bold"), (meta.run_id, "bold cyan"))
    if not detail:
        return line.append(f" (0..{done})", style="dim")
    line.append(f"  {meta.scenario.id} · rounds 0..{done}", style="dim")
    if meta.name:
        line.append(f" · {meta.name}", style="italic")
    return line


def divergence_text(diff: RunComparison) -> Text:
    """The first round where the runs part, or that they never do."""
    if diff.first_divergence is None:
        return Text(f"no divergence: the runs are identical over rounds 0..{diff.last_common}")
    return Text.assemble("first divergence: ", (f"round {diff.first_divergence}", "bold"))


def only_lines(diff: RunComparison) -> list[Text]:
    """Agents one run has and the other does not (left out of the comparison)."""
    return [
        Text(f"only in {tag} (not compared): {', '.join(names)}", style="yellow")
        for tag, names in (("A", diff.only_a), ("B", diff.only_b))
        if names
    ]


def run_lines(diff: RunComparison) -> list[Text]:
    """Who A and B are, how they are related and where they part, one per line."""
    return [
        side_text("A", diff.meta_a, diff.done_a),
        side_text("B", diff.meta_b, diff.done_b),
        Text(diff.lineage(), style="dim"),
        divergence_text(diff),
        *only_lines(diff),
    ]


def profile_line(profile: list[tuple[int, float, float]]) -> Text:
    """Mean |Δ fav| per round from the first divergence on as a sparkline, and the largest
    difference of any edge."""
    if not profile:
        return Text("|Δ fav| by round: none (no divergence)", style="dim")
    peak_round, _, peak = max(profile, key=lambda item: item[2])
    if peak < EPSILON:
        return Text("|Δ fav| by round: no favorability difference yet", style="dim")
    return Text.assemble(
        f"mean |Δ fav| R{profile[0][0]}..R{profile[-1][0]} ",
        (sparkline([mean for _, mean, _ in profile]), "cyan"),
        f"  largest {signed(peak, 3).lstrip('+')} at R{peak_round}",
    )


def emotion_cells(person: AgentDiff) -> tuple[str, str, Text]:
    """S in A, S in B and the difference."""
    d = person.emotion_delta
    return f"{person.emotion_a:.2f}", f"{person.emotion_b:.2f}", Text(signed(d), delta_style(d))


def needs_text(person: AgentDiff, limit: int = 3, short: bool = False) -> Text:
    """The needs that differ most: ``self worth -1.2, respect +.40 (+2 more)``; ``short``:
    the panes' short names (``self-worth``)."""
    from .widgets.needs import SHORT

    deltas = person.need_deltas()
    if not deltas:
        return Text("·", style="dim")
    text = Text()
    for k, (need, d) in enumerate(deltas[:limit]):
        if k:
            text.append(", ")
        text.append(f"{SHORT[need] if short else need_label(need)} ")
        text.append(signed(d), style=delta_style(d))
    if len(deltas) > limit:
        text.append(f" (+{len(deltas) - limit} more)", style="dim")
    return text


def transcript_text(turns: list[Turn], other: list[Turn]) -> list[Text]:
    """A round's lines, each line the other run does not have marked ``≠``."""
    theirs = set(other)
    return [
        Text.assemble(("≠ " if t not in theirs else "  ", "bold yellow"), turn_text(t))
        for t in turns
    ]


def turn_text(turn: Turn) -> Text:
    """One transcript line; events, public, private and silent turns differ by glyph."""
    if turn.speaker is None:
        private = f" (private to {', '.join(turn.private_to)})" if turn.private_to else ""
        return Text.assemble(("⚑ event", "yellow"), (private, "yellow"), ": ", turn.text)
    person = (f" (human: {turn.player})", "bold green") if turn.player else ("", "")
    forced = (" (forced)", "bold yellow") if turn.forced else person
    if turn.mode == "silent":
        return Text.assemble(
            ("· ", "dim"), (turn.speaker, "dim bold"), (" silent", "dim italic"), person
        )
    if turn.mode == "private":
        return Text.assemble(
            ("✉ ", "magenta"),
            (f"{turn.speaker} →{turn.target}", "bold magenta"),
            forced,
            ": ",
            (turn.text, "magenta"),
        )
    return Text.assemble(
        ("▶ ", "cyan"),
        (f"{turn.speaker} →{turn.target or 'all'}", "bold cyan"),
        forced,
        ": ",
        turn.text,
    )
