"""A pairwise judge's statistics (issue 46, first part: stats/pairwise.py): preference for the up-steered response
of a pair, per criterion asked, in both orders; the pairwise self-effect, leakage, flags and position bias."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from radar_local.errors import InputError
from radar_local.stats.pairwise import DOWN_FIRST, TIE, UP_FIRST, A, B, PairVerdicts, Pairwise, pairwise

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


def verdicts(rows: list[tuple[int, int, int, int, int, int]]) -> PairVerdicts:
    """rows of (task, source, variant, asked, order, choice) over criteria a and b."""
    t, c, v, d, o, x = (np.array(col) for col in zip(*rows))
    return PairVerdicts(("a", "b"), t, c, v, d, o, x)


def test_preferences_self_effects_leakage_and_position_on_a_hand_computed_table():
    """Two pairs steered on a and two on b (one task), each asked about a and b in both orders (16 verdicts):
    - on a, asked a: up every time: p_aa = 1, s_a = 1;
    - on a, asked b: variant 0 up, variant 1 down, in both orders: p_ab = 1/2, l_ab = 0;
    - on b, asked b: up, but for one tie, left out of p (never half a preference): p_bb = mean(2/2, 1/1) = 1;
    - on b, asked a: always the first slot, so up when up is shown first, down otherwise: p_ba = 1/2, l_ba = 0.
    The first slot is chosen in 10 of the 15 decisive verdicts; b's two questions about a flip between the orders,
    of the 7 questions whose two orders are both decisive."""
    up = {UP_FIRST: A, DOWN_FIRST: B}  # the choice that prefers the up response in each order
    down = {UP_FIRST: B, DOWN_FIRST: A}
    rows = []
    for variant in (0, 1):
        for order in (UP_FIRST, DOWN_FIRST):
            rows.append((0, 0, variant, 0, order, up[order]))  # on a, asked a: up
            rows.append((0, 0, variant, 1, order, up[order] if variant == 0 else down[order]))  # asked b: 2 of 4
            rows.append((0, 1, variant, 1, order, TIE if (variant, order) == (1, DOWN_FIRST) else up[order]))
            rows.append((0, 1, variant, 0, order, A))  # on b, asked a: always the first slot
    r = pairwise(verdicts(rows), resamples=0)
    a, b = r.criteria
    assert a.accuracy == 1.0 and a.self_effect == 1.0
    assert b.accuracy == 1.0
    leak = {(x.source, x.target): x.leakage for x in r.leakage}
    assert leak["a", "b"] == pytest.approx(0.0)  # 2 of 4: p = 1/2
    assert leak["b", "a"] == pytest.approx(0.0)
    assert r.position.first_slot == pytest.approx(10 / 15) and r.position.ties == pytest.approx(1 / 16)
    assert r.position.flip_rate == pytest.approx(2 / 7)
    assert r.position.ci is None and r.leakage[0].band is None  # no resamples, no interval


def test_a_judge_right_on_every_pair_keeps_an_interval_the_pairs_allow():
    """Issue 61: 3 pairs a stratum, 2 tasks, every verdict right on its own criterion (12 decisive verdicts): every
    replicate is 1, so the bootstrap interval was [1, 1] and missed any truth below 1. Wilson's score interval for
    the accuracy 12/12 at z = 1.96: 12 / (12 + 1.96^2) = 0.7575..., a self-effect of at least 2 x 0.7575 - 1 =
    0.515; the family band, at its critical value, is wider still."""
    up = {UP_FIRST: A, DOWN_FIRST: B}
    rows = [
        (task, source, variant, asked, order, up[order] if asked == source else A)
        for task in (0, 1)
        for source in (0, 1)
        for variant in range(3)
        for asked in (0, 1)
        for order in (UP_FIRST, DOWN_FIRST)
    ]
    r = pairwise(verdicts(rows), resamples=200)
    for c in r.criteria:
        assert c.self_effect == 1.0 and c.self_effect_ci[1] == 1.0
        assert c.self_effect_ci[0] == pytest.approx(2 * 12 / (12 + 1.959963984540054**2) - 1)
        assert c.band[0] < c.self_effect_ci[0]


def test_one_pair_a_stratum_confirms_nothing():
    """Issue 60 item 14: `pairs: 1` leaves each (task, criterion) stratum one pair, so every replicate is the data
    and the band was the point: a judge with no coupling and no position bias had leakages, gates and a position
    bias confirmed. With no spread to rest on there is no band and nothing is confirmed."""
    from pairwise_error import sample

    r = pairwise(sample(np.random.default_rng(3), 5, 5, 1, 0.0, 0.0), resamples=200)
    assert all(c.band is None and c.gate == "open" for c in r.criteria)
    assert not any(x.confirmed for x in r.leakage) and not r.position.confirmed and r.position.band is None
    assert not any(e == "confirmed" for p in r.pairs for e in p.evidence.values())


def test_a_source_the_judge_is_at_chance_on_scales_no_leakage():
    """Steered on a, the judge prefers up on a in one order and down in the other (s_a = 0 exactly: a small judge's
    coin), yet always up when asked b: the leakage a -> b is undefined (null), never the infinity of a ratio over
    0, with or without resamples (the embedded model's pairwise-only audit once stopped on it)."""
    up = {UP_FIRST: A, DOWN_FIRST: B}
    rows = []
    for task in (0, 1):
        for variant in (0, 1, 2):
            for order in (UP_FIRST, DOWN_FIRST):
                rows.append((task, 0, variant, 0, order, A))  # on a, asked a: the first slot, so up half the time
                rows.append((task, 0, variant, 1, order, up[order]))  # on a, asked b: always up
                rows.append((task, 1, variant, 1, order, up[order]))
                rows.append((task, 1, variant, 0, order, up[order] if variant else A))
    for resamples in (0, 200):
        r = pairwise(verdicts(rows), resamples=resamples)
        assert r.criteria[0].self_effect == 0.0
        leak = {(x.source, x.target): x for x in r.leakage}
        assert leak["a", "b"].leakage is None and not leak["a", "b"].confirmed
        assert r.model_dump_json()  # every number finite or null, as stats.json holds them


@pytest.fixture(scope="module")
def simulated():
    from pairwise_error import sample, truth

    rng = np.random.default_rng(7)
    return {
        name: (pairwise(sample(rng, 5, 5, 5, leak, bias), resamples=300, seed=1), truth(5, leak, bias))
        for name, leak, bias in (("null", 0.0, 0.0), ("planted", 0.6, 0.15))
    }


def test_a_planted_leakage_and_position_bias_are_confirmed_and_their_intervals_hold_the_truth(simulated):
    r, true = simulated["planted"]
    planted = next(x for x in r.leakage if (x.source, x.target) == ("c0", "c1"))
    assert planted.confirmed and planted.ci[0] <= true["leakage"][0, 1] <= planted.ci[1]
    assert r.position.confirmed and r.position.ci[0] <= true["bias"] <= r.position.ci[1]
    assert [(x.source, x.target) for x in r.leakage if x.confirmed] == [("c0", "c1")]
    assert all(c.gate == "passed" for c in r.criteria)


def test_a_judge_with_neither_confirms_nothing(simulated):
    r, _ = simulated["null"]
    assert not any(x.confirmed for x in r.leakage) and not r.position.confirmed
    assert not any(e == "confirmed" for p in r.pairs for e in p.evidence.values())


PAIR_TEMPLATE = (
    "Task: {{ prompt }}\nA: {{ response_a }}\nB: {{ response_b }}\n"
    "Which is better on {{ criterion.label }} ({{ criterion.description }})? Answer [[A]] or [[B]]."
)
TASKS = [{"id": f"t{i}", "prompt": f"Customer request {i}."} for i in range(5)]
COUPLED = {"Helpfulness / Understanding": {"Correctness / Completeness": 0.6}}


def pairwise_config(options: dict, **pairwise) -> dict:
    from tests.conftest import planted_config

    spec = {"template": PAIR_TEMPLATE, **pairwise}
    return planted_config(tasks=TASKS, n=5, bootstrap=150, options={"noise": 1.0, **options}, pairwise=spec)


@pytest.fixture(scope="module")
def planted_runs(tmp_path_factory):
    from radar_local.auditing import run_audit

    root = tmp_path_factory.mktemp("pairwise")
    return {
        name: (run_audit(pairwise_config(options), root / name, progress=False), root / name)
        for name, options in (("planted", {"position": 0.15, "coupling": COUPLED}), ("null", {}))
    }


def test_an_audit_asks_its_verifier_the_pairs_and_confirms_a_planted_bias_and_leakage(planted_runs):
    """The planted pairwise judge prefers the first slot (0.15 on a tie) and lets a steer on helpfulness move its
    preference on correctness: both confirmed, no other leakage; every pair asked about every criterion in both
    orders (5 criteria x 5 tasks x 5 variants x 5 asked x 2); the section in the report; stats.json reads back."""
    from radar_local import load_run
    from radar_local.report.markdown import audit_markdown

    result, run = planted_runs["planted"]
    p = result.measured(Pairwise)
    assert p.verdicts == 5 * 5 * 5 * 5 * 2 and p.position.unscored == 0
    assert p.position.confirmed and p.position.bias > 0.05
    assert [(x.source, x.target) for x in p.leakage if x.confirmed] == [("helpfulness", "correctness")]
    assert all(c.gate == "passed" for c in p.criteria)
    report = audit_markdown(result)
    assert "## Pairwise judge" in report and "a position bias, confirmed" in report
    assert "helpfulness -> correctness" in report
    assert load_run(run).result() == result


def test_a_pairwise_judge_with_neither_confirms_nothing_and_resumes_without_a_call(planted_runs):
    import json

    from radar_local.auditing import run_audit

    result, run = planted_runs["null"]
    assert not result.measured(Pairwise).position.confirmed and not any(
        x.confirmed for x in result.measured(Pairwise).leakage
    )
    again = run_audit(pairwise_config({}), run, progress=False)
    stage = json.loads((run / "run.json").read_text())["stages"]["pairwise"]
    assert (
        stage["requests"] == 1250
        and stage.get("calls", 0) == 0
        and again.measured(Pairwise) == result.measured(Pairwise)
    )


def test_the_pair_budget_and_the_criteria_asked(tmp_path):
    from radar_local.auditing import run_audit

    result = run_audit(pairwise_config({}, pairs=2, asked="diagonal"), tmp_path / "run", progress=False)
    assert result.measured(Pairwise).verdicts == 5 * 5 * 2 * 1 * 2  # 2 variants a (task, criterion), asked about itself
    assert all(x.leakage is None for x in result.measured(Pairwise).leakage)  # nothing asked off the diagonal


def test_a_pairwise_judge_that_cannot_ask_or_answer_is_one_line(tmp_path):
    import yaml

    from tests.conftest import invoke, one_line_exit_2, planted_config

    config = tmp_path / "c.yaml"
    jury = {"jury": [{"engine": "testing", "model": m} for m in "ab"]}
    for bad, needle in (
        (pairwise_config({}, template="{{ response_a }} {{ criterion }}"), "never shows {{ response_b }}"),
        (pairwise_config({}, template=PAIR_TEMPLATE + "{{ mood }}"), "uses 'mood'"),
        (pairwise_config({}, answer={"kind": "grade", "pattern": r"\[\[(A)\]\]"}), "does not match the choice 'B'"),
        (pairwise_config({}, ties=True), "does not match the choice 'tie'"),
        ({**pairwise_config({}), "verifier": jury}, "pairwise asks one judge the pairs"),
    ):
        config.write_text(yaml.safe_dump(bad))
        one_line_exit_2(invoke("audit", config, "--out", tmp_path / "run"), needle)
    ok = planted_config(
        pairwise={"template": PAIR_TEMPLATE, "ties": True, "answer": {"kind": "grade", "pattern": r"\[\[(A|B|tie)\]\]"}}
    )
    config.write_text(yaml.safe_dump(ok))
    plan = invoke("audit", config, "--plan")
    assert plan.exit_code == 0 and "Pairwise: 20 pairs x 5 questions x 2 orders = 200 more calls" in plan.output


@pytest.mark.thorough  # the worked example whole (its statistics are checked above in seconds): `make test` runs it
def test_the_docs_pairwise_example_is_what_its_config_writes(tmp_path):
    """docs/pairwise.md's section is what configs/pairwise-example.yaml writes (the report's table rows and line)."""
    from radar_local.auditing import run_audit
    from radar_local.report.markdown import audit_markdown

    repo = Path(__file__).resolve().parents[1]
    report = audit_markdown(run_audit(repo / "configs" / "pairwise-example.yaml", tmp_path / "run"))
    docs = (repo / "docs" / "pairwise.md").read_text()
    rows = [line for line in docs.splitlines() if line.startswith("| ") and "passed" in line]
    assert len(rows) == 5 and all(row in report for row in rows)
    quoted = " ".join(line.removeprefix("> ") for line in docs.splitlines() if line.startswith("> "))
    assert quoted in report


def test_what_the_overall_preference_is_made_of_and_agreement_with_the_pointwise_verdicts(tmp_path):
    """Asked overall too, the planted judge prefers the response of the higher mean over the rubric's criteria: a
    steer on helpfulness also moves correctness (0.6), so it is the largest share of the overall preference. The
    same planted judge ranks pairs pointwise from the same values: the two agree beyond chance (where no steer
    separates the pair, its pointwise verdicts differ by noise alone and the pairwise choice is a coin)."""
    from radar_local.auditing import run_audit

    result = run_audit(pairwise_config({"coupling": COUPLED}, overall=True), tmp_path / "run", progress=False)
    p = result.measured(Pairwise)
    assert p.verdicts == 5 * 5 * 5 * 6 * 2  # asked about the 5 criteria and overall
    shares = {d.criterion: d.share for d in p.overall}
    assert max(shares, key=shares.get) == "helpfulness" and sum(shares.values()) == pytest.approx(1)
    assert all(d.ci[0] > 0 for d in p.overall)  # every steer moves the overall preference
    assert p.pointwise_agreement_ci[0] > 0.55
    assert "its overall preference is made of helpfulness" in __import__(
        "radar_local.report.markdown", fromlist=["audit_markdown"]
    ).audit_markdown(result)


def test_a_pairwise_judge_of_its_own_is_asked_the_pairs_beside_the_pointwise_verifier(tmp_path):
    """`pairwise: {verifier: ...}`: a model of its own (here a planted critic with a position bias and a leak)
    is asked the pairs under its own label while the config's verifier (no bias, no leak) scores pointwise: the
    findings are the critic's, named in the section, and its agreement is with the verifier's pointwise verdicts.
    A pairwise model given a pointwise judge is one line."""
    import json

    import yaml

    from radar_local import load_run
    from radar_local.auditing import run_audit
    from radar_local.config import AuditConfig
    from radar_local.design import design_lines
    from radar_local.report.markdown import audit_markdown

    critic = {"engine": "testing", "model": "planted", "name": "critic",
              "options": {"noise": 1.0, "position": 0.15, "coupling": COUPLED}}  # fmt: skip
    config = pairwise_config({}, verifier=critic)
    result = run_audit(config, tmp_path / "run", progress=False)
    p = result.measured(Pairwise)
    assert p.judge == "critic" and p.position.confirmed
    assert [(x.source, x.target) for x in p.leakage if x.confirmed] == [("helpfulness", "correctness")]
    assert result.leakage.loc["helpfulness", "correctness"] < 0.3  # the verifier's pointwise verdicts: no leak
    report = audit_markdown(result)
    assert "The pairwise judge critic asked" in report and "the verifier's pointwise verdicts" in report
    assert load_run(tmp_path / "run").result() == result  # stats.json holds the judge's name
    stages = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]
    assert stages["pairwise"]["requests"] == 1250
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(config))
    plan = design_lines(tmp_path / "audit.yaml", None, None, None)
    assert any("calls of the pairwise judge critic" in line for line in plan)
    with pytest.raises(ValueError, match="pairwise.verifier: its template and answer are pairwise's own"):
        AuditConfig.model_validate(pairwise_config({}, verifier={**critic, "judge": {"calls": "joint"}}))


