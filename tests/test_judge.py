"""The judge a team runs (issue 31): the rubric's scale, the verifier's template and answer shape, joint calls,
and the halo joint calls add, on the planted engine (which answers from the requests' fields, never the
wording, so any template serves)."""

import json
import re
from fractions import Fraction

import pytest
import yaml
from pydantic import ValidationError

from radar_local.answer import Answer, BareShape, GradeShape, JsonShape
from radar_local.auditing import run_audit
from radar_local.engines.testing import written
from radar_local.rundir import load_run
from radar_local.scale import LIKERT, Scale, range_scale
from radar_local.stats.halo import Halo
from tests.conftest import invoke, one_line_exit_2, planted_config

CRITERIA = [
    {"id": "clarity", "label": "Clarity", "description": "How clearly the reply is written."},
    {"id": "accuracy", "label": "Accuracy", "description": "Whether the reply's facts are right."},
    {"id": "empathy", "label": "Empathy", "description": "Whether the reply acknowledges the customer."},
]
JSON_TEMPLATE = (
    "Task: {{ prompt }}\nReply: {{ response }}\nCriterion: {{ criterion.label }}: {{ criterion.description }}\n"
    "Score it {{ scale.describe }}. Answer as JSON with `thinking` then `rating`."
)
GRADE_TEMPLATE = (
    "You are assessing a submitted answer.\n[Task]: {{ prompt }}\n[Submission]: {{ response }}\n"
    "[Criterion]: {{ criterion.description }}\n{% for level in scale.levels %}{{ level.name }} = {{ level.anchor }}\n"
    "{% endfor %}Reason in one line, then end with GRADE: C, P or I."
)
JOINT_TEMPLATE = (
    "Task: {{ prompt }}\nReply: {{ response }}\n{% for c in criteria %}- {{ c.id }}: {{ c.description }}\n{% endfor %}"
    "Score every criterion {{ scale.describe }}."
)


def rubric_file(tmp_path, scale=None, **per_criterion):
    criteria = [{**c, **({"scale": per_criterion[c["id"]]} if c["id"] in per_criterion else {})} for c in CRITERIA]
    rubric = {"id": "support", "name": "Support", "criteria": criteria, **({"scale": scale} if scale else {})}
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(rubric, sort_keys=False))
    return path


def config(tmp_path, judge=None, scale=None, options=None, **kw):
    cfg = planted_config(rubric=str(rubric_file(tmp_path, scale)), options=options or {}, **kw)
    if judge is not None:
        cfg["verifier"] = {**cfg["verifier"], "judge": judge}
    return cfg


COUPLED = {"coupling": {"Clarity": {"Accuracy": 1.0}}}


# ---- scales ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data,message",
    [
        ({"min": 3, "max": 3}, "at least two levels"),
        ({"levels": {"pass": 1}}, "at least two levels"),
        ({"levels": {"A": 1, "B": 1}}, "two levels have the value 1"),
        ({"min": 1}, "both 'min' and 'max'"),
        ({"min": 0, "max": 4, "anchors": {"5": "off"}}, "anchor '5' names no level"),
        ({"min": 0, "max": 1, "levels": {"a": 0, "b": 1}}, "not both"),
        ({"min": 0, "max": 500}, "at most 101"),
    ],
)
def test_a_scale_that_cannot_be_scored_on_is_refused(data, message):
    with pytest.raises(ValidationError, match=message):
        Scale.model_validate(data)


def test_scales_put_on_one_footing_exactly():
    ten, cpi = Scale(min=1, max=10), Scale(levels={"C": 1, "P": 0.5, "I": 0})
    assert (ten.span, ten.tokens[-1], ten.regex) == (Fraction(9), "10", "(?:10|1|2|3|4|5|6|7|8|9)")
    assert (cpi.span, cpi.name, cpi.value("P"), cpi.regex) == (Fraction(1), "C/P/I", 0.5, "(?:C|P|I)")
    assert LIKERT.regex == "[0-4]" and range_scale("1-5") == Scale(min=1, max=5)
    with pytest.raises(ValueError, match="integer range"):
        range_scale("good-bad")


