"""The plotly figures of the reports. The network's edges are grouped into favorability
bins, one line trace per bin (its colour and width): the page's round slider moves each
edge into the bin of its favorability in that round (``templates/run.js``)."""

from __future__ import annotations

import html
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .series import RunSeries

#: Favorability bins of the network's edges: [low, high), colour, width.
EDGE_BINS = [
    (-1.01, -0.5, "#b2182b", 3.0),
    (-0.5, -0.1, "#ef8a62", 1.8),
    (-0.1, 0.1, "#bbbbbb", 0.5),
    (0.1, 0.55, "#67a9cf", 1.8),
    (0.55, 1.01, "#2166ac", 3.0),
]
FAV_SCALE = "RdBu"
EMOTION_SCALE = "Viridis"


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def label(text: str) -> str:
    """``text`` as plotly shows it literally: its text takes a few HTML tags (``<a href>``,
    ``<b>``), so a name holding them is entity-escaped."""
    return html.escape(text, quote=False)


#: The ties the network draws at first, per agent (the page's control shows more or fewer).
TIES_PER_AGENT = 3


def circle(n: int) -> list[list[float]]:
    """Positions of ``n`` nodes evenly on the unit circle, the first at the top."""
    return [
        [round(math.sin(2 * math.pi * k / n), 4), round(math.cos(2 * math.pi * k / n), 4)]
        for k in range(n)
    ]


def layout(
    names: Sequence[str],
    faction_of: Mapping[str, str],
    fav: Sequence[Sequence[float | None]],
) -> list[list[float]]:
    """Each agent's position on the unit circle: a faction's members side by side on an
    arc of their own (an empty slot between factions; the unaffiliated last), and within a
    faction the agent with the strongest ties (the sum of |fav| both ways in ``fav``, one
    round's matrix) at the middle of its arc, the weaker ones toward its ends."""
    index = {n: k for k, n in enumerate(names)}
    strength = [
        sum(abs(f or 0.0) for f in fav[k]) + sum(abs(row[k] or 0.0) for row in fav)
        for k in range(len(names))
    ]
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(faction_of.get(name, ""), []).append(name)
    ordered = [groups.pop(f) for f in list(groups) if f] + list(groups.values())
    slots: list[str | None] = []
    for members in ordered:
        by_strength = sorted(members, key=lambda n: -strength[index[n]])
        arc: list[str] = []
        for k, name in enumerate(by_strength):  # strongest in the middle, alternating out
            if k % 2:
                arc.insert(0, name)
            else:
                arc.append(name)
        slots += [*arc, None] if len(ordered) > 1 else arc
    points = circle(len(slots))
    where = {name: points[k] for k, name in enumerate(slots) if name is not None}
    return [where[n] for n in names]


def label_positions(xy: Sequence[Sequence[float]]) -> list[str]:
    """Where each node's name goes: outward from the circle, never over another marker."""

    def side(x: float, y: float) -> str:
        vertical = "top" if y > 0.35 else "bottom" if y < -0.35 else "middle"
        horizontal = "right" if x > 0.35 else "left" if x < -0.35 else "center"
        return f"{vertical} {horizontal}"

    return [side(x, y) for x, y in xy]


