"""The GPU path's findings of a line-by-line reading against vLLM 0.32 (issue 34), each checked on the CPU:
a replica that fits no node, the environment a batch-invariant engine leaves, bf16 on a GPU without it,
a fractional GPU share against vLLM's memory share, the GPUs an engine's manifest names, and the outlines
release line against vLLM's own pin."""

import importlib.metadata
import os
import re
import tomllib
from pathlib import Path

import pytest

from radar_local.engines.vllm import VLLMEngine, llm_arguments
from radar_local.engines.vllm_build import gpu_manifest, vllm_env_kept
from radar_local.errors import RadarError
from radar_local.hardware import gpu_dtype
from radar_local.placement import ClusterSpec, node_problem, replica_unit

REPO = Path(__file__).resolve().parents[1]


def test_a_replica_needs_its_gpus_on_one_node():
    """Two 1-GPU nodes hold 2 GPUs but no replica of 2: one line at once, not a 900 s wait for Ray."""
    problem = node_problem("GPU", 2, [1, 1])
    assert problem is not None and "needs 2 GPUs on one node" in problem and "the largest node has 1" in problem
    assert node_problem("GPU", 2, [1, 2]) is None and node_problem("GPU", 0.5, [1]) is None
    assert node_problem("CPU", 4, [1, 1]) is None  # a CPU replica's engine is one process: Ray places it


def test_a_batch_invariant_engine_leaves_the_environment_as_it_was(monkeypatch):
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    with vllm_env_kept(True):
        assert os.environ["VLLM_BATCH_INVARIANT"] == "1"  # while the engine's workers start
    assert "VLLM_BATCH_INVARIANT" not in os.environ  # the next engine in this process runs as its options say
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "0")
    with pytest.raises(KeyboardInterrupt), vllm_env_kept(True):
        raise KeyboardInterrupt  # an engine that fails to start restores it too
    assert os.environ["VLLM_BATCH_INVARIANT"] == "0"
    with vllm_env_kept(False):
        assert os.environ["VLLM_BATCH_INVARIANT"] == "0"


def test_what_vllm_sets_for_itself_while_starting_is_undone_and_recorded(monkeypatch):
    """Issue 42 item 7: vLLM sets VLLM_USE_BREAKABLE_CUDAGRAPH=1 while building its config for some model shapes
    on Hopper (vllm/config/vllm.py); the next engine in the process would run without torch.compile. Every VLLM_*
    variable the start changed is restored, and the engine's settings (run.json) say which."""
    monkeypatch.delenv("VLLM_USE_BREAKABLE_CUDAGRAPH", raising=False)
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "WARNING")
    with vllm_env_kept(True) as changed:
        os.environ["VLLM_USE_BREAKABLE_CUDAGRAPH"] = "1"  # what vLLM's config does on such a GPU
        os.environ["VLLM_LOGGING_LEVEL"] = "DEBUG"
    assert "VLLM_USE_BREAKABLE_CUDAGRAPH" not in os.environ and os.environ["VLLM_LOGGING_LEVEL"] == "WARNING"
    assert changed == {"VLLM_LOGGING_LEVEL": "DEBUG", "VLLM_USE_BREAKABLE_CUDAGRAPH": "1"}


def test_bfloat16_on_a_gpu_without_it_is_one_line_before_start():
    """A T4 or V100 (compute capability 7.x): an explicit bfloat16 is refused before vLLM's worker would
    refuse it in a traceback; `auto` says what vLLM will run (its float32 -> half cast, bf16 -> fp16)."""
    options = VLLMEngine.Options(dtype="bfloat16")
    with pytest.raises(
        RadarError, match=r"bfloat16 needs compute capability 8.0 or newer; this GPU has compute capability 7.5"
    ):
        llm_arguments(options, None, "bfloat16", None, (7, 5))
    kwargs, settings = llm_arguments(options, None, "bfloat16", None, (8, 0))
    assert kwargs["dtype"] == "bfloat16" and settings["dtype_reason"] == "set in the config"
    kwargs, settings = llm_arguments(VLLMEngine.Options(), None, "float32", None, (9, 0))
    assert (
        "dtype" not in kwargs
        and settings["dtype_reason"]
        == "vLLM's auto casts a float32 checkpoint down to bfloat16 (compute capability 9.0)"
    )
    assert gpu_dtype("auto", "float32", (7, 5))[1].startswith("vLLM's auto casts a float32 checkpoint down to float16")
    assert "in float16 on a GPU without bf16" in gpu_dtype("auto", "bfloat16", (7, 0))[1]
    assert gpu_dtype("auto", "bfloat16", (8, 6)) == (None, "the checkpoint's dtype (a GPU build)")
    assert gpu_dtype("float16", "bfloat16", (7, 5)) == ("float16", "set in the config")