def test_a_judge_asked_only_overall_in_its_own_words(tmp_path):
    """`asked: overall` with `words`: a judge whose question names no criterion and answers Yes (the first is
    better) or No (openai/evals' battle). Each pair is asked once per order; no gate or leakage is read; the
    drivers table says which steers move its preference; the position bias is confirmed on its own family."""
    from radar_local.auditing import run_audit
    from radar_local.report.markdown import audit_markdown

    battle = "Task: {{ prompt }}\n[Response 1]\n{{ response_a }}\n[Response 2]\n{{ response_b }}\nIs the first better?"
    spec = {"template": battle, "asked": "overall", "words": {"A": "Yes", "B": "No"}, "answer": {
        "kind": "grade", "pattern": "(Yes|No)"}}  # fmt: skip
    result = run_audit(pairwise_config({"position": 0.15, "coupling": COUPLED}, **spec), tmp_path / "r", progress=False)
    p = result.measured(Pairwise)
    assert p.verdicts == 5 * 5 * 5 * 2 and p.position.unscored == 0
    assert p.criteria == [] and p.leakage == [] and p.pairs == [] and p.position.confirmed
    assert all(d.ci[0] > 0 for d in p.overall)  # every steer moves the planted judge's overall preference
    report = audit_markdown(result)
    assert "asked only which of each pair" in report and "| criterion steered |" in report
    with pytest.raises(InputError, match="does not match the choice 'No'"):  # a pattern that cannot say No
        run_audit(pairwise_config({}, **{**spec, "answer": {"kind": "grade", "pattern": "(Yes)"}}), tmp_path / "x")


