"""Engine names to lazy factories: the factory checks the optional dependency, then imports."""

from __future__ import annotations

import importlib.util
import os
from typing import Any, Callable

from pydantic import ValidationError

from radar_local.engines.base import Engine
from radar_local.errors import InputError, MissingDependencyError
from radar_local.models import go_offline


def _needs(module: str, package: str, *extras: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise MissingDependencyError(package, *extras)


def _vllm(model: str, options: dict) -> Engine:
    _needs("vllm", "vllm", "gpu", "cpu")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # progress is ours; keep vLLM's INFO chatter out
    from radar_local.engines.vllm import VLLMEngine

    return VLLMEngine(model, VLLMEngine.Options.model_validate(options))


def _transformers(model: str, options: dict) -> Engine:
    _needs("transformers", "transformers", "hf")
    _needs("outlines", "outlines", "hf")
    from radar_local.engines.hf import TransformersEngine

    return TransformersEngine(model, TransformersEngine.Options.model_validate(options))


def _openai(model: str, options: dict) -> Engine:
    from radar_local.engines.openai import OpenAIEngine

    return OpenAIEngine(model, OpenAIEngine.Options.model_validate(options))


def _testing(model: str, options: dict) -> Engine:
    from radar_local.engines.testing import PlantedEngine

    return PlantedEngine(model, PlantedEngine.Options.model_validate(options))


FACTORIES: dict[str, Callable[[str, dict], Engine]] = {"vllm": _vllm, "transformers": _transformers, "openai": _openai,
                                                       "testing": _testing}


def build_engine(engine: str, model: str, options: dict[str, Any] | None = None, where: object = "config") -> Engine:
    if engine not in FACTORIES:
        raise InputError(where, f"unknown engine '{engine}'; use one of {', '.join(FACTORIES)}")
    go_offline()
    try:
        return FACTORIES[engine](model, dict(options or {}))
    except ValidationError as exc:  # an option the engine does not take, or a bad value
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise InputError(where, f"engine '{engine}' option '{key}': {err['msg']}") from None
