"""The page around a report's figures: the Jinja2 environment, plotly.js inlined once (packed:
deflated, in base64), the figures as JSON, and the atomic write of the finished file."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...errors import SaveError, incomplete_install
from ...saves.atomic import atomic_write_text

TEMPLATES = Path(__file__).with_name("templates")


def report_modules() -> tuple[Any, Any]:
    """(plotly, jinja2), imported on first use, or one clear error if the install lacks one."""
    try:
        import jinja2
        import plotly
    except ImportError as err:
        raise incomplete_install(err.name or "plotly", "a report") from None
    return plotly, jinja2


@lru_cache(maxsize=1)
def _environment() -> Any:
    _, jinja2 = report_modules()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["json"] = script_json
    return env


def script_json(value: Any) -> Any:
    """``value`` as JSON safe inside a ``<script>`` element (no ``</`` can close it)."""
    from markupsafe import Markup

    text = json.dumps(value, separators=(",", ":"), allow_nan=False, default=str)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def figure_json(figure: Any) -> Any:
    """A plotly figure as the JSON ``Plotly.newPlot`` takes (data, layout), script-safe."""
    from markupsafe import Markup

    text = figure.to_json(validate=False, pretty=False, engine="json")
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def render(template: str, **context: Any) -> str:
    """The page ``template`` with plotly.js inlined (:func:`packed_plotly`)."""
    plotly, _ = report_modules()
    return (
        _environment()
        .get_template(template)
        .render(plotly_packed=packed_plotly(), plotly_version=plotly.__version__, **context)
    )


@lru_cache(maxsize=1)
def packed_plotly() -> str:
    """plotly.js deflated (zlib, level 6) in base64: 2.0 MB of its 4.8, which the page
    inflates and runs (``DecompressionStream``, as it does the run's matrices); made once a
    process (0.14 s of CPU)."""
    import base64
    import zlib

    from plotly.offline import get_plotlyjs

    return base64.b64encode(zlib.compress(get_plotlyjs().encode(), 6)).decode("ascii")


def write(out: Path, html: str) -> Path:
    """Write the page to ``out`` whole (or leave what was there)."""
    try:
        atomic_write_text(out, html)
    except OSError as err:
        raise SaveError(f"--out {out}: cannot write ({err.strerror or err})") from None
    return out