@pytest.mark.parametrize(
    ("preset", "written", "choice"),
    [
        # Prometheus 2's relative grading: feedback, then [RESULT] and the letter (on its line or after the feedback)
        ("prometheus-2-relative", "Feedback: Both address the refund; A names the policy, B does not. [RESULT] A", 1.0),
        ("prometheus-2-relative", "Feedback: B is clearer.\n[RESULT] B", 0.0),
        ("skywork-critic", "[[B]]", 0.0),  # Skywork-Critic: the verdict alone
        ("generic", "[[A]]", 1.0),
    ],
)
def test_each_preset_reads_its_judges_own_output_and_audits_on_the_planted_engine(tmp_path, preset, written, choice):
    """A preset fills the template and the answer: the judge's own output string parses to its choice, and a planted
    audit with the preset parses every verdict; a template given beside the preset wins."""
    from radar_local.answer import Answer
    from radar_local.auditing import run_audit
    from radar_local.specs import PairwiseJudge
    from tests.conftest import planted_config

    judge = PairwiseJudge(preset=preset)
    assert Answer(judge.answer, (("c", judge.choices),)).parse(written)["c"].score == choice
    result = run_audit(planted_config(pairwise={"preset": preset}), tmp_path / "run", progress=False)
    assert result.measured(Pairwise).position.unscored == 0 and result.measured(Pairwise).verdicts == 5 * 2 * 2 * 5 * 2
    assert PairwiseJudge(preset=preset, template=PAIR_TEMPLATE).template == PAIR_TEMPLATE


