"""The cluster's placement, environment, memory wait and the grid's room, without a cluster (issue 17);
on a real loopback cluster whose nodes declare GPUs: tests/test_cluster.py."""

import subprocess
import threading
import time

import pytest

from radar_local.cluster import Stopped
from radar_local.engines.registry import parse_options
from radar_local.engines.vllm_build import cpu_bind_list
from radar_local.errors import RadarError
from radar_local.placement import forwarded_env, wait_for_gpu_memory
from radar_local.scorers import Room, replica_counts
from tests.conftest import invoke, one_line_exit_2, write_config


def test_data_parallel_size_is_refused_when_the_config_is_read_naming_what_to_use(tmp_path):
    with pytest.raises(ValueError, match="option 'data_parallel_size' is not supported: .*--ray local"):
        parse_options("vllm", {"data_parallel_size": 2})
    spec = {"engine": "vllm", "model": "smollm2-135m", "options": {"data_parallel_size": 2}}
    cfg = write_config(tmp_path, {"rubric": "helpsteer2", "generator": spec, "verifier": spec})
    one_line_exit_2(invoke("audit", cfg, "--out", tmp_path / "run"), "data_parallel_size", "--ray local")
    assert not (tmp_path / "run").exists()


def test_a_replica_takes_the_gpus_its_engines_options_name():
    def engine_gpus(engine: str, options: dict) -> int:
        return parse_options(engine, options).engine_gpus()

    assert engine_gpus("vllm", {}) == 1
    assert engine_gpus("vllm", {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}) == 4
    assert engine_gpus("transformers", {}) == 1 and engine_gpus("transformers", {"device": "cpu"}) == 0
    assert engine_gpus("openai", {}) == 0 and engine_gpus("testing", {"gpus": 2}) == 2


def test_several_engine_processes_on_a_cpu_build_split_the_cores():
    assert cpu_bind_list([0, 1], 2) == "0|1"
    assert cpu_bind_list(list(range(8)), 2) == "0-3|4-7"
    assert cpu_bind_list([2, 3, 4], 2) == "2|3-4"
    with pytest.raises(RadarError, match="= 3 engine processes .* need a core each; .* use 2"):
        cpu_bind_list([0, 1], 3)


def test_only_settings_that_mean_the_same_on_every_node_travel():
    driver = {
        "RADAR_MODELS_DIR": "/models",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_ATTENTION_BACKEND": "FLASH_ATTN",
        "VLLM_HOST_IP": "10.0.0.5",
        "VLLM_PORT": "5000",
        "VLLM_DP_MASTER_IP": "10.0.0.5",
        "VLLM_CPU_OMP_THREADS_BIND": "0-3",
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "1",
        "VLLM_NCCL_SO_PATH": "/opt/nccl.so",
        "CUDA_VISIBLE_DEVICES": "0",
        "PATH": "/usr/bin",
    }
    assert forwarded_env(driver) == {
        "RADAR_MODELS_DIR": "/models",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_ATTENTION_BACKEND": "FLASH_ATTN",
    }


def nvidia_smi(*rows: str, returncode: int = 0):
    calls = []

    def run(args, **kw):
        calls.append(args)
        return subprocess.CompletedProcess(args, returncode, rows[min(len(calls), len(rows)) - 1])  # the last repeats

    return run, calls


def test_gpu_memory_is_read_without_starting_cuda():
    from radar_local.hardware import gpu_inventory

    run, calls = nvidia_smi("H200, 570.86, 9.0, 40000, 80000\nH200, 570.86, 9.0, 80000, 80000")
    assert [g["free_mib"] / g["total_mib"] for g in gpu_inventory("0,1", run)] == [0.5, 1.0]
    assert calls[0][-2:] == ["-i", "0,1"]
    assert gpu_inventory("0", nvidia_smi("", returncode=9)[0]) is None
    assert gpu_inventory("0", nvidia_smi("H200, 570.86")[0]) is None  # a row of another shape

    def missing(args, **kw):
        raise FileNotFoundError("nvidia-smi")

    assert gpu_inventory("0", missing) is None


