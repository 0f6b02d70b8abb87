"""Engine checks that need no model: options, unreachable servers, the registry's context window."""

import pytest

from radar_local.errors import RadarError
from radar_local.scoring import ScoreFormat

FMT = ScoreFormat(max_reasoning_chars=40, max_rationale_chars=30)


def score_prompts():
    return [[{"role": "user", "content": "Rate this."}]]


def test_openai_engine_names_an_unreachable_server():
    from radar_local.engines.registry import build_engine
    from tests.conftest import free_port

    engine = build_engine("openai", "smol", {"base_url": f"http://127.0.0.1:{free_port()}/v1", "retries": 1, "backoff_s": 0})
    with pytest.raises(RadarError, match="cannot reach .* is the server running"):
        engine.score(score_prompts()[:1], fmt=FMT)


def test_unknown_engine_option_is_an_input_error():
    from radar_local.engines.registry import build_engine
    from radar_local.errors import InputError

    with pytest.raises(InputError, match="option 'temprature'"):
        build_engine("openai", "smol", {"temprature": 0.1})


def test_registry_context_length_bounds_max_model_len(monkeypatch):
    """The registry's context length caps vLLM's max_model_len (checked without starting vLLM)."""
    from radar_local.engines.vllm import VLLMEngine
    from radar_local.models import ModelEntry

    seen = {}

    class FakeLLM:  # stands in for vllm.LLM only to capture the arguments
        def __init__(self, **kwargs):
            seen.update(kwargs)

    import sys
    import types

    fake = types.ModuleType("vllm")
    fake.LLM = FakeLLM
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: False)
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    monkeypatch.setattr("radar_local.engines.vllm.resolve", lambda m: ("/models/x", ModelEntry(context_length=2048)))
    VLLMEngine("x", VLLMEngine.Options(max_model_len=32768))
    assert seen["max_model_len"] == 2048
    VLLMEngine("x", VLLMEngine.Options(max_model_len=1024))
    assert seen["max_model_len"] == 1024
