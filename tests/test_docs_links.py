"""The README and ``docs/*.md`` hold no broken link: every relative link names a file or
folder of the repository, and every ``#anchor`` a heading of its page, slugged as GitHub
slugs headings. The README stays a five-minute read."""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 300

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def prose(text: str) -> str:
    """``text`` without fenced code blocks and code spans (links in them are not links)."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text as rendered (code spans and links reduced to
    their text, emphasis markers gone), lower case, every character but letters, marks,
    digits, ``_``, ``-`` and spaces dropped, spaces turned into hyphens."""
    text = re.sub(r"`+([^`]*)`+", r"\1", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    kept = (
        ch
        for ch in text.lower()
        if ch in " -" or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc"
    )
    return "".join(kept).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of ``page``; a repeated slug gets ``-1``, ``-2``, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for match in HEADING.finditer(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """The targets of the page's Markdown links, in order."""
    return [m.group(1) for m in LINK.finditer(prose(page.read_text(encoding="utf-8")))]


def broken(page: Path) -> list[str]:
    """The links of ``page`` that lead nowhere, each with the reason."""
    problems = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, mailto:, ...
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            problems.append(f"{target}: no file {os.path.relpath(dest, ROOT)}")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            problems.append(f"{target}: no heading #{anchor} in {dest.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_and_anchor_resolves(page: Path):
    assert broken(page) == []


def test_every_doc_is_reachable_from_the_readme_or_the_index():
    linked = {
        (page.parent / target.partition("#")[0]).resolve()
        for page in (ROOT / "README.md", ROOT / "docs" / "index.md")
        for target in links(page)
        if target.partition("#")[0]
    }
    assert {p for p in PAGES if p.parent.name == "docs"} - linked == set()


def test_the_readme_is_a_five_minute_read():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES


def test_slugs_and_broken_links_are_found_as_on_github(tmp_path: Path):
    assert slug("Metrics (Sociodrama Tab. 1, App. D)") == "metrics-sociodrama-tab-1-app-d"
    assert slug("The screen at 80×24") == "the-screen-at-8024"
    assert slug("`socialsim --help` and `mind_spec`") == "socialsim---help-and-mind_spec"
    assert slug("Relational priors, GovSim and debate") == "relational-priors-govsim-and-debate"
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Part\n\n## Part\n\n```\n# not a heading\n[in code](nowhere.md)\n```\n"
        "[ok](#part-1) [bad](#part-2) [web](https://example.org) `[span](x.md)`\n"
        "[gone](missing.md) [self](page.md#title) [folder](.) [deep](page.md#nope)\n",
        encoding="utf-8",
    )
    assert anchors(page) == {"title", "part", "part-1"}
    assert [p.split(":")[0] for p in broken(page)] == ["#part-2", "missing.md", "page.md#nope"]
