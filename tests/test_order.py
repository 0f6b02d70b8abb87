"""`order: balanced` and `radar order` (issue 47): a joint judge's criteria shown in a Latin square over each
stratum's variants, and the score a criterion gets when shown first against when shown later, on the planted
engine (its `first` option adds points to whatever criterion a joint call shows first)."""

import json
from collections import Counter

import pytest
import yaml

from radar_local.auditing import run_audit
from radar_local.rundir import load_run
from radar_local.stats.order import OrderEffects
from tests.conftest import REPO, invoke, one_line_exit_2, planted_config

TASKS = [{"id": f"t{i}", "prompt": f"Customer request number {i}: reply to it."} for i in range(4)]


def joint_run(root, first: float, order: str = "balanced"):
    spec = {"engine": "testing", "model": "planted", "options": {"noise": 0.5, "first": first}}
    verifier = {**spec, "judge": {"calls": "joint", "order": order}}
    run_audit(planted_config(verifier=verifier, tasks=TASKS, n=5, bootstrap=0), root, base=REPO)
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("order")
    return {first: joint_run(base / f"first-{first}", first) for first in (0.0, 1.0)}


def test_a_balanced_order_shows_each_criterion_at_each_place_equally_often(runs):
    run = load_run(runs[0.0])
    verdicts = run.verdicts(run.probes())
    places = Counter((v.criterion, v.position) for _, v in verdicts)
    assert set(places.values()) == {4 * 5 * 2}  # 5 criteria x 5 places, each (criterion, place) in every stratum once


@pytest.mark.parametrize(("first", "flagged"), [(0.0, set()), (1.0, {"helpfulness", "correctness", "coherence",
                                                                    "complexity", "verbosity"})])  # fmt: skip
def test_radar_order_finds_a_planted_first_place_bonus_and_nothing_without_one(runs, tmp_path, first, flagged):
    out = tmp_path / "order.json"
    result = invoke("order", runs[first], "--verifier", "planted", "--json", out)
    assert result.exit_code == 0, result.output
    effects = json.loads(out.read_text())["effects"]
    assert {e["criterion"] for e in effects if e["flag"]} == flagged
    if first:  # a point of 0-4 is 0.25 on the 0-1 footing, less what rounding and clipping take
        assert all(0.1 < e["effect"] < 0.3 for e in effects), effects
        assert "one call is not order-safe" in result.output
    else:
        assert "no criterion's score moves with its place" in result.output


def test_order_refusals_are_one_line(runs, tmp_path):
    one_line_exit_2(invoke("order", runs[0.0], "--verifier", "nobody"), "no verifier 'nobody'")
    per = tmp_path / "per.yaml"
    config = planted_config(verifier={"engine": "testing", "model": "p", "judge": {"order": "balanced"}})
    per.write_text(yaml.safe_dump(config))
    one_line_exit_2(
        invoke("audit", per, "--out", tmp_path / "r"), "order: balanced orders the criteria of a joint call"
    )


def test_a_joint_audit_in_a_varied_order_carries_its_order_effects(runs, tmp_path):
    """The audit of a joint judge whose order varies holds the same effects `radar order` reads (stats.json's
    `order` block) and says them in its report's consistency section."""
    from radar_local.report.markdown import audit_markdown

    result = load_run(runs[1.0]).result()
    out = tmp_path / "order.json"
    assert invoke("order", runs[1.0], "--verifier", "planted", "--json", out).exit_code == 0
    assert result.measured(OrderEffects) is not None and result.measured(OrderEffects).model_dump(
        mode="json"
    ) == json.loads(out.read_text())
    report = audit_markdown(result)
    assert "Consistency: criterion order" in report and "one call is not order-safe" in report


def test_a_criterion_that_primes_another_shown_after_it_is_named(tmp_path):
    """Order leakage: the planted judge adds a point to correctness whenever helpfulness is shown before it. A
    shuffled order (a rotation of the rubric's order ties the pairs together: in it, whether helpfulness and
    whether verbosity come before correctness move together)."""
    from radar_local.audited import order_of

    spec = {
        "engine": "testing",
        "model": "planted",
        "options": {"noise": 1.0, "primed": {"Helpfulness / Understanding": {"Correctness / Completeness": 1.0}}},
    }
    verifier = {**spec, "judge": {"calls": "joint", "order": "shuffled"}}
    run_audit(planted_config(verifier=verifier, tasks=TASKS, n=5, bootstrap=0), tmp_path / "run", base=REPO)
    run = load_run(tmp_path / "run")
    effects = order_of(run, "planted", run.probes(), run.verdicts(run.probes(), {"planted"}))
    flagged = [(p.source, p.target) for p in effects.pairs if p.flag]
    assert flagged == [("helpfulness", "correctness")], effects.pairs
    primed = next(p for p in effects.pairs if p.flag)
    assert 0.1 < primed.effect < 0.3  # a point of 0-4 on the 0-1 footing, less what rounding and clipping take
    assert len(effects.pairs) == 5 * 4
    # correctness shown first is never primed: the priming may show as its position effect, and as no other's
    assert {e.criterion for e in effects.effects if e.flag} <= {"correctness"}


def test_order_that_compared_no_stratum_says_so():
    """Issue 60 item 20: `radar order` on verdicts where no stratum showed a criterion both first and later said
    "no criterion's score moves with its place" after comparing nothing."""
    from radar_local.report.order_text import order_line
    from radar_local.stats.order import OrderEffects, PositionEffect

    none = {"verdicts": 10, "strata": 0, "by_position": [], "effect": None, "ci": None, "band": None, "flag": False}
    o = OrderEffects(verifier="v", probes=10, level=0.95, effects=[PositionEffect(criterion="a", **none)], pairs=[])
    line = order_line(o)
    assert "nothing about order was compared" in line and "no criterion's score moves" not in line
