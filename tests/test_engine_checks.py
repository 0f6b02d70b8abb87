"""Engine checks that need no model: options, unreachable servers, the registry's context window."""

import pytest

from radar_local.errors import RadarError
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
    from radar_local.errors import InputError

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
