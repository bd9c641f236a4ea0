"""``socialsim report``: a run's and a trial's report are single HTML files that open from
file:// in headless Chromium without a console error or a request, draw every plot, and
move the network with the round slider; bad input is one line."""

from __future__ import annotations

import base64
import builtins
import json
import os
import re
import tempfile
import zlib
from pathlib import Path

import pytest
from browser import missing, open_page

from engine import SaveStore, SocialsimError, load_library
from engine.reports.html.page import script_json
from engine.studies.experiments.arms import named_arms
from engine.studies.experiments.executor import LocalExecutor
from engine.studies.experiments.trial import plan, run_trial

#: Where the browser tests keep their screenshots.
SHOTS = Path(
    os.environ.get("SOCIALSIM_SCREENSHOTS", Path(tempfile.gettempdir()) / "socialsim-shots")
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> SaveStore:
    """A village assembly of 32 agents over 50 rounds and a bullying trial of 2 seeds × 3
    arms, both offline."""
    import asyncio

    from engine import Simulation

    store = SaveStore(tmp_path_factory.mktemp("saves"))
    village = load_library("village-assembly")
    with Simulation.new(village, store=store, run_id="village", rounds=50) as sim:
        asyncio.run(sim.run())
    scenario = load_library("bullying")
    spec = plan(
        store, scenario, "bullying", fork_at=4, rounds=8, seeds=[1, 2], trial_id="bully",
        arms=named_arms("none,neglect,supportive-cooperative", scenario), resamples=1000,
    )  # fmt: skip
    run_trial(spec, store, LocalExecutor(1))
    return store


_PACKED = re.compile(r'<script id="plotly-js" type="application/octet-stream">([^<]*)</script>')


def _self_contained(html: str) -> None:
    """No element of the page loads anything (the browser tests check that it sends no
    request), and plotly.js is in it: deflated, in base64, in a data block of the head."""
    head, _, body = html.partition("</head>")
    packed = _PACKED.search(head)
    assert packed is not None and re.fullmatch(r"[A-Za-z0-9+/]+=*", packed[1])
    assert "window.Plotly = Plotly" in zlib.decompress(base64.b64decode(packed[1])).decode()
    page = head[: packed.start()] + head[packed.end() :] + body
    assert "<script src" not in page and "<link" not in page and "<img" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)


def test_the_script_json_cannot_close_its_script_element():
    text = str(script_json({"utterance": "</script><script>alert(1)</script> & more"}))
    assert "</" not in text and "<" not in text and "&" not in text
    import json

    assert json.loads(text)["utterance"].startswith("</script>")


def test_a_run_report_is_one_file_with_the_run_in_it(saved, run_cli, tmp_path):
    out = tmp_path / "village.html"
    result = run_cli("report", "village", "--out", str(out), "--saves", str(saved.root))
    assert result.code == 0 and result.out.strip() == str(out)
    html = out.read_text()
    _self_contained(html)
    assert out.stat().st_size < 10_000_000  # 32 agents, 50 rounds
    assert 'id="round-50"' in html and 'id="round-1"' in html
    meta = saved.read_meta("village")
    assert all(name in html for name in meta.scenario.names)


def test_report_refuses_bad_input_in_one_line(saved, run_cli, tmp_path):
    args = ("--saves", str(saved.root))
    cases = [
        (("report", "nothing", "--out", str(tmp_path / "a.html"), *args), "no run or trial"),
        (("report", "village", "--out", str(tmp_path / "no" / "a.html"), *args), "no folder"),
        (("report", "village", "--out", str(tmp_path), *args), "a folder"),
        (("report", "bully", "--outcome", "nope", "--out", str(tmp_path / "a.html"), *args),
         "no outcome 'nope'"),
    ]  # fmt: skip
    for argv, message in cases:
        result = run_cli(*argv)
        assert result.code == 2, argv
        assert message in result.err and len(result.err.strip().splitlines()) == 1
    assert not list(tmp_path.glob("*.html"))


