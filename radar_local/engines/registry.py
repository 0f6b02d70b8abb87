"""Engine names to lazily imported classes. An engine module imports its heavy library (torch, vllm)
inside its methods, so its `Options` can be checked when a config is read, before any model loads."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Literal

from pydantic import ValidationError

from radar_local.engines.base import Engine, EngineOptions, single_token_ids
from radar_local.errors import EngineStartError, InputError, MissingDependencyError, RadarError
from radar_local.models import go_offline, local_tokenizer
from radar_local.models import resolve as resolve_model

EngineName = Literal["vllm", "transformers", "openai", "testing"]  # a config's `engine` (tests: == ENGINES)
ENGINES = {
    "vllm": "radar_local.engines.vllm:VLLMEngine",
    "transformers": "radar_local.engines.hf:TransformersEngine",
    "openai": "radar_local.engines.openai:OpenAIEngine",
    "testing": "radar_local.engines.testing:PlantedEngine",
}


def engine_class(engine: str) -> Any:  # an Engine class, with its Options model
    module, name = ENGINES[engine].split(":")
    return getattr(importlib.import_module(module), name)


def parse_options(engine: str, options: dict[str, Any]) -> EngineOptions:
    """The engine's typed options; ValueError with one line on an option it does not take or a bad value."""
    cls = engine_class(engine).Options
    for key, instead in cls.REFUSED.items():
        if key in options:
            raise ValueError(f"engine '{engine}' option '{key}' is not supported: {instead}")
    try:
        return cls.model_validate(options)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"engine '{engine}' option '{key}': {err['msg']}") from None


def output_options(engine: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options that change what the engine writes: all but its Options.OPERATIONAL ones."""
    operational = engine_class(engine).Options.OPERATIONAL
    return {key: value for key, value in options.items() if key not in operational}


def build_engine(
    engine: str, model: str, options: EngineOptions | dict[str, Any] | None = None, where: object = "config"
) -> Engine:
    """The engine, loaded; `options` as a config carries them (parsed) or as written."""
    if engine not in ENGINES:
        raise InputError(where, f"unknown engine '{engine}'; use one of {', '.join(ENGINES)}")
    try:
        opts = options if isinstance(options, EngineOptions) else parse_options(engine, dict(options or {}))
    except ValueError as exc:
        raise InputError(where, str(exc)) from None
    for module, package, extras in engine_class(engine).REQUIRES:
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(package, *extras)
    go_offline()
    try:
        return engine_class(engine).load(model, opts)
    except RadarError:
        raise
    except Exception as exc:  # vLLM's start failures reach here as RuntimeError, OSError, ValueError, ...
        raise EngineStartError(engine, model, exc) from exc


def score_token_problem(engine: str, model: str, levels: list[tuple[str, ...]]) -> str | None:
    """Expected mode reads one token position: where the engine's tokenizer is on this machine, each level must be
    one token of it. Checked from the tokenizer alone when the config is resolved, before any model loads (a 1-10
    scale on a Qwen, Gemma or Mistral tokenizer splits "10"); a served model's tokenizer is the server's."""
    if not engine_class(engine).LOCAL_WEIGHTS:
        return None
    path, _ = resolve_model(model)
    try:
        tokenizer = local_tokenizer(path, engine)  # the engine's own: vLLM's for a Mistral-format folder
    except ImportError:
        return None  # the engine's own check runs where it loads
    for tokens in levels:
        try:
            single_token_ids(tokenizer, model, tokens)
        except RadarError as exc:
            return str(exc)
    return None
