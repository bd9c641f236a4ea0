"""Bare ``socialsim --help`` without importing typer (most of its start-up time).

``help.pickle`` holds what typer's help passes to rich: the console's settings and the
renderables it prints (rich objects only; each one-paragraph Markdown held as the
:class:`Paragraph` it renders, so printing imports neither rich.markdown nor markdown-it,
a third of the start-up). Printed with a console made the same way, the
output is byte for byte typer's, at any width and in colour. The snapshot is used only
while its fingerprint (the sources of the CLI's commands, the typer and rich versions)
matches and no environment variable that changes typer's help is set; otherwise typer
prints the help as usual. Regenerate it after changing a command, an option or a docstring::

    .venv/bin/python -m tui.cli.fasthelp

(tests/test_cli.py fails while it is stale). It is package data written by this module,
read like the modules beside it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from pathlib import Path
from typing import Any

SNAPSHOT = Path(__file__).with_name("help.pickle")
#: Environment variables typer reads when it prints help; with any of them set, typer prints.
TYPER_ENV = (
    "TYPER_USE_RICH",
    "TERMINAL_WIDTH",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "GITHUB_ACTIONS",
    "FORCE_COLOR",
    "PY_COLORS",
)


#: Modules of ``tui/cli`` that define no command and so cannot change ``socialsim --help``.
NOT_COMMANDS = frozenset({"__main__.py", "base.py", "options.py", "tables.py"})


def fingerprint() -> str:
    """A hash of what the help is made from: the sources of ``tui/cli`` (but those that
    define no command) and the installed typer and rich (their distributions' names carry
    the versions)."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.name in NOT_COMMANDS:
            continue
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(" ".join(_distributions("typer", "rich")).encode())
    return digest.hexdigest()


def _distributions(*names: str) -> list[str]:
    """``name-version.dist-info`` of each package, the first found on ``sys.path``."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        for item in listing:
            name, _, rest = item.partition("-")
            if name in names and name not in found and rest.endswith(".dist-info"):
                found[name] = item
    return [found.get(name, "") for name in names]


def print_snapshot() -> bool:
    """Print the help from the snapshot; False (nothing printed) when it cannot be used."""
    if any(var in os.environ for var in TYPER_ENV):
        return False
    try:
        snapshot = pickle.loads(SNAPSHOT.read_bytes())  # our own package data
        usable = snapshot["fingerprint"] == fingerprint()
    except Exception:  # missing, unreadable or from another rich: typer prints instead
        return False
    if not usable:
        return False
    render(snapshot)
    return True


class Paragraph:
    """A Markdown paragraph as rich renders it: its styled text, wrapped to the width and
    padded, and measured as Markdown is (no measure: the whole width)."""

    def __init__(self, text: Any) -> None:
        self.text = text

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield from console.render(self.text, options)


def render(snapshot: dict[str, Any], **console: Any) -> None:
    """Print ``snapshot`` on a console made as typer makes it (``console``: settings to
    override, for tests)."""
    from rich.console import Console

    out = Console(**{**snapshot["console"], **console})
    for objects, kwargs in snapshot["prints"]:
        out.print(*objects, **kwargs)
    out.file.write(snapshot["after"])


def build() -> dict[str, Any]:
    """The snapshot of typer's ``socialsim --help``, recorded from typer itself."""
    import contextlib
    import io

    from rich.console import Console
    from rich.highlighter import RegexHighlighter
    from typer import rich_utils

    from . import build_app

    if any(var in os.environ for var in TYPER_ENV):
        raise SystemExit(f"unset {', '.join(TYPER_ENV)} to record the help")
    consoles: list[dict[str, Any]] = []
    prints: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    class Recorder(Console):
        def __init__(self, **kwargs: Any) -> None:
            consoles.append(kwargs)
            super().__init__(**kwargs)

        def print(self, *objects: Any, **kwargs: Any) -> None:
            prints.append((objects, kwargs))

    made = rich_utils.Console
    rich_utils.Console = Recorder  # type: ignore[misc]
    after = io.StringIO()
    try:
        with contextlib.redirect_stdout(after):
            build_app()(args=["--help"], prog_name="socialsim", standalone_mode=False)
    finally:
        rich_utils.Console = made  # type: ignore[misc]
    if len(consoles) != 1:
        raise RuntimeError(f"typer made {len(consoles)} consoles for its help, not one")
    settings = dict(consoles[0])
    typer_highlighter = settings["highlighter"]  # the same rules, in a plain rich class
    highlighter = RegexHighlighter()
    vars(highlighter).update(
        highlights=list(typer_highlighter.highlights), base_style=typer_highlighter.base_style
    )
    settings["highlighter"] = highlighter
    return {
        "fingerprint": fingerprint(),
        "console": settings,
        "prints": [(tuple(map(_paragraphs, objects)), kwargs) for objects, kwargs in prints],
        "after": after.getvalue(),
    }


def _paragraphs(renderable: Any) -> Any:
    """``renderable`` with each Markdown inside it that renders as a :class:`Paragraph` at
    every width from 8 to 300 columns, in colour and not, replaced by that paragraph."""
    from rich.columns import Columns
    from rich.console import Group
    from rich.markdown import Markdown
    from rich.table import Table

    if isinstance(renderable, Markdown):
        paragraph = Paragraph(_styled_text(renderable))
        return paragraph if _renders_alike(renderable, paragraph) else renderable
    if isinstance(renderable, Table):
        for column in renderable.columns:
            column._cells = [_paragraphs(cell) for cell in column._cells]
    elif isinstance(renderable, Group):
        renderable._renderables = tuple(map(_paragraphs, renderable._renderables))
    elif isinstance(renderable, Columns):
        renderable.renderables = [_paragraphs(r) for r in renderable.renderables]
    elif hasattr(renderable, "renderable"):  # Padding, Panel, Align
        renderable.renderable = _paragraphs(renderable.renderable)
    return renderable


def _styled_text(markdown: Any) -> Any:
    """The text of ``markdown`` with its styles, rendered on one line."""
    import io

    from rich.console import Console
    from rich.text import Text

    wide = Console(width=100_000, file=io.StringIO(), color_system="truecolor")
    text = Text(justify="left")
    for segment in wide.render(markdown):
        if segment.text != "\n":
            text.append(segment.text, segment.style)
    text.rstrip()
    return text


def _renders_alike(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` print the same at every width from 8 to 300, in colour and
    not."""
    import io

    from rich.console import Console

    def printed(renderable: Any, width: int, colour: bool) -> str:
        out = io.StringIO()
        console = Console(
            width=width,
            file=out,
            force_terminal=colour,
            color_system="truecolor" if colour else None,
        )
        console.print(renderable)
        return out.getvalue()

    return all(
        printed(a, width, colour) == printed(b, width, colour)
        for width in range(8, 301)
        for colour in (False, True)
    )


def write() -> Path:
    """Record the snapshot into ``help.pickle``."""
    SNAPSHOT.write_bytes(pickle.dumps(build(), protocol=4))
    return SNAPSHOT


if __name__ == "__main__":  # run as a script, this module is __main__: pickle the package's
    from tui.cli import fasthelp

    print(fasthelp.write())