def test_a_missing_dependency_is_named(saved, monkeypatch, tmp_path):
    from engine.reports.html import write_run_report

    real = builtins.__import__

    def without_plotly(name, *args, **kwargs):
        if name.split(".")[0] == "plotly":
            raise ImportError(name=name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_plotly)
    with pytest.raises(SocialsimError, match=r"a report needs plotly, which is missing"):
        write_run_report(saved, "village", tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()


def test_a_trial_report_is_one_file_unless_arm_reports_are_asked_for(saved, run_cli, tmp_path):
    single = tmp_path / "single.html"
    args = ("--out", str(single), "--saves", str(saved.root))
    assert run_cli("report", "bully", *args).code == 0
    assert 'class="arm-report"' not in single.read_text()
    assert not (tmp_path / "single.runs").exists()
    out = tmp_path / "bully.html"
    args = ("--arm-reports", "--out", str(out), "--saves", str(saved.root))
    result = run_cli("report", "bully", *args)
    assert result.code == 0
    html = out.read_text()
    _self_contained(html)
    links = re.findall(r'class="arm-report" href="([^"]+)"', html)
    assert len(links) == 6
    for link in links:
        arm = (tmp_path / link).read_text()
        assert 'href="../bully.html"' in arm


# -- in a real browser ------------------------------------------------------------------------

browser = pytest.mark.skipif(missing() is not None, reason=str(missing()))

DRAWN = """() => [...document.querySelectorAll('.plot')].map(p => [p.id,
    p.querySelectorAll('svg.main-svg .trace, svg.main-svg .hm, canvas').length])"""
NETWORK = """() => document.getElementById('network-plot').data.slice(0, 5)
    .map(t => t.x.filter(v => v !== null).length)"""


@pytest.mark.browser
@browser
def test_the_run_report_opens_in_chromium(saved, tmp_path):
    from engine.reports.html import write_run_report

    out = write_run_report(saved, "village", tmp_path / "village.html")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with open_page(out) as opened:
        page = opened.page
        assert opened.errors == [] and opened.requests == []
        drawn = page.evaluate(DRAWN)
        assert len(drawn) == 6 and all(count > 0 for _, count in drawn), drawn
        last = page.evaluate(NETWORK)
        assert sum(last) == 3 * 32 * 2  # the 96 strongest ties at first (two points each)
        page.locator("#ties").fill(str(32 * 31))  # the control: every tie
        page.locator("#ties").dispatch_event("input")
        assert page.locator("#ties-label").inner_text() == str(32 * 31)
        last = page.evaluate(NETWORK)
        assert sum(last) == 32 * 31 * 2  # every directed edge drawn
        paths = page.locator("#network-plot .scatterlayer").inner_html()
        page.screenshot(path=str(SHOTS / "village-assembly-round50.png"))
        state = saved.history("village")[50].state  # the matrix, unpacked by the page
        names = list(state.agents)
        z = page.evaluate("() => document.getElementById('heatmap-plot').data[0].z")
        assert len(z) == 32 and z[0][0] is None
        assert z[0][1] == round(state.agents[names[0]].relations[names[1]].fav, 2)
        page.locator("#round").fill("1")  # the slider: round 1
        page.locator("#round").dispatch_event("input")
        assert page.locator("#round-label").inner_text() == "1"
        assert page.evaluate(NETWORK) != last
        assert page.locator("#network-plot .scatterlayer").inner_html() != paths
        assert page.locator("#round-1.current").count() == 1
        # a point of the metrics links to its round: the slider and the transcript follow
        page.evaluate(
            "() => document.getElementById('metrics-plot')"
            ".emit('plotly_click', {points: [{x: 12}]})"
        )
        assert page.locator("#round-label").inner_text() == "12"
        assert page.locator("#round-12.current").count() == 1
        page.locator("#round").fill("1")
        page.locator("#round").dispatch_event("input")
        page.locator("#network").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "village-assembly-round1.png"))
        assert opened.errors == []
    print(f"\n{out.stat().st_size:,} bytes, opened in {opened.seconds:.2f} s; {SHOTS}")


@pytest.mark.browser
@browser
def test_the_trial_report_opens_in_chromium(saved, tmp_path):
    from engine.reports.html import write_trial_report

    paths = write_trial_report(saved, "bully", tmp_path / "bully.html", arm_reports=True)
    out = paths[-1]
    SHOTS.mkdir(parents=True, exist_ok=True)
    with open_page(out) as opened:
        page = opened.page
        assert opened.errors == [] and opened.requests == []
        forests = page.locator(".forest")
        assert forests.count() > 5
        counts = page.evaluate(
            "() => [...document.querySelectorAll('.forest')].map(p => "
            "p.querySelectorAll('svg.main-svg .trace .point').length)"
        )
        assert all(c == 3 + 2 for c in counts), counts  # three means, two differences
        page.screenshot(path=str(SHOTS / "bullying-trial.png"), full_page=False)
        page.locator("a.arm-report").first.click()
        page.wait_for_selector("body[data-ready=yes]")
        assert page.url.endswith("/bully.runs/bully-s1-none.html")
        assert page.locator("#network-plot .scatterlayer .trace").count() > 0
        assert opened.errors == [] and opened.requests == []
    print(f"\n{out.stat().st_size:,} bytes, opened in {opened.seconds:.2f} s; {SHOTS}")


HOSTILE = '<a href="https://e.org">A</a></script>'


@pytest.fixture
def hostile_run(mini_data: dict, tmp_path: Path) -> SaveStore:
    """A run of the mini committee whose chair's name holds markup plotly and HTML act on."""
    import asyncio
    import json

    from engine import Simulation
    from engine.core.scenario import parse_scenario

    data = json.loads(json.dumps(mini_data).replace('"Ann"', json.dumps(HOSTILE)))
    store = SaveStore(tmp_path / "saves")
    with Simulation.new(parse_scenario(data, "mini"), store=store, run_id="h", rounds=2) as sim:
        asyncio.run(sim.run())
    return store


