"""OpenAI-compatible HTTP client for `vllm serve`, a llama.cpp server or any compatible local server.

Standard library only: bounded concurrency with a thread pool, retries with exponential backoff.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import ClassVar, Literal

from pydantic import Field, field_validator

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
)
from radar_local.errors import RadarError
from radar_local.prompts import Messages

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
TOP_LOGPROBS = 20  # the most the OpenAI API returns; score tokens outside them count as probability 0
MAX_BODY = 64 << 20  # bytes of one answer: n samples of a long generation fit many times over
MAX_COUNT = 1 << 31  # a token count beyond this is no count a server could have made


class ServerError(RadarError):
    """The server answered, but not with a usable chat completion (`status` and `detail`: its HTTP error status and
    what it said, where it answered one)."""

    def __init__(self, message: str, status: int | None = None, detail: str = ""):
        super().__init__(message)
        self.status, self.detail = status, detail


class OpenAIOptions(EngineOptions):
    # The server's address and how radar talks to it; `constraint` changes what it writes, and stays in keys.
    OPERATIONAL: ClassVar[frozenset[str]] = frozenset(
        {"base_url", "remote", "api_key_env", "concurrency", "retries", "backoff_s", "timeout_s"}
    )
    base_url: str = Field("http://127.0.0.1:8000/v1", description="Server root, ending in /v1")
    remote: bool = Field(
        False, description="Allow a base_url host that is not a loopback or private address (local servers only)"
    )
    api_key_env: str | None = Field(None, description="Environment variable holding a key, if the server wants one")
    concurrency: int = Field(8, ge=1, le=256)
    retries: int = Field(4, ge=0, le=20)
    backoff_s: float = Field(0.5, ge=0, le=600, description="First wait before a retry; doubles each time")
    timeout_s: float = Field(600, gt=0, le=86400, description="Seconds a request may take")
    constraint: Literal["auto", "json_schema", "regex"] = Field(
        "auto",
        description="auto: regex where the server says it is vLLM (GET /v1/models, owned_by vllm), json_schema "
        "elsewhere; json_schema: OpenAI response_format; regex: vLLM's structured_outputs field",
    )

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"'{url[:80]}' is not an http:// or https:// address with a host")
        return url


class Connection:
    """One server's address and how radar talks to it: no proxy (it would see the key), no redirect (an API call
    answers where it was sent), retries with backoff, and each answer checked before it is read."""

    def __init__(self, options: OpenAIOptions):
        self.options = options
        self.url = options.base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Content-Type": "application/json", **self.authorization()}
        if not options.remote:
            _local_or_refuse(options.base_url)
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())

    def is_vllm(self) -> bool:
        """Whether GET /v1/models lists the model as vLLM's (`owned_by: vllm`); no on any other answer."""
        req = urllib.request.Request(self.options.base_url.rstrip("/") + "/models", headers=self._headers)
        try:
            with self.opener.open(req, timeout=min(self.options.timeout_s, 30)) as resp:
                listed = json.loads(resp.read(1 << 20))
            models = listed.get("data") if isinstance(listed, dict) else None
            return isinstance(models, list) and any(isinstance(m, dict) and m.get("owned_by") == "vllm" for m in models)
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError, RecursionError):
            return False

    def authorization(self) -> dict[str, str]:
        name = self.options.api_key_env
        if not name:
            return {}
        key = os.environ.get(name, "")
        if not key:
            raise RadarError(
                f"api_key_env names {name}, which is not set (or empty); export it, or drop api_key_env "
                "if the server wants no key"
            )
        return {"Authorization": f"Bearer {key}"}

    def post(self, body: dict) -> dict:
        data = json.dumps(body).encode()
        for attempt in range(self.options.retries + 1):
            last = attempt == self.options.retries
            try:
                req = urllib.request.Request(self.url, data=data, headers=self._headers, method="POST")
                with self.opener.open(req, timeout=self.options.timeout_s) as resp:
                    raw = resp.read(MAX_BODY + 1)
                    if len(raw) > MAX_BODY:
                        raise ServerError(
                            f"{self.url} answered more than {MAX_BODY >> 20} MiB; is it the model server?"
                        )
                    if resp.length:  # a body shorter than its Content-Length: the answer was torn
                        raise http.client.IncompleteRead(raw, resp.length)
                return self.checked(raw)
            except urllib.error.HTTPError as exc:
                if 300 <= exc.code < 400:
                    where = _printable(exc.headers.get("Location") or "nowhere")
                    raise ServerError(
                        f"{self.url} answered a redirect (HTTP {exc.code}) to {where}; radar never follows a "
                        "redirect with an API call: set base_url to the server's own address"
                    ) from None
                if exc.code not in RETRY_STATUS or last:
                    detail = _printable(" ".join(exc.read(4096).decode(errors="replace").split()))
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise ServerError(
                        f"{self.url} answered HTTP {exc.code}{tries}: {detail or _printable(str(exc.reason))}; "
                        "check the server's log, then run again (stored calls are kept)",
                        status=exc.code,
                        detail=detail,
                    ) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                if last:
                    raise RadarError(
                        f"cannot reach {self.url} ({_printable(str(getattr(exc, 'reason', exc)))}); "
                        "is the server running?"
                    ) from None
            except (http.client.HTTPException, OSError, ValueError) as exc:  # a torn or non-HTTP answer
                if last:
                    raise ServerError(
                        f"{self.url} sent a broken HTTP answer ({type(exc).__name__}: {_printable(str(exc))}) "
                        f"{attempt + 1} time(s); is base_url an OpenAI-compatible server?"
                    ) from None
            time.sleep(self.options.backoff_s * 2**attempt)
        raise AssertionError("unreachable")

    def checked(self, raw: bytes) -> dict:
        """A chat completion with choices, or one line saying what the server sent instead."""
        try:
            resp = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
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