def network(series: RunSeries, shown: int, xy: Sequence[Sequence[float]]) -> Any:
    """The signed favorability network of round index ``shown``, its nodes at ``xy``
    (:func:`layout`): node colour = emotion, edge colour and width = favorability (the
    edges are placed by the page's script: the strongest ties first), sticky statuses
    dotted, every name outside the circle."""
    go = _go()
    fig = go.Figure()
    for low, high, colour, width in EDGE_BINS:
        fig.add_trace(
            go.Scatter(
                x=[], y=[], mode="lines", line={"color": colour, "width": width},
                hoverinfo="skip", name=f"fav {max(low, -1):+.2f} … {min(high, 1):+.2f}",
            )
        )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=[], y=[], mode="lines", line={"color": "#000", "width": 1, "dash": "dot"},
            hoverinfo="skip", name="sticky status",
        )
    )  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=[p[0] for p in xy],
            y=[p[1] for p in xy],
            mode="markers+text",
            text=[label(n) for n in series.names],
            textposition=label_positions(xy),
            cliponaxis=False,
            marker={
                "size": 14,
                "color": series.emotion[shown],
                "colorscale": EMOTION_SCALE,
                "cmin": 0,
                "cmax": 1,
                "showscale": True,
                "colorbar": {"title": {"text": "emotion"}, "x": 1.02},
                "line": {"color": "#333", "width": 1},
            },
            hovertemplate="%{text}<br>emotion %{marker.color:.2f}<extra></extra>",
            name="agents",
            showlegend=False,
        )
    )
    fig.update_layout(
        title={"text": f"Signed favorability network, round {series.rounds[shown]}"},
        xaxis={"visible": False, "range": [-1.45, 1.45]},
        yaxis={"visible": False, "range": [-1.3, 1.3], "scaleanchor": "x"},
        height=860,
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        legend={"orientation": "h", "y": -0.02},
        plot_bgcolor="#fff",
    )
    return fig


def heatmap(series: RunSeries, shown: int) -> Any:
    """The favorability matrix of round index ``shown`` (row = from, column = to), each
    cell's status glyph beside its value in the hover text. Its cells are left to the
    page's script, which fills them from the run's data (a 300-agent matrix is 90,000
    cells: carried once, not twice); plotly draws a heatmap as an image."""
    go = _go()
    n = len(series.names)
    fig = go.Figure(
        go.Heatmap(
            z=[],
            x=[label(n) for n in series.names],
            y=[label(n) for n in series.names],
            zmin=-1,
            zmax=1,
            colorscale=FAV_SCALE,
            hovertemplate="%{y} → %{x}: %{z:+.2f}<extra></extra>",
            colorbar={"title": {"text": "fav"}},
        )
    )
    fig.update_layout(
        title={"text": f"Favorability matrix, round {series.rounds[shown]}"},
        yaxis={"autorange": "reversed", "title": {"text": "from"}},
        xaxis={"title": {"text": "to"}, "tickangle": -60 if n > 8 else 0},
        height=max(420, 16 * n + 160),
        margin={"t": 50},
    )
    return fig


def _lines(title: str, ytitle: str) -> Any:
    go = _go()
    fig = go.Figure()
    fig.update_layout(
        title={"text": title},
        xaxis={"title": {"text": "round"}},
        yaxis={"title": {"text": ytitle}},
        hovermode="closest",
        height=420,
        margin={"t": 50},
    )
    return fig


def emotions(series: RunSeries) -> Any:
    """Each agent's emotion over the rounds."""
    go = _go()
    fig = _lines("Emotion per agent (click a point: that round)", "emotion S")
    for k, name in enumerate(series.names):
        fig.add_trace(
            go.Scatter(
                x=series.rounds, y=[row[k] for row in series.emotion], mode="lines",
                name=label(name),
            )
        )  # fmt: skip
    return fig


def distributions(series: RunSeries) -> Any:
    """How emotion S spreads across the agents and favorability across the edges, round by
    round: a box per round (quartiles; whiskers at the least and greatest value)."""
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("emotion S across agents", "favorability across edges")
    )
    favs = [series.fav_values(k) for k in range(len(series.rounds))]
    for col, (values, color) in enumerate(((series.emotion, "#4c78a8"), (favs, "#e45756")), 1):
        q1, median, q3 = zip(*(_quartiles(v) for v in values), strict=True)
        fig.add_trace(
            go.Box(
                x=series.rounds, q1=q1, median=median, q3=q3,
                lowerfence=[min(v, default=0.0) for v in values],
                upperfence=[max(v, default=0.0) for v in values],
                marker_color=color, showlegend=False,
            ),
            row=1, col=col,
        )  # fmt: skip
    fig.update_xaxes(title_text="round")
    fig.update_yaxes(range=[0, 1], row=1, col=1)
    fig.update_yaxes(range=[-1, 1], row=1, col=2)
    fig.update_layout(height=380, margin={"t": 50})
    return fig


