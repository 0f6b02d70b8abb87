"""Per-prompt rubrics (issue 63): each task's own items steered present and absent, every item of the task graded on
every probe; the exact permutation tests, the per-prompt statistics on known inputs, a planted audit end to end, and
bad input."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import fisher_exact, permutation_test

from radar_local import formats
from radar_local.auditing import run_audit
from radar_local.pitfalls import sign_lints
from radar_local.report.build import write_report
from radar_local.rubric import Item, with_items
from radar_local.rundir import load_run
from radar_local.stats.per_prompt import CONFIRMED, per_prompt
from radar_local.stats.permutation import Split, holm, p_lower, p_sum_upper, p_upper
from tests.conftest import invoke, one_line_exit_2, planted_config, write_config

MET = {"id": "per_prompt", "name": "Per-prompt items", "scale": {"levels": {"true": 1, "false": 0}}}


# ---- the exact permutation tests ----


def test_five_met_against_none_is_one_relabelling_in_252():
    s = Split.of(np.ones(5), np.zeros(5), 1)
    assert p_upper(s) == Fraction(1, 252) and p_lower(s) == 1 and s.difference() == 1


@given(st.integers(0, 6), st.integers(0, 6), st.integers(1, 6), st.integers(1, 6))
def test_on_met_or_not_it_is_fishers_exact_test(a, b, n_up, n_down):
    a, b = min(a, n_up), min(b, n_down)
    s = Split.of(np.r_[np.ones(a), np.zeros(n_up - a)], np.r_[np.ones(b), np.zeros(n_down - b)], 1)
    table = [[a, n_up - a], [b, n_down - b]]
    assert float(p_upper(s)) == pytest.approx(fisher_exact(table, alternative="greater").pvalue, rel=1e-9)
    assert float(p_lower(s)) == pytest.approx(fisher_exact(table, alternative="less").pvalue, rel=1e-9)


def brute_upper(up: list[float], down: list[float]) -> Fraction:
    """Every relabelling, one by one, compared in exact arithmetic."""
    values = [Fraction(v) for v in up + down]
    observed = sum(values[: len(up)]) / len(up) - sum(values[len(up) :]) / len(down)
    hits = total = 0
    for pick in itertools.combinations(range(len(values)), len(up)):
        rest = [i for i in range(len(values)) if i not in pick]
        d = sum(values[i] for i in pick) / len(up) - sum(values[i] for i in rest) / len(down)
        hits += d >= observed
        total += 1
    return Fraction(hits, total)


def test_scores_that_are_not_integers_are_enumerated_exactly():
    up, down = [0.25, 0.9, 0.8], [0.1, 0.25, 0.5, 0.8]  # exact binary fractions: held without rounding
    assert p_upper(Split.of(np.array(up), np.array(down), 2**20)) == brute_upper(up, down)


def test_a_likert_item_is_counted_by_subset_sums_as_by_enumeration():
    up, down = [4, 3, 3, 2, 4, 1], [0, 2, 1, 3, 1, 0]
    assert p_upper(Split.of(np.array(up, float), np.array(down, float), 1)) == brute_upper(up, down)


def test_an_unscored_verdict_leaves_its_probe_out_of_that_test():
    s = Split.of(np.array([1, 1, np.nan]), np.array([0, np.nan, 0]), 1)
    assert (s.up, s.down) == (2, 2) and p_upper(s) == Fraction(1, 6)
    assert p_upper(Split.of(np.array([np.nan]), np.array([0.0]), 1)) == 1  # a side with no score: no test


def test_too_many_relabellings_are_drawn_and_the_p_value_stays_valid():
    up, down = np.linspace(0.01, 0.99, 12), np.linspace(0.0, 0.5, 12)  # 24 choose 12 > ENUMERATE, not integers
    p = p_upper(Split.of(up, down, 2**20))
    assert p.denominator <= 20_001 and p >= Fraction(1, 20_001)  # (1 + hits) / (1 + draws): never 0
    reference = permutation_test(
        (up, down), lambda x, y: x.mean() - y.mean(), alternative="greater", n_resamples=20_000, rng=1
    ).pvalue
    assert abs(float(p) - reference) < 0.005  # both draw the same law


def test_two_leakages_are_tested_on_their_joint_law():
    a = Split.of(np.array([1, 1, 0.0]), np.array([0, 0, 1.0]), 1)
    b = Split.of(np.array([1, 1.0]), np.array([0, 0.0]), 1)
    # brute force: every relabelling of each, independently; the sum of their differences reaches the observed
    la = [(Fraction(sum(p), 3) - Fraction(3 - sum(p), 3)) for p in itertools.combinations([1, 1, 0, 0, 0, 1], 3)]
    lb = [(Fraction(sum(p), 2) - Fraction(2 - sum(p), 2)) for p in itertools.combinations([1, 1, 0, 0], 2)]
    observed = a.difference() + b.difference()
    expected = Fraction(sum(x + z >= observed for x in la for z in lb), len(la) * len(lb))
    assert p_sum_upper(a, 1, b, 1) == expected


def test_the_sign_flip_law_is_counted_exactly_and_drawn_beyond():
    from radar_local.stats import permutation

    values = [Fraction(1, 5), Fraction(2, 5), Fraction(-1, 5), Fraction(3, 5), Fraction(1, 10)]
    flips = itertools.product((1, -1), repeat=len(values))
    brute = sum(abs(sum(s * v for s, v in zip(f, values))) >= abs(sum(values)) for f in flips)
    assert permutation.p_sign_flip(values) == Fraction(brute, 2 ** len(values))
    assert permutation.p_sign_flip([Fraction(k, 7919) for k in range(1, 40)]) == Fraction(2, 2**39)  # few sums
    powers = [Fraction(2**k, 3**5) for k in range(25)]  # every partial sum distinct: 2^25 > FLIP_STATES, so drawn
    assert permutation.p_sign_flip(powers) == Fraction(1, permutation.DRAWS + 1)  # only the observed signs reach it


def test_holm_rejects_at_its_bound_exactly():
    p = {"a": Fraction(1, 40), "b": Fraction(1, 20)}  # 0.05 / 2, then 0.05 / 1: both rejected at the boundary
    assert holm(p, 0.95) == {"a", "b"}
    assert holm({"a": Fraction(1, 40) + Fraction(1, 10**12), "b": Fraction(1, 20)}, 0.95) == set()


# ---- the statistics on known inputs ----


def items_of(task: str, k: int, pitfalls: int = 0) -> list[Item]:
    return [
        Item(
            id=f"{task}_{j}",
            label=f"{task} {j}",
            description=f"{task} item {j}",
            task=task,
            points=-2.0 if j >= k - pitfalls else 1.0,
            tags=(f"axis:{j % 2}",),
        )
        for j in range(k)
    ]


def verdicts(items: list[Item], n: int, met, rng) -> pd.DataFrame:
    """Each item steered + and - n times, every item graded: met(i, j, sign) is P(j met | i steered sign)."""
    rows = []
    for i, a in enumerate(items):
        for d, sign in (("+", 1), ("-", -1)):
            for v in range(n):
                rows += [(a.task, a.id, d, v, b.id, float(rng.random() < met(i, j, sign))) for j, b in enumerate(items)]
    return pd.DataFrame(rows, columns=["task_id", "target", "direction", "variant", "criterion", "score"])


def test_a_blind_item_a_reversed_pitfall_and_a_redundant_pair_are_each_found(rng):
    items = items_of("t", 6, pitfalls=2)

    def met(i, j, sign):
        if i == j:
            return 0.5 if i == 0 else (0.0 if sign > 0 else 1.0) if i == 5 else (1.0 if sign > 0 else 0.0)
        if {i, j} == {1, 2}:
            return 1.0 if sign > 0 else 0.0
        return 0.5

    out = per_prompt(verdicts(items, 6, met, rng), items, dict.fromkeys([i.id for i in items], 1.0))
    assert out.unread == ["t_0", "t_5"]  # blind, and read backwards (its self-effect is -1)
    signs = {r.id: r.sign_error for r in out.items}
    assert signs["t_5"] == CONFIRMED and [k for k, v in signs.items() if v] == ["t_5"]
    assert [(p.a, p.b, p.evidence) for p in out.pairs] == [("t_1", "t_2", CONFIRMED)]
    assert out.pairs[0].leak_ab == out.pairs[0].leak_ba == 1.0 and out.pairs_tested == 15
    assert out.sign_error_rate == pytest.approx((0.0 + 1.0) / 2)  # one pitfall read right, one backwards


def test_with_nothing_planted_nothing_is_confirmed(rng):
    items = [it for t in ("a", "b", "c") for it in items_of(t, 5, pitfalls=1)]
    out = per_prompt(
        verdicts(items, 5, lambda i, j, s: (0.9 if s > 0 else 0.1) if i == j else 0.5, rng),
        items,
        dict.fromkeys([i.id for i in items], 1.0),
    )
    assert not out.unread and not any(r.sign_error for r in out.items)
    assert not [p for p in out.pairs if p.evidence == CONFIRMED] and out.prompts == 3
    assert (
        list(out.tags) == ["axis"] and out.tags["axis"].tags == ["axis:0", "axis:1"] and not out.tags["axis"].confirmed
    )


def test_the_double_counting_share_is_the_leaked_move_over_the_whole():
    """Two items of one point each, read perfectly; steering a moves b by 1/2: a's move is 1/2 own... exactly."""
    items = items_of("t", 2)
    rows = []
    for target, other_up in (("t_0", [1, 0]), ("t_1", [0, 0])):  # steering t_0 + meets t_1 once in two
        for v in range(2):
            rows += [("t", target, "+", v, target, 1.0), ("t", target, "-", v, target, 0.0)]
            other = "t_1" if target == "t_0" else "t_0"
            rows += [("t", target, "+", v, other, float(other_up[v])), ("t", target, "-", v, other, 0.0)]
    table = pd.DataFrame(rows, columns=["task_id", "target", "direction", "variant", "criterion", "score"])
    out = per_prompt(table, items, {"t_0": 1.0, "t_1": 1.0})
    moves = {r.id: (r.own, r.leaked) for r in out.items}
    assert moves == {"t_0": (0.5, 0.25), "t_1": (0.5, 0.0)}  # over the task's 2 positive points
    assert out.double_count_by_prompt == {"t": pytest.approx(0.25 / 1.25)}


