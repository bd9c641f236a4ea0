"""Text from outside the app (model replies, error messages quoting them, file names) as the
screen shows it: one line, control characters escaped (``\\x1b``), never read as markup."""

from __future__ import annotations

from rich.text import Text

from engine.core.textsafe import one_line


def shown(text: str, style: str = "") -> Text:
    """``text`` as one escaped line, drawn as it is (brackets are not markup)."""
    return Text(one_line(text), style=style)
