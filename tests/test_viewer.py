"""`radar view` (issue 65): the data the page holds against the run's own files, its policy, the report's links
into it, and the page itself in headless Chromium: a cell shows exactly what scores.csv holds, filters, deep links
and keys work, hostile model text stays text and no request leaves the page."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import re
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml
from click.testing import CliRunner

from radar_local.audited import audited_set
from radar_local.cli.main import cli
from radar_local.config import AuditConfig
from radar_local.report.viewer import EXPLANATION, RESPONSE, cut, data_block, viewer_data
from radar_local.rundir import load_run
from radar_local.stats.flags import EVIDENCE
from radar_local.synthetic import HELPSTEER2_PLANTED
from tests.conftest import REPO, planted_config
from tests.report_fixtures import GENERATOR, judge, planted_run, planted_settings

SOURCE, TARGET = "helpfulness", "correctness"  # a planted coupling (synthetic.HELPSTEER2_PLANTED)


@pytest.fixture(scope="module")
def two_judges(tmp_path_factory) -> Path:
    """A grid's run directory: one generator's planted probes scored by two judges (the viewer's lanes), as
    test_grid.py makes it; `radar view` on the grid's folder writes its viewer."""
    out = tmp_path_factory.mktemp("viewer") / "grid"
    planted_run(out / "gen", verifier="judge-a", seed=0)
    harsher = HELPSTEER2_PLANTED.copy()
    harsher[0, 1] = 0.0  # judge-b does not read helpfulness into correctness
    planted_run(out / "gen", harsher, verifier="judge-b", seed=3)
    config = out.parent / "grid.yaml"
    judges = {"generators": [GENERATOR], "verifiers": [judge("judge-a"), judge("judge-b")]}
    config.write_text(yaml.safe_dump({**planted_settings(), **judges}))
    res = CliRunner().invoke(cli, ["grid", str(config), "--out", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["view", str(out)])
    assert res.exit_code == 0 and res.output == f"wrote {out / 'gen' / 'viewer.html'}\n", res.output
    return out / "gen"


def scores_csv(root: Path) -> list[dict]:
    with (root / "scores.csv").open() as f:
        return list(csv.DictReader(f))


def data_of(root: Path) -> dict:
    page = (root / "viewer.html").read_text()
    return json.loads(re.search(r"<script type='application/json' id='data'>(.*?)</script>", page, re.S).group(1))


def test_the_page_holds_every_verdict_of_every_judge_as_scores_csv_does(two_judges):
    data = data_of(two_judges)
    assert [j["label"] for j in data["judges"]] == ["judge-a", "judge-b"]  # the run's own judge first
    p, crit, tasks = data["probes"], data["criteria"], [t["id"] for t in data["tasks"]]
    shown = {
        (data["judges"][j]["label"], tasks[p["task"][i]], crit[p["target"][i]], p["direction"][i],
         str(p["variant"][i]), crit[c], str(score))
        for j, lane in enumerate(data["verdicts"])
        for i, verdicts in enumerate(lane)
        for c, score, _why, _unscored in verdicts
    }  # fmt: skip
    rows = scores_csv(two_judges)
    held = {(r["verifier"], r["task_id"], r["target"], r["direction"], r["variant"], r["criterion"], r["score"])
            for r in rows}  # fmt: skip
    assert shown == held and len(rows) == len(held) == 2 * 2 * 5 * 2 * 4 * 5  # 2 judges, tasks, K, +/-, n, K


def test_the_matrix_holds_each_judges_numbers_and_evidence(two_judges):
    run = load_run(two_judges)
    data = viewer_data(run, audited_set(run), run.stats())
    marks = set()
    for lane in data["judges"]:
        r, view = run.result(lane["label"]), lane["audit"]
        for i, a in enumerate(view["criteria"]):
            assert view["cells"][i][i]["value"] == pytest.approx(r.self_effect[a])
            assert view["cells"][i][i]["mark"] == r.gate_evidence[a]
            for j, b in enumerate(view["criteria"]):
                if a != b:
                    assert view["cells"][i][j]["value"] == pytest.approx(r.leakage.loc[a, b])
        for p in r.pairs.to_dict("records"):  # both cells carry the pair's strongest evidence ('' unflagged)
            i, j = view["criteria"].index(p["a"]), view["criteria"].index(p["b"])
            strongest = next((e for e in EVIDENCE if e in (p["evidence"] or {}).values()), "")
            assert view["cells"][i][j]["mark"] == view["cells"][j][i]["mark"] == strongest
            marks.add(strongest)
    assert {"coupled", "possible", ""} <= marks
    own = data["judges"][0]["audit"]
    linked = [f for f in own["findings"] if f["cell"]]
    assert linked and all(f["text"].find(f"{f['cell'][0]} / ") != -1 or f["text"].find(f"/ {f['cell'][0]}") != -1
                          for f in linked)  # fmt: skip


def test_no_text_can_end_the_data_block_and_the_page_allows_its_own_script_alone(two_judges):
    hostile = "</script><script>alert(1)</script><!-- & -->"
    block = data_block({"text": hostile})
    assert "<" not in block and ">" not in block and json.loads(block) == {"text": hostile}
    page = (two_judges / "viewer.html").read_text()
    policy = re.search('Content-Security-Policy\' content="([^"]*)"', page).group(1)
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert len(scripts) == 1 and policy.startswith("default-src 'none';")
    assert f"script-src {digest(scripts[0])};" in policy and f"style-src {digest(style)};" in policy


def test_long_texts_are_cut_and_say_so():
    assert cut("x" * (RESPONSE + 5), RESPONSE) == "x" * RESPONSE + " [cut: 5 more characters]"
    assert cut("short", EXPLANATION) == "short"


def test_the_reports_findings_link_into_the_viewer(two_judges, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(two_judges, run)
    res = CliRunner().invoke(cli, ["report", str(run)])
    assert res.exit_code == 0, res.output
    html = (run / "report" / "report.html").read_text()
    links = re.findall(r'<a href="\.\./viewer\.html#from=([^&]*)&amp;to=([^"]*)">\(see its probes\)</a>', html)
    r = load_run(run).result()
    flagged = {frozenset((p["a"], p["b"])) for p in r.pairs.to_dict("records") if p["flags"] not in ([], ["gated"])}
    assert links and {frozenset(pair) for pair in links} == flagged
    assert (run / "viewer.html").is_file()


def test_view_on_a_bad_folder(tmp_path):
    res = CliRunner().invoke(cli, ["view", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and res.output.count("\n") == 1 and "not a run directory" in res.output


@pytest.fixture(scope="module")
def pairs_and_rewards(tmp_path_factory) -> Path:
    """A planted audit with a pairwise judge and a reward model beside its judge."""
    from radar_local.auditing import run_audit

    root = tmp_path_factory.mktemp("kinds") / "run"
    extra = {"pairwise": {"preset": "generic"}, "reward": {"engine": "testing", "model": "planted"}}
    run_audit(AuditConfig.model_validate(planted_config(n=1, bootstrap=0, **extra)), root, base=REPO)
    assert CliRunner().invoke(cli, ["view", str(root)]).exit_code == 0
    return root


def test_every_pairwise_verdict_and_reward_is_on_the_page_as_stored(pairs_and_rewards):
    run, data = load_run(pairs_and_rewards), data_of(pairs_and_rewards)
    probes = data["probes"]["key"]
    requests = run.plan.pairs.requests(run.probes(), run.config.pairwise.judge(run.config.verifier))
    stored = [run.store.scores[r.key] for r in requests]
    words = {1.0: "A", 0.0: "B", 0.5: "tie"}
    assert [(probes[up], c, order, choice) for up, c, order, choice, _why, _unscored in data["pairs"]["pairs"]] == [
        (r.probe_key.split("|")[0], r.criterion, r.order, words[float(v.score)]) for r, v in zip(requests, stored)
    ]
    assert {r.order for r in requests} == {0, 1} and len(requests) == len(stored) > 0
    rewards = run.plan.reward_requests(run.probes(), run.config.reward)
    by_key = {p.key: run.store.scores[r.key].score for p, r in zip(run.probes(), rewards)}
    assert data["rewards"]["values"] == [by_key[k] for k in probes] and None not in by_key.values()


# ---- in a real browser ----

chromium = pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian chromium is installed by `make test`")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        b = pw.chromium.launch(executable_path=shutil.which("chromium"), args=args)
        yield b
        b.close()


def opened(browser, url: str, requests: list | None = None, errors: list | None = None):
    page = browser.new_context(offline=True, viewport={"width": 1400, "height": 4200}).new_page()
    if requests is not None:
        page.on("request", lambda r: requests.append(r.url))
    if errors is not None:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="load")
    page.wait_for_selector("body[data-ready]")
    return page


CARDS = """() => [...document.querySelectorAll('.probe[data-key]')].map((c) => ({
  key: c.dataset.key, task: c.dataset.task, direction: c.dataset.direction, variant: c.dataset.variant,
  scores: [...c.querySelectorAll('tr.target td:not(.delta)')].map((td) =>
    (td.querySelector('.score, .unscored') || td).textContent),
  deltas: [...c.querySelectorAll('td.delta')].map((td) => td.textContent)}))"""


@pytest.mark.process  # a headless browser
@chromium
def test_a_cell_shows_exactly_the_probes_and_verdicts_scores_csv_holds(two_judges, browser):
    page = opened(browser, (two_judges / "viewer.html").as_uri())
    crit = data_of(two_judges)["judges"][0]["audit"]["criteria"]
    page.click(f"#matrix button[data-row='{crit.index(SOURCE)}'][data-col='{crit.index(TARGET)}']")
    assert page.text_content("#selection") == f"Probes steered on {SOURCE}, scored on {TARGET} (highlighted)"
    shown = {(c["task"], c["direction"], c["variant"], tuple(c["scores"]))
             for c in page.evaluate(CARDS)}  # fmt: skip
    rows = [r for r in scores_csv(two_judges) if r["target"] == SOURCE and r["criterion"] == TARGET]
    by_probe: dict[tuple, dict] = {}
    for r in rows:
        by_probe.setdefault((r["task_id"], r["direction"], r["variant"]), {})[r["verifier"]] = r["score"]
    held = {(*k, (v["judge-a"], v["judge-b"])) for k, v in by_probe.items()}
    assert shown == held and len(held) == 2 * 2 * 4  # tasks x directions x n
    assert "#from=helpfulness&to=correctness" in page.url


@pytest.mark.process  # a headless browser
@chromium
def test_filters_deep_links_keys_and_lanes(two_judges, browser):
    url = (two_judges / "viewer.html").as_uri()
    tasks = [t["id"] for t in data_of(two_judges)["tasks"]]
    page = opened(browser, f"{url}#from={TARGET}&to={SOURCE}&task={tasks[1]}&direction=%2B")
    cards = page.evaluate(CARDS)
    assert cards and {(c["task"], c["direction"]) for c in cards} == {(tasks[1], "+")}
    assert page.locator(".probe.empty").count() == len(cards)  # the down side is filtered out
    assert page.get_attribute("#matrix button.selected", "aria-label").startswith(f"{TARGET} \u2192 {SOURCE}")
    page.fill("#f-search", "variant 3")  # the search reads the responses
    assert {c["variant"] for c in page.evaluate(CARDS)} == {"3"}
    page.fill("#f-search", "")
    page.select_option("#f-verdict", "unscored")
    assert not page.evaluate(CARDS) and not [r for r in scores_csv(two_judges) if r["score"] == ""]
    page.select_option("#f-verdict", "")
    # keys: arrows move in the matrix, Enter opens a cell, j the next row (named in the URL)
    page.focus("#matrix button[data-row='0'][data-col='0']")
    page.keyboard.press("ArrowRight")
    assert page.evaluate("document.activeElement.dataset.col") == "1"
    page.keyboard.press("Enter")
    crit = data_of(two_judges)["judges"][0]["audit"]["criteria"]
    assert page.text_content("#selection").startswith(f"Probes steered on {crit[0]}, scored on {crit[1]}")
    page.focus("#list")
    page.keyboard.press("j")
    current = page.get_attribute(".row.current", "data-index")
    key = page.evaluate("document.querySelector('.row.current .probe[data-key]').dataset.key")
    assert current == "1" and f"probe={quote(key, safe='')}" in page.url
    # a probe's deep link opens its row
    page = opened(browser, f"{url}#probe={key}")
    assert page.evaluate("[...document.querySelectorAll('.row.current .probe')].map((p) => p.dataset.key)").count(key)
    # lanes sorted by the judges' disagreement, largest first
    page = opened(browser, f"{url}#from={SOURCE}&to={TARGET}&sort=disagreement")
    gaps = [sum(abs(float(d)) for d in c["deltas"] if d) for c in page.evaluate(CARDS)]
    rows = [gaps[i] + gaps[i + 1] for i in range(0, len(gaps), 2)]
    assert rows == sorted(rows, reverse=True) and rows[0] > 0
    # a finding's link opens its cell
    finding = page.locator("a.finding").first
    href = finding.get_attribute("href")
    finding.click()
    assert page.url.endswith(href) or href[1:] in page.url


@pytest.mark.process  # a headless browser
@chromium
def test_a_rows_pairwise_verdicts_and_rewards_are_shown(pairs_and_rewards, browser):
    data = data_of(pairs_and_rewards)
    page = opened(browser, (pairs_and_rewards / "viewer.html").as_uri())
    row = page.locator(".row").first
    up = data["probes"]["key"].index(row.locator(".probe[data-direction='+']").get_attribute("data-key"))
    said = {"A": ("up", "down"), "B": ("down", "up"), "tie": ("tie", "tie")}
    expected = {(c, order): said[choice][order] for u, c, order, choice, _w, _u in data["pairs"]["pairs"] if u == up}
    shown = {}
    for tr in row.locator(".pairs tbody tr").all():
        for order, td in enumerate(tr.locator("td").all()):
            shown[tr.get_attribute("data-criterion"), order] = td.evaluate("(td) => td.firstChild.textContent")
    assert shown == expected and len(shown) >= 2
    reward = row.locator(".probe[data-direction='+'] .reward").text_content()
    label, value = reward.split(": ")
    assert label == f"reward ({data['rewards']['label']})" and float(value) == pytest.approx(
        data["rewards"]["values"][up], abs=0.005
    )


HOSTILE = (
    '</script><script>window.pwned = 1</script><img src="http://evil.example/a.png" onerror="window.pwned = 2">'
    '<a href="javascript:window.pwned = 3">click</a><style>body{display:none}</style>'
    '<iframe src="http://evil.example/"></iframe>'
)


@pytest.mark.process  # a headless browser
@chromium
def test_hostile_model_text_stays_text_and_nothing_is_fetched(two_judges, tmp_path, browser):
    run = tmp_path / "run"
    shutil.copytree(two_judges, run)
    for name, field in (("probes.jsonl", "text"), ("scores.jsonl", "reasoning")):
        rows = [json.loads(line) for line in (run / name).read_text().splitlines()]
        (run / name).write_text("".join(json.dumps({**r, field: HOSTILE}) + "\n" for r in rows))
    assert CliRunner().invoke(cli, ["view", str(run)]).exit_code == 0
    requests: list[str] = []
    errors: list[str] = []
    page = opened(browser, (run / "viewer.html").as_uri(), requests, errors)
    page.locator("a.finding").first.click()
    assert page.evaluate("window.pwned") is None
    assert page.text_content(".response") == HOSTILE and page.text_content(".why").startswith(HOSTILE + "\n")
    assert page.evaluate("document.querySelectorAll('#app img, #app iframe, #app style, #app script').length") == 0
    assert page.evaluate("getComputedStyle(document.body).display") != "none"
    assert requests == [(run / "viewer.html").as_uri()] and not errors, (requests, errors)
