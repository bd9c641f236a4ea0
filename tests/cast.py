"""Casts of 5 and 30 agents for the app's matrix and plot tests, and the text on screen."""

from __future__ import annotations

from pathlib import Path

from textual.app import App

#: Thirty names, some long and some alike in their first five letters (Christopher,
#: Christina; Maximilian, Maxine), as a real cast of a town meeting has.
THIRTY = (
    "Abigail Bartholomew Cornelius Dorothea Ebenezer Florence Gideon Henrietta Ignatius "
    "Josephine Christopher Christina Leopold Maximilian Maxine Nathaniel Ophelia Percival "
    "Quentin Rosalind Sebastian Theodora Ulysses Valentina Wilhelmina Xavier Yolanda "
    "Zachariah Ann Bo"
).split()
ARCHETYPES = ("dominant", "balanced", "analytical", "agreeable", "reserved")


def write_cast(path: Path, names: tuple[str, ...] | list[str], rounds: int = 3) -> Path:
    """A scenario of the named agents (a town meeting) with ``rounds`` rounds."""
    lines = ['id = "meeting"', f'title = "Town meeting of {len(names)}"', f"rounds = {rounds}", ""]
    for k, name in enumerate(names):
        lines += [
            "[[agents]]",
            f'name = "{name}"',
            f'role = "resident number {k + 1}"',
            f'archetype = "{ARCHETYPES[k % 5]}"',
            f'talking_points = ["point {k + 1} matters", "the square needs trees"]',
            "",
        ]
    lines += ["[[events]]", "round = 1", 'text = "The mayor opens the meeting."', ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def screen_text(app: App) -> list[str]:
    """The lines the terminal shows now (the screen's composed strips)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]
