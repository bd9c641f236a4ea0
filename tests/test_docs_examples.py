"""The docs' examples run as written, and the repository paths they name exist.

Every code block of the README and ``docs/*.md`` that holds a command (a ``socialsim``,
``python`` or ``pip`` line) or Python code says, in an HTML comment on the line before it,
what the suite does with it:

- ``<!-- example: shell -->``: its lines run with bash, in order, in the page's own
  temporary folder (``SOCIALSIM_SAVES=saves`` there; ``socialsim`` is this checkout's);
- ``<!-- example: console -->``: each ``$ command`` runs, and where lines follow it (what
  it prints, as the page shows it), it must print exactly those, to the digit;
- ``<!-- example: file NAME -->``: the block is written to ``NAME`` in that folder, for a
  later example to use;
- ``<!-- example: NAME -->``: run by the test that names it (see :data:`ELSEWHERE`);
- ``<!-- not run: REASON -->``: shown, not run, for the reason given.

A page's examples share its folder, in the order they appear, as a reader following the
page would. Every path of the repository named in a code span or block must exist.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Examples another test runs, by their marker's name.
ELSEWHERE = {"trial": "tests/reports/test_analysis.py"}
BLOCK = re.compile(
    r"(?:^<!--\s*(?P<mark>[^>]*?)\s*-->\n)?^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```", re.M | re.S
)
COMMAND = re.compile(r"^(?:\$ )?(?:socialsim|python3?|pip|\.venv/bin/)\b", re.M)
#: A path of the repository as the docs write it (``engine/core/limits.py``, ``tests/tui/``).
REPO_PATH = re.compile(r"(?<![\w/<.-])(?:engine|tui|tests|bench|scenarios|docs|\.ci)/[\w./-]*[\w/]")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
TIMEOUT = 600


@dataclass
class Example:
    page: Path
    line: int
    mark: str
    lang: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def examples(page: Path) -> list[Example]:
    """The page's code blocks that hold a command or Python code, with their markers."""
    text = page.read_text(encoding="utf-8")
    found = []
    for m in BLOCK.finditer(text):
        body, lang = m.group("body"), m.group("lang")
        if lang == "python" or (lang in ("", "sh", "bash", "console") and COMMAND.search(body)):
            line = text.count("\n", 0, m.start("body"))
            found.append(Example(page, line, (m.group("mark") or "").strip(), lang, body))
    return found


ALL = [e for page in PAGES for e in examples(page)]


@pytest.mark.parametrize("example", ALL, ids=[e.where for e in ALL])
def test_every_example_says_whether_it_runs(example: Example):
    mark = example.mark
    assert (
        mark in ("example: shell", "example: console")
        or re.fullmatch(r"example: file [\w.-]+", mark)
        or mark.removeprefix("example: ") in ELSEWHERE
        or re.fullmatch(r"not run: \S.*", mark)
    ), (
        f"{example.where}: mark the block <!-- example: shell|console|file NAME --> "
        "or <!-- not run: why -->"
    )


def _shim(folder: Path) -> dict[str, str]:
    """An environment where ``socialsim`` is this checkout's and saves go to ``saves``."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    script = bin_dir / "socialsim"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tui.cli "$@"\n')
    script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALSIM_")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        PYTHONPATH=str(ROOT),
        SOCIALSIM_SAVES="saves",
        COLUMNS="100",
        NO_COLOR="1",
    )
    return env


def _run(command: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def _console(body: str) -> list[tuple[str, list[str]]]:
    """A console transcript's commands, each with the lines it must print."""
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line.rstrip())
    return steps


RUN_PAGES = sorted({e.page for e in ALL if e.mark.startswith("example: ")})


@pytest.mark.parametrize("page", RUN_PAGES, ids=[p.relative_to(ROOT).as_posix() for p in RUN_PAGES])
def test_the_examples_of_a_page_run_as_written(page: Path, tmp_path: Path):
    env = _shim(tmp_path)
    for example in examples(page):
        mark = example.mark
        if mark.startswith("example: file "):
            (tmp_path / mark.removeprefix("example: file ")).write_text(example.body)
        elif mark == "example: shell":
            tools = {w for w in re.findall(r"\|\s*(\w+)", example.body)}
            missing = [t for t in tools if shutil.which(t, path=env["PATH"]) is None]
            if missing:
                pytest.skip(f"{example.where} pipes into {', '.join(missing)}, not installed")
            done = _run(example.body, tmp_path, env)
            assert done.returncode == 0, f"{example.where}:\n{done.stdout}\n{done.stderr}"
        elif mark == "example: console":
            for command, expected in _console(example.body):
                done = _run(command, tmp_path, env)
                assert done.returncode == 0, f"{example.where}: {command}\n{done.stderr}"
                printed = [line.rstrip() for line in done.stdout.splitlines()]
                if expected:
                    assert printed == expected, f"{example.where}: {command}"


def _named_paths(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    code = [m.group("body") for m in BLOCK.finditer(text)] + CODE_SPAN.findall(text)
    return {p for chunk in code for p in REPO_PATH.findall(chunk)}


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_repository_path_the_docs_name_exists(page: Path):
    missing = sorted(p for p in _named_paths(page) if not (ROOT / p).exists())
    assert missing == []