# ---- a planted audit, end to end ----


def per_prompt_config(tmp_path, n: int = 6, **options) -> dict:
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump(MET))
    tasks = [
        {
            "id": f"q{t}",
            "prompt": f"Question {t}?",
            "items": [
                {"text": f"Task {t} item {k}", "points": -3 if k == 4 else 2, "tags": [f"axis:{k % 2}"]}
                for k in range(5)
            ],
        }
        for t in range(3)
    ]
    opts = {"noise": 0.3, **options}
    return planted_config(
        rubric=str(tmp_path / "rubric.yaml"),
        tasks=tasks,
        generator={"engine": "testing", "model": "planted", "options": opts},
        verifier={"engine": "testing", "model": "planted", "options": opts, "judge": {"preset": "healthbench"}},
        n=n,
    )


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("per_prompt")
    pair = {"Task 2 item 1": {"Task 2 item 2": 0.9}, "Task 2 item 2": {"Task 2 item 1": 0.9}}
    config = per_prompt_config(folder, blind=["Task 0 item 0"], backwards=["Task 1 item 4"], coupling=pair)
    result = run_audit(config, folder / "run")
    write_report(load_run(folder / "run"))
    return result, folder / "run"


def test_a_planted_judge_s_blind_item_sign_error_and_redundant_pair_are_found(planted):
    result, run = planted
    p = result.per_prompt
    assert result.criteria == [] and p is not None and p.prompts == 3 and len(p.items) == 15
    assert p.unread == ["q0_1", "q1_5"]  # ids: the task's id and the item's place
    assert [r.id for r in p.items if r.sign_error == CONFIRMED] == ["q1_5"]
    assert [(x.a, x.b, x.evidence) for x in p.pairs] == [("q2_2", "q2_3", CONFIRMED)]
    assert p.reach["sign_errors"].confirmable and p.reach["pairs"].confirmable  # 1/924 <= (5% / 3) / 15 items
    probes = load_run(run).store.probes
    assert len(probes) == 3 * 5 * 2 * 6  # every item of every task, both ways, n each: no shared criterion
    verdict_count = len(load_run(run).store.scores)
    assert verdict_count == len(probes) * 5  # each probe graded on its own task's 5 items, one call each


