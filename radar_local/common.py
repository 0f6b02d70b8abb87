"""Helpers every layer may use: strict models, one-line validation errors, JSON values and file-name
parts. It imports nothing of radar_local but its errors."""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from radar_local.errors import InputError


def digest(obj: object) -> str:
    """A content key: the first 24 hex digits of the SHA-256 of `obj` as sorted JSON."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:24]


class Strict(BaseModel):
    """A config-like model: an unknown key is an error, and so is a NaN or an infinity (YAML's .inf would
    be stored as null, a snapshot radar could not read back)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Frozen(Strict):
    """A strict model that never changes once read (rubrics, tasks, references: shared, cached)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Loose(BaseModel):
    """A file radar wrote, checked for the fields radar reads back; the others are kept as written."""

    model_config = ConfigDict(extra="allow")


Model = TypeVar("Model", bound=BaseModel)


def one_line(exc: Exception) -> str:
    """An exception's message on one line: a pydantic error's first message alone (no dump, no URL)."""
    if isinstance(exc, ValidationError):
        return exc.errors()[0]["msg"].removeprefix("Value error, ")
    return " ".join(str(exc).split())


def parse_model(model: type[Model], data: object, path: object) -> Model:
    """Validate `data` as `model`, turning the most telling pydantic error into one line naming the key."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        # In a union (a bundled name or a custom spec; a path or a table), the branch the input was meant
        # for gets furthest into it: its error is the deepest one, and its branch tag is no key.
        err = max(exc.errors(), key=lambda e: len(e["loc"]))
        key = ".".join(str(p) for p in err["loc"] if not _UNION_TAG.search(str(p))) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        raise InputError(path, f"key '{key}': {msg}") from None


_UNION_TAG = re.compile(r"^[A-Z][A-Za-z]*$|\[|^constrained-|^function-")  # pydantic's names of union members


def refusing(key: str, why: str) -> Any:
    """A model's `before` check, assigned in its class body: it refuses a `key` given to the model, saying `why`."""

    def check(cls: type, data: object) -> object:
        if isinstance(data, dict) and key in data:
            raise ValueError(why)
        return data

    return model_validator(mode="before")(classmethod(check))  # type: ignore[arg-type]  # pydantic takes one


def json_number(x: object) -> float | None:
    """A number for JSON: NaN (undefined) is null."""
    if x is None:
        return None
    x = float(x)  # type: ignore[arg-type]
    return None if math.isnan(x) else x


def to_json(obj: object) -> Any:
    """numpy scalars and arrays to plain Python (a JSON value); NaN to None."""
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_json(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer, int)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return json_number(obj)
    return obj


def slug(label: str) -> str:
    """A model label as a file-name part."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label)