def test_a_replica_waits_for_the_previous_models_gpu_memory(monkeypatch):
    monkeypatch.setattr("radar_local.placement.POLL_S", 0.01)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    row = "H200, 570.86, 9.0, {}, 80000"
    run, calls = nvidia_smi(row.format(8000), row.format(30000), row.format(76000))  # freed over three looks
    wait_for_gpu_memory(0.9, timeout_s=10, runner=run)
    assert len(calls) == 3
    run, calls = nvidia_smi(row.format(8000))  # never freed: gives up at the deadline, vLLM then says why
    start = time.monotonic()
    wait_for_gpu_memory(0.9, timeout_s=0.1, runner=run)
    assert 0.1 <= time.monotonic() - start < 5 and len(calls) > 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    run, calls = nvidia_smi(row.format(0))
    wait_for_gpu_memory(0.9, runner=run)  # a CPU replica looks at no GPU
    assert calls == []


def test_each_model_gets_its_share_of_its_own_kind():
    free = {"GPU": 8.0, "CPU": 64.0}
    assert replica_counts([("GPU", 1), ("GPU", 2)], free, "auto") == [4, 2]
    assert replica_counts([("GPU", 1), ("CPU", 1)], free, "auto") == [8, 64]
    assert replica_counts([("GPU", 4), ("GPU", 4), ("GPU", 4)], free, "auto") == [1, 1, 1]  # one at a time
    assert replica_counts([("GPU", 1), ("GPU", 2)], free, 3) == [3, 3]


def test_a_model_waits_for_room_and_gives_up_on_stop(monkeypatch):
    monkeypatch.setattr("radar_local.scorers.POLL_S", 0.01)
    room, stop, order = Room({"GPU": 4.0}), threading.Event(), []

    def second():
        with room.held("GPU", 4, stop, "judge-b"):
            order.append("b")

    with room.held("GPU", 3, stop, "judge-a"):
        waiting = threading.Thread(target=second)
        waiting.start()
        time.sleep(0.1)
        order.append("a")  # judge-b is still waiting: a's 3 GPUs are out
    waiting.join(5)
    assert order == ["a", "b"] and room.free == {"GPU": 4.0}

    with room.held("GPU", 4, stop, "judge-a"):
        stop.set()
        with pytest.raises(Stopped):
            with room.held("GPU", 1, stop, "judge-b"):
                pass
    with pytest.raises(RadarError, match="the replicas of judge-c need 8 GPU; the cluster has 4 in all"):
        with room.held("GPU", 8, threading.Event(), "judge-c"):
            pass


def test_a_stage_is_cut_into_equal_pieces_the_same_count_per_replica():
    from radar_local.cluster import piece_size

    assert piece_size(12, 2, 2) == 2
    assert piece_size(7500, 1, 8192) == 7500  # one piece: one drain, as in one process
    assert piece_size(20000, 2, 8192) == 5000  # two pieces each, not 8192 + 1808
    assert piece_size(10, 4, 64) == 3 and piece_size(1, 8, 64) == 1


def test_gpus_are_described_from_nvidia_smi_and_batch_invariance_needs_sm80():
    from radar_local.engines.vllm_build import gpu_manifest
    from radar_local.hardware import batch_invariance_problem, gpu_inventory

    run, calls = nvidia_smi("NVIDIA H200, 570.86, 9.0, 140000, 143771\nNVIDIA H200, 570.86, 9.0, 141000, 143771")
    gpus = gpu_inventory("0,1", run)
    assert calls[0][1] == "--query-gpu=name,driver_version,compute_cap,memory.free,memory.total"
    assert gpu_manifest(gpus, 2) == {"devices": ["NVIDIA H200"] * 2, "driver": "570.86", "compute_capability": ["9.0"]}
    assert gpu_inventory(None, nvidia_smi("", returncode=9)[0]) is None and gpu_manifest(None, 1) == {}
    assert batch_invariance_problem("cuda", (8, 0)) is None and batch_invariance_problem("rocm", None) is None
    assert "this GPU has 7.5" in batch_invariance_problem("cuda", (7, 5))
    assert "this is a cpu build" in batch_invariance_problem("cpu", None)