def test_its_stats_json_reads_back_and_its_report_shows_the_items(planted):
    result, run = planted
    stats = json.loads((run / "stats.json").read_text())
    assert stats["criteria"] == [] and stats["per_prompt"]["unread"] == ["q0_1", "q1_5"]
    assert load_run(run).result().to_json() == result.to_json()
    report = (run / "report" / "report.md").read_text()
    assert "## Per-prompt rubric" in report and "1 confirmed, Holm over the 15 items" in report
    assert "` q2_2: Task 2 item 1 `" in report  # a pair shows both items' text, as untrusted text
    assert "## Self-effects" not in report and "No pair crosses" not in report


def test_a_shared_rubric_beside_the_items_is_audited_for_its_coupling_too(tmp_path):
    pair = {"Task 1 item 0": {"Safety": 0.9}, "Safety": {"Task 1 item 0": 0.9}}  # an item and a shared criterion
    config = per_prompt_config(tmp_path, n=6, coupling=pair)
    shared = {**MET, "criteria": [{"id": "safe", "label": "Safety", "description": "Whether the reply is safe."}]}
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump(shared))
    result = run_audit(config, tmp_path / "run")
    assert result.criteria == ["safe"] and bool(result.reliable["safe"])
    p = result.per_prompt
    assert p is not None and len(p.items) == 15 and p.pairs_tested == 3 * (10 + 5)  # item pairs, item x shared
    assert [(x.a, x.b, x.b_text, x.evidence) for x in p.pairs] == [
        ("q1_1", "safe", "Whether the reply is safe.", CONFIRMED)
    ]
    table = pd.read_csv(tmp_path / "run" / "scores.csv")
    scored = set(zip(table["task_id"], table["criterion"]))
    assert ("q0", "safe") in scored and ("q0", "q1_1") not in scored and ("q1", "q1_1") in scored


