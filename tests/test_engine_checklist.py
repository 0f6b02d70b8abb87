"""docs/ARCHITECTURE.md, "Adding an engine": every step of the checklist, checked for every engine, so an
engine added with a step missing fails here rather than in a user's audit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from radar_local.engines.base import BatchStream, EngineOptions, StreamBatch
from radar_local.engines.registry import ENGINES, EngineName, engine_class
from tests.test_keys import VALUES

REPO = Path(__file__).resolve().parents[1]
METHODS = ("generate", "constrained", "score", "generate_stream", "score_stream", "settings", "counters", "close")


def test_the_config_names_exactly_the_registered_engines():
    assert get_args(EngineName) == tuple(ENGINES)


@pytest.mark.parametrize("engine", list(ENGINES))
def test_an_engine_has_every_piece(engine):
    cls = engine_class(engine)
    assert cls.name == engine and issubclass(cls, (BatchStream, StreamBatch))  # 1. the class, registered
    assert issubclass(cls.Options, EngineOptions)  # 2. its options, checked when a config is read
    assert cls.Options.OPERATIONAL <= set(cls.Options.model_fields)  # 3. which of them leave keys alone
    assert set(VALUES[engine]) == set(cls.Options.model_fields)  # ... each one classified (tests/test_keys.py)
    assert "LOCAL_WEIGHTS" in vars(cls) and isinstance(cls.LOCAL_WEIGHTS, bool)  # 4. whether keys hold its weights
    missing = [m for m in METHODS if not callable(getattr(cls, m, None))]
    assert not missing, f"{engine} lacks {missing}"  # 5. the interface (engines/base.Engine)
    docs = (REPO / "docs/audits.md").read_text()
    assert re.search(rf"^\| `{engine}` \|", docs, re.M), "6. a row in docs/audits.md's engine table"