def _quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """The first quartile, median and third quartile (a lone value is all three)."""
    if len(values) < 2:
        one = values[0] if values else 0.0
        return one, one, one
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def needs(series: RunSeries, category_of: Mapping[str, str]) -> Any:
    """Each need's current level over the rounds, one agent at a time: a menu swaps the
    agent's values into the same traces (one per need, not one per agent and need)."""
    go = _go()
    fig = _lines("Needs of one agent (the menu, right, picks the agent)", "current level")
    agents = list(series.needs)
    if not agents:
        return fig
    first = series.needs[agents[0]]
    for need, values in first.items():
        fig.add_trace(
            go.Scatter(
                x=series.rounds, y=values, mode="lines",
                name=f"{need.replace('_', ' ')} ({category_of.get(need, '')})",
            )
        )  # fmt: skip
    buttons = [
        {
            "label": label(agent),
            "method": "restyle",
            "args": [{"y": [series.needs[agent].get(need, []) for need in first]}],
        }
        for agent in agents
    ]
    fig.update_layout(
        updatemenus=[
            {"buttons": buttons, "x": 1, "y": 1.02, "xanchor": "right", "yanchor": "bottom"}
        ],
        height=480,
        margin={"t": 90},
    )
    return fig


def metrics(rounds: Sequence[int], values: Mapping[str, Sequence[float | None]]) -> Any:
    """The run's metrics over the rounds, one panel each."""
    from plotly.subplots import make_subplots

    go = _go()
    names = list(values)
    cols = 3
    rows = math.ceil(len(names) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=names, vertical_spacing=0.12)
    for k, name in enumerate(names):
        fig.add_trace(
            go.Scatter(x=list(rounds), y=list(values[name]), mode="lines+markers", name=name,
                       marker={"size": 4}, showlegend=False),
            row=k // cols + 1, col=k % cols + 1,
        )  # fmt: skip
    fig.update_layout(
        title={"text": "Metrics over rounds (click a point: that round)"},
        height=280 * rows + 60,
        margin={"t": 80},
    )
    return fig


def forest(
    title: str,
    arms: Sequence[str],
    means: Sequence[tuple[float, float | None, float | None]],
    control: str,
    diffs: Sequence[tuple[float, float | None, float | None]],
) -> Any:
    """One outcome of a trial: the arm means over seeds (left) and each arm's paired
    difference from the control (right, a forest plot around 0), with 95% intervals."""
    from plotly.subplots import make_subplots

    go = _go()
    fig = make_subplots(
        rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.08,
        subplot_titles=("arm mean over seeds [95% CI]", f"Δ vs {control} [95% CI]"),
    )  # fmt: skip

    def bars(points: Sequence[tuple[float, float | None, float | None]]) -> dict[str, Any]:
        return {
            "type": "data",
            "symmetric": False,
            "array": [0 if h is None else h - m for m, _, h in points],
            "arrayminus": [0 if lo is None else m - lo for m, lo, _ in points],
        }

    fig.add_trace(
        go.Scatter(x=[m for m, _, _ in means], y=list(arms), mode="markers", error_x=bars(means),
                   marker={"size": 10, "color": "#444"}, name="mean", showlegend=False),
        row=1, col=1,
    )  # fmt: skip
    others = [a for a in arms if a != control]
    fig.add_trace(
        go.Scatter(x=[m for m, _, _ in diffs], y=others, mode="markers", error_x=bars(diffs),
                   marker={"size": 10, "symbol": "square", "color": "#2166ac"},
                   name="paired difference", showlegend=False),
        row=1, col=2,
    )  # fmt: skip
    fig.add_vline(x=0, line={"color": "#b2182b", "dash": "dash"}, row=1, col=2)
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=list(arms))
    fig.update_layout(
        title={"text": label(title)}, height=120 + 50 * len(arms), margin={"t": 80, "l": 170}
    )
    return fig
