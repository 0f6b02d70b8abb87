"""Engine checks that need no model: options, unreachable servers, the registry's context window."""

from __future__ import annotations

from pathlib import Path

import pytest

from radar_local.errors import InputError, RadarError
from radar_local.hardware import cpu_dtype, cpu_info
from radar_local.scoring import ScoreFormat

# /proc/cpuinfo as the two kinds of machine this project runs on print it (flags abridged)
CPU_AVX2 = "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse4_2 avx avx2 fma\n"
CPU_AVX512_BF16 = (
    "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\n"
    "flags\t\t: fpu avx2 avx512f avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8\n"
)

FMT = ScoreFormat(max_reasoning_chars=40, max_rationale_chars=30)


def score_prompts():
    return [[{"role": "user", "content": "Rate this."}]]


def test_openai_engine_names_an_unreachable_server():
    from radar_local.engines.registry import build_engine
    from tests.conftest import free_port

    engine = build_engine(
        "openai", "smol", {"base_url": f"http://127.0.0.1:{free_port()}/v1", "retries": 1, "backoff_s": 0}
    )
    with pytest.raises(RadarError, match="cannot reach .* is the server running"):
        engine.score(score_prompts()[:1], fmt=FMT)


def test_unknown_engine_option_is_an_input_error():
    from radar_local.engines.registry import build_engine

    with pytest.raises(InputError, match="option 'temprature'"):
        build_engine("openai", "smol", {"temprature": 0.1})


def test_registry_context_length_bounds_max_model_len():
    """The registry's context length caps vLLM's max_model_len (checked without starting vLLM)."""
    from radar_local.engines.vllm import VLLMEngine, llm_arguments
    from radar_local.models import ModelEntry

    entry = ModelEntry(context_length=2048)
    for cpu in (None, cpu_info(CPU_AVX2)):  # a GPU build and a CPU build
        assert llm_arguments(VLLMEngine.Options(max_model_len=32768), entry, None, cpu)[0]["max_model_len"] == 2048
        assert llm_arguments(VLLMEngine.Options(max_model_len=1024), entry, None, cpu)[0]["max_model_len"] == 1024


def test_auto_dtype_follows_the_cpus_bf16_arithmetic():
    """A bf16 checkpoint runs bf16 only where the CPU has AVX512_BF16 or AMX, else float32 (4-8x faster there)."""
    from radar_local.engines.vllm import VLLMEngine, llm_arguments

    avx2, bf16 = cpu_info(CPU_AVX2), cpu_info(CPU_AVX512_BF16)
    assert avx2.flags == ("avx2",) and not avx2.bf16_arithmetic and avx2.model == "AMD EPYC 7B13"
    assert bf16.bf16_arithmetic and "amx_bf16" in bf16.flags
    assert (
        cpu_dtype("auto", "bfloat16", avx2)[0] == "float32"
        and "no bf16 arithmetic" in cpu_dtype("auto", "bfloat16", avx2)[1]
    )
    assert cpu_dtype("auto", "bfloat16", bf16) == ("bfloat16", "the CPU has bf16 arithmetic (avx512_bf16, amx_bf16)")
    assert cpu_dtype("auto", "float32", bf16)[0] == "float32"  # a float32 checkpoint stays float32
    assert cpu_dtype("bfloat16", "bfloat16", avx2) == ("bfloat16", "set in the config")  # told otherwise: obeyed
    assert cpu_info("processor: 0\nFeatures\t: fp asimd sve\n").flags == ("asimd", "sve")  # ARM says Features
    kwargs, settings = llm_arguments(VLLMEngine.Options(), None, "bfloat16", avx2)
    assert kwargs["dtype"] == "float32" and settings["cpu"]["bf16_arithmetic"] is False
    assert llm_arguments(VLLMEngine.Options(), None, "bfloat16", bf16)[0]["dtype"] == "bfloat16"
    assert "dtype" not in llm_arguments(VLLMEngine.Options(), None, "bfloat16", None)[0]  # CUDA keeps the checkpoint's


