"""The OpenAI-compatible engine against servers that misbehave, each a real fake server on 127.0.0.1
(tests/fake_server.py): no redirect followed and no key sent elsewhere, only http(s) to local hosts,
torn and malformed answers as one line, untrusted counts and texts, short answers filled (issue 28,
items 2, 3, 6, 7, 11, 12, 16)."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from radar_local.engines import openai as openai_engine
from radar_local.engines.base import Sampling
from radar_local.engines.openai import OpenAIEngine
from radar_local.engines.registry import parse_options
from radar_local.errors import RadarError
from radar_local.scoring import ScoreFormat, expected_score
from tests.conftest import invoke, one_line_exit_2, planted_config
from tests.fake_server import FakeServer, _Server, completion, http, top_logprobs

HI = [[{"role": "user", "content": "hi"}]]
VERDICT = '{"reasoning": "r", "score": 3, "rationale": "q"}'


def engine(url: str, **options: object) -> OpenAIEngine:
    # the constraint named, so that each request a test counts is a call (auto asks GET /v1/models first)
    settings = {"constraint": "json_schema", **options}
    return OpenAIEngine("m", OpenAIEngine.Options(base_url=url, retries=1, backoff_s=0.01, **settings))


def answer(url: str, fmt: ScoreFormat = ScoreFormat(), **options: object):
    """One verdict asked of the server at `url`."""
    e = engine(url, **options)
    try:
        return e.score(HI, fmt=fmt)[0]
    finally:
        e.close()


def refusal(url: str, **options: object) -> str:
    """The one line a verdict asked of the server at `url` ends in."""
    with pytest.raises(RadarError) as err:
        answer(url, **options)
    return str(err.value)


def test_a_redirect_is_refused_and_the_key_never_leaves_the_configured_host(monkeypatch):
    monkeypatch.setenv("RADAR_TEST_KEY", "sekrit")
    with FakeServer(lambda *_: completion("4")) as elsewhere:
        moved = http(302, b"", {"Location": elsewhere.url + "/chat/completions"})
        with FakeServer(lambda *_: moved) as server:
            msg = refusal(server.url, api_key_env="RADAR_TEST_KEY")
    assert "answered a redirect (HTTP 302) to http://127.0.0.1" in msg and "never follows" in msg
    assert "\n" not in msg and elsewhere.requests == []
    assert server.requests[0][1]["authorization"] == "Bearer sekrit"


def test_a_proxy_in_the_environment_is_not_used(monkeypatch):
    """A proxy would see the key and the prompts; radar talks to base_url directly."""
    with FakeServer(lambda *_: completion(VERDICT)) as proxy, FakeServer(lambda *_: completion(VERDICT)) as server:
        monkeypatch.setenv("http_proxy", proxy.root)
        monkeypatch.setenv("no_proxy", "")
        assert answer(server.url).text == VERDICT
    assert proxy.requests == [] and len(server.requests) == 1


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd#", "ftp://127.0.0.1/v1", "127.0.0.1:8000/v1", "http:///v1", "gopher://x"]
)
def test_base_url_is_http_or_https_with_a_host(url):
    with pytest.raises(ValueError) as err:
        parse_options("openai", {"base_url": url})
    assert "is not an http:// or https:// address with a host" in str(err.value) and "root:" not in str(err.value)


def test_a_public_host_needs_the_user_to_say_so():
    with pytest.raises(RadarError) as err:
        OpenAIEngine("m", OpenAIEngine.Options(base_url="http://8.8.8.8:8000/v1"))
    assert "is not a loopback or private address (8.8.8.8)" in str(err.value) and "remote: true" in str(err.value)
    for url in ("http://10.1.2.3/v1", "http://[::1]:8000/v1", "http://localhost:1/v1", "http://192.168.0.7/v1"):
        OpenAIEngine("m", OpenAIEngine.Options(base_url=url)).close()
    OpenAIEngine("m", OpenAIEngine.Options(base_url="https://8.8.8.8/v1", remote=True)).close()  # said so


def test_an_unset_key_variable_is_one_line(monkeypatch):
    monkeypatch.delenv("RADAR_NO_SUCH_KEY", raising=False)
    with pytest.raises(RadarError, match="api_key_env names RADAR_NO_SUCH_KEY, which is not set"):
        OpenAIEngine("m", OpenAIEngine.Options(api_key_env="RADAR_NO_SUCH_KEY"))


def _chunked_broken(*_: object) -> bytes:
    return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\nabc\r\n"


BROKEN = {
    "Content-Length past the body": lambda *_: http(200, b'{"choices": []}', length=500),
    "broken chunked encoding": _chunked_broken,
    "not HTTP at all": lambda *_: b"SSH-2.0-OpenSSH_9.6\r\n",
    "nothing at all": lambda *_: b"",
    "JSON nested too deep": lambda *_: http(200, b"[" * 100_000),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_torn_or_foreign_answer_is_one_line_after_its_retries(case):
    with FakeServer(BROKEN[case]) as server:
        msg = refusal(server.url)
    assert server.url in msg and "\n" not in msg, msg
    assert len(server.requests) == (1 if case == "JSON nested too deep" else 2)  # retried once when torn


def test_an_answer_past_the_size_cap_is_refused(monkeypatch):
    monkeypatch.setattr(openai_engine, "MAX_BODY", 1000)
    with FakeServer(lambda *_: completion("x" * 5000)) as server:
        assert "answered more than 0 MiB" in refusal(server.url)


@pytest.mark.parametrize(
    "content,text",
    [(3, "3"), ([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "ab"), ([1, 2], "[1, 2]"), (None, "")],
)
def test_content_that_is_not_a_string_is_kept_as_text(content, text):
    with FakeServer(lambda *_: completion(content)) as server:
        assert answer(server.url).text == text


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": "5", "completion_tokens": "7"},
        {"prompt_tokens": -5, "completion_tokens": 1e30},
        {"prompt_tokens": True, "completion_tokens": math.nan},
        "lots",
        [1, 2],
    ],
)
def test_usage_that_is_no_count_counts_zero(usage):
    with FakeServer(lambda *_: completion(VERDICT, usage=usage)) as server:
        c = answer(server.url)
    assert (c.prompt_tokens, c.output_tokens) == (0, 0) and c.text == VERDICT


def test_choices_in_index_order_or_as_sent_when_indices_are_mixed():
    def answer(*_: object) -> bytes:
        choices = [
            {"index": 1, "message": {"content": "b"}},
            {"index": "0", "message": {"content": "a"}},
        ]
        return http(200, json.dumps({"choices": choices, "usage": {"completion_tokens": 4}}).encode())

    with FakeServer(answer) as server:
        e = engine(server.url)
        try:
            (samples,) = e.generate(HI, Sampling(2, 1.0, 8), seeds=[0])
        finally:
            e.close()
    assert [c.text for c in samples] == ["b", "a"] and [c.output_tokens for c in samples] == [2, 2]


@pytest.mark.parametrize("bad", [math.nan, math.inf, 1000.0])
def test_expected_mode_scores_nothing_from_a_logprob_that_is_no_logprob(bad):
    pairs = [("3", bad), ("2", -1.0)]
    with FakeServer(lambda *_: completion("3", logprobs=top_logprobs(pairs))) as server:
        c = answer(server.url, ScoreFormat(mode="expected"))
    exp = expected_score(c.score_logprobs)
    assert exp.score is None and "is not a number <= 0" in exp.reason


def _audit_server(path: str, headers: dict[str, str], raw: bytes) -> bytes:
    """A generator that answers one sample however many are asked for, and a judge whose log-probabilities
    are NaN on one criterion (Politeness, of tests/data/small_rubric.yaml) and fine elsewhere; every usage a lie."""
    if path.endswith("/metrics"):
        return http(404, b"")
    body = json.loads(raw)
    usage = {"prompt_tokens": -3, "completion_tokens": 1e30}
    if "logprobs" not in body:
        text = f"a probe written under seed {body['seed']}"
        return completion(text, usage=usage)
    bad = math.nan if "Politeness" in json.dumps(body["messages"]) else -0.2
    return completion("3", usage=usage, logprobs=top_logprobs([("3", bad), ("2", -2.0)]))


def test_an_audit_fills_short_answers_and_stores_unscored_verdicts_with_their_reason(tmp_path):
    """n: 2 asked, one sample answered: each missing variant is asked for alone under its own seed;
    NaN log-probabilities are unscored verdicts with the reason, never a score of 0."""
    from radar_local.rundir import load_run
    from tests.conftest import REPO, planted_config, radar_run

    with FakeServer(_audit_server) as server:
        spec = {"engine": "openai", "model": "m", "options": {"base_url": server.url, "retries": 0}}
        small = {"rubric": str(REPO / "tests/data/small_rubric.yaml"), "tasks": planted_config()["tasks"][:2]}
        config = planted_config(generator=spec, verifier=spec, n=2, bootstrap=50, **small)
        config["scoring"] = {"mode": "expected"}
        (tmp_path / "a.yaml").write_text(yaml.safe_dump(config))
        res = radar_run("audit", tmp_path / "a.yaml", "--out", tmp_path / "run", "--no-report")
    assert res.returncode == 0, res.stderr
    assert "sample(s) missing from the answers; asking for each alone" in res.stderr
    run = load_run(tmp_path / "run")
    info = json.loads((tmp_path / "run" / "run.json").read_text())
    planned = len(run.plan.generation_requests(run.adaptive_sizes())) * 2
    assert len(run.store.probes) == planned and info["stages"]["generate"]["short_answers"] == planned // 2
    seeds = {p.text for p in run.store.probes.values()}
    assert len(seeds) == planned  # variant v is the sample of seed + v: every probe distinct
    assert info["stages"]["generate"]["output_tokens"] == 0  # 1e30 was no count
    verdicts = list(run.store.scores.values())
    unscored = [v for v in verdicts if v.score is None]
    assert unscored and all("log-probability nan" in (v.unscored or "") for v in unscored)
    assert all(v.score > 2 for v in verdicts if v.score is not None)


@pytest.mark.parametrize(
    "status,body,needle",
    [
        (200, b"<html>not an API</html>", "not JSON"),
        (200, json.dumps({"object": "chat.completion", "usage": {}}).encode(), "without completion choices"),
        (200, json.dumps({"choices": []}).encode(), "without completion choices"),
        (503, b"overloaded", "answered HTTP 503 after 3 attempts: overloaded"),
    ],
)
def test_openai_engine_bad_answers_are_one_line(status, body, needle):
    server = _Server(status, body)
    engine = OpenAIEngine("m", OpenAIEngine.Options(base_url=server.url, retries=2, backoff_s=0.01))
    try:
        with pytest.raises(RadarError) as err:
            engine.score([[{"role": "user", "content": "hi"}]], fmt=ScoreFormat())
        msg = str(err.value)
        assert server.url in msg and needle in msg and "\n" not in msg
        assert server.hits == (3 if status == 503 else 1)
    finally:
        engine.close()
        server.close()


def test_audit_against_a_server_that_answers_5xx(tmp_path):
    server = _Server(500, b"boom")
    try:
        spec = {"engine": "openai", "model": "m", "options": {"base_url": server.url, "retries": 1, "backoff_s": 0.01}}
        cfg = tmp_path / "audit.yaml"
        cfg.write_text(yaml.safe_dump(planted_config(generator=spec, verifier=spec)))
        one_line_exit_2(invoke("audit", cfg, "--out", tmp_path / "run", "--quiet"), server.url, "HTTP 500")
    finally:
        server.close()


def test_a_server_answer_nested_past_the_recursion_limit_is_unscored():
    from radar_local.scoring import ScoreFormat

    deep = "{" + '"a": ' + "[" * 200_000 + "]" * 200_000 + "}"
    assert ScoreFormat().answer().parse(deep)["score"].score is None


def test_a_server_that_moves_the_answer_into_its_reasoning_field_is_named(tmp_path):
    """Issue 60 items 3 and 20: behind `vllm serve --reasoning-parser`, a judge's answer (and a thinking judge's
    reasoning) arrive in message.reasoning (older vLLM: reasoning_content) with the content empty; radar read the
    content alone, so every verdict was unscored "did not parse" and a thinking judge's every reasoning "stopped
    without its end". A verdict says which field holds it; a thinking judge stops on its first reasoning, in one
    line saying what to do."""
    from radar_local.calls import IN_REASONING
    from radar_local.judge import Reasoning
    from radar_local.reasoning import SPLIT_BY_SERVER, think_then_answer

    for field in ("reasoning", "reasoning_content"):
        split = json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": None, field: "<think> fine </think> " + VERDICT}}]}).encode()  # fmt: skip
        with FakeServer(lambda *_, body=split: http(200, body)) as server:
            got = answer(server.url)
            assert got.text == "" and got.reasoning.endswith(VERDICT)
            e = engine(server.url)
            try:
                with pytest.raises(RadarError, match="--reasoning-parser") as err:
                    next(think_then_answer(e, HI, fmt=ScoreFormat(), reasoning=Reasoning(budget=64), chunk=4, seed=0))
            finally:
                e.close()
        assert str(err.value) == SPLIT_BY_SERVER
    from radar_local.auditing import run_audit
    from radar_local.rundir import load_run

    with FakeServer(lambda *_: http(200, split)) as server:
        judge = {"engine": "openai", "model": "m", "options": {"base_url": server.url, "retries": 0}}
        run_audit(planted_config(verifier=judge, n=1, bootstrap=0), tmp_path / "run", progress=False)
    verdicts = list(load_run(tmp_path / "run").store.scores.values())
    assert verdicts and all(v.score is None and v.unscored == IN_REASONING for v in verdicts)


def test_a_server_that_cannot_continue_the_reasoning_turn_is_refused_before_any_call(tmp_path):
    """Issue 60 item 4: DeepSeek-R1-Distill's and QwQ's templates drop an assistant turn's reasoning, so vLLM refuses
    continue_final_message (HTTP 400) on every verdict, after the reasonings were paid for. One request continuing a
    short reasoning goes first: the stage stops in one line naming what to do, before any reasoning is asked."""
    from radar_local.auditing import run_audit

    refused = b'{"object": "error", "message": "continue_final_message is set but the final message does not appear'
    refused += b' in the chat after applying the chat template!", "code": 400}'

    def answer(_path, _headers, body):
        return http(400, refused) if json.loads(body or b"{}").get("continue_final_message") else completion(VERDICT)

    with FakeServer(answer) as server:
        judge = {"engine": "openai", "model": "m", "options": {"base_url": server.url, "retries": 0},
                 "judge": {"reasoning": {"budget": 64, "parser": "deepseek_r1"}}}  # fmt: skip
        with pytest.raises(RadarError) as err:
            run_audit(planted_config(verifier=judge, n=1, bootstrap=0), tmp_path / "run", progress=False)
        asked = [json.loads(body) for _, _, body in server.requests if body]
    line = str(err.value)
    assert "\n" not in line and "refuses to continue the judge's turn after its reasoning" in line
    assert "continue_final_message is set but the final message does not appear" in line and "--chat-template" in line
    assert len(asked) == 1 and asked[0]["max_tokens"] == 1  # the probe alone: no reasoning was asked
    assert asked[0]["messages"][-1]["content"] == "<think>\nA check.\n</think>\n\n"