# ---- answers: constraint, bound and parse agree ------------------------------------------------


SHAPES = [
    (JsonShape(before={"thinking": 20}, score="rating", after={}), Scale(min=1, max=10), False),
    (JsonShape(), Scale(levels={"C": 1, "P": 0.5, "I": 0}), False),
    (
        GradeShape(kind="grade", pattern=r"GRADE: ([CPI])", reasoning=30),
        Scale(levels={"C": 1, "P": 0.5, "I": 0}),
        False,
    ),
    (BareShape(kind="bare"), Scale(min=1, max=10), False),
    (JsonShape(), Scale(min=0, max=4), True),
    (BareShape(kind="bare"), Scale(levels={"pass": 1, "fail": 0}), True),
]


@pytest.mark.parametrize("shape,scale,joint", SHAPES)
def test_every_shape_is_bounded_and_reads_back_what_it_admits(shape, scale, joint):
    cids = ["a", "bb"] if joint else ["a"]
    answer = Answer(shape, tuple((c, scale) for c in cids), joint=joint)
    for level in scale.tokens:
        text = written(answer, dict.fromkeys(cids, level))
        assert re.fullmatch(answer.regex, text), text
        assert {c: p.score for c, p in answer.parse(text).items()} == dict.fromkeys(cids, scale.value(level))
    longest = written(answer, dict.fromkeys(cids, max(scale.tokens, key=len)))
    longest = longest.replace('"planted"', '"' + "x" * 4001 + '"')  # no JSON string may pass its bound
    assert not re.fullmatch(answer.regex, longest) or isinstance(shape, (BareShape, GradeShape))
    assert answer.max_tokens >= len(written(answer, dict.fromkeys(cids, max(scale.tokens, key=len))))
    assert answer.parse("nothing here") == {c: answer.parse("nothing here")[c] for c in cids}
    assert all(p.score is None for p in answer.parse("nothing here").values())


def test_the_default_answer_is_the_papers_constraint_unchanged():
    from radar_local.scoring import ScoreFormat

    fmt = ScoreFormat(max_reasoning_chars=12, max_rationale_chars=7)
    assert fmt.regex == (r'\{"reasoning": "[ !#-\[\]-~]{1,12}", "score": [0-4], "rationale": "[ !#-\[\]-~]{1,7}"\}')
    assert fmt.max_tokens == len('{"reasoning": "", "score": 0, "rationale": ""}') + 12 + 7


@pytest.mark.parametrize(
    "pattern,message",
    [
        (r"GRADE: [CPI]", "exactly one group"),
        (r"GRADE.*: ([CPI])", "must be literal text"),
        (r"(GRADE): ([CPI])", "exactly one group"),
    ],
)
def test_a_grade_pattern_radar_cannot_bound_is_refused(pattern, message):
    with pytest.raises(ValidationError, match=message):
        GradeShape(kind="grade", pattern=pattern)


# ---- audits on the planted engine --------------------------------------------------------------


def test_a_1_10_scale_and_a_custom_json_template_on_one_footing(tmp_path):
    """Planted: clarity moves accuracy fully. On 1-10 the planted judge answers the nearest level to the
    same share of the span: 10 / 1 on the steered criterion, 1 + 9 * 3/4 -> 8 and 1 + 9 / 4 -> 3 for
    accuracy, so self-effect (10 - 1) / 9 = 1 and leakage (8 - 3) / 9 = 5/9 on the 0-1 footing."""
    judge = {
        "template": JSON_TEMPLATE,
        "answer": {"kind": "json", "before": {"thinking": 40}, "score": "rating", "after": {}},
    }
    result = run_audit(
        config(tmp_path, judge, scale={"min": 1, "max": 10}, options={"coupling": {"Clarity": {"Accuracy": 0.5}}}),
        tmp_path / "run",
    )
    assert result.self_effect.to_dict() == {"clarity": 1.0, "accuracy": 1.0, "empathy": 1.0}
    assert result.leakage.loc["clarity", "accuracy"] == pytest.approx(5 / 9, abs=1e-12)
    assert result.leakage.loc["clarity", "empathy"] == 0.0
    assert result.scales.criteria == dict.fromkeys(("clarity", "accuracy", "empathy"), "1-10")
    run = load_run(tmp_path / "run")
    verdict = next(iter(run.store.scores.values()))
    assert json.loads(verdict.raw).keys() == {"thinking", "rating"} and verdict.reasoning == "planted"
    assert sorted({v.score for v in run.store.scores.values()}) == [1, 3, 5, 8, 10]  # 5: the unsteered middle
    info = run.info()
    assert info.stages["score"].parse_rate == 1.0 and info.stages["score"].call_mode == "per-criterion"
    # The same audit again is all stored: no call, the same statistics.
    again = run_audit(
        config(tmp_path, judge, scale={"min": 1, "max": 10}, options={"coupling": {"Clarity": {"Accuracy": 0.5}}}),
        tmp_path / "run",
    )
    assert load_run(tmp_path / "run").info().stages["score"].calls == 0 and again == result