def test_a_split_the_model_cannot_take_is_one_line_before_vllm_starts(tmp_path):
    import json

    from radar_local.engines.registry import build_engine

    model = tmp_path / "smol"  # the embedded model's shape: 9 attention heads, 30 layers
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"num_attention_heads": 9, "num_hidden_layers": 30}))
    with pytest.raises(
        RadarError, match="tensor_parallel_size 2 does not divide the model's 9 attention heads; use one of 1, 3, 9"
    ):
        build_engine("vllm", str(model), {"tensor_parallel_size": 2})
    with pytest.raises(RadarError, match="pipeline_parallel_size 31 is more than the model's 30 layers"):
        build_engine("vllm", str(model), {"pipeline_parallel_size": 31})


def test_an_engine_in_this_process_waits_for_the_last_engines_gpu_memory(monkeypatch):
    """Issue 42 item 5: between engines in one process (a grid's judges, a jury's jurors, a repair's candidates)
    the next vLLM engine waits for its share of its GPUs (the machine's first tensor x pipeline parallel of them,
    CUDA_VISIBLE_DEVICES being unset), as Ray replicas do."""
    from radar_local import pool as pool_module
    from radar_local.pool import EnginePool
    from radar_local.specs import ModelSpec

    monkeypatch.setattr("radar_local.placement.POLL_S", 0.01)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    row = "H200, 570.86, 9.0, {}, 80000"
    run, calls = nvidia_smi(f"{row.format(8000)}\n{row.format(8000)}", f"{row.format(76000)}\n{row.format(76000)}")
    waited = []
    monkeypatch.setattr(pool_module, "wait_for_gpu_memory", lambda share, gpus: waited.append((share, gpus)) or None)
    monkeypatch.setattr(pool_module, "build_engine", lambda *a, **k: object())
    spec = ModelSpec(engine="vllm", model="m", options={"tensor_parallel_size": 2, "gpu_memory_utilization": 0.8})
    EnginePool().get(spec)
    assert waited == [(0.8, 2)]
    wait_for_gpu_memory(0.8, timeout_s=10, runner=run, gpus=2)  # the machine's GPUs 0 and 1, until freed
    assert len(calls) == 2 and calls[0][-2:] == ["-i", "0,1"]


def test_replicas_sharing_a_gpu_start_one_at_a_time_whichever_model_they_serve(monkeypatch):
    """Issue 60 item 10: a grid's or a jury's models start their replicas on threads of their own; replicas of one
    model sharing a GPU started in turn, but two models' started together, which vLLM's start-up check and profiler
    (reading the device's free memory) do not survive. Here two models' replicas of half a GPU, on a stand-in for
    Ray: no two starts overlap."""
    import radar_local.cluster as cluster
    from radar_local.placement import ClusterSpec

    class Actor:
        def options(self, **_):
            return self

        def remote(self, *_):
            return object()

    monkeypatch.setattr(cluster, "ray_module", lambda: type("Ray", (), {"remote": staticmethod(lambda _: Actor())}))
    monkeypatch.setattr(cluster, "connect", lambda spec: "127.0.0.1:6379")
    monkeypatch.setattr(cluster, "replica_unit", lambda options, spec: ("GPU", 0.5))
    monkeypatch.setattr(cluster, "replicas_with_room", lambda engine, kind, each: 2)
    starting, overlaps, lock = [0], [], threading.Lock()

    def wait_started(self):
        with lock:
            starting[0] += 1
            overlaps.append(starting[0])
        time.sleep(0.05)
        with lock:
            starting[0] -= 1
        self.places = [{"engine": {}}] * len(self.replicas)

    monkeypatch.setattr(cluster.ClusterEngine, "_wait_started", wait_started)
    options = parse_options("vllm", {})
    threads = [
        threading.Thread(target=cluster.ClusterEngine, args=("vllm", name, options, ClusterSpec(ray="local")))
        for name in ("judge-a", "judge-b")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(overlaps) == 6 and max(overlaps) == 1  # each model: one wait per replica, then one for all