def test_an_unknown_preset_is_one_line_naming_the_presets(tmp_path):
    import yaml

    from tests.conftest import invoke, one_line_exit_2, planted_config

    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(planted_config(pairwise={"preset": "judge-9000"})))
    one_line_exit_2(invoke("audit", config), "prometheus-2-relative", "skywork-critic")


def test_compare_fails_a_pairwise_judge_with_a_confirmed_finding(planted_runs, tmp_path):
    """`radar compare A B --fail-on-pairwise`: exit 1 naming the planted judge's confirmed position bias and
    leakage; 0 for the judge with neither; one line where B asked no pairs."""
    from radar_local.auditing import run_audit
    from tests.conftest import invoke, one_line_exit_2, planted_config

    planted, null = planted_runs["planted"][1], planted_runs["null"][1]
    res = invoke("compare", null, planted, "--fail-on-pairwise")
    assert res.exit_code == 1, res.output
    assert "policy: pairwise position bias +0.1" in res.output
    assert "policy: pairwise leakage helpfulness -> correctness" in res.output
    assert invoke("compare", planted, null, "--fail-on-pairwise").exit_code == 0
    run_audit(planted_config(n=2), tmp_path / "plain", progress=False)
    one_line_exit_2(invoke("compare", planted, tmp_path / "plain", "--fail-on-pairwise"), "asked no pairs")