def test_an_inspect_style_grade_template_on_named_levels(tmp_path):
    judge = {"template": GRADE_TEMPLATE, "answer": {"kind": "grade", "pattern": r"GRADE: ([CPI])", "reasoning": 60}}
    scale = {"levels": {"C": 1, "P": 0.5, "I": 0}, "anchors": {"C": "correct", "P": "partly", "I": "incorrect"}}
    result = run_audit(config(tmp_path, judge, scale=scale, options=COUPLED), tmp_path / "run")
    assert result.leakage.loc["clarity", "accuracy"] == 1.0 and result.leakage.loc["clarity", "empathy"] == 0.0
    run = load_run(tmp_path / "run")
    assert {v.raw.rsplit("GRADE: ", 1)[1] for v in run.store.scores.values()} == {"C", "P", "I"}
    assert {v.score for v in run.store.scores.values()} == {1, 0.5, 0}
    assert "C = correct" in run.plan.score_requests(run.probes()[:1], run.config.verifier)[0].messages[-1]["content"]


def test_a_criterion_may_keep_its_own_scale(tmp_path):
    (tmp_path / "r").mkdir()
    path = rubric_file(tmp_path / "r", accuracy={"levels": {"pass": 1, "fail": 0}})
    cfg = planted_config(rubric=str(path), options=COUPLED)
    result = run_audit(cfg, tmp_path / "run")
    assert result.scales.criteria == {"clarity": "0-4", "accuracy": "pass/fail", "empathy": "0-4"}
    assert result.leakage.loc["clarity", "accuracy"] == 1.0


def test_joint_calls_store_k_verdicts_per_call_in_a_recorded_order(tmp_path):
    judge = {"calls": "joint", "order": "shuffled"}
    cfg = config(tmp_path, judge, options=COUPLED)
    result = run_audit(cfg, tmp_path / "run")
    run = load_run(tmp_path / "run")
    verdicts = list(run.store.scores.values())
    calls: dict[str, list] = {}
    for v in verdicts:
        calls.setdefault(v.call, []).append(v)
    probes = run.probes()
    assert len(calls) == len(probes) and all(len(vs) == 3 for vs in calls.values())
    assert all(sorted(v.position for v in vs) == [0, 1, 2] for vs in calls.values())
    assert all(sum(v.raw is not None for v in vs) == 1 for vs in calls.values())  # the call's text once
    orders = {tuple(v.criterion for v in sorted(vs, key=lambda v: v.position)) for vs in calls.values()}
    assert len(orders) > 1  # a seeded order per probe
    stage = run.info().stages["score"]
    assert (stage.requests, stage.calls, stage.call_mode, stage.parse_rate) == (len(probes), len(probes), "joint", 1.0)
    assert result.leakage.loc["clarity", "accuracy"] == 1.0
    # resumed: nothing asked again; dropping a call's verdict re-asks that call only
    again = run_audit(cfg, tmp_path / "run")
    assert load_run(tmp_path / "run").info().stages["score"].calls == 0 and again == result


