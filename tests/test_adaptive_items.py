"""Adaptive audits of per-prompt rubrics (radar_local/adaptive.py, stats/per_prompt.py): waves grow whole prompts
while their own findings are open, each exact test counts the looks, the pooled findings read the first wave."""

from __future__ import annotations

import json
import math
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from radar_local.adaptive import first_wave_problem, grow, grown, prompt_decisions
from radar_local.auditing import run_audit
from radar_local.config import Adaptive
from radar_local.report.build import write_report
from radar_local.rubric import Criterion, Item, Rubric
from radar_local.rundir import SCORES, load_run
from radar_local.stats.decisions import Decision
from radar_local.stats.per_prompt import CONFIRMED, PAIR, PROMPT_SCREEN, SIGN_ERROR, per_prompt, unsettled
from tests.conftest import invoke, one_line_exit_2, write_config
from tests.test_per_prompt import per_prompt_config

WAVES = {"start_n": 4, "step": 3, "max_n": 10}  # N = 4, 7, 10: three looks
PAIR_PLANT = {"Task 2 item 1": {"Task 2 item 2": 0.9}, "Task 2 item 2": {"Task 2 item 1": 0.9}}


def adaptive_config(folder, **waves) -> dict:
    config = per_prompt_config(folder, blind=["Task 0 item 0"], backwards=["Task 1 item 4"], coupling=PAIR_PLANT)
    config.pop("n")
    return config | {"adaptive": {**WAVES, **waves}}


@pytest.fixture(scope="module")
def waved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("adaptive_items")
    result = run_audit(adaptive_config(folder), folder / "run")
    return result, folder


def test_only_the_prompts_with_open_findings_grow_and_their_findings_are_confirmed(waved):
    result, folder = waved
    p, record = result.per_prompt, result.adaptive
    assert p.looks == 3 and p.pooled_below == 4 and p.unsettled == []
    # wave 1 (N = 4): task 1's pitfall read backwards and task 2's pair open; task 0 (a blind item) has nothing open
    first = record.waves[0]
    assert [(d.kind, d.criteria, d.sources) for d in first.open] == [
        (SIGN_ERROR, ["q1_5"], ["q1"]),
        (PAIR, ["q2_2", "q2_3"], ["q2"]),
    ]
    assert first.grow == ["q1", "q2"] and first.probes == 3 * 5 * 2 * 4
    sizes = json.loads((folder / "run" / "adaptive.json").read_text())["sizes"]
    assert {k.split("\t")[0]: n for k, n in sizes.items()} == {"q0": 4, "q1": 7, "q2": 7}  # one N a prompt
    assert [(d.kind, d.criteria) for d in record.settled] == [(SIGN_ERROR, ["q1_5"]), (PAIR, ["q2_2", "q2_3"])]
    assert record.stopped_by == "settled" and record.probes == 5 * 2 * (4 + 7 + 7)
    assert record.verifier_calls == record.probes * 5  # each probe graded on its task's 5 items
    sign = next(r for r in p.items if r.id == "q1_5")
    # every verdict on the wrong side at N = 7: 1 / C(14, 7), times the three looks
    assert sign.sign_error == CONFIRMED and sign.probes == [7, 7] and sign.p_reversed == 3 / math.comb(14, 7)
    assert [(x.a, x.b, x.evidence) for x in p.pairs] == [("q2_2", "q2_3", CONFIRMED)]
    assert p.unread == ["q0_1", "q1_5"]


def test_the_report_says_what_grew(waved):
    _, folder = waved
    report = (write_report(load_run(folder / "run")) / "report.md").read_text()
    assert "Adaptive audit: 2 waves from 4 to at most 10 probes per (task, item, direction), 180 probes (60% of" in (
        report
    )
    assert "its tests over 3 looks: 2 settled, 0 open" in report and "| 1 | 120 | 600 | 2 | q1, q2 |" in report


