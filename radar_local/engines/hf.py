"""transformers + outlines engine, for machines without vLLM: batched `generate`, outlines-constrained scoring."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from radar_local.engines.base import (
    BatchStream,
    Completion,
    EngineCounters,
    EngineOptions,
    JsonFormat,
    Sampling,
    ScoreFormat,
    chat_text,
    single_token_ids,
)
from radar_local.errors import MissingDependencyError, RadarError
from radar_local.models import resolve
from radar_local.prompts import Messages

if TYPE_CHECKING:
    import torch


class TransformersEngine(BatchStream):
    name = "transformers"
    LOCAL_WEIGHTS = True
    REQUIRES = (("transformers", "transformers", ("hf",)),)  # outlines: at its first constrained answer

    class Options(EngineOptions):
        OPERATIONAL: ClassVar[frozenset[str]] = frozenset({"device", "batch_size"})  # left out of content keys
        device: str = Field("auto", description="auto, cpu, cuda, cuda:1, ...")
        dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
            "auto", description="auto: bfloat16 on CUDA, float32 on CPU (faster there)"
        )
        batch_size: int = Field(16, ge=1, description="Prompts per scoring batch")
        runner: Literal["generate", "reward"] = Field(
            "generate",
            description="reward: the checkpoint's sequence-classification head with one output scores each "
            "conversation (a reward model); a checkpoint without one gets a seeded random head, a smoke test only",
        )

        def engine_gpus(self) -> int:
            """One GPU where there are GPUs, unless told to run on the CPU."""
            return 0 if self.device == "cpu" else 1

    def __init__(self, model: str, options: Options | None = None):
        self.model = model
        self.options = options or self.Options()
        self.path, _ = resolve(model)  # a missing model is one line before torch's seconds of import

        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = self.options.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = self.options.dtype
        if dtype == "auto":
            dtype = "bfloat16" if device.startswith("cuda") else "float32"
        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.tokenizer.padding_side = "left"  # every row's last position is its last real token
        if self.tokenizer.pad_token is None:  # batches only: a left pad is masked out, whatever its id
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if self.options.runner == "reward":
            from transformers import AutoModelForSequenceClassification

            torch.manual_seed(0)  # a head the checkpoint lacks starts from these weights, every time
            loaded = AutoModelForSequenceClassification.from_pretrained(
                self.path, num_labels=1, dtype=getattr(torch, dtype)
            )  # its config's pad id stays the checkpoint's: the head is read at the last position (reward)
        else:
            loaded = AutoModelForCausalLM.from_pretrained(self.path, dtype=getattr(torch, dtype))
        self.hf = loaded.to(self.device).eval()
        self._processors: dict[str, object] = {}
        self._settings: dict = {"device": str(self.device), "dtype": dtype, "batch_invariant": False}
        if self.device.type == "cuda":
            self._settings["devices"] = [torch.cuda.get_device_name(self.device)]

    def settings(self) -> dict:
        return dict(self._settings)

    def reward(self, prompts: list[Messages]) -> list[float]:
        """The reward head's one output for each conversation (its last message the response), batch by batch."""
        import torch

        if self.options.runner != "reward":
            raise RadarError(f"{self.model}: a reward is scored with the transformers option runner: reward")
        out: list[float] = []
        for start in range(0, len(prompts), self.options.batch_size):
            texts = [
                self.tokenizer.apply_chat_template(m, tokenize=False)
                for m in prompts[start : start + self.options.batch_size]
            ]
            inputs = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            with torch.inference_mode():
                out += self._last_token_reward(inputs).float().tolist()
        return out

    def _last_token_reward(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """The head's one output at each row's last token. Left-padded, that is the last position; the checkpoint's
        own pooling takes the rightmost token that is not its pad id, one too early where a turn ends with that id
        (a tokenizer without a pad token padded with eos; Llama-3.1's turns end with <|eot_id|>). Positions count
        real tokens only, as generate() does, so a row's reward does not move with its batch."""
        base, head = getattr(self.hf, self.hf.base_model_prefix, None), getattr(self.hf, "score", None)
        if base is None or head is None:  # another head shape (a classifier over a pooled output): its own rule
            return self.hf(**inputs).logits[:, 0]
        mask = inputs["attention_mask"]
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        hidden = base(input_ids=inputs["input_ids"], attention_mask=mask, position_ids=positions).last_hidden_state
        return head(hidden[:, -1])[:, 0]

    def _encode(self, prompts: list[Messages], thinking: bool = True) -> dict[str, torch.Tensor]:
        texts = [chat_text(self.tokenizer, m, thinking) for m in prompts]
        return self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)

    def _completions(self, inputs, out_ids, per_prompt: int) -> list[Completion]:
        prompt_len = inputs["input_ids"].shape[1]
        real_prompt = inputs["attention_mask"].sum(dim=1).tolist()
        eos = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        result = []
        for row, ids in enumerate(out_ids[:, prompt_len:].tolist()):
            used = next((i for i, t in enumerate(ids) if t in eos), None)
            n_out = len(ids) if used is None else used + 1
            text = self.tokenizer.decode(ids[:n_out], skip_special_tokens=True)
            result.append(
                Completion(text, int(real_prompt[row // per_prompt]), n_out, "length" if used is None else "stop")
            )
        return result

    def generate(self, prompts: list[Messages], sampling: Sampling, *, seeds: list[int]) -> list[list[Completion]]:
        import torch

        n, temperature = sampling.n, sampling.temperature
        ends = {"stop_strings": list(sampling.stop), "tokenizer": self.tokenizer} if sampling.stop else {}
        out = []
        for messages, seed in zip(prompts, seeds):  # one seeded batch of n samples per prompt: reproducible
            inputs = self._encode([messages])
            torch.manual_seed(seed)
            with torch.inference_mode():
                ids = self.hf.generate(
                    **inputs,
                    do_sample=temperature > 0,
                    temperature=temperature or None,
                    max_new_tokens=sampling.max_tokens,
                    num_return_sequences=n,
                    pad_token_id=self.tokenizer.pad_token_id,
                    **ends,
                )
            out.append(self._completions(inputs, ids, n))
        return out

    def _regex_processor(self, regex: str):
        if regex not in self._processors:
            try:  # only reasoned scoring and the editor need it: expected-mode scoring runs without
                import outlines
                from outlines.backends import get_regex_logits_processor
            except ImportError:
                raise MissingDependencyError("outlines", "hf") from None

            self._processors[regex] = get_regex_logits_processor(
                None, outlines.from_transformers(self.hf, self.tokenizer), regex
            )
        return self._processors[regex]

    def constrained(
        self, prompts: list[Messages], *, fmt: JsonFormat, temperature: float = 0.0, seeds: list[int] | None = None
    ) -> list[Completion]:
        """Greedy answers in batches; sampled ones one prompt at a time, each under its own seed."""
        import torch
        from transformers import LogitsProcessorList

        processor = self._regex_processor(fmt.regex)
        sample = temperature > 0 and seeds is not None
        seeds = seeds or []
        size = 1 if sample else self.options.batch_size
        out: list[Completion] = []
        for start in range(0, len(prompts), size):
            inputs = self._encode(prompts[start : start + size], thinking=False)  # an answer asked at once
            processor.reset()
            if sample:
                torch.manual_seed(seeds[start])
            with torch.inference_mode():
                ids = self.hf.generate(
                    **inputs,
                    do_sample=sample,
                    temperature=temperature if sample else None,
                    max_new_tokens=fmt.max_tokens,
                    logits_processor=LogitsProcessorList([processor]),
                    pad_token_id=self.tokenizer.pad_token_id,
                )
            out.extend(self._completions(inputs, ids, 1))
        return out

    def score(self, prompts: list[Messages], *, fmt: ScoreFormat) -> list[Completion]:
        """Verdicts in batches of prompts of similar length (less padding), returned in request order."""
        # the template adds the same text to every prompt, so content length orders them as tokens do
        order = sorted(range(len(prompts)), key=lambda i: sum(len(m["content"]) for m in prompts[i]))
        ranked = [prompts[i] for i in order]
        answers = self._expected_scores(ranked, fmt.tokens) if fmt.expected else self.constrained(ranked, fmt=fmt)
        out: list[Completion] = [None] * len(prompts)  # type: ignore[list-item]
        for i, answer in zip(order, answers):
            out[i] = answer
        return out

    def _expected_scores(self, prompts: list[Messages], tokens: tuple[str, ...]) -> list[Completion]:
        """One forward pass per batch: the log-probabilities of the score tokens at the answer's first position."""
        import torch

        ids = single_token_ids(self.tokenizer, self.model, tokens)
        out: list[Completion] = []
        for start in range(0, len(prompts), self.options.batch_size):
            inputs = self._encode(prompts[start : start + self.options.batch_size], thinking=False)
            mask = inputs["attention_mask"]
            with torch.inference_mode():  # left padding: positions count real tokens only, as generate() does
                logits = self.hf(**inputs, position_ids=(mask.cumsum(-1) - 1).clamp(min=0)).logits[:, -1, :]
            logprobs = torch.log_softmax(logits.float(), dim=-1)[:, ids].tolist()
            for row, lps in enumerate(logprobs):
                best = max(range(len(ids)), key=lps.__getitem__)
                out.append(Completion(tokens[best], int(mask[row].sum()), 1, "length", dict(zip(tokens, lps))))
        return out

    def counters(self) -> EngineCounters:
        return EngineCounters()

    def close(self) -> None:
        import torch

        del self.hf
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