def test_a_grid_asking_repeats_is_one_line_saying_where_they_go(tmp_path):
    import yaml

    from tests.conftest import invoke, one_line_exit_2

    grid = {
        "rubric": "helpsteer2",
        "generators": [{"engine": "testing", "model": "planted"}],
        "verifiers": [{"engine": "testing", "model": "v1"}],
        "exclude_self_pairs": False,
        "consistency": {"repeats": 2},
    }
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(grid))
    one_line_exit_2(invoke("grid", tmp_path / "grid.yaml", "--out", tmp_path / "g"), "'consistency' audits one judge")


@pytest.mark.thorough  # a grid's two cells and pages: `make test` runs it; the cells' statistics are checked above
def test_a_grid_asks_each_judge_the_pairs_and_sets_them_side_by_side(tmp_path):
    """`pairwise:` in a grid: every verifier is asked the pairs in every cell; grid.md's table sets the judges side
    by side (the one planted with a first-slot preference of 0.3 on a tie has its position bias confirmed, the
    other none), and each cell's stats.json holds its pairwise block."""
    import yaml

    from radar_local.config import GridConfig
    from radar_local.grid import run_grid

    generator = {"engine": "testing", "model": "planted", "options": {"noise": 1.0}}
    grid = GridConfig.model_validate(
        {
            "rubric": "helpsteer2",
            "tasks": TASKS,
            "n": 3,
            "bootstrap": 100,
            "generators": [generator],
            "verifiers": [
                {"engine": "testing", "model": "first-slot", "options": {"noise": 1.0, "position": 0.3}},
                {"engine": "testing", "model": "balanced", "options": {"noise": 1.0}},
            ],
            "pairwise": {"template": PAIR_TEMPLATE},
        }
    )
    summary = run_grid(grid, tmp_path / "grid", base=tmp_path, progress=False, reports=False)
    rows = {row["verifier"]: row for row in summary["pairwise"]}
    assert set(rows) == {"first-slot", "balanced"}
    assert rows["first-slot"]["position_confirmed"] and not rows["balanced"]["position_confirmed"]
    assert all(row["gates_passed"] == 5 for row in rows.values())
    md = (tmp_path / "grid" / "grid.md").read_text()
    assert "Pairwise judges per cell" in md and "(confirmed)" in md
    stats = yaml.safe_load((tmp_path / "grid" / "planted" / "stats.json").read_text())
    assert stats["measurements"]["pairwise"]["verdicts"] == 750