@pytest.mark.thorough  # a second adaptive audit, resumed from half the first's verdicts
def test_a_resumed_run_replays_its_waves(waved, tmp_path):
    result, folder = waved
    shutil.copytree(folder / "run", tmp_path / "run")
    scores = (tmp_path / "run" / SCORES).read_text().splitlines(keepends=True)
    (tmp_path / "run" / SCORES).write_text("".join(scores[: len(scores) // 2]))
    (tmp_path / "run" / "adaptive.json").unlink()
    again = run_audit(adaptive_config(folder), tmp_path / "run")
    assert again.per_prompt == result.per_prompt
    assert again.adaptive.verifier_calls == len(scores) - len(scores) // 2


def test_each_test_counts_the_looks_and_confirms_at_holm_s_bound_exactly():
    """One item of one prompt, every verdict on the wrong side: p = 1 / C(2n, n) times the looks, against Holm's
    bound (5% / 3) / 1 item. At n = 4 (1/70): 2 looks give 2/70 > 1/60 (not confirmed); at n = 5 (1/252) 4 looks
    give 4/252 <= 1/60, and 5 looks 5/252 > 1/60."""
    items = [Item(id="a", label="a", description="a", task="t", points=1.0)]

    def table(n: int) -> pd.DataFrame:
        rows = [("t", "a", d, v, "a", float(d == "-")) for d in "+-" for v in range(n)]
        return pd.DataFrame(rows, columns=["task_id", "target", "direction", "variant", "criterion", "score"])

    def evidence(n: int, looks: int) -> tuple[float, str | None]:
        row = per_prompt(table(n), items, {"a": 1.0}, looks=looks).items[0]
        return row.p_reversed, row.sign_error

    assert evidence(4, 1) == (1 / 70, CONFIRMED) and evidence(4, 2)[1] != CONFIRMED
    assert evidence(5, 4) == (4 / 252, CONFIRMED)
    assert evidence(5, 5)[1] != CONFIRMED
    assert per_prompt(table(1), items, {"a": 1.0}, looks=3).items[0].p_reversed == 1.0  # 3 x 1/2, capped


def test_the_pooled_findings_read_the_first_wave_only():
    """The pooled pitfall rate, the double counting and the tag matrix of an audit with `first` are those of its
    first wave's variants; the items' own rows read every variant."""
    rng = np.random.default_rng(3)
    items = [
        Item(id=f"{t}_{k}", label="x", description="x", task=t, points=-1.0 if k == 2 else 1.0, tags=(f"axis:{k}",))
        for t in ("p", "q", "r")
        for k in range(3)
    ]
    rows = [
        (it.task, it.id, d, v, other.id, float(rng.random() < (0.9 if (d == "+") == (it is other) else 0.3)))
        for it in items
        for other in items
        if other.task == it.task
        for d in "+-"
        for v in range(8)
    ]
    table = pd.DataFrame(rows, columns=["task_id", "target", "direction", "variant", "criterion", "score"])
    spans = dict.fromkeys([i.id for i in items], 1.0)
    whole, waved = per_prompt(table, items, spans), per_prompt(table, items, spans, first=3)
    first = per_prompt(table[table["variant"] < 3], items, spans)
    pooled = ("sign_error_rate", "double_count", "double_count_by_prompt", "tags")
    assert all(getattr(waved, f) == getattr(first, f) for f in pooled)
    assert any(getattr(waved, f) != getattr(whole, f) for f in pooled)
    assert [r.self_effect for r in waved.items] == [r.self_effect for r in whole.items]


def test_a_prompt_grows_while_its_own_family_passes_a_hypothesis_at_the_screen_exactly():
    """A prompt of two items: three hypotheses (two sign errors, one pair). p x 3 <= the screen keeps it open, to the
    fraction; a confirmed one never does; one the audit screens does whatever its p."""
    its = [Item(id=i, label=i, description=i, task="t", points=1.0) for i in ("a", "b")]
    pair_key = ("t", "a", "b")
    edge = PROMPT_SCREEN / 3

    def following(sign_a: Fraction, evidence: dict) -> list[tuple[str, list[str]]]:
        signs = ({"a": sign_a, "b": Fraction(1)}, evidence)
        pairs = ({pair_key: Fraction(1)}, {})
        return [(u.kind, u.items) for u in unsettled({"t": its}, signs, pairs, {pair_key: ("t", *its)})]

    assert following(edge, {}) == [(SIGN_ERROR, ["a"])]
    assert following(edge + Fraction(1, 10**9), {}) == []
    assert following(edge, {"a": CONFIRMED}) == []
    assert following(Fraction(1, 2), {"a": "screened"}) == [(SIGN_ERROR, ["a"])]


def test_a_prompt_s_open_finding_grows_its_every_stratum_and_a_shared_one_every_prompt():
    sizes = {(t, c, d): 4 for t in ("p", "q") for c in (f"{t}_1", "helpful") for d in "+-"} | {("p", "", "none"): 3}
    item_open = [Decision(SIGN_ERROR, ("p_1",), None, ("p",))]
    assert grown(sizes, item_open, True) == {"p"}
    after = grow(sizes, {"p"}, 3, 10, True)
    assert {s: n for s, n in after.items() if n != sizes[s]} == {
        ("p", c, d): 7 for c in ("p_1", "helpful") for d in "+-"
    }
    shared_open = [Decision("gate", ("helpful",), None, ("helpful",))]
    assert grown(sizes, shared_open, True) == {"p", "q"} and grown(sizes, shared_open, False) == {"helpful"}
    assert prompt_decisions(None) == []


def test_the_first_wave_must_be_able_to_open_a_sign_error_exactly():
    """A prompt of 7 items beside 14 shared criteria tests 7 + 21 + 98 = 126 hypotheses; at start_n = 5 its smallest
    p-value is 1/252, and 126/252 is the screen 1/2 exactly: it opens. At start_n = 4 (126/70) it cannot."""
    assert PROMPT_SCREEN == Fraction(1, 2)
    shared = tuple(Criterion(id=f"c{i}", label="c", description="c") for i in range(14))
    items = tuple(Item(id=f"t_{k}", label="i", description="i", task="t", points=1.0) for k in range(7))
    rubric = Rubric(id="r", name="r", criteria=shared + items)
    assert first_wave_problem(Adaptive(start_n=5, max_n=8), rubric) is None
    why = first_wave_problem(Adaptive(start_n=4, max_n=8), rubric)
    assert why is not None and "1/70 times its 126 hypotheses" in why and why.endswith("start_n >= 5 can")
    assert first_wave_problem(Adaptive(start_n=4, max_n=4), rubric).endswith("no start_n up to max_n 4 can; raise both")


def test_a_pairwise_judge_of_items_is_asked_the_pairs_the_waves_chose(tmp_path):
    """Its pairs are asked once the waves stop: each item's pairs are its prompt's N, each test counts the looks
    (q1's pitfall read backwards at every one of its 7 pairs: 2^-7 times 3), its pooled findings the first wave."""
    config = adaptive_config(tmp_path) | {"pairwise": {"preset": "generic", "asked": "diagonal"}}
    p = run_audit(config, tmp_path / "run").measurements["item_pairs"]
    assert p.looks == 3 and p.pooled_below == 4
    assert {r.task: r.pairs for r in p.items} == {"q0": 4, "q1": 7, "q2": 7}
    assert next(r for r in p.items if r.id == "q1_5").p_reversed == 3 / 2**7
    assert p.verdicts == 5 * 2 * (4 + 7 + 7)  # each pair asked about its steered item, in both orders


def test_a_budget_counts_each_task_s_items(tmp_path):
    first = 3 * 5 * 2 * 4 * 5  # 3 tasks x 5 items x 2 directions x start_n, each probe graded on its 5 items
    res = invoke("audit", write_config(tmp_path, adaptive_config(tmp_path, budget=first - 1)), "--out", tmp_path / "r")
    one_line_exit_2(res, f"adaptive.budget {first - 1} is below the first wave's {first} verifier calls")


def test_plan_counts_the_first_wave_and_the_looks(tmp_path):
    res = invoke("audit", write_config(tmp_path, adaptive_config(tmp_path)), "--plan")
    assert res.exit_code == 0, res.output
    assert f"the first wave at N = 4 makes {3 * 5 * 2 * 4 * 5} verifier calls" in res.output
    assert "its tests count its 3 looks" in res.output and "at most 300 probes" in res.output
    assert "Holm over the 15 items and its 3 looks" in res.output


@pytest.mark.thorough  # the worked example in waves: 546 probes, 8,190 verdicts on the planted engine, about 4 s
def test_the_worked_example_in_waves_finds_what_docs_per_prompt_md_says(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    config = yaml.safe_load((repo / "configs" / "per-prompt-example.yaml").read_text())
    config = {k: v for k, v in config.items() if k not in ("n", "out")} | {"adaptive": {"start_n": 6, "step": 3,
                                                                                        "max_n": 15}}  # fmt: skip
    result = run_audit(config, tmp_path / "run", base=repo / "configs")
    p, record = result.per_prompt, result.adaptive
    assert p.unread == ["t1f548d5b_3", "t1f548d5b_4"]
    (sign,) = [r for r in p.items if r.sign_error]
    assert sign.id == "t1f548d5b_4" and sign.sign_error == CONFIRMED and sign.probes == [9, 9]
    assert {(x.a, x.b, x.evidence) for x in p.pairs} == {
        ("t1f548d5b_5", "t1f548d5b_10", CONFIRMED),
        ("t1f548d5b_18", "t1f548d5b_19", CONFIRMED),
    }
    assert len(record.waves) == 2 and len(record.waves[0].grow) == 1  # the first conversation alone grows
    doc = (repo / "docs" / "per-prompt.md").read_text()
    assert f"{record.probes} probes and {record.verifier_calls:,} verdicts" in doc
    assert f"p = {sign.p_reversed:.2g}" in doc