def test_a_fractional_gpu_share_must_leave_room_for_the_replicas_beside_it():
    """gpus_per_replica 0.5 puts two replicas on a GPU. vLLM checks free memory at a worker's start against
    ceil(total x utilisation), and its profiler counts the device's free memory: a replica started beside a running
    one with utilisation equal to its share (0.5 and 0.5) is refused. Radar asks for headroom, utilisation at most
    0.9 x the share, compared exactly (issue 42 item 4)."""
    with pytest.raises(
        RadarError, match="gpus_per_replica 0.5 puts up to 2 replicas on a GPU, each asking vLLM for 0.9"
    ):
        replica_unit(VLLMEngine.Options(), ClusterSpec(gpus_per_replica=0.5))
    with pytest.raises(RadarError, match="set the engine's gpu_memory_utilization to 0.45 or lower"):
        replica_unit(VLLMEngine.Options(gpu_memory_utilization=0.5), ClusterSpec(gpus_per_replica=0.5))
    assert replica_unit(VLLMEngine.Options(gpu_memory_utilization=0.45), ClusterSpec(gpus_per_replica=0.5)) == (
        "GPU",
        0.5,
    )
    with pytest.raises(RadarError, match="set the engine's gpu_memory_utilization to 0.27 or lower"):
        replica_unit(VLLMEngine.Options(gpu_memory_utilization=0.27000001), ClusterSpec(gpus_per_replica=0.3))
    assert replica_unit(VLLMEngine.Options(gpu_memory_utilization=0.27), ClusterSpec(gpus_per_replica=0.3)) == (
        "GPU",
        0.3,
    )
    assert replica_unit(VLLMEngine.Options(), ClusterSpec(gpus_per_replica=1)) == ("GPU", 1)  # a whole GPU: its own


@pytest.mark.parametrize("gpus", [1, 0.5])
def test_a_gpu_share_below_the_engines_parallel_size_is_one_line(gpus):
    """A replica's engine runs tensor x pipeline parallel workers, a GPU each: vLLM's own error was multi-line,
    cut to a misleading last line."""
    options = VLLMEngine.Options(tensor_parallel_size=2, gpu_memory_utilization=0.4)
    with pytest.raises(RadarError, match=r"below the engine's tensor x pipeline parallel size \(2\)") as err:
        replica_unit(options, ClusterSpec(gpus_per_replica=gpus))
    assert "\n" not in str(err.value)
    assert replica_unit(options, ClusterSpec(gpus_per_replica=2)) == ("GPU", 2)


def test_the_manifest_names_the_gpus_the_engine_runs_on():
    """With CUDA_VISIBLE_DEVICES unset every GPU of the box is visible; vLLM takes the first
    tensor x pipeline parallel of them, and run.json names those."""
    box = [{"name": f"NVIDIA H200 #{k}", "driver": "570.86", "compute_capability": "9.0"} for k in range(8)]
    assert gpu_manifest(box, 1)["devices"] == ["NVIDIA H200 #0"]
    assert gpu_manifest(box, VLLMEngine.Options(tensor_parallel_size=2).engine_gpus())["devices"] == [
        "NVIDIA H200 #0",
        "NVIDIA H200 #1",
    ]


def test_outlines_is_capped_to_the_releases_on_vllms_outlines_core():
    """vLLM 0.32 pins outlines_core; the hf extra's outlines range must stay on releases built on that
    pin, or `pip check` fails in the CUDA image. Checked against the installed packages' metadata."""
    from radar_local.engines.vllm_build import installed_vllm

    found = installed_vllm()
    if found is None:
        pytest.skip("no vLLM build installed")
    pins = [r for r in importlib.metadata.requires(found[0]) or [] if r.startswith("outlines_core")]
    ours = [r for r in importlib.metadata.requires("outlines") or [] if r.startswith("outlines_core")]
    assert pins and ours and pins[0].split(";")[0].strip() == ours[0].split(";")[0].strip()
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["hf"]
    (spec,) = [r for r in extras if r.startswith("outlines")]
    lower, upper = re.fullmatch(r"outlines>=([\d.]+),<([\d.]+)", spec).groups()  # capped, not open-ended
    version = tuple(int(x) for x in importlib.metadata.version("outlines").split(".")[:3])
    assert tuple(int(x) for x in lower.split(".")) <= version < tuple(int(x) for x in upper.split("."))
