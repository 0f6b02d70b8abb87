"""Every answer radar constrains, held as the prompt asks for it (issue 42, items 1 and 2): each JSON schema radar
builds is compiled by the installed xgrammar (what vLLM 0.32 enforces `response_format` with) and must accept
every level as written, or radar refuses to send it; a served judge's constraint is regex where the server is
vLLM (it cannot pad), and each verdict records the constraint it was sent."""

from __future__ import annotations

import json
import re

import pytest

from radar_local.answer import Answer, BareShape, GradeShape, JsonShape
from radar_local.engines.base import Sampling
from radar_local.engines.openai import OpenAIEngine
from radar_local.errors import RadarError
from radar_local.scale import Scale
from radar_local.scoring import ScoreFormat
from tests.fake_server import FakeServer, completion, http


@pytest.fixture(scope="module")
def xgrammar():
    """The installed xgrammar, imported by the tests that compile with it (its import takes 2 s: not at collection)."""
    return pytest.importorskip("xgrammar")


def accepts(grammar, text: str) -> bool:
    from xgrammar.testing import _is_grammar_accept_string  # the fixture imported xgrammar (or skipped the test)

    return _is_grammar_accept_string(grammar, text)


SCALES = {
    "0-4": Scale(min=0, max=4),
    "1-10": Scale(min=1, max=10),
    "-2-2": Scale(min=-2, max=2),
    "C/P/I": Scale(levels={"C": 1, "P": 0.5, "I": 0}),
    "integers named by value": Scale(levels={"-1": -1, "0": 0, "1": 1, "10": 10}),
    "promptfoo 0.0-1.0": Scale(levels={f"{k / 10:.1f}": k / 10 for k in range(11)}),
    "decimals": Scale(levels={"0": 0, "0.5": 0.5, "1": 1}),
}
SHAPES = {
    "paper json": (JsonShape(before={"reasoning": 8}, after={"rationale": 8}), False),
    "joint json": (JsonShape(before={"why": 5}, after={}), True),
    "bare": (BareShape(kind="bare"), False),
    "joint bare": (BareShape(kind="bare"), True),
    "grade": (GradeShape(kind="grade", pattern="GRADE: (.+)"), False),
}


def as_asked(answer: Answer, level: str) -> str:
    """The answer the prompt asks for, with `level` for every criterion: radar's regex is the prompt's shape, so
    the shortest text it accepts, built field by field."""
    shape = answer.shape

    def one(scale: Scale) -> str:
        value = level if scale.numeric or (isinstance(shape, BareShape) and not answer.joint) else f'"{level}"'
        if isinstance(shape, JsonShape):
            fields = [f'"{n}": "x"' for n in shape.before] + [f'"{shape.score}": {value}']
            return "{" + ", ".join(fields + [f'"{n}": "x"' for n in shape.after]) + "}"
        if isinstance(shape, GradeShape):
            return f"GRADE: {level}"
        return value

    if not answer.joint:
        return one(answer.scales[0][1])
    return "{" + ", ".join(f'"{cid}": {one(scale)}' for cid, scale in answer.scales) + "}"


@pytest.mark.parametrize("scale_name", SCALES)
@pytest.mark.parametrize("shape_name", SHAPES)
def test_every_schema_radar_sends_takes_every_level_as_the_prompt_asks_or_is_refused(xgrammar, scale_name, shape_name):
    scale = SCALES[scale_name]
    shape, joint = SHAPES[shape_name]
    scales = (("a", scale), ("b", scale)) if joint else (("a", scale),)
    answer = Answer(shape, scales, joint=joint)
    for level in scale.tokens:
        text = as_asked(answer, level)
        assert re.fullmatch(answer.regex, text), text  # the regex (vLLM, outlines) takes it as asked
        assert answer.parse(text)["a"].score == scale.value(level)
    try:
        schema = answer.json_schema()
    except ValueError as exc:  # refused: a grade is no JSON, decimals and bare names have no exact schema
        assert isinstance(shape, GradeShape) or scale.decimal or (not joint and not scale.numeric), exc
        return
    assert not scale.decimal  # a decimal level never goes out as a JSON schema
    grammar = xgrammar.Grammar.from_json_schema(json.dumps(schema), any_whitespace=False)
    for level in scale.tokens:
        assert accepts(grammar, as_asked(answer, level)), (level, schema)


