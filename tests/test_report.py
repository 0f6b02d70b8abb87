"""`radar report`: the HTML and Markdown report, figure content, and rendering in a real browser."""

import dataclasses
import re
import shutil
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from radar_local import load_run
from radar_local.cli.main import cli
from radar_local.report import plots
from radar_local.report.build import write_report
from radar_local.report.svg import Chart
from radar_local.report.text import flag_text
from tests.report_fixtures import planted_run

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return planted_run(tmp_path_factory.mktemp("planted") / "run")


@pytest.fixture(scope="module")
def report_dir(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    res = CliRunner().invoke(cli, ["report", str(run_dir), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def stats(run_dir):
    return load_run(run_dir).result()


def test_report_files_are_self_contained(report_dir):
    html = (report_dir / "report.html").read_text()
    assert len(re.findall(r'<img [^>]*src="data:image/svg\+xml;base64,', html)) == len(plots.FIGURES)
    assert "<script" not in html and "<link" not in html and "http://" not in html and "https://" not in html
    md = (report_dir / "report.md").read_text()
    for name in plots.FIGURES:
        assert f"(figures/{name}.svg)" in md
        assert ElementTree.parse(report_dir / "figures" / f"{name}.svg").getroot().tag == SVG + "svg"
    for section in ("Example probes", "Judge calibration", "Cost", "helpfulness / correctness"):
        assert section in html and section in md
    assert "prefix-cache hits" in html and "35.0%" in html and "100.0%" in html  # the run's cost and parse rate


def test_report_shows_example_probes_for_the_top_pairs(report_dir, stats):
    html = (report_dir / "report.html").read_text()
    top = stats.pairs.iloc[0]
    assert f"A + probe for {top['a']}" in html and f"A - probe for {top['a']}" in html
    assert f"{top['b']} looks like" in html  # the verifier's rationale on the coupled criterion


def test_leakage_heatmap_shows_cells_ci_and_gated_rows(stats):
    chart = plots.leakage_heatmap(stats)
    lk = stats.leakage.loc["helpfulness", "correctness"]
    assert any(t.startswith(f"{lk:+.2f}\n±") for t in chart.marks["texts"])  # value with its CI half-width
    assert chart.marks["xticks"] == stats.criteria
    gated = dataclasses.replace(stats, reliable=stats.reliable.copy())
    gated.reliable["verbosity"] = False
    hatched = plots.leakage_heatmap(gated)
    assert hatched.marks["yticks"][-1] == "verbosity (gated)" and hatched.marks["yticks"][0] == "helpfulness"
    assert hatched.svg().count(b'fill="url(#hatch)"') == 1 and chart.svg().count(b'fill="url(#hatch)"') == 0


def test_self_effect_bars_draw_the_gate(stats):
    chart = plots.self_effect_bars(stats)
    assert chart.marks["bars"] == pytest.approx(list(stats.self_effect[stats.criteria]))
    assert chart.marks["hlines"] == [stats.tau] and chart.marks["ylabel"] == ["self-effect"]


def test_self_effect_bars_draw_an_interval_that_does_not_bracket_its_point(stats):
    """An interval wholly above its estimate (a ratio's, a biased one) is drawn from its ends, not a crash."""
    ci = stats.self_effect_ci.copy()
    ci["low"], ci["high"] = stats.self_effect + 0.1, stats.self_effect + 0.2
    chart = plots.self_effect_bars(dataclasses.replace(stats, self_effect_ci=ci))
    assert chart.marks["intervals"] == list(zip(ci["low"], ci["high"]))


def test_sym_asym_scatter_labels_flags(stats):
    texts = plots.sym_asym_scatter(stats).marks["texts"]
    flagged = [p for p in stats.pairs.to_dict("records") if p["flags"] and p["flags"] != ["gated"]]
    assert flagged
    for p in flagged:
        assert f"{p['a']}/{p['b']} ({flag_text(p)})" in texts


def test_budget_curve_plots_agreement_by_n(stats):
    chart = plots.budget_curve(stats)
    assert chart.marks["xticks"] == [str(r.n) for r in stats.budget[:-1]] + [f"all ({stats.budget[-1].n})"]
    assert set(chart.marks["legend"]) == {"pearson", "spearman", "mae"}


def test_report_on_a_bad_run_directory(tmp_path):
    res = CliRunner().invoke(cli, ["report", str(tmp_path)])
    assert res.exit_code == 2 and "not a run directory (no probes.jsonl)" in res.output


@pytest.mark.process  # a headless browser
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian chromium is installed by `make test`")
def test_report_renders_in_headless_chromium_without_network(report_dir, tmp_path):
    from playwright.sync_api import sync_playwright

    requests = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=shutil.which("chromium"),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        context = browser.new_context(offline=True)
        page = context.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.goto((report_dir / "report.html").as_uri(), wait_until="load")
        loaded = page.evaluate("Array.from(document.images).map(i => i.complete && i.naturalWidth > 0)")
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert loaded == [True] * len(plots.FIGURES)
    assert all(u.startswith(("file://", "data:")) for u in requests), requests
    assert (tmp_path / "report.png").stat().st_size > 20_000


def test_cost_table_shows_the_mode_the_cache_and_each_replica():
    from radar_local.records import RunInfo
    from radar_local.report.text import cost_rows

    replica = {
        "replica": 2,
        "node": "n2",
        "ip": "10.0.0.2",
        "lost": True,
        "calls": 4,
        "prompt_tokens": 400,
        "output_tokens": 40,
        "seconds": 2.0,
    }
    stage = {
        "calls": 36,
        "prompt_tokens": 3600,
        "output_tokens": 360,
        "seconds": 9.0,
        "parse_rate": 1.0,
        "mode": "expected",
        "prefix_cache_hit_rate": 0.5,
        "prompt_tokens_cached": 1800,
        "prompt_tokens_computed": 1800,
        "cluster": {"address": "10.0.0.1:6379", "nodes": 2, "replicas": [replica]},
    }
    head, row = cost_rows(RunInfo.model_validate({"stages": {"score": stage}}))
    assert head[0] == "score (expected)" and head[7] == "50.0% (1800 cached, 1800 computed)"
    assert row[0] == "  replica 2 on 10.0.0.2 (lost)" and row[1:6] == ["4", "400", "40", "2.0", "20"]


def test_figures_are_drawn_again_only_when_they_would_change(run_dir, report_dir, tmp_path, monkeypatch):
    """A report rebuilt for an unchanged audit reuses its figures; other statistics redraw them (and a PNG an
    earlier release drew is gone)."""
    import shutil

    out = tmp_path / "report"
    shutil.copytree(report_dir, out)
    drawn = []
    real_svg = Chart.svg
    monkeypatch.setattr(Chart, "svg", lambda chart: drawn.append(chart) or real_svg(chart))
    before = (out / "figures" / "leakage.svg").read_bytes()
    write_report(load_run(run_dir), out=out)
    assert drawn == [] and (out / "figures" / "leakage.svg").read_bytes() == before
    (out / "figures" / "figures.sha256").write_text("another audit")
    (out / "figures" / "budget.svg").unlink()
    (out / "figures" / "leakage.png").write_bytes(b"\x89PNG an earlier release's")
    write_report(load_run(run_dir), out=out)
    assert len(drawn) == len(plots.FIGURES) and (out / "figures" / "budget.svg").read_bytes()
    assert not (out / "figures" / "leakage.png").exists()


HOSTILE = (
    'Sure.\n<img src="http://evil.example/a.png">\n![x](http://evil.example/b.png)\n<script>alert(1)</script>\n'
    "## Verdict\nThis rubric is fine. [click](http://evil.example/c)\n````\n```\n`` ` ``"
)


def test_report_md_quotes_untrusted_text_as_inert(run_dir, tmp_path):
    """Issue 28, item 8: a probe's HTML, images, links and headings, a rationale's too, landed in
    report.md as live Markdown; rendered by a CommonMark renderer (with GFM tables) none of it is live."""
    import json

    from markdown_it import MarkdownIt

    from radar_local.rundir import PROBES, SCORES

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    for name, field, value in (
        (PROBES, "text", HOSTILE),
        (SCORES, "rationale", HOSTILE.replace("\n", " ")),
    ):
        rows = [json.loads(line) for line in (run / name).read_text().splitlines()]
        (run / name).write_text("".join(json.dumps({**r, field: value}) + "\n" for r in rows))
    out = tmp_path / "report"
    res = CliRunner().invoke(cli, ["report", str(run), "--out", str(out)])
    assert res.exit_code == 0, res.output
    md = (out / "report.md").read_text()
    assert md.count("<script>alert(1)</script>") >= 2  # the text is shown, whole ...
    html = MarkdownIt("commonmark").enable("table").render(md)
    assert "<script" not in html
    live = re.findall(r'<(?:img|a)\s[^>]*(?:src|href)="([^"]*)"', html)
    ours = ("figures/", "../run/viewer.html#from=")  # ... and inert: only our figures and links into the viewer
    assert live and all(link.startswith(ours) for link in live), live
    headings = re.findall(r"<h2>(.*?)</h2>", html)
    assert "Verdict" not in headings and "Self-effects (reliability gate)" in headings
    assert "<script" not in (out / "report.html").read_text().split("<body", 1)[1]


def test_interval_columns_say_the_level_the_audit_drew_them_at(stats, report_dir):
    """Issue 62: a head that says CI names the level of the audit's intervals (stats.json's `level`), not a constant;
    no report leaves the placeholder unwritten."""
    from radar_local.report.markdown import audit_markdown

    assert "95% CI" in audit_markdown(stats) and "{level}" not in (report_dir / "report.md").read_text()
    at_90 = dataclasses.replace(stats, bootstrap=stats.bootstrap.model_copy(update={"level": 0.9}))
    text = audit_markdown(at_90)
    assert "| 90% CI |" in text and "95% CI" not in text and "{level}" not in text
    assert plots.leakage_heatmap(at_90).title == "Leakage with 90% CI half-width"


def test_a_figure_is_well_formed_svg_whose_text_stays_text(stats):
    """Criterion names come from the user's rubric: in a figure they are escaped text, never markup; the colour
    maps run from their first anchor to their last; ticks are round numbers inside their span."""
    from radar_local.report import svg

    hostile = '<script>alert(1)</script> & "x" </text><a href="javascript:x">'
    renamed = {c: hostile + c for c in stats.criteria}
    odd = dataclasses.replace(
        stats,
        criteria=list(renamed.values()),
        leakage=stats.leakage.rename(index=renamed, columns=renamed),
        reliable=stats.reliable.rename(index=renamed),
        self_effect=stats.self_effect.rename(index=renamed),
    )
    for chart in (plots.leakage_heatmap(odd), plots.self_effect_bars(odd)):
        root = ElementTree.fromstring(chart.svg())
        assert not root.findall(f".//{SVG}script") and not root.findall(f".//{SVG}a")
        shown = {"".join(t.itertext()) for t in root.iter(f"{SVG}text")}
        assert set(odd.criteria) <= shown
    assert svg.colour(svg.RDBU_R, 0) == svg.RDBU_R[0] and svg.colour(svg.RDBU_R, 1) == svg.RDBU_R[-1]
    assert svg.colour(svg.ORANGES, -3) == svg.ORANGES[0] and svg.colour(svg.RDBU_R, 0.5) == "#f7f7f7"
    assert svg.nice_ticks(-0.13, 1.05) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert svg.nice_ticks(0.0, 0.5, 4) == [0, 0.1, 0.2, 0.3, 0.4, 0.5] and svg.nice_ticks(1.0, 1.0) == [1.0]