@pytest.mark.thorough  # a grid's two cells: `make test` runs it; the pairwise judge of its own is checked above
def test_a_grid_asks_pairwise_s_own_judge_once_per_generator(tmp_path):
    """`pairwise: {verifier: ...}` in a grid: the critic (planted with a first-slot preference) is asked each
    generator's pairs once, after the verifiers; every cell's row names it and reads the same verdicts."""
    from radar_local.config import GridConfig
    from radar_local.grid import run_grid
    from radar_local.pool import EnginePool

    critic = {"engine": "testing", "model": "critic", "options": {"noise": 1.0, "position": 0.3}}
    grid = GridConfig.model_validate(
        {
            "rubric": "helpsteer2",
            "tasks": TASKS[:3],
            "n": 3,
            "bootstrap": 50,
            "generators": [{"engine": "testing", "model": "planted", "options": {"noise": 1.0}}],
            "verifiers": [
                {"engine": "testing", "model": "a", "options": {"noise": 1.0}},
                {"engine": "testing", "model": "b", "options": {"noise": 1.0}},
            ],
            "pairwise": {"template": PAIR_TEMPLATE, "verifier": critic},
        }
    )
    loaded = []
    get = EnginePool.get
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(EnginePool, "get", lambda self, spec, *a: loaded.append(spec.model) or get(self, spec, *a))
        summary = run_grid(grid, tmp_path / "grid", base=tmp_path, progress=False, reports=False)
    assert loaded.count("critic") == 1  # after both verifiers, once
    rows = {row["verifier"]: row for row in summary["pairwise"]}
    assert {r["pairwise_judge"] for r in rows.values()} == {"critic"} and set(rows) == {"a", "b"}
    assert rows["a"]["position_bias"] == rows["b"]["position_bias"] and rows["a"]["position_confirmed"]
    assert "critic (beside a)" in (tmp_path / "grid" / "grid.md").read_text()


STEERED = "Steered {} on <{}>: reply (seed {})"  # what the planted judge reads back (engines/testing.py)
HELPFUL, CORRECT = "Helpfulness / Understanding", "Correctness / Completeness"


def pair_labels(tmp_path, rows: list[str]):
    path = tmp_path / "pairs.csv"
    path.write_text("task_id,response_a,response_b,criterion,preferred,rater\n" + "\n".join(rows) + "\n")
    return path


