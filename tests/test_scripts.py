"""Every script in scripts/ runs (issue 42 item 19): a figure in docs/BENCHMARKS.md never loses its command. The
statistics' simulations, the store and stats benches, the planted refactor check and the joint bench on a planted
config run for real with small arguments; the scripts that time a real engine (vLLM or transformers on the
embedded model, a Ray cluster) parse their arguments and import everything they use here (their figures take
minutes on the embedded model; xgrammar's compile of radar's constraints is tested in test_constraints.py)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import planted_config

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
SMALL = {  # each script with arguments that run its whole path in seconds; {out} is a fresh folder
    "flag_error.py": "--reps 2 --bootstrap 20 --tasks 2 --ks 3 --ns 3 --leak 0.7 --workers 1",
    "coverage.py": "--reps 2 --bootstrap 20 --tasks 2 --n 3",
    "per_prompt_error.py": "--reps 2 --ns 3 --prompts 3 --plant",
    "item_pairs_error.py": "--reps 2 --ns 3 --prompts 3 --plant --position 0.3",
    "adaptive_items_error.py": "--reps 2 --prompts 3 --design 6 3 9 --plant",
    "attack_error.py": "--reps 1 --n 2 --tasks 2 --bootstrap 20 --pairwise --out {out}",
    "halo_error.py": "--reps 1 --out {out}",
    "bench_viewer.py": "--n 1 --tasks 1 --reps 1",
    "drift_error.py": "--reps 1 --n 2 --bootstrap 20 --out {out}",
    "order_error.py": "--reps 1 --tasks 1 --out {out}",
    "jury_error.py": "--reps 2 --bootstrap 20 --tasks 2 --n 2 --out {out}",
    "repeat_error.py": "--reps 2 --bootstrap 20 --ns 3 --repeats 2 --sds 1.0",
    "pairwise_error.py": "--reps 2 --bootstrap 20 --ns 3",
    "joint_halo_error.py": "--reps 2 --bootstrap 20 --tasks 2 --k 3 --ns 4 --share 0.5 --truths dir0.45 --halos 0.25 "
    "--workers 1",
    "reward_error.py": "--reps 2 --ns 3 --truths null large",
    "context_sizes.py": "{repo}/configs/quickstart-expected.yaml",  # the embedded model's tokenizer; no engine loads
    "bench_stats.py": "--rows 2000 --bootstrap 10",
    "bench_store.py": "--probes 50 --repeats 1",
    "piece_occupancy.py": "--slots 8 --pieces 4,8",
    "bench_adaptive.py": "--max-n 3 --step 1",
    "make_example_scores.py": "--out {out}/example.csv",
    "same_outputs.py": "{out}/same --only quickstart import",  # the jury and judge examples have tests of their own
    "bench_joint.py": "--config {config} --out {out}/joint",
    "bench_isolation.py": "--config {repo}/configs/per-prompt-example.yaml --n 2 --out {out}/isolation",
    "bench_defences.py": "--engine testing --n 1 --tasks 2 --templates radar pairwise:generic --out {out}/defences",
    "config_walk.py": "--config {config} --top 3",
    "import_corpus.py": "--format prometheus",
    "paired_probes.py": "--config {config} --out {out}/paired",
    "power_levers.py": "--reps 2 --bootstrap 20 --tasks 2 --ks 3 --ns 3 --modes integer --truths null edge many0.7 "
    "--workers 1",
}
MORE = [  # a second path through a script: `make test` runs it
    pytest.param(
        "power_levers.py",
        "--reps 1 --bootstrap 20 --tasks 2 --ks 3 --ns 3 --plan-check --workers 1",
        marks=pytest.mark.thorough,
    ),
    pytest.param("order_error.py", "--reps 1 --tasks 1 --primed 0.5 --out {out}", id="order_error.py-primed"),
    pytest.param("pairwise_error.py", "--reps 2 --bootstrap 20 --ns 3 --asked overall", id="pairwise_error.py-overall"),
]
ENGINE_BOUND = {  # a real engine's timings: arguments parsed and imports checked here
    "bench_engine.py",
    "bench_cluster.py",
    "bench_parallel.py",
    "bench_jury.py",
    "bench_imports.py",
    "bench_nuisance.py",
    "floor_check.py",
    "bench_constraints.py",
    "bench_thinking.py",
    "gpu_check.py",  # tests/test_doctor.py runs it on a tiny random model on the CPU
}


ALONE = {"config_walk.py"}  # it profiles the process it runs in: a test worker's earlier tests stay out of it


def run(script: str, args: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """The script as `python scripts/<script> ARGS` runs it, in this process (its imports are this session's
    already: a child process would spend two seconds on them), or in a child where it must be alone; its exit
    status."""
    import subprocess

    config = tmp_path / "planted.yaml"
    config.write_text(yaml.safe_dump(planted_config(tasks=[{"id": "t0", "prompt": "Say hi."}], n=1, bootstrap=0)))
    argv = [str(SCRIPTS / script), *args.format(out=tmp_path, config=config, repo=SCRIPTS.parent).split()]
    if script in ALONE:
        return subprocess.run([sys.executable, *argv], cwd=tmp_path, timeout=300).returncode
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(sys, "path", list(sys.path))  # a script puts the checkout first: undone after
    try:
        runpy.run_path(str(SCRIPTS / script), run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return 0


def test_every_script_is_smoke_run_here():
    assert {p.name for p in SCRIPTS.glob("*.py")} == set(SMALL) | ENGINE_BOUND


@pytest.mark.parametrize(("script", "args"), sorted(SMALL.items()) + MORE)
def test_a_script_runs_its_whole_path_on_small_arguments(script, args, tmp_path, monkeypatch):
    assert run(script, args, tmp_path, monkeypatch) == 0


@pytest.mark.parametrize("script", sorted(ENGINE_BOUND))
def test_an_engine_bound_script_parses_its_arguments_and_imports(script, tmp_path, monkeypatch, capsys):
    assert run(script, "--help", tmp_path, monkeypatch) == 0 and "usage" in capsys.readouterr().out.lower()