class OpenAIEngine(StreamBatch):
    name = "openai"
    LOCAL_WEIGHTS = False

    Options = OpenAIOptions

    def __init__(self, model: str, options: OpenAIOptions | None = None):
        self.model = model
        self.options = options or self.Options()
        self.server = Connection(self.options)
        self.url = self.server.url
        self._pool = ThreadPoolExecutor(self.options.concurrency)
        self._constraint: str | None = None if self.options.constraint == "auto" else self.options.constraint

    @property
    def constraint(self) -> str:
        """The constraint this engine sends. `auto` asks the server once: vLLM ignores a request's
        `disable_any_whitespace` (only its server flag counts), so a JSON schema lets a served judge pad its
        answer with newlines past `max_tokens`; a regex cannot pad, and holds decimal levels as written."""
        if self._constraint is None:
            self._constraint = "regex" if self.server.is_vllm() else "json_schema"
        return self._constraint

    def _completions(self, resp: dict) -> list[Completion]:
        """The answer's choices in their `index` order (as sent where the indices are not distinct
        integers); counts and texts that are not what they claim become 0 and visible text."""
        usage = resp.get("usage")
        if not isinstance(usage, dict):
            usage = {}
        choices = resp["choices"]
        index = [c.get("index") for c in choices]
        if all(type(i) is int for i in index) and len(set(index)) == len(index):
            choices = [c for _, c in sorted(zip(index, choices), key=lambda pair: pair[0])]
        per_choice = _count(usage.get("completion_tokens")) // len(choices)
        return [
            Completion(
                _text(c["message"].get("content")),
                _count(usage.get("prompt_tokens")),
                per_choice,
                _printable(str(c.get("finish_reason") or "")),
                reasoning=_split_reasoning(c["message"]),
            )
            for c in choices
        ]

    def _stream(self, bodies: list[dict], answer: Callable[[dict], object]) -> Iterator[list]:
        """`concurrency` requests in flight at all times: each thread takes the next body as its last one
        is answered, and answers are yielded as they arrive. At most twice `concurrency` are queued, so a stream
        opened meanwhile (a thinking judge's verdicts, asked while its other reasonings run) waits behind those
        only. An error or Ctrl-C cancels what has not started."""
        futures: dict = {}
        pending: set = set()
        window, submitted = 2 * self.options.concurrency, 0
        try:
            while submitted < len(bodies) or pending:
                for i in range(submitted, min(len(bodies), submitted + window - len(pending))):
                    future = self._pool.submit(self.server.post, bodies[i])
                    futures[future] = i
                    pending.add(future)
                    submitted = i + 1
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                yield [(futures.pop(f), answer(f.result())) for f in sorted(done, key=futures.__getitem__)]
        finally:
            for f in pending:
                f.cancel()

    def generate_stream(
        self, prompts: list[Messages], sampling: Sampling, *, seeds: list[int], chunk: int = 0
    ) -> Iterator[FinishedSamples]:
        # a stop is sent where the server keeps it in the text (vLLM's include_stop_str_in_output): the OpenAI API
        # drops it, and a reasoning is read up to its end marker (reasoning.py)
        stop = sampling.stop
        ends = {"stop": list(stop), "include_stop_str_in_output": True} if stop and self.constraint == "regex" else {}
        bodies = [
            {
                "model": self.model,
                "messages": m,
                "n": sampling.n,
                "temperature": sampling.temperature,
                **self.sampling,
                "max_tokens": sampling.max_tokens,
                "seed": s,
                **ends,
            }
            for m, s in zip(prompts, seeds)
        ]
        return self._stream(bodies, self._completions)

    def score_stream(self, prompts: list[Messages], *, fmt: ScoreFormat, chunk: int = 0) -> Iterator[Finished]:
        if not fmt.expected:
            return self._stream(self._bodies(prompts, fmt, 0.0, None), self._verdict)
        bodies = self._bodies(prompts, fmt, 0.0, None, {"logprobs": True, "top_logprobs": TOP_LOGPROBS})
        return self._stream(bodies, lambda r: replace(self._verdict(r), score_logprobs=self._top_logprobs(r)))

    def _verdict(self, resp: dict) -> Completion:
        """A constrained answer, with the constraint the server was sent."""
        return replace(self._completions(resp)[0], constraint=self.constraint)

    def constrained(
        self, prompts: list[Messages], *, fmt: JsonFormat, temperature: float = 0.0, seeds: list[int] | None = None
    ) -> list[Completion]:
        return in_order(
            self._stream(self._bodies(prompts, fmt, temperature, seeds), self._verdict),
            len(prompts),
        )

    def continuation_problem(self, messages: Messages) -> str | None:
        """One request continuing the turn (one token): a server whose chat template drops an assistant turn's
        reasoning (DeepSeek-R1-Distill's, QwQ's) refuses continue_final_message with HTTP 400, which would end the
        stage after its reasonings were paid for."""
        body = {"model": self.model, "messages": messages, "max_tokens": 1, "temperature": 0.0, **continuing(messages)}
        try:
            self.server.post(body)
        except ServerError as exc:
            if exc.status != 400:
                raise
            return (
                f"{self.url} refuses to continue the judge's turn after its reasoning (continue_final_message: "
                f"{exc.detail or 'HTTP 400'}): its chat template drops an assistant turn's "
                "reasoning, as DeepSeek-R1-Distill's and QwQ's do; serve the judge with a template that keeps it "
                "(vllm serve --chat-template), or run it on the vllm engine"
            )
        return None

    def settings(self) -> dict:
        return {"concurrency": self.options.concurrency, "constraint": self.constraint, "sampling": self.sampling}

    @property
    def sampling(self) -> dict[str, float]:
        """The sampling fields every request sends beside its temperature. A vLLM server (one that takes the regex
        constraint) applies the model's generation_config.json otherwise (Qwen2.5-Instruct: repetition_penalty 1.05,
        top_k 20, top_p 0.8), which the offline engine never does: the neutral values make both engines sample
        alike. Another server is sent the OpenAI API's top_p alone (its other defaults are its own)."""
        if self.constraint == "regex":
            return {"top_p": 1.0, "top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0}
        return {"top_p": 1.0}

    def _bodies(
        self,
        prompts: list[Messages],
        fmt: JsonFormat,
        temperature: float,
        seeds: list[int] | None,
        extra: dict | None = None,
    ) -> list[dict]:
        if self.constraint == "regex":
            constraint: dict[str, object] = {"structured_outputs": {"regex": fmt.regex}}
        else:
            try:
                schema = fmt.json_schema()
            except ValueError as exc:
                raise RadarError(
                    f"{self.url}: {exc}; set the openai engine's option `constraint: regex` for a server that "
                    "takes vLLM's structured_outputs (vllm serve does)"
                ) from None
            constraint = {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": schema, "strict": True},
                }
            }
        return [
            {
                "model": self.model,
                "messages": m,
                "temperature": temperature,
                **self.sampling,
                "max_tokens": fmt.max_tokens,
                **constraint,
                **(extra or {}),
                **({"seed": seeds[i]} if seeds else {}),
                **continuing(m),
            }
            for i, m in enumerate(prompts)
        ]

    def _top_logprobs(self, resp: dict) -> list[tuple[object, object]]:
        """The first answer token's top (token, log-probability) pairs as sent (scoring.expected_score
        checks them: a NaN or a token listed twice is one unscored verdict), or one line saying the
        server gives none."""
        try:
            top = resp["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
            if not isinstance(top, list):
                raise TypeError(top)
            return [(t.get("token"), t.get("logprob")) if isinstance(t, dict) else (None, t) for t in top]
        except (KeyError, IndexError, TypeError, ValueError):
            raise ServerError(
                f"{self.url} returned no token log-probabilities; scoring mode 'expected' needs a server "
                "that returns top_logprobs (vllm serve does), or use mode 'reasoned'"
            ) from None

    def counters(self) -> EngineCounters:
        """Prefix-cache counters from the server's Prometheus endpoint, where it has one (vllm serve)."""
        root = self.options.base_url.rstrip("/").removesuffix("/v1")
        try:
            with self.server.opener.open(f"{root}/metrics", timeout=10) as resp:
                text = resp.read(MAX_BODY).decode()
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError):
            return EngineCounters()
        totals = {"queries": 0.0, "hits": 0.0}
        found = False
        for line in text.splitlines():
            name = line.split("{", 1)[0].split(" ", 1)[0]
            for kind in totals:
                if name in (f"vllm:prefix_cache_{kind}", f"vllm:prefix_cache_{kind}_total"):
                    try:
                        totals[kind] += float(line.rsplit(" ", 1)[1])
                    except ValueError:
                        continue
                    found = True
        if not found or not all(0 <= v < MAX_COUNT for v in totals.values()):  # NaN fails both
            return EngineCounters()
        return EngineCounters(prefix_cache_queries=int(totals["queries"]), prefix_cache_hits=int(totals["hits"]))

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # urllib then raises the 3xx as an HTTPError, which _post explains