def test_a_pairwise_judge_is_measured_against_the_teams_pairwise_labels(tmp_path):
    """A labels file with a `preferred` column holds pairwise labels: each labelled pair is asked of the pairwise
    judge on its criterion (or overall) in both orders. The planted judge prefers the response steered up on the
    criterion asked (a gap of 4 points over noise 1): it agrees with raters who chose it on every decisive
    verdict, and with raters who chose the other never; a split between raters decides nothing; the raters'
    agreement among themselves is their ceiling."""
    from radar_local.auditing import run_audit
    from radar_local.report.markdown import audit_markdown

    up, down = STEERED.format("+", HELPFUL, 7), STEERED.format("-", HELPFUL, 7)
    up_c, down_c = STEERED.format("+", CORRECT, 8), STEERED.format("-", CORRECT, 8)
    rows = [
        f"t0,{up},{down},helpfulness,A,ann",  # the raters agree with the planted judge's truth
        f"t0,{up},{down},helpfulness,A,bob",
        f"t1,{down_c},{up_c},correctness,B,ann",
        f"t2,{up},{down},overall,a,ann",
        f"t3,{up},{down},helpfulness,A,ann",  # a split: decides nothing
        f"t3,{up},{down},helpfulness,B,bob",
        f"t4,{up_c},{down_c},correctness,tie,ann",  # a tie decides nothing
    ]
    config = pairwise_config({}, pairs=1, asked="diagonal") | {"labels": str(pair_labels(tmp_path, rows))}
    result = run_audit(config, tmp_path / "run", progress=False)
    humans = result.measured(Pairwise).humans
    assert (humans.questions, humans.decided, humans.unscored) == (5, 3, 0)
    assert humans.agreement == 1.0 and set(humans.criteria) == {"helpfulness", "correctness", "overall"}
    assert humans.raters_agree == 0.5  # ann and bob agree on t0, split on t3
    assert "on your 3 pairwise labels the raters decide (pairs.csv), it prefers their choice in 1.00" in (
        audit_markdown(result)
    )
    flipped = [r.replace(",A,", ",X,").replace(",B,", ",A,").replace(",X,", ",B,") for r in rows[:3]]
    config["labels"] = str(pair_labels(tmp_path, flipped))
    again = run_audit(config, tmp_path / "run", progress=False)  # the judge's verdicts, stored, read again
    assert again.measured(Pairwise).humans.agreement == 0.0 and again.measured(Pairwise).humans.decided == 2


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        (["t0,a,b,helpfulness,maybe,ann"], "row 1: preferred 'maybe' is none of A, B and tie"),
        (["t0,a,,helpfulness,A,ann"], "row 1: a pairwise label needs both responses"),
        (["t0,a,b,tone,A,ann"], "row 1: criterion 'tone' is not the rubric's; it has helpfulness"),
        (["t0,a,b,helpfulness,A,ann", "t0,a,b,helpfulness,B,ann"], "ann chose between these responses on helpful"),
    ],
)
def test_a_bad_pairwise_label_is_one_line(tmp_path, rows, needle):
    from tests.conftest import radar_run

    cfg = tmp_path / "config.yaml"
    cfg.write_text(json.dumps(pairwise_config({}) | {"labels": str(pair_labels(tmp_path, rows))}))
    res = radar_run("audit", cfg, "--out", tmp_path / "run")
    assert res.returncode == 2 and needle in res.stderr and "Traceback" not in res.stderr, res.stderr


def test_pairwise_labels_without_a_pairwise_judge_are_one_line(tmp_path):
    from tests.conftest import planted_config, radar_run

    cfg = tmp_path / "config.yaml"
    labels = pair_labels(tmp_path, ["t0,a,b,helpfulness,A,ann"])
    cfg.write_text(json.dumps(planted_config(tasks=TASKS, labels=str(labels))))
    res = radar_run("audit", cfg, "--out", tmp_path / "run")
    assert res.returncode == 2 and "holds pairwise labels (a preferred column)" in res.stderr, res.stderr


def test_a_judge_asked_only_pairs_is_audited_on_them_alone(planted_runs, tmp_path):
    """`pairwise: {only: true}` through the CLI: no pointwise verdict is asked (every stored verdict is the pair
    judge's), the planted position bias and leakage are confirmed from the pairs alone, stats.json (kind pairwise)
    reads back, the report holds the pairwise findings, section and leakage table and no pointwise section, a rerun
    makes no call, `--plan` counts only pair calls, and `radar compare` gates it with --fail-on-pairwise (a
    pointwise policy on it is one line); reading it as a pointwise audit is one line."""
    import json

    import yaml

    from radar_local import load_run
    from radar_local.errors import InputError
    from radar_local.stats.pairwise_audit import PairwiseAudit
    from tests.conftest import invoke, one_line_exit_2

    config, run = tmp_path / "only.yaml", tmp_path / "run"
    config.write_text(yaml.safe_dump(pairwise_config({"position": 0.15, "coupling": COUPLED}, only=True)))
    res = invoke("audit", config, "--out", run, "--quiet")
    assert res.exit_code == 0, res.output
    assert "RADAR pairwise audit" in res.output and "a position bias, confirmed" in res.output
    verdicts = [json.loads(line) for line in (run / "scores.jsonl").read_text().splitlines()]
    assert len(verdicts) == 5 * 5 * 5 * 5 * 2 and {v["verifier"] for v in verdicts} == {"planted-pairwise"}
    assert not (run / "scores.csv").exists()
    result = load_run(run).stats()
    assert (
        isinstance(result, PairwiseAudit)
        and result.probes == 250
        and result.measured(Pairwise).pointwise_agreement is None
    )
    p = result.measured(Pairwise)
    assert p.position.confirmed and [(x.source, x.target) for x in p.leakage if x.confirmed] == [
        ("helpfulness", "correctness")
    ]
    assert p == planted_runs["planted"][0].measured(Pairwise).model_copy(update={"pointwise_agreement": None,
                                                                        "pointwise_agreement_ci": None})  # fmt: skip
    report = (run / "report" / "report.md").read_text()
    assert "# RADAR pairwise audit" in report and "## Pairwise leakage" in report and "## Self-effects" not in report
    assert "- helpfulness -> correctness: a steer on helpfulness moves the judge's preference" in report
    assert "<h2>Pairwise judge</h2>" in (run / "report" / "report.html").read_text()
    assert invoke("audit", config, "--out", run, "--quiet", "--no-report").exit_code == 0
    assert json.loads((run / "run.json").read_text())["stages"]["pairwise"].get("calls", 0) == 0
    plan = invoke("audit", config, "--plan")
    assert "250 directed probes; the judge is asked only pairs" in plan.output
    assert "Pairwise: 125 pairs x 5 questions x 2 orders = 1250 calls of the verifier" in plan.output
    null = planted_runs["null"][1]
    failed = invoke("compare", null, run, "--fail-on-pairwise")
    assert failed.exit_code == 1 and "policy: pairwise leakage helpfulness -> correctness" in failed.output
    assert invoke("compare", run, null, "--fail-on-pairwise").exit_code == 0
    one_line_exit_2(invoke("compare", null, run, "--fail-on-sym", "0.3"), "is a pairwise audit", "--fail-on-sym")
    one_line_exit_2(invoke("compare", null, run, "--fail-on-sign-errors"), "audited no per-prompt rubric")
    one_line_exit_2(invoke("compare", null, run, "--fail-on-attack", "forged_end"), "attacked no probe")  # no attacks:
    with pytest.raises(InputError, match="is a pairwise audit"):
        load_run(run).result()
    damaged = json.loads((run / "stats.json").read_text())
    del damaged["pairwise"]["position"]
    (tmp_path / "damaged.json").write_text(json.dumps(damaged))
    one_line_exit_2(invoke("compare", null, tmp_path / "damaged.json"), "not a complete RADAR pairwise stats file")
    (tmp_path / "newer.json").write_text(json.dumps({**damaged, "schema_version": 99}))
    one_line_exit_2(invoke("compare", null, tmp_path / "newer.json"), "schema_version 99", "upgrade radar_local")


