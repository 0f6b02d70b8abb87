"""The cluster scenarios of tests/test_cluster.py, run in a network namespace with only loopback up,
so that every Ray process listens on 127.0.0.1 alone (Ray binds all interfaces otherwise).

Usage (as tests/test_cluster.py runs it):
    unshare -n sh -c 'ip link set lo up && python tests/cluster_scenarios.py OUT SINGLE'
(SINGLE: the small audit's run directory, made in one process: the replicas' reference).
Starts a two-node Ray cluster (`ray start --head` and a second `ray start --address`, one CPU each,
their own ports and temp dirs), runs the scenarios against it, then the placement scenarios on a
second two-node cluster whose nodes declare two GPUs each that they do not have (`--num-gpus 2`; the
planted engine computes on none, and reports the devices Ray gave it), then a third whose nodes declare
one GPU each (a replica that needs two on one node); writes OUT/results.json, and
stops every process it started, by PID.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from radar_local.auditing import run_audit  # noqa: E402
from radar_local.config import AuditConfig, GridConfig  # noqa: E402
from radar_local.errors import RadarError  # noqa: E402
from radar_local.grid import run_grid  # noqa: E402
from radar_local.placement import ClusterSpec  # noqa: E402
from radar_local.pool import EnginePool  # noqa: E402
from radar_local.rundir import load_run  # noqa: E402
from radar_local.specs import ModelSpec  # noqa: E402
from radar_local.stats.jurors import JuryBlock  # noqa: E402
from tests.conftest import SMALL_RUBRIC, tiny_config  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """pid's children, grandchildren, ... from /proc (Ray's processes do not share a process group)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def kill_tree(pid: int) -> None:
    for p in [pid, *descendants(pid)]:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


