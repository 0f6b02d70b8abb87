"""Expected-score mode (issue 11): G-Eval's probability-weighted score, continuous scores in the
table and the statistics (exact at the gate), the mode in every output, and why it is worth having:
narrower bootstrap intervals at the same N on the planted engine."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from radar_local.auditing import run_audit
from radar_local.engines.openai import OpenAIEngine
from radar_local.errors import InputError, RadarError
from radar_local.plan import Plan
from radar_local.prompts import expected_text, schema_text
from radar_local.report.build import write_report
from radar_local.rundir import SCORES, load_run
from radar_local.scale import LIKERT
from radar_local.score_table import COLUMNS, read_scores, validate_scores, write_scores
from radar_local.scoring import ScoreFormat, expected_score
from radar_local.stats.audit import audit_cell
from radar_local.stats.exact import exact_sum
from radar_local.stats.probes import probe_matrix
from tests.conftest import planted_config, probe_record
from tests.fake_server import _Server

REPO = Path(__file__).resolve().parents[1]
EXPECTED = ScoreFormat(mode="expected")


def test_expected_score_is_the_probability_weighted_mean():
    # P(2) = 1/4, P(3) = 1/2, P(4) = 1/4: mean 0.5 + 1.5 + 1.0 = 3.0; "4" and " 4" are one answer.
    exp = expected_score(
        {"2": math.log(0.25), "3": math.log(0.5), "4": math.log(0.125), " 4": math.log(0.125), "x": -math.inf}
    )
    assert exp.score == pytest.approx(3.0) and exp.distribution == pytest.approx((0, 0, 0.25, 0.5, 0.25))
    assert exp.mass == pytest.approx(1.0)
    # Mass off the score tokens is renormalized away and reported: 0.1 + 0.1 of the next token's mass.
    half = expected_score({"0": math.log(0.1), "4": math.log(0.1)})
    assert half.score == pytest.approx(2.0) and half.distribution == pytest.approx((0.5, 0, 0, 0, 0.5))
    assert half.mass == pytest.approx(0.2)
    assert expected_score({"yes": -0.1}).score is None  # no score token at all: unscored, never a silent 0


@pytest.mark.parametrize(
    "logprobs,reason",
    [
        ({"3": math.nan, "2": -1.0}, "log-probability nan of token '3' is not a number <= 0"),
        ({"3": math.inf}, "log-probability inf"),
        ({"3": 0.5, "2": -3.0}, "log-probability 0.5"),  # a positive log-probability: no renormalizing
        ({"3": 1000.0}, "log-probability 1000.0"),
        ({"3": True}, "log-probability True"),
        ({"3": "-0.1"}, "log-probability '-0.1'"),
        ({"3": None}, "log-probability None"),
        ([("3", -0.1)] * 20, "token '3' is listed 20 times"),
        ([(3, -0.1)], "token 3 is not a string"),
        ({"3": math.log(0.7), "2": math.log(0.7)}, "the reported probabilities sum to 1.4 > 1"),
    ],
)
def test_what_is_not_a_distribution_is_unscored_with_its_reason(logprobs, reason):
    """Issue 28, item 2: max(0.0, nan) stored a NaN log-probability as a score of 0."""
    exp = expected_score(logprobs)
    assert exp.score is None and exp.distribution is None and reason in exp.reason


def test_a_log_probability_of_zero_and_minus_infinity_are_a_distribution():
    exp = expected_score([("3", 1e-9), ("2", -math.inf)])  # a hair above 0: a softmax's rounding
    assert exp.score == 3.0 and exp.distribution == (0, 0, 0, 1, 0) and exp.reason is None
    assert expected_score({"3": 0.0}).score == 3.0


def test_expected_format_is_one_score_token():
    assert EXPECTED.regex == "[0-4]" and EXPECTED.max_tokens == 1
    assert EXPECTED.json_schema() == {"type": "integer", "minimum": 0, "maximum": 4}


def test_the_mode_changes_the_prompt_and_the_keys(tmp_path):
    from radar_local.config import AuditConfig
    from radar_local.resolved import resolve

    probe = [probe_record("p:0", "refund", "We will refund you.")]
    keys, users = {}, {}
    for mode in ("reasoned", "expected"):
        cfg = AuditConfig.model_validate(planted_config(scoring={"mode": mode}))
        plan = Plan(cfg, resolve(cfg, REPO).rubric, resolve(cfg, REPO).tasks)
        reqs = plan.score_requests(probe, cfg.verifier)
        keys[mode], users[mode] = {r.key for r in reqs}, reqs[0].messages[-1]["content"]
    assert not keys["reasoned"] & keys["expected"]  # a verdict of one mode never stands in for the other
    assert users["expected"].endswith(expected_text(LIKERT)) and schema_text(LIKERT) not in users["expected"]
    assert users["reasoned"].endswith(schema_text(LIKERT))


def test_score_table_takes_continuous_scores_and_keeps_them_exactly(tmp_path):
    rows = [
        ("g", "v", "t", "a", d, "0", c, s) for d, s0 in (("+", 3.3), ("-", 0.7)) for c, s in (("a", s0), ("b", 2.0))
    ]
    df = validate_scores(pd.DataFrame(rows, columns=list(COLUMNS)), "t")
    write_scores(df, tmp_path / "s.csv")
    assert read_scores(tmp_path / "s.csv")["score"].tolist() == [3.3, 2.0, 0.7, 2.0]  # repr round-trip, no drift
    on_1_5 = validate_scores(
        pd.DataFrame(rows, columns=list(COLUMNS)).assign(score=lambda d: d["score"] + 1), "t", "1-5"
    )
    assert on_1_5["score"].tolist() == [s + 1 for s in df["score"]]  # its own scale: the statistics divide by its span
    for bad in (4.5, -0.25, float("inf")):
        with pytest.raises(InputError, match="off the 0-4 scale; use a number from 0 to 4"):
            validate_scores(pd.DataFrame([rows[0][:-1] + (bad,)], columns=list(COLUMNS)), "t")


def test_exact_sum_of_floats():
    values = np.random.default_rng(0).uniform(0, 4, 5000)
    assert exact_sum(values) == sum(map(Fraction, values.tolist()))  # not the float sum: the exact one
    assert exact_sum(np.array([0.1, 0.2])) == Fraction(0.1) + Fraction(0.2) != Fraction(0.1 + 0.2)
    # integer scores take the int64 sum; integers past its guard, and 2^53 + 1 (no float sum holds it), stay exact
    for whole in ([4.0, -1.0, 0.0, 3.0], [2.0**40, 1.0, -(2.0**33)], [2.0**53, 1.0], [1e300, -1e300, 1.0], []):
        assert exact_sum(np.array(whole)) == sum(map(Fraction, whole)), whole


@pytest.mark.parametrize("tiny,reliable", [(0.0, True), (2.0**-40, False)])
def test_gate_on_continuous_scores_is_exact(tiny, reliable):
    """Self-effect (2.5 - (1 + tiny)) / 4 against tau = 3/8: exactly at it passes; 2**-40 Likert points
    below fails (float32 resampling arithmetic could not tell these apart)."""
    rows = [("t", "a", "+", "0", "a", 2.25), ("t", "a", "+", "1", "a", 2.75), ("t", "a", "-", "0", "a", 1.0 + tiny)]
    rows += [("t", "a", d, v, "b", 2.0) for d, v in (("+", "0"), ("+", "1"), ("-", "0"))]
    rows += [
        ("t", "b", "+", "0", "a", 2.0),
        ("t", "b", "+", "0", "b", 4.0),
        ("t", "b", "-", "0", "a", 2.0),
        ("t", "b", "-", "0", "b", 0.0),
    ]
    df = validate_scores(pd.DataFrame([("g", "v", *r) for r in rows], columns=list(COLUMNS)), "t")
    result = audit_cell(probe_matrix(df, ["a", "b"], "g", "v"), tau=0.375, resamples=0, budget=False)
    assert bool(result.reliable["a"]) is reliable and result.probes.score_values == "continuous"


def test_planted_audit_in_expected_mode(tmp_path):
    coupling = {"Helpfulness / Understanding": {"Correctness / Completeness": 0.3}}
    result = run_audit(
        planted_config(options={"coupling": coupling}, scoring={"mode": "expected"}), tmp_path / "run", base=REPO
    )
    records = [json.loads(x) for x in (tmp_path / "run" / SCORES).read_text().splitlines()]
    assert len(records) == 200 and all(len(r["distribution"]) == 5 and r["reasoning"] is None for r in records)
    # Without noise the planted belief is a point mass on the rounded value: 2 + 2 * 0.3 = 2.6 -> 3.
    assert result.leakage.loc["helpfulness", "correctness"] == 0.5 and result.probes.score_values == "integer"
    run = load_run(tmp_path / "run")
    assert run.info().stages["score"].mode == "expected"
    report = write_report(run)
    assert "score (expected)" in (report / "report.md").read_text()


def test_expected_scores_give_narrower_intervals_at_the_same_n(tmp_path):
    """The planted judge's belief is spread (noise 1 Likert point). A reasoned verdict is one draw from
    it; the expected score is its mean, so the within-verdict sampling noise is gone from the table."""
    coupling = {"Helpfulness / Understanding": {"Correctness / Completeness": 0.4}}
    widths = {}
    for mode in ("reasoned", "expected"):
        cfg = planted_config(options={"coupling": coupling, "noise": 1.0}, scoring={"mode": mode}, n=6, bootstrap=300)
        result = run_audit(cfg, tmp_path / mode, base=REPO)
        low, high = result.leakage_ci
        widths[mode] = {
            "self": float((result.self_effect_ci["high"] - result.self_effect_ci["low"]).mean()),
            "leak": float(np.nanmean((high - low).to_numpy())),
        }
        assert result.probes.score_values == ("continuous" if mode == "expected" else "integer")
    assert widths["expected"]["self"] < 0.8 * widths["reasoned"]["self"], widths
    assert widths["expected"]["leak"] < 0.8 * widths["reasoned"]["leak"], widths


def _completion(**choice) -> bytes:
    return json.dumps(
        {
            "choices": [{"index": 0, "message": {"content": "3"}, "finish_reason": "length", **choice}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 1},
        }
    ).encode()


def test_openai_engine_reads_the_servers_top_logprobs():
    top = [
        {"token": "3", "logprob": math.log(0.6)},
        {"token": " 3", "logprob": math.log(0.1)},
        {"token": "2", "logprob": math.log(0.2)},
        {"token": "{", "logprob": math.log(0.1)},
    ]
    server = _Server(200, _completion(logprobs={"content": [{"token": "3", "logprob": -0.5, "top_logprobs": top}]}))
    engine = OpenAIEngine("m", OpenAIEngine.Options(base_url=server.url))
    try:
        (c,) = engine.score([[{"role": "user", "content": "hi"}]], fmt=EXPECTED)
        exp = expected_score(c.score_logprobs)
        assert exp.distribution == pytest.approx((0, 0, 2 / 9, 7 / 9, 0)) and exp.mass == pytest.approx(0.9)
    finally:
        engine.close()
        server.close()


def test_openai_server_without_logprobs_is_one_line():
    server = _Server(200, _completion())
    engine = OpenAIEngine("m", OpenAIEngine.Options(base_url=server.url))
    try:
        with pytest.raises(RadarError) as err:
            engine.score([[{"role": "user", "content": "hi"}]], fmt=EXPECTED)
        assert "returned no token log-probabilities" in str(err.value) and "\n" not in str(err.value)
    finally:
        engine.close()
        server.close()


@pytest.mark.slow  # reads the embedded model's tokenizer
@pytest.mark.parametrize("engine", ["vllm"])  # transformers reads the same tokenizer the same way
def test_expected_mode_on_levels_the_tokenizer_splits_is_refused_before_any_call(tmp_path, engine, embedded_model):
    """SmolLM2's tokenizer splits "10" into "1" "0": a 1-10 scale in expected mode is one line when the config is
    read, before any model loads or probe is generated (it was refused only at the scoring stage)."""
    from radar_local.config import load_config
    from radar_local.errors import RadarError
    from radar_local.resolved import resolve

    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "id: r\nname: r\nscale: {min: 1, max: 10}\ncriteria:\n"
        "  - {id: a, label: A, description: The first.}\n  - {id: b, label: B, description: The second.}\n"
    )
    config = tmp_path / "c.yaml"
    spec = {"engine": engine, "model": "smollm2-135m"}
    settings = planted_config(rubric=str(rubric), scoring={"mode": "expected"}, verifier=spec)
    config.write_text(yaml.safe_dump(settings))
    with pytest.raises(RadarError, match="splits the level\\(s\\) 10 into several tokens") as err:
        resolve(load_config(config), tmp_path, config)
    assert "\n" not in str(err.value)
    rubric.write_text(rubric.read_text().replace("{min: 1, max: 10}", "{min: 0, max: 4}"))
    resolve(load_config(config), tmp_path, config)  # single-token levels pass