def test_the_joint_prompt_shows_every_criterion_in_the_recorded_order(tmp_path):
    cfg = config(
        tmp_path, {"calls": "joint", "order": "shuffled", "template": JOINT_TEMPLATE, "answer": {"kind": "bare"}}
    )
    run_audit(cfg, tmp_path / "run")
    run = load_run(tmp_path / "run")
    for req in run.plan.score_requests(run.probes(), run.config.verifier):
        text = req.messages[-1]["content"]
        assert [text.index(f"- {c}:") for c in req.criteria] == sorted(text.index(f"- {c}:") for c in req.criteria)
        stored = [run.store.scores[req.verdict_key(c)] for c in req.criteria]
        assert [v.position for v in stored] == [0, 1, 2] and [v.criterion for v in stored] == list(req.criteria)


def test_without_a_judge_nothing_changes_in_keys(tmp_path):
    """A rubric file that says `scale: {min: 0, max: 4}` is the default: the same keys as saying nothing."""
    plain = planted_config(rubric=str(rubric_file(tmp_path)))
    (tmp_path / "s").mkdir()
    said = planted_config(rubric=str(rubric_file(tmp_path / "s", scale={"min": 0, "max": 4})))
    run_audit(plain, tmp_path / "a")
    run_audit(said, tmp_path / "b")
    assert set(load_run(tmp_path / "a").store.scores) == set(load_run(tmp_path / "b").store.scores)


# ---- the halo --------------------------------------------------------------------------------


HALO_TASKS = [{"id": f"t{i}", "prompt": f"Customer question number {i}."} for i in range(6)]


def halo_audit(tmp_path, halo: float):
    options = {"noise": 0.5, "halo": halo, "coupling": {"Clarity": {"Accuracy": 0.5}}}  # 0.5 + h: not clipped
    cfg = config(tmp_path, {"calls": ["per-criterion", "joint"]}, options=options, tasks=HALO_TASKS, n=4, bootstrap=300)
    return run_audit(cfg, tmp_path / f"run{halo}")


def test_no_planted_halo_shows_no_halo_beyond_its_interval(tmp_path):
    result = halo_audit(tmp_path, 0.0)
    assert result.verifier == "planted-joint" and result.measured(Halo).per_criterion == "planted"
    assert [p.flag for p in result.measured(Halo).pairs] == [None] * 6
    low, high = result.measured(Halo).index_ci
    assert low <= 0 <= high
    assert (tmp_path / "run0.0" / "stats.json").is_file()  # the per-criterion audit, beside it


def test_a_planted_halo_is_flagged_and_its_value_is_inside_the_interval(tmp_path):
    """Halo h moves every other criterion by 2h Likert points with the steered one, under joint calls only:
    a joint leakage of h / (the source's self-effect) above the per-criterion one."""
    h = 0.25
    result = halo_audit(tmp_path, h)
    per = load_run(tmp_path / f"run{h}").result("planted")
    flags = {(p.source, p.target): p.flag for p in result.measured(Halo).pairs}
    assert set(flags.values()) == {"adds"}, flags
    planted = [h / per.self_effect[p.source] for p in result.measured(Halo).pairs]
    low, high = result.measured(Halo).index_ci
    assert low <= sum(planted) / len(planted) <= high
    inside = [p.ci[0] <= v <= p.ci[1] for p, v in zip(result.measured(Halo).pairs, planted)]
    assert sum(inside) >= 5, result.measured(Halo).pairs