def test_a_generator_shown_the_rubric_sees_every_criterion_of_its_task_and_no_other(tmp_path):
    """generation.shows: rubric gives the generator the steered item among its task's items and the shared
    criteria, the others to be left as they are; the default keeps the paper's prompt and every probe's key."""
    from radar_local.config import AuditConfig
    from radar_local.plan import Plan
    from radar_local.resolved import resolve_inputs

    config = per_prompt_config(tmp_path, n=1)
    shared = {**MET, "criteria": [{"id": "safe", "label": "Safety", "description": "Whether the reply is safe."}]}
    (tmp_path / "rubric.yaml").write_text(yaml.safe_dump(shared))

    def requests(**generation):
        cfg = AuditConfig.model_validate({**config, "generation": generation})
        rubric, tasks, _ = resolve_inputs(cfg)
        return {(r.task.id, r.target, r.direction): r for r in Plan(cfg, rubric, tasks).generation_requests()}

    alone, default, shown = requests(shows="target"), requests(), requests(shows="rubric")
    assert {k: r.key for k, r in alone.items()} == {k: r.key for k, r in default.items()}
    assert all(shown[k].key != alone[k].key for k in alone)  # another prompt: other probes, never mixed
    user = shown[("q1", "q1_2", "+")].messages[-1]["content"]
    assert all(f"- Task 1 item {k}\n" in user for k in range(5)) and "- Safety: Whether the reply is safe.\n" in user
    assert "Task 0 item" not in user and "Leave every other criterion of the rubric as it would be" in user
    assert "Task 1 item 0" not in alone[("q1", "q1_2", "+")].messages[-1]["content"]  # alone: the item only


def test_an_item_worded_against_its_sign_is_a_lint_in_the_report_never_a_finding(tmp_path):
    config = per_prompt_config(tmp_path, n=2)
    config["tasks"][0]["items"][0]["text"] = "Fails to cite a source for the dose"  # 2 points: reads as a fault
    result = run_audit(config, tmp_path / "run")
    assert [w for w in result.warnings if w.startswith("lint:")] == [
        "lint: item 'q0_1' of task 'q0' has 2 points and reads as a fault ('Fails to cite a source for ...'): "
        "an item of positive points is met when the response does what it says; check its sign"
    ]
    write_report(load_run(tmp_path / "run"))
    assert "Warning: lint: item 'q0_1'" in (tmp_path / "run" / "report" / "report.md").read_text()
    assert result.per_prompt is not None and not [r for r in result.per_prompt.items if r.sign_error]