def test_prompt_floor_counts_each_full_block_once():
    """Blocks of 4: [1..9] has two cacheable blocks and a 1-token tail; a prompt sharing the first block
    computes only its second block and tail; a repeat computes only the block its last token sits in."""
    from radar_local.engines.base import prompt_floor

    seen: set[int] = set()
    assert prompt_floor(list(range(1, 10)), 4, seen) == 9  # 2 new blocks x 4 + 1
    assert prompt_floor([1, 2, 3, 4, 7, 7, 7, 7, 7], 4, seen) == 5  # block 1 shared: 1 new block + 1
    assert prompt_floor(list(range(1, 10)), 4, seen) == 1  # both blocks cached: the last token
    assert prompt_floor([1, 2, 3, 4], 4, seen) == 4  # block-aligned: its only block holds the last token
    # issue 34: two samples run as two sequences that share full blocks; each computes the 1-token tail
    assert prompt_floor(list(range(1, 10)), 4, set(), sequences=2) == 8 + 2 * 1


SMOLLM2 = {"num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "hidden_size": 576}
GIB = 1 << 30


def test_a_tokens_kv_bytes_come_from_the_checkpoint_and_the_dtype():
    """SmolLM2-135M: 30 layers x 2 (keys, values) x 3 KV heads x 64 (576 / 9) x 2 bytes = 23,040 in bf16,
    twice that in float32 (the AVX2 machine's dtype)."""
    from radar_local.hardware import kv_bytes_per_token, memory_available

    assert kv_bytes_per_token(SMOLLM2, "bfloat16") == 23_040 and kv_bytes_per_token(SMOLLM2, "float32") == 46_080
    qwen = {
        "text_config": {"num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "head_dim": 128}
    }
    assert kv_bytes_per_token(qwen, "float16") == 28 * 2 * 4 * 128 * 2
    assert kv_bytes_per_token({}, "bfloat16") is None and kv_bytes_per_token(SMOLLM2, "int8") is None
    assert memory_available("MemTotal: 24000000 kB\nMemAvailable:   20650500 kB\n") == 20_650_500 * 1024
    assert memory_available("MemTotal: 1 kB\n") is None


def test_the_kv_cache_holds_the_working_set_within_a_quarter_of_the_memory():
    from radar_local.hardware import SEQUENCE_TOKENS, kv_cache_plan

    # a roomy machine: 256 sequences of 1024 tokens (the target), max_num_seqs stays vLLM's 256
    roomy = kv_cache_plan(23_040, 40 * GIB, 0, 32, 2048, None)
    assert (roomy.tokens, roomy.max_num_seqs) == (256 * SEQUENCE_TOKENS, 256) and "256 sequences" in roomy.reason
    # 20 GiB available, 0.25 GiB of weights, float32: a quarter of 19.75 GiB, floored to 32-token blocks
    plan = kv_cache_plan(46_080, 20 * GIB, GIB // 4, 32, 2048, None)
    tokens = (19.75 * GIB / 4) // 46_080 // 32 * 32
    assert plan.tokens == tokens and plan.bytes == tokens * 46_080 and plan.bytes <= (20 * GIB - GIB // 4) / 4
    assert plan.max_num_seqs == tokens // SEQUENCE_TOKENS and "a quarter of the 20.0 GiB" in plan.reason
    # a config's max_num_seqs is kept, and sizes the target
    assert kv_cache_plan(23_040, 40 * GIB, 0, 32, 2048, 64).max_num_seqs == 64
    assert kv_cache_plan(23_040, 40 * GIB, 0, 32, 2048, 64).tokens == 64 * SEQUENCE_TOKENS
    # a machine with no room still gets one whole sequence (vLLM refuses less), and one sequence at a time
    tiny = kv_cache_plan(46_080, GIB // 8, GIB, 32, 2048, None)
    assert (tiny.tokens, tiny.max_num_seqs) == (2048, 2)


def test_the_cpu_engines_arguments_carry_the_plan_and_its_reason():
    from radar_local.engines.vllm import VLLMEngine, llm_arguments

    avx2 = cpu_info(CPU_AVX2)
    kwargs, settings = llm_arguments(
        VLLMEngine.Options(max_model_len=2048), None, "bfloat16", avx2, None, SMOLLM2, (20 * GIB, 0)
    )
    assert kwargs["dtype"] == "float32" and kwargs["kv_cache_memory_bytes"] == settings["kv_cache_memory_bytes"]
    assert settings["kv_cache_tokens"] == kwargs["kv_cache_memory_bytes"] // 46_080 and kwargs["max_num_seqs"] < 256
    assert settings["kv_cache_reason"].startswith(f"{settings['kv_cache_tokens']:,} tokens at 46,080 bytes each")
    told = VLLMEngine.Options(kv_cache_memory_bytes=GIB)
    kwargs, settings = llm_arguments(told, None, "bfloat16", avx2, None, SMOLLM2, (20 * GIB, 0))
    assert kwargs["kv_cache_memory_bytes"] == GIB and "max_num_seqs" not in kwargs
    assert settings["kv_cache_reason"] == "set in the config"
    kwargs, settings = llm_arguments(VLLMEngine.Options(), None, "bfloat16", avx2)  # nothing to size it from
    assert kwargs["kv_cache_memory_bytes"] == GIB and settings["kv_cache_reason"].startswith("1 GiB")


def test_a_planted_engine_is_not_warned_about_memory_it_never_took(capsys, monkeypatch):
    from radar_local import pool as pool_module
    from radar_local.pool import EnginePool
    from radar_local.specs import ModelSpec

    frees = iter([{"memory": 8 << 30}, {"memory": 7 << 30}, {"memory": 7 << 30}])  # others took 1 GiB meanwhile
    monkeypatch.setattr(pool_module, "memory_free", lambda: next(frees))
    pool = EnginePool()
    pool.get(ModelSpec(engine="testing", model="p"))
    pool.close()
    assert "gave back" not in capsys.readouterr().err


def test_a_request_vllm_refuses_in_the_first_window_leaves_the_engine_awake():
    """Issue 60 item 13: the first window is admitted with the scheduler paused (engine.sleep(level=0)); a request
    vLLM refused there (a prompt over its window) raised past the wake-up and left the engine paused for every later
    stage. Here on an engine object whose vLLM refuses its second request."""
    from radar_local.engines.vllm import VLLMEngine

    class Refusing:
        def __init__(self):
            self.calls: list[str] = []

        def sleep(self, **_):
            self.calls.append("sleep")

        def wake_up(self, **_):
            self.calls.append("wake")

        def add_request(self, request_id, *_):
            if request_id.endswith("-1"):
                raise ValueError("This model's maximum context length is 8 tokens")
            self.calls.append("add")

        def abort_request(self, ids):
            self.calls.append("abort")

    class Tokenizer:
        def apply_chat_template(self, messages, **_):
            return messages[-1]["content"]

        def encode(self, text, **_):
            return [1] * len(text)

    engine = object.__new__(VLLMEngine)
    engine.model = "m"
    inner = Refusing()
    engine.llm = type("LLM", (), {"llm_engine": inner, "get_tokenizer": lambda self: Tokenizer()})()
    engine.max_num_seqs, engine.block_size, engine._floor, engine._seen_blocks = 8, 16, 0, set()
    engine._ids, engine._mail = iter(range(100)), {}
    from vllm import SamplingParams

    prompts = [[{"role": "user", "content": "hi"}], [{"role": "user", "content": "too long"}]]
    with pytest.raises(RadarError, match="vLLM refused a request of 8 prompt tokens .*maximum context length"):
        next(engine._stream(prompts, [SamplingParams(max_tokens=1), SamplingParams(max_tokens=1)]))
    assert inner.calls == ["sleep", "add", "wake", "abort"]  # and one line, not vLLM's traceback (item 7)


def test_a_mistral_format_checkpoint_is_asked_its_own_ids(tmp_path):
    """Issue 60 item 1: a folder with a Mistral tokenizer file makes vLLM pick its MistralTokenizer, whose `encode`
    does not parse control tokens: radar rendered the chat to text and re-encoded it, so `<s>[INST]` reached the
    model as plain-text tokens. Its ids are now the tokenizer's own chat template's (mistral_common's v3 tokenizer,
    shipped with it), for a question and for a reasoning continued."""
    import shutil

    mistral_common = pytest.importorskip("mistral_common")
    from vllm.tokenizers.mistral import MistralTokenizer

    from radar_local.engines.vllm import VLLMEngine

    data = Path(mistral_common.__file__).parent / "data" / "mistral_instruct_tokenizer_240323.model.v3"
    shutil.copy(data, tmp_path / "tokenizer.model.v3")
    tokenizer = MistralTokenizer.from_pretrained(str(tmp_path))
    asked = [{"role": "user", "content": "Rate it."}]
    ids = VLLMEngine.prompt_token_ids(tokenizer, asked)
    assert ids == tokenizer.apply_chat_template(asked, tokenize=True, add_generation_prompt=True)
    assert ids[:2] == [tokenizer.bos_token_id, 3]  # <s>, then [INST] as its one control id
    continued = [*asked, {"role": "assistant", "content": "<think> fine </think>"}]
    assert VLLMEngine.prompt_token_ids(tokenizer, continued)[: len(ids)] == ids
