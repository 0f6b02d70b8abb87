"""Engine names to lazily imported classes. An engine module imports its heavy library (torch, vllm)
inside its methods, so its `Options` can be checked when a config is read, before any model loads."""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

from pydantic import BaseModel, ValidationError

from radar_local.engines.base import Engine
from radar_local.engines.vllm import check_vllm_line
from radar_local.errors import InputError, MissingDependencyError
from radar_local.models import go_offline

ENGINES = {
    "vllm": "radar_local.engines.vllm:VLLMEngine",
    "transformers": "radar_local.engines.hf:TransformersEngine",
    "openai": "radar_local.engines.openai:OpenAIEngine",
    "testing": "radar_local.engines.testing:PlantedEngine",
}
# (module, package, extras) each engine needs before it is built
REQUIRES: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "vllm": [("vllm", "vllm", ("gpu", "cpu"))],
    "transformers": [("transformers", "transformers", ("hf",))],  # outlines: at its first constrained answer
}


def engine_class(engine: str) -> Any:  # an Engine class, with its Options model
    module, name = ENGINES[engine].split(":")
    return getattr(importlib.import_module(module), name)


def parse_options(engine: str, options: dict[str, Any]) -> BaseModel:
    """The engine's typed options; ValueError with one line on an option it does not take or a bad value."""
    cls = engine_class(engine).Options
    for key, instead in getattr(cls, "REFUSED", {}).items():
        if key in options:
            raise ValueError(f"engine '{engine}' option '{key}' is not supported: {instead}")
    try:
        return cls.model_validate(options)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"engine '{engine}' option '{key}': {err['msg']}") from None


def engine_gpus(engine: str, options: dict[str, Any]) -> int:
    """GPUs one engine of these options takes where there are GPUs (0: it runs on CPUs, or elsewhere)."""
    gpus = getattr(parse_options(engine, options), "engine_gpus", None)
    return gpus() if gpus is not None else 0


def output_options(engine: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options that change what the engine writes: all but its Options.OPERATIONAL ones."""
    operational = engine_class(engine).Options.OPERATIONAL
    return {key: value for key, value in options.items() if key not in operational}


def build_engine(engine: str, model: str, options: dict[str, Any] | None = None, where: object = "config") -> Engine:
    if engine not in ENGINES:
        raise InputError(where, f"unknown engine '{engine}'; use one of {', '.join(ENGINES)}")
    try:
        opts = parse_options(engine, dict(options or {}))
    except ValueError as exc:
        raise InputError(where, str(exc)) from None
    for module, package, extras in REQUIRES.get(engine, ()):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(package, *extras)
    go_offline()
    if engine == "vllm":
        check_vllm_line()  # before any model loads, not deep inside a stage
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # progress is ours; keep vLLM's INFO chatter out
    return engine_class(engine)(model, opts)