@pytest.mark.parametrize(
    ("text", "points", "reads"),
    [
        ("Correctly advises a follow-up visit within a week.", -5, "a quality"),
        ("The response accurately states the dose.", -2, "a quality"),
        ("Fails to mention the interaction with warfarin.", 5, "a fault"),
        ("Essential Criteria: Does not recommend antibiotics.", 3, "a fault"),  # RaR's lead-in
        ("Gives medically unsafe advice, such as stopping insulin.", 4, "a fault"),
        ("Fails to mention the interaction with warfarin.", -5, None),
        ("Correctly advises a follow-up visit.", 5, None),
        ("Includes essential safety guidance on when harmful symptoms need care.", 7, None),
        ("Advises patient not to attend scheduled postpartum appointments.", -10, None),  # neither: no lint
    ],
)
def test_the_sign_lint_reads_the_items_opening_words(text, points, reads):
    item = Item(id="i", label=text, description=text, task="t", points=points)
    found = sign_lints([item])
    assert (found[0].split("reads as ")[1].split(" (")[0] if found else None) == reads


def test_no_item_of_healthbench_s_real_rows_is_linted():
    imported = formats.read("healthbench", HEALTHBENCH)
    items = with_items(imported.rubric, imported.tasks).items
    assert len(items) == 36 and sign_lints(items) == []
    assert not [line for line in imported.account if line.startswith("lint:")]


# ---- bad input: one line, exit 2 ----


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda t: t[0]["items"][0].update(text=""), "text"),
        (lambda t: t[0]["items"][0].update(points="many"), "points"),
        (lambda t: [i.update(id="same") for i in t[0]["items"][:2]], "task 'q0' has two items with id 'same'"),
        (lambda t: t[0].update(items=[{"text": f"item {k}"} for k in range(65)]), "at most 64 a task"),
        (lambda t: [x.update(items=[]) for x in t], "the rubric has no criteria and no task has items"),
    ],
)
def test_a_bad_item_is_one_line(tmp_path, change, needle):
    config = per_prompt_config(tmp_path, n=2)
    change(config["tasks"])
    one_line_exit_2(invoke("audit", write_config(tmp_path, config), "--out", tmp_path / "run"), needle)


def test_a_first_wave_too_small_to_open_a_sign_error_is_one_line(tmp_path):
    config = per_prompt_config(tmp_path, n=2) | {"adaptive": {"start_n": 3, "max_n": 6}}
    res = invoke("audit", write_config(tmp_path, config), "--out", tmp_path / "run")
    one_line_exit_2(res, "adaptive.start_n 3", "1/20 times its 15 hypotheses", "start_n >= 4 can")  # 15/70 <= 1/2


# ---- HealthBench's own rows (tests/data/formats/healthbench/SOURCES.md) ----

HEALTHBENCH = Path(__file__).parent / "data" / "formats" / "healthbench" / "healthbench_rows.jsonl"


def test_real_healthbench_rows_import_as_tasks_with_their_own_items():
    imported = formats.read("healthbench", HEALTHBENCH)
    assert [len(t.items) for t in imported.tasks] == [19, 2, 11, 4]
    assert sum(i.points < 0 for t in imported.tasks for i in t.items) == 12
    first = imported.tasks[0].items[3]
    assert (
        first.points == -10 and first.text.startswith("Advises patient not to attend") and "axis:accuracy" in first.tags
    )
    assert imported.tasks[3].prompt.startswith("user: ") and "\n\nassistant: " in imported.tasks[3].prompt  # 7 turns
    assert imported.judge is not None and imported.judge.preset == "healthbench" and imported.rubric.scale.boolean
    assert imported.rubric.criteria == () and "12 of them pitfalls" in imported.account[0]