def test_a_name_with_markup_is_shown_as_text(hostile_run, tmp_path):
    from engine.reports.html import write_run_report

    html = write_run_report(hostile_run, "h", tmp_path / "h.html").read_text()
    page = html.partition("</head>")[2]
    assert page.count("</script>") == 2  # the data's and the page's: no name closes one
    assert '<a href="https://e.org' not in page  # not in the HTML, nor for plotly
    assert "&lt;a href" in page  # escaped in the transcript and the plots' labels
    if missing() is None:
        with open_page(tmp_path / "h.html") as opened:
            assert opened.errors == [] and opened.requests == []
            assert opened.page.locator(".main-svg a").count() == 0
            assert HOSTILE in opened.page.locator("#network-plot").inner_text()


def test_a_run_report_shows_the_spread_of_emotion_and_favorability_by_round(saved):
    import json

    from engine.reports.html import figures
    from engine.reports.html.page import figure_json
    from engine.reports.html.series import read_series

    meta = saved.read_meta("village")
    series, _ = read_series(meta, saved.history("village", meta))
    fig = json.loads(str(figure_json(figures.distributions(series))))
    emotion, fav = fig["data"]
    last = saved.history("village", meta)[50].state
    values = sorted(a.emotion for a in last.agents.values())
    assert emotion["x"][-1] == 50 and len(emotion["median"]) == 51
    assert emotion["lowerfence"][-1] == pytest.approx(values[0], abs=0.005)
    assert emotion["upperfence"][-1] == pytest.approx(values[-1], abs=0.005)
    assert emotion["q1"][-1] <= emotion["median"][-1] <= emotion["q3"][-1]
    assert -1 <= fav["lowerfence"][-1] <= fav["median"][-1] <= fav["upperfence"][-1] <= 1


def test_the_network_lays_agents_out_by_faction_and_tie_strength():
    """Issue 41: a faction's members sit side by side on an arc of their own, its most tied
    member in the middle; names go outside the circle; the strongest ties are drawn first."""
    from engine.reports.html import figures

    names = ["a1", "b1", "a2", "b2", "a3", "x"]
    factions = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B"}
    fav = [[None if i == j else 0.1 for j in range(6)] for i in range(6)]
    fav[2] = [0.9 if f is not None else None for f in fav[2]]  # a2 holds the strongest ties
    xy = figures.layout(names, factions, fav)
    slots = figures.circle(6 + 3)  # a slot left after each of the three groups
    order = [slots.index(p) for p in xy]
    a = sorted(order[k] for k in (0, 2, 4))
    assert a == list(range(a[0], a[0] + 3))  # faction A contiguous
    assert order[2] == a[1]  # its most tied member in the middle
    b = sorted(order[k] for k in (1, 3))
    assert b[1] - b[0] == 1 and b[0] > a[-1] + 1  # then B, after an empty slot
    sides = figures.label_positions(xy)
    assert all(("right" in s) == (x > 0.35) for s, (x, _) in zip(sides, xy, strict=True))


def test_a_run_report_draws_the_strongest_ties_by_default(saved):
    from engine.reports.html import run_report

    meta = saved.read_meta("village")
    page, _ = run_report(meta, saved.history("village", meta))
    data = json.loads(re.search(r'id="run-data"[^>]*>(.*?)</script>', page, re.S).group(1))
    assert data["ties"] == 3 * 32
    assert 'id="ties"' in page and 'max="992"' in page


def test_a_run_report_carries_every_rounds_matrix_packed(saved):
    """The page's matrices are int8 hundredths, each round the difference from the one
    before, deflated, in base64 (``series.packed``; ``run.js`` ``unpack``): every round's
    favorability to two decimals, as the page shows it, in a fraction of the JSON."""
    import base64
    import zlib

    import numpy as np

    from engine.reports.html import run_report

    meta = saved.read_meta("village")
    history = saved.history("village", meta)
    page, _ = run_report(meta, history)
    data = json.loads(re.search(r'id="run-data"[^>]*>(.*?)</script>', page, re.S).group(1))
    flat = np.frombuffer(zlib.decompress(base64.b64decode(data["fav"])), np.int8)
    fav = np.cumsum(flat.reshape(51, 32, 32), axis=0, dtype=np.int8)
    names = list(meta.scenario.names)
    for k in (0, 1, 50):
        agents = history[k].state.agents
        want = [
            [data["no_fav"] if a == b else round(round(agents[a].relations[b].fav, 2) * 100)]
            for a in names
            for b in names
        ]
        assert fav[k].reshape(-1, 1).tolist() == want
    assert len(data["fav"]) < 51 * 32 * 32  # under a byte a cell