def _local_or_refuse(base_url: str) -> None:
    """A loopback or private host (the local servers radar is for), or one line; a name is resolved."""
    host = urllib.parse.urlsplit(base_url).hostname or ""
    try:
        addresses = {ipaddress.ip_address(host)}
    except ValueError:
        try:
            addresses = {ipaddress.ip_address(str(a[4][0]).split("%")[0]) for a in socket.getaddrinfo(host, None)}
        except (OSError, UnicodeError, ValueError):
            return  # not resolvable here: the first call says it cannot reach the server
    public = sorted(str(a) for a in addresses if not (a.is_loopback or a.is_private or a.is_link_local))
    if public:
        raise RadarError(
            f"base_url {_printable(base_url)} is not a loopback or private address ({', '.join(public)}); radar "
            "audits with local servers: set the engine option remote: true if you mean this one"
        )


def _count(value: object) -> int:
    """A server's token count, where it is one (a non-negative integer of a sane size), else 0."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if type(value) is int and 0 <= value < MAX_COUNT else 0


def _split_reasoning(message: dict) -> str | None:
    """The reasoning a server's reasoning parser split off the answer (vLLM: `reasoning`, older `reasoning_content`),
    where it did; None otherwise."""
    for field in ("reasoning", "reasoning_content"):
        if (text := _text(message.get(field))).strip():
            return text
    return None


def _text(content: object) -> str:
    """A message's content: a string, the text parts of a list of parts, or anything else shown as JSON
    (the verdict then does not parse and is stored unscored, with this text)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    return json.dumps(content)[:10_000]


def _printable(text: str, limit: int = 200) -> str:
    """Server-chosen text for a one-line message: printable, one line, bounded."""
    return "".join(ch if ch.isprintable() else " " for ch in text)[:limit]


def continuing(messages: Messages) -> dict:
    """vLLM's chat options that continue a final assistant message (a thinking judge's reasoning, reasoning.py)
    instead of starting a new turn after it."""
    if messages and messages[-1]["role"] == "assistant":
        return {"continue_final_message": True, "add_generation_prompt": False}
    return {}