class TwoNodeCluster:
    """`ray start --head` and one worker node on 127.0.0.1, each in the foreground (--block), so that
    each node's processes descend from a PID this class holds and stops."""

    def __init__(self, root: Path, gpus: int = 0):
        self.root, self.port, self.gpus = root, free_port(), gpus
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: dict[str, subprocess.Popen] = {}

    def _start(self, name: str, args: list[str]) -> None:
        ray = str(Path(sys.executable).with_name("ray"))
        log = (self.root / f"{name}-{self.port}.log").open("w")
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        self.nodes[name] = subprocess.Popen(
            [
                ray,
                "start",
                "--block",
                "--num-cpus",
                "1",
                "--num-gpus",
                str(self.gpus),
                "--node-ip-address",
                "127.0.0.1",
                "--disable-usage-stats",
                *args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def __enter__(self) -> TwoNodeCluster:
        import ray

        # Ray's session sockets live under the temp dir, and a socket path must fit in 107 bytes.
        self.temp = tempfile.mkdtemp(prefix="radar-ray-", dir="/tmp")
        self._start(
            "head", ["--head", "--port", str(self.port), "--include-dashboard", "false", "--temp-dir", self.temp]
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                alive = self.nodes["head"].poll() is None and time.monotonic() < deadline
                assert alive, (self.root / f"head-{self.port}.log").read_text()[-2000:]
                time.sleep(1)
        self._start("worker", ["--address", self.address])
        ray.init(address=self.address, log_to_driver=False)
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.monotonic() < deadline, (self.root / f"worker-{self.port}.log").read_text()[-2000:]
            time.sleep(1)
        return self

    def kill_node(self, name: str) -> None:
        kill_tree(self.nodes[name].pid)

    def __exit__(self, *exc) -> None:
        import ray

        ray.shutdown()
        for proc in self.nodes.values():
            kill_tree(proc.pid)
            proc.wait(timeout=60)
        shutil.rmtree(self.temp, ignore_errors=True)


def records(path: Path) -> dict[str, dict]:
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == len({r["key"] for r in lines}), f"duplicate records in {path}"
    return {r["key"]: r for r in lines}


def config(**kw) -> AuditConfig:
    return AuditConfig.model_validate(tiny_config("vllm", rubric=str(SMALL_RUBRIC), bootstrap=0, **kw))


def main(out: Path, single: Path) -> None:
    # A test cluster in a loopback-only namespace: no tokens to share between its nodes and the driver.
    os.environ["RAY_AUTH_MODE"] = "disabled"
    # The Ctrl-C scenario sends SIGINT to this process: a pytest started in the background (`pytest ... &`) passes
    # SIGINT on ignored, and Python then leaves it ignored, so the interrupt would never land.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    results: dict = {"elapsed": {}}
    began = time.monotonic()

    def lap(name: str) -> None:  # seconds since the scenarios began, at the end of each (the module's cost)
        results["elapsed"][name] = round(time.monotonic() - began, 1)

    with TwoNodeCluster(out) as cluster:
        lap("cluster up")
        # A replica that cannot find its model: one line naming its node, not a hang.
        start = time.monotonic()
        try:
            EnginePool(ClusterSpec(ray=cluster.address, replicas=1)).get(
                ModelSpec(engine="vllm", model=str(out / "no-such-model"))
            )
            results["missing"] = {"error": None}
        except RadarError as exc:
            results["missing"] = {"error": str(exc), "seconds": round(time.monotonic() - start, 1)}
        lap("missing")

        # The same config in one process (the session's small audit, `single`) and on two replicas.
        cfg = config()
        pool = EnginePool(ClusterSpec(ray=cluster.address, replicas=2, piece=2))
        try:
            run_audit(cfg, out / "cluster", pool=pool)
            results["same"] = {
                name: compare(single / name, out / "cluster" / name) for name in ("probes.jsonl", "scores.jsonl")
            }
            results["same"]["cluster"] = load_run(out / "cluster").info().stages["score"].cluster
            lap("same on two replicas")

            # The worker node killed (SIGKILL, its whole process tree) in the middle of the score stage.
            scores = out / "fault" / "scores.jsonl"
            killed = {}

            def kill_when_scoring():
                while not (scores.exists() and len(scores.read_text().splitlines()) >= 8):
                    time.sleep(0.1)
                killed["after"] = len(scores.read_text().splitlines())
                cluster.kill_node("worker")

            watcher = threading.Thread(target=kill_when_scoring, daemon=True)
            watcher.start()
            run_audit(config(seed=1, batch_size=4), out / "fault", pool=pool)  # chunks of 4: two pieces each
            info = load_run(out / "fault").info()
            results["fault"] = {
                "killed_after": killed.get("after"),
                "scores": len(records(scores)),
                "probes": len(records(out / "fault" / "probes.jsonl")),
                "cluster": info.stages["score"].cluster,
            }
        finally:
            pool.close()
        lap("fault")

        # A grid: one generator's probes generated once, then two judges scoring at once, each on its own
        # replica (planted engines: the same numbers as in one process, by construction).
        grid = planted_grid()
        in_process = run_grid(grid, out / "grid-local", REPO, progress=False)
        on_cluster = run_grid(
            grid.model_copy(update={"cluster": ClusterSpec(ray=cluster.address)}),
            out / "grid-cluster",
            REPO,
            progress=False,
        )
        run = load_run(out / "grid-cluster" / "gen")
        results["grid"] = {
            "same": json.dumps(in_process, sort_keys=True) == json.dumps(on_cluster, sort_keys=True),
            "scores": len(records(out / "grid-cluster" / "gen" / "scores.jsonl")),
            "replicas": {v: len(run.info(v).stages["score"].cluster["replicas"]) for v in ("judge-a", "judge-b")},
        }

        lap("grid")
        # An adaptive audit (planted engine) on the cluster: the same waves and numbers as in one process.
        adaptive = planted_adaptive()
        local = run_audit(adaptive, out / "adaptive-local", base=REPO)
        pool = EnginePool(ClusterSpec(ray=cluster.address))
        try:
            remote = run_audit(adaptive, out / "adaptive-cluster", base=REPO, pool=pool)
        finally:
            pool.close()
        results["adaptive"] = {
            "same": json.dumps(local.to_json(), sort_keys=True) == json.dumps(remote.to_json(), sort_keys=True),
            "waves": len(remote.adaptive.stored()["waves"]),
            "cluster": load_run(out / "adaptive-cluster").info().stages["score"].cluster is not None,
        }
        lap("adaptive")
        # A jury on the cluster: its jurors score at once, each on its own replica, and one that fails to start is
        # left out (min_jurors 2 of 3); the jury's numbers are those of one process.
        jury = planted_jury()
        local = run_audit(jury, out / "jury-local", base=REPO)
        remote = run_audit({**jury, "cluster": {"ray": cluster.address}}, out / "jury-cluster", base=REPO)
        info = load_run(out / "jury-cluster").info()
        results["jury"] = {
            "same": all(
                json.dumps(local.to_json()[k], sort_keys=True) == json.dumps(remote.to_json()[k], sort_keys=True)
                for k in ("leakage", "self_effect", "pairs")
            )
            and local.measured(JuryBlock).coupling == remote.measured(JuryBlock).coupling
            and local.measured(JuryBlock).agreement == remote.measured(JuryBlock).agreement,
            "failed": list(remote.measured(JuryBlock).failed or {}),
            "failure": (remote.measured(JuryBlock).failed or {}).get("broken"),
            "replicas": {j: len(info.stages[f"score ({j})"].cluster["replicas"]) for j in ("judge-a", "judge-b")},
        }
        lap("jury")
    with TwoNodeCluster(out, gpus=2) as cluster:
        lap("second cluster up")
        results["gpu"] = gpu_scenarios(cluster, out / "gpu")
        lap("gpu")
        # Issue 34: 4 GPUs in all, 2 per node, and a replica that needs 3 on one node: one line at once (on this
        # cluster, not a third: each start costs the module its seconds).
        start = time.monotonic()
        pool = EnginePool(ClusterSpec(ray=cluster.address))
        try:
            pool.get(ModelSpec(engine="testing", model="planted", options={"gpus": 3}))
            results["one_gpu_nodes"] = {"error": None}
        except RadarError as exc:
            results["one_gpu_nodes"] = {"error": str(exc), "seconds": round(time.monotonic() - start, 1)}
        finally:
            pool.close()
        lap("a replica larger than a node")
    (out / "results.json").write_text(json.dumps(results, indent=2))


def gpu_scenarios(cluster: TwoNodeCluster, out: Path) -> dict:
    """Placement on nodes that declare GPUs, from a driver whose torch has no CUDA."""
    import ray
    import torch

    results: dict = {"driver_has_cuda": torch.cuda.is_available(), "gpus": ray.cluster_resources().get("GPU")}
    spec = ClusterSpec(ray=cluster.address)

    def replicas(run_dir: Path, verifier: str | None = None) -> list[dict]:
        return load_run(run_dir).info(verifier).stages["score"].cluster["replicas"]

    # One GPU per replica: as many replicas as GPUs, each seeing its own; a CPU model sees none.
    for name, options in (("one-gpu", {"gpus": 1}), ("cpu", {})):
        pool = EnginePool(spec)
        try:
            run_audit(AuditConfig.model_validate(planted(options=options)), out / name, base=REPO, pool=pool)
        finally:
            pool.close()
        results[name] = [{"node": r["node"], "devices": r["devices"]} for r in replicas(out / name)]

    # Two replicas sharing a GPU (gpus_per_replica 0.5): started one after another (issue 42 item 4).
    halves = EnginePool(ClusterSpec(ray=cluster.address, gpus_per_replica=0.5, replicas=2))
    try:
        halves.get(ModelSpec(engine="testing", model="planted", options={"start_s": 1.0}))
        results["shared"] = [p["start"] for p in halves.engine.places]
    finally:
        halves.close()

    # A grid whose judges take 1 and 2 GPUs a replica: each sized by its own options, both at once.
    grid = planted_grid(judge_options=[{"gpus": 1}, {"gpus": 2}])
    run_grid(grid.model_copy(update={"cluster": spec}), out / "grid", REPO, progress=False)
    results["grid"] = {v: [r["devices"] for r in replicas(out / "grid" / "gen", v)] for v in ("judge-a", "judge-b")}

    # A replica that hangs at its first score: dropped after stall_s, its piece finished by another.
    hung = planted(options={"gpus": 1})
    hung["verifier"] = {**hung["verifier"], "options": {"gpus": 1, "hang": str(out / "hang")}}
    pool = EnginePool(ClusterSpec(ray=cluster.address, replicas=2, piece=8, stall_s=3))
    start = time.monotonic()
    try:
        run_audit(AuditConfig.model_validate(hung), out / "hung", base=REPO, pool=pool)
    finally:
        pool.close()
    results["hung"] = {
        "seconds": round(time.monotonic() - start, 1),
        "scores": len(records(out / "hung" / "scores.jsonl")),
        "expected": len(records(out / "one-gpu" / "scores.jsonl")),
        "lost": [r["lost"] for r in replicas(out / "hung")],
    }

    # Ctrl-C while the judges' replicas load: the grid stops at once, no replica stays, nothing is scored.
    slow = planted_grid(judge_options=[{"gpus": 1, "start_s": 20}, {"gpus": 1, "start_s": 20}])
    total = ray.cluster_resources()["GPU"]
    interrupted: dict = {}

    def interrupt_while_loading():
        # The previous scenario's replicas may still be handing their GPUs back: wait until all are free,
        # then until the judges take some, so the interrupt lands while they load. Ray leaves a resource
        # with none available out of available_resources(): a missing GPU key means all are taken.
        deadline = time.monotonic() + 60
        while ray.available_resources().get("GPU", 0) < total and time.monotonic() < deadline:
            time.sleep(0.2)
        while ray.available_resources().get("GPU", 0) == total:
            time.sleep(0.2)
        time.sleep(2)
        interrupted["at"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_while_loading, daemon=True).start()
    began = time.monotonic()
    try:
        run_grid(slow.model_copy(update={"cluster": spec}), out / "interrupted", REPO, progress=False)
        results["interrupt"] = {
            "raised": False,
            "grid_s": round(time.monotonic() - began, 1),
            "sent_after_s": round(interrupted["at"] - began, 1) if "at" in interrupted else None,
        }
    except KeyboardInterrupt:
        stopped_after = time.monotonic() - interrupted["at"]
        deadline = time.monotonic() + 30
        while ray.available_resources().get("GPU", 0) < total and time.monotonic() < deadline:
            time.sleep(0.5)
        freed_after = time.monotonic() - interrupted["at"]
        time.sleep(max(0.0, 25 - freed_after))  # past the judges' start: a worker left running would score now
        scores = out / "interrupted" / "gen" / "scores.jsonl"
        results["interrupt"] = {
            "raised": True,
            "stopped_after_s": round(stopped_after, 1),
            "gpus_free": ray.available_resources().get("GPU", 0),
            "gpus": total,
            "scores": len(scores.read_text().splitlines()) if scores.exists() else 0,
        }
    return results


def planted(**kw) -> dict:
    from tests.conftest import planted_config

    return planted_config(bootstrap=0, **kw)


def planted_grid(judge_options: list[dict] | None = None) -> GridConfig:
    from tests.conftest import planted_config

    settings = {k: v for k, v in planted_config().items() if k not in ("generator", "verifier")}
    coupling = {"Helpfulness / Understanding": {"Correctness / Completeness": 0.5}}
    extra = judge_options or [{}, {}]
    judges = [
        {"engine": "testing", "model": "judge-a", "options": extra[0]},
        {"engine": "testing", "model": "judge-b", "options": {"coupling": coupling, **extra[1]}},
    ]
    return GridConfig.model_validate(
        {**settings, "generators": [{"engine": "testing", "model": "gen"}], "verifiers": judges}
    )


def planted_jury() -> dict:
    from tests.conftest import planted_config

    coupling = {"Helpfulness / Understanding": {"Correctness / Completeness": 0.5}}
    jurors = [
        {"engine": "testing", "model": "judge-a", "options": {"noise": 0.5}},
        {"engine": "testing", "model": "judge-b", "options": {"coupling": coupling}},
        {"engine": "testing", "model": "broken", "options": {"fail_start": True}},
    ]
    return planted_config(verifier={"jury": jurors, "min_jurors": 2}, bootstrap=50)


def planted_adaptive() -> dict:
    from tests.conftest import planted_config

    coupling = {"Helpfulness / Understanding": {"Correctness / Completeness": 0.5}}
    return planted_config(
        options={"coupling": coupling, "noise": 1.0}, adaptive={"start_n": 2, "max_n": 6, "step": 2}, bootstrap=50
    )


def compare(a: Path, b: Path) -> dict:
    """Same keys? And how many of the records under them agree in text and score."""
    ra, rb = records(a), records(b)
    shared = sorted(set(ra) & set(rb))
    field = "text" if "text" in next(iter(ra.values())) else "score"
    return {
        "keys_equal": set(ra) == set(rb),
        "records": len(ra),
        "same": sum(ra[k][field] == rb[k][field] for k in shared),
        "same_raw": sum(ra[k].get("raw", ra[k].get("text")) == rb[k].get("raw", rb[k].get("text")) for k in shared),
    }


if __name__ == "__main__":  # vllm.LLM() starts its engine in a new process
    main(Path(sys.argv[1]), Path(sys.argv[2]))
