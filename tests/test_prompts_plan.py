"""Pure formatting: prompts, the score constraint, parsing, plans and seeds (no model)."""

import re

import pytest

from radar_local.config import AuditConfig
from radar_local.plan import Plan, cell_seed
from radar_local.prompts import generation_messages, strip_think, verification_messages
from radar_local.rubric import load_benchmark
from radar_local.scoring import ScoreFormat, first_object, matches, parse_score
from tests.conftest import probe_record

BENCH = load_benchmark("helpsteer2")


def config(**kw) -> AuditConfig:
    base = {
        "rubric": "helpsteer2",
        "generator": {"engine": "vllm", "model": "m"},
        "verifier": {"engine": "vllm", "model": "m"},
    }
    return AuditConfig.model_validate({**base, **kw})


def test_generation_prompt_phrasing_follows_appendix_b1():
    task = BENCH.tasks[0]
    plus = generation_messages(task, BENCH.rubric.criterion("helpfulness"), "+")[1]["content"]
    minus = generation_messages(task, BENCH.rubric.criterion("helpfulness"), "-")[1]["content"]
    verbose = generation_messages(task, BENCH.rubric.criterion("verbosity"), "+")[1]["content"]
    terse = generation_messages(task, BENCH.rubric.criterion("verbosity"), "-")[1]["content"]
    assert "strongly satisfies the following criterion" in plus and "Optimize only for this criterion" in plus
    assert "clearly fails the following criterion" in minus and "realistic and plausible" in minus
    assert "HIGH-word end (verbose)" in verbose and "LOW-word end (succinct)" in terse
    none = generation_messages(task, None, "none")
    assert none[1]["content"] == task.prompt


def test_summary_tasks_use_article_sections():
    task = load_benchmark("summeval").tasks[0]
    user = verification_messages(task, "A summary.", load_benchmark("summeval").rubric.criteria[0])[1]["content"]
    assert "### Source article" in user and "### Candidate summary" in user and "### Prompt" not in user


def test_prefix_shared_layout_shares_everything_before_the_criterion():
    task, crits = BENCH.tasks[0], BENCH.rubric.criteria
    flat = [
        "".join(m["content"] for m in verification_messages(task, "Probe text.", c, "prefix-shared")) for c in crits
    ]
    common = min(len(re.match(r"(.*)### Criterion", f, re.S).group(1)) for f in flat)
    assert len({f[:common] for f in flat}) == 1 and "Probe text." in flat[0][:common]
    paper = [verification_messages(task, "Probe text.", c, "paper")[0]["content"] for c in crits]
    assert len(set(paper)) == len(crits)  # the paper's layout names the criterion in the system message


def test_score_regex_accepts_its_own_longest_answer_within_max_tokens():
    fmt = ScoreFormat(max_reasoning_chars=12, max_rationale_chars=7)
    longest = '{"reasoning": "' + "a" * 12 + '", "score": 3, "rationale": "' + "b" * 7 + '"}'
    assert matches(fmt, longest) and len(longest) == fmt.max_tokens
    assert not matches(fmt, longest.replace("a" * 12, "a" * 13))
    assert not matches(fmt, '{"reasoning": "x",\n "score": 3, "rationale": "y"}')  # no free whitespace
    assert not matches(fmt, '{"reasoning": "é", "score": 3, "rationale": "y"}')  # ASCII only: 1 char >= 1 token
    assert not matches(fmt, '{"reasoning": "x", "score": 5, "rationale": "y"}')


@pytest.mark.parametrize(
    "text,score",
    [
        ('{"reasoning": "fine", "score": 3, "rationale": "ok"}', 3),
        ('Sure! {"reasoning": "a {brace} \\" quote", "score": 0, "rationale": "r"} trailing', 0),
        ('{"reasoning": "r", "score": 7, "rationale": "r"}', None),
        ('{"reasoning": "r", "score": true, "rationale": "r"}', None),
        ('{"reasoning": "r", "score": "3"}', None),
        ('{"reasoning": "never closed', None),
        ("no json at all", None),
    ],
)
def test_parse_score_or_unscored(text, score):
    assert parse_score(text).score == score


def test_first_object_respects_strings():
    assert first_object('x {"a": "}"} y') == '{"a": "}"}'


def test_strip_think():
    assert strip_think("<think>plan\nmore</think>\nAnswer.") == "Answer."
    assert strip_think("Answer.<think>unfinished") == "Answer."


def test_plan_counts_seeds_and_keys():
    cfg = config(n=3, unconditioned=2)
    reqs = Plan(cfg, BENCH.rubric, tuple(BENCH.tasks)).generation_requests()
    assert len(reqs) == 5 * 5 * 2 + 5  # tasks x criteria x directions + one unconditioned prompt per task
    assert sum(r.n for r in reqs) == 5 * 5 * 2 * 3 + 5 * 2
    assert len({r.key for r in reqs}) == len(reqs) and len({r.seed for r in reqs}) == len(reqs)
    again = Plan(config(n=3, unconditioned=2), BENCH.rubric, tuple(BENCH.tasks)).generation_requests()
    assert [r.key for r in again] == [r.key for r in reqs]
    assert cell_seed(0, "t", "c", "+") != cell_seed(1, "t", "c", "+")
    hotter = Plan(
        config(n=3, unconditioned=2, generation={"temperature": 0.5}), BENCH.rubric, tuple(BENCH.tasks)
    ).generation_requests()
    assert not {r.key for r in hotter} & {r.key for r in reqs}  # sampling parameters are part of the key


def test_score_requests_are_probe_major_and_keyed_by_verifier():
    cfg = config()
    probes = [probe_record("p1", "refund", "x"), probe_record("p2", "math", "y")]
    reqs = Plan(cfg, BENCH.rubric, tuple(BENCH.tasks)).score_requests(probes, cfg.verifier)
    assert [r.probe_key for r in reqs] == ["p1"] * 5 + ["p2"] * 5
    other = Plan(cfg, BENCH.rubric, tuple(BENCH.tasks)).score_requests(
        probes, config(verifier={"engine": "vllm", "model": "judge"}).verifier
    )
    assert not {r.key for r in reqs} & {r.key for r in other}