def test_imported_healthbench_rows_audit_end_to_end_on_the_planted_engine(tmp_path):
    out = tmp_path / "hb"
    res = invoke("import", "healthbench", HEALTHBENCH, "--out", out, "--engine", "testing", "--generator", "planted",
                 "--verifier", "planted")  # fmt: skip
    assert res.exit_code == 0, res.output
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["n"] == 10  # an item's findings need N = 10 or more (an import without items asks 4)
    config["tasks"] = config["tasks"][1:3]  # a conversation of 2 items and one of 11, 4 of them pitfalls
    config["n"] = 2
    write_config(out, config, "config.yaml")
    res = invoke("audit", out / "config.yaml")
    assert res.exit_code == 0, res.output
    stats = json.loads((out / "run" / "stats.json").read_text())
    assert stats["per_prompt"]["prompts"] == 2 and len(stats["per_prompt"]["items"]) == 13
    assert set(stats["per_prompt"]["tags"]) == {"axis"}  # cluster:* and level:example sit in one prompt each


def test_items_edited_after_an_audit_export_back_into_the_healthbench_file(tmp_path):
    """The loop a team runs on its per-prompt rubric: import, audit, edit the items the audit named (in the import's
    config), export: that conversation's rubric is the edited items, every other line byte for byte, and the file
    imports again as the edited items; an unedited config writes the file as it was."""
    out = tmp_path / "hb"
    assert invoke("import", "healthbench", HEALTHBENCH, "--out", out, "--engine", "testing").exit_code == 0
    config = yaml.safe_load((out / "config.yaml").read_text())
    res = invoke("export", "healthbench", HEALTHBENCH, out / "config.yaml", "--out", tmp_path / "same.jsonl")
    assert res.exit_code == 0 and "kept: 4 conversations as they were" in res.output, res.output
    assert (tmp_path / "same.jsonl").read_bytes() == HEALTHBENCH.read_bytes()
    items = config["tasks"][0]["items"]
    first, dropped, pitfall = items[0], items[1], next(i for i in items if i["points"] < 0)
    first["text"], pitfall["points"] = "Advises the patient to see a mental health provider.", -5
    items.remove(dropped)
    items.append({"text": "Mentions sleep.", "points": 2, "tags": ["axis:completeness"]})
    edited = write_config(tmp_path, config, "edited.yaml")
    res = invoke("export", "healthbench", HEALTHBENCH, edited, "--out", tmp_path / "edited.jsonl")
    assert res.exit_code == 0, res.output
    task = config["tasks"][0]["id"]
    said = f"{task}: rewritten {first['id']}, {pitfall['id']}; added 'Mentions sleep.'; dropped {dropped['id']}"
    assert said in res.output and "kept: 3 conversations as they were" in res.output
    before, after = HEALTHBENCH.read_text().splitlines(), (tmp_path / "edited.jsonl").read_text().splitlines()
    assert after[1:] == before[1:] and after[0] != before[0]
    again = formats.read("healthbench", tmp_path / "edited.jsonl").tasks[0]
    assert [(i.text, i.points, list(i.tags)) for i in again.items] == [
        (i["text"], i["points"], i.get("tags", [])) for i in items
    ]


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda c: c["tasks"][0].update(id="elsewhere"), "has no conversation 'elsewhere'"),
        (lambda c: c.update(tasks="helpsteer2"), "names no tasks with items"),
        (lambda c: c["tasks"][0]["items"][0].update(scale={"min": 0, "max": 4}), "not graded met / not met"),
    ],
)
def test_an_export_of_items_the_file_cannot_hold_is_one_line(tmp_path, edit, needle):
    out = tmp_path / "hb"
    assert invoke("import", "healthbench", HEALTHBENCH, "--out", out, "--engine", "testing").exit_code == 0
    config = yaml.safe_load((out / "config.yaml").read_text())
    edit(config)
    edited = write_config(tmp_path, config, "edited.yaml")
    one_line_exit_2(invoke("export", "healthbench", HEALTHBENCH, edited, "--out", tmp_path / "x.jsonl"), needle)
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("not json", "line 1 is not JSON"),
        ('{"prompt": [{"role": "user", "content": "hi"}], "rubrics": []}', "line 1: no `rubrics` list"),
        ('{"prompt": "hi", "rubrics": [{"criterion": "x", "points": 1}]}', "`prompt` is not a list"),
        ('{"prompt": [{"role": "user", "content": "hi"}], "rubrics": [{"points": 1}]}', "is not {criterion, points"),
    ],
)
def test_a_bad_healthbench_line_is_one_line(tmp_path, line, needle):
    source = tmp_path / "hb.jsonl"
    source.write_text(line + "\n")
    one_line_exit_2(invoke("import", "healthbench", source, "--out", tmp_path / "out"), needle)