def test_a_halo_check_scores_a_share_of_the_probes_per_criterion_and_reports_their_halo(tmp_path):
    """`calls: joint, halo_check: 0.5`: the joint verdicts are the audit's (their keys those of a plain joint
    audit), the first half of each stratum's probes is scored per criterion too, and the halo of the planted
    judge (0.25) is found on them."""
    options = {"noise": 0.5, "halo": 0.25, "coupling": {"Clarity": {"Accuracy": 0.5}}}
    checked = config(tmp_path, {"calls": "joint", "halo_check": 0.5}, options=options, tasks=HALO_TASKS, n=4)
    result = run_audit({**checked, "bootstrap": 300}, tmp_path / "checked")
    assert result.verifier == "planted" and result.measured(Halo).per_criterion == "planted-per-criterion"
    run = load_run(tmp_path / "checked")
    probes = run.store.probes.values()
    sampled = [p for p in probes if p.variant < 2]  # ceil(0.5 x 4) of each stratum
    assert result.measured(Halo).probes == len(sampled) < len(probes)
    per_criterion = [s for s in run.store.scores.values() if s.verifier == "planted-per-criterion"]
    assert len(per_criterion) == len(sampled) * len(result.criteria)
    flags = [p.flag for p in result.measured(Halo).pairs]
    assert flags.count("adds") >= 4 and "removes" not in flags and result.measured(Halo).index > 0.15, flags
    assert "halo check" in run.info().stages
    assert not (tmp_path / "checked" / "stats.planted-per-criterion.json").exists()  # the check has no audit of its own
    plain = config(tmp_path, {"calls": "joint"}, options=options, tasks=HALO_TASKS, n=4)
    run_audit({**plain, "bootstrap": 0}, tmp_path / "plain")
    joint = {k for k, s in run.store.scores.items() if s.verifier == "planted"}
    assert joint == set(load_run(tmp_path / "plain").store.scores)  # the check changes no joint verdict's key


@pytest.mark.parametrize(
    ("judge", "needle"),
    [
        ({"halo_check": 0.2}, "halo_check goes with calls: joint"),
        ({"calls": ["per-criterion", "joint"], "halo_check": 0.2}, "already scores every probe both ways"),
        ({"calls": "joint", "halo_check": 0}, "halo_check"),
        ({"calls": "joint", "halo_check": 1.5}, "halo_check"),
    ],
)
def test_a_halo_check_without_joint_calls_or_off_its_range_is_one_line(tmp_path, judge, needle):
    path = tmp_path / "audit.yaml"
    path.write_text(yaml.safe_dump(config(tmp_path, judge)))
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run", "--quiet"), needle)
    assert not (tmp_path / "run").exists()


# ---- bad input: one line, exit 2, nothing stored lost --------------------------------------------


@pytest.mark.parametrize(
    "judge,needle",
    [
        ({"template": "Rate {{ criterion.label }}."}, "never shows the response"),
        ({"template": "{{ response }} {{ criterion.label }} {{ verdict }}"}, "uses 'verdict'"),
        ({"template": "{{ response }} {{ criterion.label }} {{ ''.__class__.__mro__ }}"}, "does not render"),
        ({"template": "{{ response }} {% for %}"}, "does not parse"),
        ({"template": "{{ response }}"}, "never shows the criterion"),
        (
            {"template": "{{ response }} {{ criterion.id }}", "calls": "joint"},
            "needs the template to show {{ criteria }}",
        ),
        (
            {"template": "{{ response }} {{ criterion.id }}", "answer": {"kind": "grade", "pattern": "GRADE: ([XYZ])"}},
            "matches no level",
        ),
        (
            {"template": "{{ response }} {{ criterion.id }}", "answer": {"kind": "grade", "pattern": "GRADE: [CPI]"}},
            "exactly one group",
        ),
        ({"calls": "joint", "answer": {"kind": "bare"}}, "other shapes need a template"),
        ({"template_file": "missing.j2"}, "missing.j2"),
    ],
)
def test_a_judge_radar_cannot_run_is_one_line(tmp_path, judge, needle):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config(tmp_path, judge)))
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run", "--quiet"), needle)
    assert not (tmp_path / "run").exists()


def test_a_grade_pattern_needs_a_server_that_takes_a_regex(tmp_path):
    cfg = config(tmp_path, {"template": GRADE_TEMPLATE, "answer": {"kind": "grade", "pattern": "GRADE: ([CPI])"}})
    cfg["verifier"] = {**cfg["verifier"], "engine": "openai", "options": {"base_url": "http://127.0.0.1:9/v1"}}
    cfg["rubric"] = str(rubric_file(tmp_path, scale={"levels": {"C": 1, "P": 0.5, "I": 0}}))
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run", "--quiet"), "constraint: regex")