def test_xgrammar_masks_a_decimal_enum_off_as_written(xgrammar):
    """The mechanism item 1 guards against, on the installed xgrammar: the enum 0.1 is written with 17 digits."""
    grammar = xgrammar.Grammar.from_json_schema(json.dumps({"type": "number", "enum": [0.1]}), any_whitespace=False)
    assert not accepts(grammar, "0.1")


def test_a_decimal_scale_with_a_json_schema_constraint_is_refused_when_the_config_is_read(tmp_path):
    from radar_local.config import load_config
    from radar_local.resolved import resolve

    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "id: r\nname: r\nscale: {levels: {'0.0': 0.0, '0.5': 0.5, '1.0': 1.0}}\ncriteria:\n"
        "  - {id: a, label: A, description: The first.}\n  - {id: b, label: B, description: The second.}\n"
    )
    config = tmp_path / "c.yaml"
    verifier = "{engine: openai, model: m, options: {constraint: json_schema}}"
    config.write_text(
        f"rubric: {rubric}\ntasks: [{{id: t, prompt: Say hi.}}]\ngenerator: {{engine: testing, model: g}}\n"
        f"verifier: {verifier}\n"
    )
    with pytest.raises(RadarError) as err:
        resolve(load_config(config), tmp_path, config)
    msg = str(err.value)
    assert "decimal levels" in msg and "constraint: regex" in msg and "\n" not in msg
    config.write_text(config.read_text().replace("constraint: json_schema", "constraint: regex"))
    resolve(load_config(config), tmp_path, config)  # the regex holds them as written


VLLM_MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "vllm"}]}).encode()
OTHER_MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "llamacpp"}]}).encode()
VERDICT = '{"reasoning": "r", "score": 3, "rationale": "q"}'


@pytest.mark.parametrize(("models", "sent"), [(VLLM_MODELS, "structured_outputs"), (OTHER_MODELS, "response_format")])
def test_auto_sends_a_regex_to_vllm_and_a_schema_elsewhere_and_each_verdict_records_which(models, sent):
    def server(path: str, _headers: dict, _body: bytes) -> bytes:
        return http(200, models) if path.endswith("/models") else completion(VERDICT)

    with FakeServer(server) as fake:
        engine = OpenAIEngine("m", OpenAIEngine.Options(base_url=fake.url, retries=0))
        try:
            got = engine.score(
                [[{"role": "user", "content": "hi"}]] * 2, fmt=ScoreFormat(max_reasoning_chars=5, max_rationale_chars=5)
            )
        finally:
            engine.close()
    bodies = [json.loads(body) for path, _, body in fake.requests if path.endswith("/chat/completions")]
    assert [sent in b for b in bodies] == [True, True]
    assert [g.constraint for g in got] == ["regex" if sent == "structured_outputs" else "json_schema"] * 2
    assert sum(path.endswith("/models") for path, _, _ in fake.requests) == 1  # asked once


def test_a_decimal_scale_on_a_server_that_is_not_vllm_is_one_line_before_any_call():
    scale = SCALES["promptfoo 0.0-1.0"]
    answer = Answer(JsonShape(), (("a", scale),))
    with FakeServer(lambda path, *_: http(200, OTHER_MODELS) if path.endswith("/models") else completion("")) as fake:
        engine = OpenAIEngine("m", OpenAIEngine.Options(base_url=fake.url, retries=0))
        try:
            with pytest.raises(RadarError) as err:
                engine.score([[{"role": "user", "content": "hi"}]], fmt=answer)
        finally:
            engine.close()
    assert "decimal levels" in str(err.value) and "constraint: regex" in str(err.value)
    assert not [p for p, _, _ in fake.requests if p.endswith("/chat/completions")]


