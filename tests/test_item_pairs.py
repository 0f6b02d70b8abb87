"""A pairwise judge of a per-prompt rubric (issues 46 + 63): each item's steered pairs asked about every item of its
prompt in both orders; the one-sided sign-flip law, the statistics on known verdicts, and a planted audit end to
end (a blind item, a pitfall read as a quality, a redundant pair and a position bias, each found)."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import numpy as np
import pytest

from radar_local.auditing import run_audit
from radar_local.report.build import write_report
from radar_local.rubric import Item
from radar_local.rundir import load_run
from radar_local.stats.item_pairs import item_pairs
from radar_local.stats.pairwise import DOWN_FIRST, UP_FIRST, A, B, PairVerdicts
from radar_local.stats.pairwise_audit import PairwiseAudit
from radar_local.stats.permutation import p_sign_flip
from tests.conftest import invoke, write_config
from tests.test_per_prompt import good_and_confused_grid, per_prompt_config

PAIR = {"Task 2 item 1": {"Task 2 item 2": 0.9}, "Task 2 item 2": {"Task 2 item 1": 0.9}}  # a redundant pair


@pytest.mark.parametrize("side", ["upper", "lower"])
def test_the_one_sided_sign_flip_law_is_counted_exactly(side):
    values = [Fraction(1, 2), Fraction(1), Fraction(-1, 2), Fraction(1), Fraction(0), Fraction(1, 2)]
    flips = list(itertools.product((1, -1), repeat=len(values)))
    sums = [sum(s * v for s, v in zip(f, values)) for f in flips]
    at = sum(values)
    brute = sum(s >= at for s in sums) if side == "upper" else sum(s <= at for s in sums)
    assert p_sign_flip(values, side=side) == Fraction(brute, len(flips))


ITEMS = [
    Item(id="a", label="Cites a source", description="Cites a source", task="t", points=2),
    Item(id="b", label="Gives a dose", description="Gives a dose", task="t", points=-5),  # a pitfall
]


def verdicts(choose, n: int = 6, asked: tuple[str, ...] = ("a", "b")) -> PairVerdicts:
    """Every pair (steered on a or b, variant v) asked about each item in `asked` in both orders; `choose(source,
    asked, order, variant)` gives the slot chosen."""
    ids = ("a", "b")
    rows = [
        (s, q, v, o, choose(ids[s], ids[q], o, v))
        for s in range(2)
        for v in range(n)
        for q in (ids.index(x) for x in asked)
        for o in (UP_FIRST, DOWN_FIRST)
    ]
    col = [np.array([r[k] for r in rows]) for k in range(5)]
    return PairVerdicts(ids, np.zeros(len(rows), int), col[0], col[2], col[1], col[3], col[4])


def up(order: int) -> int:
    """The slot the up-steered response is shown in."""
    return A if order == UP_FIRST else B


def down(order: int) -> int:
    return B if order == UP_FIRST else A


def test_the_better_response_on_a_pitfall_is_the_one_that_avoids_it():
    # a judge that reads both items: prefers the up response on a, the down one (the pitfall avoided) on b
    reads = verdicts(lambda s, q, o, v: (up if q == "a" else down)(o) if s == q else A)
    out = item_pairs(reads, ["t"], ITEMS)
    assert [(r.id, r.self_effect, r.reads, r.sign_error) for r in out.items] == [
        ("a", 1.0, True, None),
        ("b", 1.0, True, None),
    ]

    # one that prefers the response committing the pitfall reads b as a quality: a sign error, p = 2^-N; above
    # Holm's first bound over 2 items at a quarter of 5% (0.00625) at N = 6, so only screened; below it at N = 8
    def backwards(n: int) -> PairVerdicts:
        return verdicts(lambda s, q, o, v: up(o) if s == q else A, n=n)

    row = item_pairs(backwards(6), ["t"], ITEMS).items[1]
    assert (row.self_effect, row.p_reversed, row.sign_error) == (-1.0, 2**-6, "screened")
    assert item_pairs(backwards(8), ["t"], ITEMS).items[1].sign_error == "confirmed"
    assert item_pairs(backwards(6), ["t"], ITEMS).sign_error_rate == 1.0  # every pitfall verdict on the wrong side


def test_a_sign_error_at_holm_s_bound_exactly_is_confirmed():
    # level 0.9375: a quarter of its error over 2 items is 2^-7, the p-value of 7 pairs all on the wrong side
    at = item_pairs(verdicts(lambda s, q, o, v: up(o), n=7), ["t"], ITEMS, level=0.9375).items[1]
    assert at.p_reversed == 2**-7 and at.sign_error == "confirmed"
    above = item_pairs(verdicts(lambda s, q, o, v: up(o), n=6), ["t"], ITEMS, level=0.9375).items[1]
    assert above.sign_error == "screened"


def test_a_pair_that_moves_together_both_ways_is_tested_on_both_leakages_flipped_together():
    # steered on either item, the judge prefers the better response on the other item too, in 5 of 6 pairs
    def choose(s, q, o, v):
        better = up if s == "a" else down  # the better response on the steered item
        return better(o) if s == q or v < 5 else (down if s == "a" else up)(o)

    out = item_pairs(verdicts(choose), ["t"], ITEMS)
    (pair,) = out.pairs
    values = [Fraction(1, 6)] * 5 + [Fraction(-1, 6)] + [Fraction(1, 6)] * 5 + [Fraction(-1, 6)]
    brute = sum(sum(s * x for s, x in zip(f, values)) >= sum(values) for f in itertools.product((1, -1), repeat=12))
    assert (pair.a, pair.b, pair.leak_ab, pair.leak_ba) == ("a", "b", pytest.approx(4 / 6), pytest.approx(4 / 6))
    assert pair.p == pytest.approx(brute / 2**12) and out.pairs_tested == 1


def test_a_judge_that_always_answers_a_has_a_position_bias_and_reads_nothing():
    out = item_pairs(verdicts(lambda s, q, o, v: A), ["t"], ITEMS)
    assert out.position.bias == 0.5 and out.position.confirmed and out.position.flip_rate == 1.0
    assert out.unread == ["a", "b"] and not out.pairs and all(r.self_effect == 0 for r in out.items)


def test_asked_only_about_the_steered_item_there_is_no_pair_to_test():
    out = item_pairs(verdicts(lambda s, q, o, v: up(o), asked=("a",)), ["t"], ITEMS[:1])
    assert out.pairs_tested == 0 and out.items[0].self_effect == 1.0 and "pairs" not in out.reach


# ---- a planted audit, end to end ----


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("item_pairs")
    config = per_prompt_config(
        folder, n=12, blind=["Task 0 item 0"], backwards=["Task 1 item 4"], coupling=PAIR, position=0.1
    )
    config["pairwise"] = {"preset": "generic", "overall": True}
    result = run_audit(config, folder / "run")
    write_report(load_run(folder / "run"))
    return result, folder / "run"


def test_a_planted_pairwise_judge_s_blind_item_sign_error_pair_and_position_are_found(planted):
    result, run = planted
    p = result.measurements["item_pairs"]
    assert p.unread == ["q0_1", "q1_5"] and p.prompts == 3 and len(p.items) == 15
    assert [(r.id, r.sign_error) for r in p.items if r.sign_error] == [("q1_5", "confirmed")]  # the pitfall, -3
    assert [(x.a, x.b, x.evidence) for x in p.pairs] == [("q2_2", "q2_3", "confirmed")]
    assert p.position.confirmed and p.position.bias > 0
    assert all(r.overall is not None for r in p.items)
    assert "pairwise" not in result.measurements  # no shared criterion: no shared pairwise block
    # each item's 12 pairs asked about its own task's 5 items and overall, in both orders; none about another task's
    assert p.verdicts == 3 * 5 * 12 * (5 + 1) * 2


def test_its_stats_json_reads_back_and_its_report_shows_the_items(planted):
    result, run = planted
    stats = json.loads((run / "stats.json").read_text())
    assert stats["measurements"]["item_pairs"]["unread"] == ["q0_1", "q1_5"]
    assert load_run(run).result().to_json() == result.to_json()
    report = (run / "report" / "report.md").read_text()
    assert "## Pairwise judge: per-prompt rubric" in report and "a position bias, confirmed" in report
    assert "| q1_5 | ` q1 ` | ` Task 1 item 4 ` | -3 | 12 | -1.00 |" in report


def test_a_shared_criterion_beside_the_items_keeps_its_own_pairwise_block(tmp_path):
    import yaml

    from tests.test_per_prompt import MET

    config = per_prompt_config(tmp_path, n=2)
    config["pairwise"] = {"preset": "generic", "asked": "diagonal"}
    shared = {**MET, "criteria": [{"id": "safe", "label": "Safety", "description": "Whether the reply is safe."}]}
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump(shared))
    result = run_audit(config, tmp_path / "run")
    assert result.measurements["pairwise"].criteria[0].criterion == "safe"
    assert len(result.measurements["item_pairs"].items) == 15


def test_plan_counts_the_pairwise_calls_of_a_per_prompt_design(tmp_path):
    config = per_prompt_config(tmp_path, n=5) | {"pairwise": {"preset": "generic"}}
    res = invoke("audit", write_config(tmp_path, config), "--plan")
    assert res.exit_code == 0, res.output
    # 15 items x 5 pairs, each asked about its task's 5 items in both orders
    assert "Pairwise: 75 pairs x 5 questions x 2 orders = 750 more calls" in res.output


def test_thousands_of_values_are_drawn_not_counted():
    from radar_local.stats import permutation

    same = [Fraction(3)] * 3000  # every flip's sum below the observed one but the observed signs'
    assert permutation.p_sign_flip(same, side="upper") == Fraction(1, permutation.DRAWS + 1)
    mixed = [
        Fraction(k % 7 - 3) for k in range(7 * 428)
    ]  # symmetric about 0: the observed sum is 0, every flip reaches
    assert permutation.p_sign_flip(mixed) == 1


def test_a_grid_sets_its_pairwise_judges_side_by_side_on_the_same_items(tmp_path):
    grid = good_and_confused_grid(per_prompt_config(tmp_path, n=11) | {"pairwise": {"preset": "generic"}})
    res = invoke("grid", write_config(tmp_path, grid, "grid.yaml"), "--out", tmp_path / "grid", "--no-report")
    assert res.exit_code == 0, res.output
    rows = {r["verifier"]: r for r in json.loads((tmp_path / "grid" / "grid.json").read_text())["per_prompt"]}
    assert rows["good"]["pairwise"]["sign_errors"] == [] and rows["confused"]["pairwise"]["sign_errors"] == ["q1_5"]
    page = (tmp_path / "grid" / "grid.md").read_text()
    assert "| ` confused ` | 15 | 1 | q1_5 | 0 | " in page and "| 1, q1_5, " in page


def test_compare_fails_when_the_pairwise_judge_prefers_the_response_that_commits_a_pitfall(tmp_path):
    good = per_prompt_config(tmp_path, n=11) | {"pairwise": {"preset": "generic", "asked": "diagonal"}}
    run_audit(good, tmp_path / "good")
    own = {"engine": "testing", "model": "planted", "name": "critic", "options": {"backwards": ["Task 1 item 4"]}}
    confused = good | {"pairwise": {**good["pairwise"], "verifier": own}}  # its own model; the pointwise judge reads
    run_audit(confused, tmp_path / "confused")
    res = invoke("compare", tmp_path / "good", tmp_path / "confused", "--fail-on-sign-errors")
    assert res.exit_code == 1, res.output
    assert "policy: item q1_5 of task q1: the pairwise judge prefers the response worse on it" in res.stderr
    assert "is read backwards" not in res.stderr  # the pointwise judge is the same good one
    assert invoke("compare", tmp_path / "confused", tmp_path / "confused", "--fail-on-sign-errors").exit_code == 0


# ---- a judge asked only pairs (pairwise.only) of a per-prompt rubric ----


def only_pairs(folder, n: int, **options) -> dict:
    config = per_prompt_config(folder, n=n, **options) | {"pairwise": {"preset": "generic", "only": True}}
    config["verifier"].pop("judge")  # radar's own prompt: a judge asked only pairs has no pointwise template
    return config


def test_a_judge_asked_only_pairs_is_audited_on_the_items_alone(tmp_path):
    config = only_pairs(tmp_path, 12, backwards=["Task 1 item 4"], coupling=PAIR)
    result = run_audit(config, tmp_path / "run")
    assert isinstance(result, PairwiseAudit) and result.pairwise is None
    p = result.item_pairs
    assert [(r.id, r.sign_error) for r in p.items if r.sign_error] == [("q1_5", "confirmed")]
    assert [(x.a, x.b, x.evidence) for x in p.pairs] == [("q2_2", "q2_3", "confirmed")]
    run = load_run(tmp_path / "run")
    assert len(run.store.scores) == p.verdicts == 3 * 5 * 12 * 5 * 2  # only pairs: no pointwise verdict asked
    assert run.stats() == result  # stats.json reads back
    folder = write_report(run)
    report = (folder / "report.md").read_text()
    assert (
        "# RADAR pairwise audit" in report and "exact tests within each prompt" in (folder / "report.html").read_text()
    )
    findings = report.split("## Findings")[1].split("##")[0]
    assert "Sign errors: 1 item(s) on which it prefers the worse response (1 confirmed" in findings
    assert "## Pairwise judge: per-prompt rubric" in report
    assert "| q1_5 | ` q1 ` | ` Task 1 item 4 ` | -3 | 12 |" in report
    plan = invoke("audit", write_config(tmp_path, config), "--plan")
    assert "the judge is asked only pairs, no pointwise verdict" in plan.output
    assert "Pairwise: 180 pairs x 5 questions x 2 orders = 1800 calls" in plan.output


def test_compare_reads_the_sign_errors_of_judges_asked_only_pairs(tmp_path):
    run_audit(only_pairs(tmp_path, 12), tmp_path / "good")
    run_audit(only_pairs(tmp_path, 12, backwards=["Task 1 item 4"]), tmp_path / "confused")
    res = invoke("compare", tmp_path / "good", tmp_path / "confused", "--fail-on-sign-errors")
    assert res.exit_code == 1, res.output
    assert "item q1_5 of task q1: the pairwise judge prefers the response worse on it" in res.stderr
    assert invoke("compare", tmp_path / "confused", tmp_path / "good", "--fail-on-sign-errors").exit_code == 0
    run_audit(only_pairs(tmp_path, 4), tmp_path / "small")  # 2^-4 cannot meet Holm's bound over 15 items
    assert invoke("compare", tmp_path / "good", tmp_path / "small", "--fail-on-sign-errors").exit_code == 3