def test_a_changed_template_is_refused_on_resume(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config(tmp_path, {"template": JSON_TEMPLATE})))
    assert invoke("audit", path, "--out", tmp_path / "run", "--quiet", "--no-report").exit_code == 0
    stored = (tmp_path / "run" / "scores.jsonl").read_bytes()
    probes = (tmp_path / "run" / "probes.jsonl").read_bytes()
    path.write_text(yaml.safe_dump(config(tmp_path, {"template": JSON_TEMPLATE + " Be strict."}, n=3)))
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run", "--quiet"), "another judge")
    assert (tmp_path / "run" / "scores.jsonl").read_bytes() == stored  # refused before any model loads:
    assert (tmp_path / "run" / "probes.jsonl").read_bytes() == probes  # not one probe more at n = 3


def test_a_score_file_off_its_declared_scale_is_one_line(tmp_path):
    rows = [
        ("g", "v", "t", "clarity", d, "0", c, s)
        for d, s in (("+", 9), ("-", 1))
        for c in ("clarity", "accuracy", "empathy")
    ]
    path = tmp_path / "scores.csv"
    path.write_text(
        "generator,verifier,task_id,target,direction,variant,criterion,score\n"
        + "".join(",".join(map(str, r)) + "\n" for r in rows)
    )
    rubric = rubric_file(tmp_path, scale={"min": 1, "max": 5})
    one_line_exit_2(invoke("stats", path, "--rubric", rubric), "row 2", "off the 1-5 scale of criterion 'clarity'")
    one_line_exit_2(invoke("stats", path, "--scale", "best-worst"), "integer range")


def test_a_grid_measures_the_halo_between_a_judge_and_its_joint_twin(tmp_path):
    from radar_local.config import GridConfig
    from radar_local.grid import run_grid

    cfg = config(tmp_path, options={"noise": 0.5, "halo": 0.25}, tasks=HALO_TASKS, n=3, bootstrap=100)
    spec = cfg.pop("verifier")
    cfg.pop("generator")
    grid = GridConfig.model_validate(
        {
            **cfg,
            "generators": [{**spec, "name": "writer"}],
            "verifiers": [spec, {**spec, "name": "planted-joint", "judge": {"calls": "joint"}}],
            "exclude_self_pairs": False,
        }
    )
    summary = run_grid(grid, tmp_path / "grid", tmp_path, progress=False, reports=False)
    joint = load_run(tmp_path / "grid" / "writer").result("planted-joint")
    assert joint.measured(Halo).per_criterion == "planted" and joint.measured(Halo).index > 0.15
    assert load_run(tmp_path / "grid" / "writer").result("planted").measured(Halo) is None
    assert {c["verifier"] for c in summary["cells"]} == {"planted", "planted-joint"}


# ---- joint calls through the other workflows ---------------------------------------------------


def joint_calls(run) -> dict[str, list]:
    calls: dict[str, list] = {}
    for v in run.store.scores.values():
        calls.setdefault(v.call, []).append(v)
    return calls


def test_adaptive_waves_in_joint_mode(tmp_path):
    cfg = config(tmp_path, {"calls": "joint"}, options={"noise": 0.5, **COUPLED}, n=2, bootstrap=100)
    cfg["adaptive"] = {"start_n": 2, "max_n": 4, "step": 1}
    result = run_audit(cfg, tmp_path / "run")
    run = load_run(tmp_path / "run")
    calls = joint_calls(run)
    assert None not in calls and all(len(vs) == 3 for vs in calls.values())
    assert result.adaptive.stored()["waves"] and len(calls) == len(run.probes())


def test_nuisance_rewrites_are_scored_jointly_too(tmp_path):
    options = {"noise": 0.5, "bias": {"length": {"Clarity": 0.3}}}
    cfg = config(tmp_path, {"calls": "joint"}, options=options, unconditioned=4, nuisance=["length"], bootstrap=100)
    result = run_audit(cfg, tmp_path / "run")
    run = load_run(tmp_path / "run")
    rewrites = {p.key for p in run.store.probes.values() if p.direction in ("up", "down")}
    scored = {v.probe_key for v in run.store.scores.values() if v.call is not None}
    assert rewrites and rewrites <= scored
    row = next(r for r in result.bias_rows if (r.attribute, r.criterion) == ("length", "clarity"))
    assert row.sensitivity > 0.1