@pytest.mark.parametrize("pattern", ["GRADE: ([CPI])", "[[RESULT]] ([CPI]) -#~", "Score = ([CPI])/10"])
def test_a_grade_constraint_compiles_in_xgrammar_without_a_warning(xgrammar, capfd, pattern):
    """Issue 42 item 21: only regex metacharacters are escaped; xgrammar wrote 'Escape sequence \\' \\' is not
    recognized' into engine.log for every grade verdict, pushing a crash's tail out of it."""
    pattern = pattern.replace("[[", "\\[").replace("]]", "\\]")
    answer = Answer(GradeShape(kind="grade", pattern=pattern, reasoning=20), (("a", SCALES["C/P/I"]),))
    capfd.readouterr()
    xgrammar.Grammar.from_regex(answer.regex)
    assert "Warning" not in capfd.readouterr().err
    assert re.fullmatch(answer.regex, "Fine.\n" + pattern.replace("\\", "").replace("([CPI])", "P"))


@pytest.mark.parametrize(("models", "sampling"), [
    (VLLM_MODELS, {"top_p": 1.0, "top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0}),
    (OTHER_MODELS, {"top_p": 1.0}),
])  # fmt: skip
def test_a_served_judge_samples_as_the_offline_engine_does(models, sampling):
    """Issue 60 item 12: a vLLM server applies the model's generation_config.json (Qwen2.5-Instruct: repetition
    penalty 1.05, top_k 20, top_p 0.8) where radar's offline engine applies none: every request now sends the neutral
    values to vLLM (top_p alone elsewhere), and run.json's engine settings record them."""
    with FakeServer(lambda path, *_: http(200, models) if path.endswith("/models") else completion("hi")) as fake:
        engine = OpenAIEngine("m", OpenAIEngine.Options(base_url=fake.url, retries=0))
        try:
            engine.generate([[{"role": "user", "content": "hi"}]], Sampling(1, 0.7, 8), seeds=[1])
            settings = engine.settings()
        finally:
            engine.close()
    (body,) = [json.loads(body) for path, _, body in fake.requests if path.endswith("/chat/completions")]
    assert {k: body.get(k) for k in sampling} == sampling and settings["sampling"] == sampling
    assert body["temperature"] == 0.7 and ("top_k" in body) == ("top_k" in sampling)


def test_auto_with_decimal_levels_on_a_server_that_is_not_vllm_is_refused_before_generation(tmp_path):
    """Issue 60 item 13: `constraint: auto` asked the server only at the first verdict, so a server that is not
    vLLM refused a decimal scale after every probe had been generated; it is asked before the generator runs."""
    from tests.conftest import invoke, one_line_exit_2

    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "id: r\nname: r\nscale: {levels: {'0.0': 0.0, '0.5': 0.5, '1.0': 1.0}}\ncriteria:\n"
        "  - {id: a, label: A, description: The first.}\n  - {id: b, label: B, description: The second.}\n"
    )
    with FakeServer(lambda path, *_: http(200, OTHER_MODELS) if path.endswith("/models") else completion("")) as fake:
        config = tmp_path / "c.yaml"
        config.write_text(
            f"rubric: {rubric}\ntasks: [{{id: t, prompt: Say hi.}}]\ngenerator: {{engine: testing, model: g}}\n"
            f"verifier: {{engine: openai, model: m, options: {{base_url: '{fake.url}', retries: 0}}}}\nn: 1\n"
        )
        one_line_exit_2(invoke("audit", config, "--out", tmp_path / "run", "--quiet"), "decimal levels")
    assert not [p for p, _, _ in fake.requests if p.endswith("/chat/completions")]
    probes = tmp_path / "run" / "probes.jsonl"
    assert not probes.exists() or probes.read_text() == ""  # no probe generated for a judge that cannot answer
