"""OpenAI-compatible HTTP client for `vllm serve`, a llama.cpp server or any compatible local server.

Standard library only: bounded concurrency with a thread pool, retries with exponential backoff.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from radar_local.engines.base import (
    Completion,
    EngineCounters,
    Finished,
    FinishedSamples,
    JsonFormat,
    StreamBatch,
    in_order,
)
from radar_local.errors import RadarError
from radar_local.prompts import Messages
from radar_local.scoring import ScoreFormat

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
TOP_LOGPROBS = 20  # the most the OpenAI API returns; score tokens outside them count as probability 0


class ServerError(RadarError):
    """The server answered, but not with a usable chat completion."""


class OpenAIEngine(StreamBatch):
    name = "openai"

    class Options(BaseModel):
        model_config = ConfigDict(extra="forbid")
        # The server's address and how radar talks to it; `constraint` changes what it writes, and stays in keys.
        OPERATIONAL: ClassVar[frozenset[str]] = frozenset(
            {"base_url", "api_key_env", "concurrency", "retries", "backoff_s", "timeout_s"}
        )
        base_url: str = Field("http://127.0.0.1:8000/v1", description="Server root, ending in /v1")
        api_key_env: str | None = Field(None, description="Environment variable holding a key, if the server wants one")
        concurrency: int = Field(8, ge=1, le=256)
        retries: int = Field(4, ge=0, le=20)
        backoff_s: float = Field(0.5, ge=0)
        timeout_s: float = Field(600, gt=0)
        constraint: Literal["json_schema", "regex"] = Field(
            "json_schema", description="json_schema: OpenAI response_format; regex: vLLM's structured_outputs field"
        )

    def __init__(self, model: str, options: Options | None = None):
        self.model = model
        self.options = options or self.Options()
        self.url = self.options.base_url.rstrip("/") + "/chat/completions"
        self._pool = ThreadPoolExecutor(self.options.concurrency)

    def _post(self, body: dict) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.options.api_key_env:
            headers["Authorization"] = f"Bearer {os.environ.get(self.options.api_key_env, '')}"
        data = json.dumps(body).encode()
        for attempt in range(self.options.retries + 1):
            try:
                req = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
                with urllib.request.urlopen(req, timeout=self.options.timeout_s) as resp:
                    raw = resp.read()
                return self._checked(raw)
            except urllib.error.HTTPError as exc:
                if exc.code not in RETRY_STATUS or attempt == self.options.retries:
                    detail = " ".join(exc.read().decode(errors="replace").split())[:200]
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise ServerError(
                        f"{self.url} answered HTTP {exc.code}{tries}: {detail or exc.reason}; "
                        "check the server's log, then run again (stored calls are kept)"
                    ) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                if attempt == self.options.retries:
                    raise RadarError(
                        f"cannot reach {self.url} ({getattr(exc, 'reason', exc)}); is the server running?"
                    ) from None
            time.sleep(self.options.backoff_s * 2**attempt)
        raise AssertionError("unreachable")

    def _checked(self, raw: bytes) -> dict:
        """A chat completion with choices, or one line saying what the server sent instead."""
        try:
            resp = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise ServerError(
                f"{self.url} answered with something that is not JSON ({raw[:80]!r}); is base_url an "
                "OpenAI-compatible server's /v1?"
            ) from None
        choices = resp.get("choices") if isinstance(resp, dict) else None
        if (
            not isinstance(choices, list)
            or not choices
            or not all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices)
        ):
            raise ServerError(
                f"{self.url} answered JSON without completion choices ({str(resp)[:120]}); is it a chat "
                "completions endpoint?"
            )
        return resp

    def _completions(self, resp: dict) -> list[Completion]:
        usage = resp.get("usage") or {}
        choices = sorted(resp["choices"], key=lambda c: c.get("index", 0))
        per_choice = (usage.get("completion_tokens") or 0) // max(len(choices), 1)
        return [
            Completion(
                c["message"].get("content") or "",
                usage.get("prompt_tokens") or 0,
                per_choice,
                c.get("finish_reason") or "",
            )
            for c in choices
        ]

    def _stream(self, bodies: list[dict], answer: Callable[[dict], object]) -> Iterator[list]:
        """`concurrency` requests in flight at all times: each thread takes the next body as its last one
        is answered, and answers are yielded as they arrive. An error or Ctrl-C cancels what has not started."""
        futures = {self._pool.submit(self._post, body): i for i, body in enumerate(bodies)}
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                yield [(futures[f], answer(f.result())) for f in sorted(done, key=futures.__getitem__)]
        finally:
            for f in pending:
                f.cancel()

    def generate_stream(
        self, prompts: list[Messages], *, n: int, temperature: float, max_tokens: int, seeds: list[int], chunk: int = 0
    ) -> Iterator[FinishedSamples]:
        bodies = [
            {
                "model": self.model,
                "messages": m,
                "n": n,
                "temperature": temperature,
                "max_tokens": max_tokens,
                "seed": s,
            }
            for m, s in zip(prompts, seeds)
        ]
        return self._stream(bodies, self._completions)

    def score_stream(self, prompts: list[Messages], *, fmt: ScoreFormat, chunk: int = 0) -> Iterator[Finished]:
        if not fmt.expected:
            return self._stream(self._bodies(prompts, fmt, 0.0, None), lambda r: self._completions(r)[0])
        bodies = self._bodies(prompts, fmt, 0.0, None, {"logprobs": True, "top_logprobs": TOP_LOGPROBS})
        return self._stream(bodies, lambda r: replace(self._completions(r)[0], score_logprobs=self._top_logprobs(r)))

    def constrained(
        self, prompts: list[Messages], *, fmt: JsonFormat, temperature: float = 0.0, seeds: list[int] | None = None
    ) -> list[Completion]:
        return in_order(
            self._stream(self._bodies(prompts, fmt, temperature, seeds), lambda r: self._completions(r)[0]),
            len(prompts),
        )

    def settings(self) -> dict:
        return {"concurrency": self.options.concurrency}

    def _bodies(
        self,
        prompts: list[Messages],
        fmt: JsonFormat,
        temperature: float,
        seeds: list[int] | None,
        extra: dict | None = None,
    ) -> list[dict]:
        if self.options.constraint == "regex":
            constraint: dict[str, object] = {"structured_outputs": {"regex": fmt.regex}}
        else:
            constraint = {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": fmt.json_schema(), "strict": True},
                }
            }
        return [
            {
                "model": self.model,
                "messages": m,
                "temperature": temperature,
                "max_tokens": fmt.max_tokens,
                **constraint,
                **(extra or {}),
                **({"seed": seeds[i]} if seeds else {}),
            }
            for i, m in enumerate(prompts)
        ]

    def _top_logprobs(self, resp: dict) -> dict[str, float]:
        """The first answer token's top log-probabilities, or one line saying the server gives none."""
        try:
            top = resp["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
            return {t["token"]: float(t["logprob"]) for t in top}
        except (KeyError, IndexError, TypeError, ValueError):
            raise ServerError(
                f"{self.url} returned no token log-probabilities; scoring mode 'expected' needs a server "
                "that returns top_logprobs (vllm serve does), or use mode 'reasoned'"
            ) from None

    def counters(self) -> EngineCounters:
        """Prefix-cache counters from the server's Prometheus endpoint, where it has one (vllm serve)."""
        root = self.options.base_url.rstrip("/").removesuffix("/v1")
        try:
            with urllib.request.urlopen(f"{root}/metrics", timeout=10) as resp:
                text = resp.read().decode()
        except (urllib.error.URLError, OSError):
            return EngineCounters()
        totals = {"queries": 0.0, "hits": 0.0}
        found = False
        for line in text.splitlines():
            name = line.split("{", 1)[0].split(" ", 1)[0]
            for kind in totals:
                if name in (f"vllm:prefix_cache_{kind}", f"vllm:prefix_cache_{kind}_total"):
                    totals[kind] += float(line.rsplit(" ", 1)[1])
                    found = True
        if not found:
            return EngineCounters()
        return EngineCounters(prefix_cache_queries=int(totals["queries"]), prefix_cache_hits=int(totals["hits"]))

    def close(self) -> None:
        self._pool.shutdown(wait=True)