def test_repair_reaudits_a_joint_judge(tmp_path):
    from radar_local.repair import repair
    from tests.test_repair import REWRITE
    from tests.test_repair import config as repair_config

    path = repair_config(tmp_path, [REWRITE])
    data = yaml.safe_load(path.read_text())
    data["verifier"] = {**data["verifier"], "judge": {"calls": "joint"}}
    path.write_text(yaml.safe_dump(data))
    rep = repair(path, candidates=1)
    (candidate,) = rep.candidates
    assert candidate.improved and candidate.run_dir is not None
    run = load_run(candidate.run_dir)
    assert all(len(vs) == len(run.rubric.criteria) for vs in joint_calls(run).values())


def test_the_readme_judge_example_from_its_config(tmp_path):
    """README's "Audit the judge you run" rows are what configs/judge-example.yaml writes."""
    from pathlib import Path

    from radar_local.report.build import write_report

    repo = Path(__file__).resolve().parents[1]
    result = run_audit(repo / "configs" / "judge-example.yaml", tmp_path / "run")
    report = (write_report(load_run(tmp_path / "run"), result=result) / "report.md").read_text()
    readme = (repo / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith("| ") and "->" in line and "(three" not in line]
    assert len(rows) == 4 and all(row in report for row in rows)  # the head and three pairs
    assert "halo index +0.34 [+0.28, +0.40]" in report


def test_expected_scores_on_named_levels(tmp_path):
    """Expected mode reads the distribution over the scale's levels: a value between its ends."""
    judge = {"template": GRADE_TEMPLATE, "answer": {"kind": "bare"}}
    scale = {"levels": {"C": 1, "P": 0.5, "I": 0}}
    cfg = config(tmp_path, judge, scale=scale, options={"noise": 0.5, **COUPLED}, scoring={"mode": "expected"})
    result = run_audit(cfg, tmp_path / "run")
    scores = [v.score for v in load_run(tmp_path / "run").store.scores.values()]
    assert all(0 <= s <= 1 for s in scores) and any(s not in (0, 0.5, 1) for s in scores)
    assert result.probes.score_values == "continuous" and result.leakage.loc["clarity", "accuracy"] > 0.5


def test_a_grid_reads_each_judges_template_file_and_checks_it(tmp_path):
    from radar_local.config import GridConfig
    from radar_local.errors import InputError
    from radar_local.grid import run_grid

    (tmp_path / "judge.j2").write_text(JSON_TEMPLATE)
    cfg = config(tmp_path, scale={"min": 1, "max": 10}, options=COUPLED)
    spec = cfg.pop("verifier")
    cfg.pop("generator")
    answer = {"kind": "json", "before": {"thinking": 40}, "score": "rating", "after": {}}
    judged = {**spec, "name": "templated", "judge": {"template_file": "judge.j2", "answer": answer}}
    grid = {**cfg, "generators": [{**spec, "name": "writer"}], "verifiers": [judged], "exclude_self_pairs": False}
    run_grid(GridConfig.model_validate(grid), tmp_path / "grid", tmp_path, progress=False, reports=False)
    result = load_run(tmp_path / "grid" / "writer").result("templated")
    assert result.leakage.loc["clarity", "accuracy"] == 1.0
    broken = {**judged, "judge": {"template": "{{ response }} {{ criterion.id }} {{ nope }}"}}
    with pytest.raises(InputError, match="uses 'nope'"):
        run_grid(
            GridConfig.model_validate({**grid, "verifiers": [broken]}), tmp_path / "grid2", tmp_path, progress=False
        )


def test_a_judge_with_no_task_to_render_on_is_checked_without_one(tmp_path):
    """With `tasks: []` there is nothing to render the template on: the audit fails as any empty audit does."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({**config(tmp_path, {"template": JSON_TEMPLATE}), "tasks": []}))
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run", "--quiet"), "no rows")