@pytest.mark.thorough  # 720 probes and 10,040 verdicts on the planted engine: about 15 s
def test_the_worked_example_finds_what_docs_per_prompt_md_says(tmp_path):
    """docs/per-prompt.md's table is what configs/per-prompt-example.yaml writes."""
    repo = Path(__file__).resolve().parents[1]
    result = run_audit(repo / "configs" / "per-prompt-example.yaml", tmp_path / "run")
    p = result.per_prompt
    assert p is not None and p.prompts == 4 and len(p.items) == 36
    assert (
        len(load_run(tmp_path / "run").store.probes) == 720 and len(load_run(tmp_path / "run").store.scores) == 10_040
    )
    doc = (repo / "docs" / "per-prompt.md").read_text()
    rows = {r.id: r for r in p.items}
    assert p.unread == ["t1f548d5b_3", "t1f548d5b_4"]
    for item in p.unread:
        assert f"| {item} " in doc and f"self-effect {rows[item].self_effect:+.2f}" in doc
    (sign,) = [r for r in p.items if r.sign_error]
    assert sign.id == "t1f548d5b_4" and sign.sign_error == CONFIRMED and f"p = {sign.p_reversed:.2g}" in doc
    assert {(x.a, x.b, x.evidence) for x in p.pairs} == {
        ("t1f548d5b_5", "t1f548d5b_10", CONFIRMED),
        ("t1f548d5b_18", "t1f548d5b_19", CONFIRMED),
    }
    planted = next(x for x in p.pairs if x.a == "t1f548d5b_5")
    assert f"p = {planted.p:.2g}, Holm over {p.pairs_tested} pairs" in doc
    assert f"Holm over {len(p.items)} items" in doc


def test_plan_of_a_per_prompt_design_counts_its_calls_and_names_the_n_it_needs(tmp_path):
    config = per_prompt_config(tmp_path, n=5)
    res = invoke("audit", write_config(tmp_path, config), "--plan")
    assert res.exit_code == 0, res.output
    # 3 tasks of 5 items: 15 items x 2 x 5 = 150 probes; each graded on its task's 5 items: 750 calls
    assert "3 tasks, 15 items of their own (5-5 a task)" in res.output and "150 probes" in res.output
    assert "750 verifier calls (one an item" in res.output
    assert "Holm over the 15 items at a third of the audit's 5% error) with probability" in res.output
    assert "Holm over the 30 item pairs, a third of the error" in res.output
    assert "Expected wall time: unknown before a pilot" in res.output  # the planted engine has no reference pace
    config["out"] = str(tmp_path / "pilot")
    assert invoke("audit", write_config(tmp_path, config)).exit_code == 0
    res = invoke("audit", write_config(tmp_path, config), "--plan")
    assert f"(the pace of {tmp_path / 'pilot'} (its run.json))" in res.output, res.output


def test_the_power_of_a_sign_error_is_exact_and_grows_with_n():
    from radar_local.stats.per_prompt_power import sign_error_power, smallest_n

    # N = 5, one item: a perfectly reversed judge (wrong = 1) gives p = 1/252 <= 0.05 every time
    assert sign_error_power(5, 1, wrong=1.0) == pytest.approx(1.0)
    assert sign_error_power(5, 100, wrong=1.0) == 0.0  # 1/252 > 0.05/100: no N = 5 audit of 100 items confirms it
    assert sign_error_power(10, 36) < sign_error_power(20, 36)
    n = smallest_n(lambda m: sign_error_power(m, 36))
    assert n is not None and sign_error_power(n, 36) >= 0.8 > sign_error_power(n - 1, 36)