def test_a_judge_asked_only_pairs_refuses_what_reads_pointwise_verdicts(tmp_path):
    """pairwise.only with anything that needs the judge's pointwise verdicts, with a pairwise model of its own, or
    in a grid: one line naming both."""
    import yaml

    from tests.conftest import invoke, one_line_exit_2

    config = tmp_path / "c.yaml"
    critic = {"engine": "testing", "model": "critic"}
    for bad, needle in (
        (pairwise_config({}, only=True, verifier=critic), "leave pairwise.verifier out"),
        ({**pairwise_config({}, only=True), "nuisance": ["length"], "unconditioned": 2}, "nuisance needs them"),
        ({**pairwise_config({}, only=True), "unconditioned": 2}, "unconditioned needs them"),
        ({**pairwise_config({}, only=True), "consistency": {"repeats": 2}}, "consistency needs them"),
    ):
        config.write_text(yaml.safe_dump(bad))
        one_line_exit_2(invoke("audit", config, "--out", tmp_path / "run"), "pairwise.only", needle)
    judged = pairwise_config({}, only=True)
    judged["verifier"] = {**judged["verifier"], "judge": {"template": "{{ response }} {{ criterion.label }}"}}
    config.write_text(yaml.safe_dump(judged))
    one_line_exit_2(invoke("audit", config, "--out", tmp_path / "run"), "verifier.judge needs them")
    grid = {k: v for k, v in pairwise_config({}, only=True).items() if k not in ("generator", "verifier")}
    grid |= {"generators": [critic], "verifiers": [{"engine": "testing", "model": "v1"}]}
    config.write_text(yaml.safe_dump(grid))
    one_line_exit_2(invoke("grid", config, "--out", tmp_path / "g"), "pairwise.only audits one judge")


def test_a_criterion_named_overall_beside_pairwise_is_one_line(tmp_path):
    """Issue 60 item 19: a criterion whose id is `overall` (the id of the pairwise overall question) raised an
    IndexError after every verdict was stored; it is refused before any model loads."""
    import yaml

    from tests.conftest import invoke, one_line_exit_2

    criteria = [
        {"id": "overall", "label": "Overall", "description": "How good the reply is overall."},
        {"id": "tone", "label": "Tone", "description": "How polite the reply is."},
    ]
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump({"id": "r", "name": "R", "criteria": criteria}))
    config = {**pairwise_config({}), "rubric": str(tmp_path / "rubric.yaml")}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    one_line_exit_2(invoke("audit", tmp_path / "c.yaml", "--out", tmp_path / "run"), "id 'overall'", "rename")
    assert not (tmp_path / "run").exists()