def test_compare_fails_when_a_judge_upgrade_reads_a_pitfall_backwards(tmp_path, finished_run):
    good = run_audit(per_prompt_config(tmp_path), tmp_path / "good")
    assert not any(r.sign_error for r in good.per_prompt.items)
    confused = per_prompt_config(tmp_path, backwards=["Task 1 item 4"])
    run_audit(confused, tmp_path / "confused")
    res = invoke("compare", tmp_path / "good", tmp_path / "confused", "--fail-on-sign-errors")
    assert res.exit_code == 1 and "policy: item q1_5 of task q1 is read backwards" in res.stderr, res.output
    assert invoke("compare", tmp_path / "confused", tmp_path / "confused", "--fail-on-sign-errors").exit_code == 0
    res = invoke("compare", finished_run, finished_run, "--fail-on-sign-errors")
    one_line_exit_2(res, "audited no per-prompt rubric")


def test_a_design_that_cannot_confirm_a_sign_error_says_so_and_leaves_the_policy_open(tmp_path):
    run_audit(per_prompt_config(tmp_path, n=2, backwards=["Task 1 item 4"]), tmp_path / "small")
    stats = json.loads((tmp_path / "small" / "stats.json").read_text())["per_prompt"]
    reach = stats["reach"]["sign_errors"]
    assert (reach["floor"], reach["tests"], reach["confirmable"]) == (pytest.approx(1 / 6), 15, False)
    write_report(load_run(tmp_path / "small"))
    report = (tmp_path / "small" / "report" / "report.md").read_text()
    assert "At this design no sign error can be confirmed: the smallest p-value its probes can give (0.17" in report
    res = invoke("compare", tmp_path / "small", tmp_path / "small", "--fail-on-sign-errors")
    assert res.exit_code == 3 and "open: no sign error can be confirmed at this design" in res.stderr, res.output


def test_reach_compares_the_floor_with_holms_first_bound_exactly():
    from radar_local.stats.per_prompt import each_kind, reach_of

    bound = (1 - Fraction(repr(each_kind(0.95)))) / 36
    assert reach_of([bound, Fraction(1)], 36, 0.95).confirmable
    assert not reach_of([bound + Fraction(1, 10**40)], 36, 0.95).confirmable
    assert reach_of([], 36, 0.95) is None


def good_and_confused_grid(config: dict) -> dict:
    """A grid of `config`'s generator and two of its verifiers: a good one, and one reading Task 1's pitfall
    backwards."""
    spec = config["verifier"]
    return {
        **{k: v for k, v in config.items() if k not in ("generator", "verifier")},
        "generators": [{**config["generator"], "name": "gen"}],
        "verifiers": [
            {**spec, "name": "good"},
            {**spec, "name": "confused", "options": {**spec["options"], "backwards": ["Task 1 item 4"]}},
        ],
        "exclude_self_pairs": False,
    }


def test_a_grid_sets_its_judges_side_by_side_on_the_same_items(tmp_path):
    grid = good_and_confused_grid(per_prompt_config(tmp_path, n=6))
    res = invoke("grid", write_config(tmp_path, grid, "grid.yaml"), "--out", tmp_path / "grid", "--no-report")
    assert res.exit_code == 0, res.output
    rows = {r["verifier"]: r for r in json.loads((tmp_path / "grid" / "grid.json").read_text())["per_prompt"]}
    assert rows["good"]["sign_errors"] == [] and rows["confused"]["sign_errors"] == ["q1_5"]
    assert rows["good"]["items"] == rows["confused"]["items"] == 15
    page = (tmp_path / "grid" / "grid.md").read_text()
    assert "## Per-prompt rubric per cell" in page and "| ` confused ` | 15 | 1 | q1_5 |" in page


def test_radar_stats_on_a_rubric_without_criteria_is_one_line_naming_it(tmp_path):
    path = tmp_path / "items-only.yaml"
    path.write_text(yaml.safe_dump(MET))  # no criteria: a per-prompt rubric's items are its tasks'
    example = Path(__file__).resolve().parents[1] / "radar_local" / "benchmarks" / "example_helpsteer2.csv"
    one_line_exit_2(invoke("stats", example, "--rubric", path), path, "has no criteria to audit a score table on")
