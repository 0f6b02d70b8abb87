"""The cluster scenarios of tests/test_cluster.py, run in a network namespace with only loopback up,
so that every Ray process listens on 127.0.0.1 alone (Ray binds all interfaces otherwise).

Usage (as tests/test_cluster.py runs it): unshare -n sh -c 'ip link set lo up && python tests/cluster_scenarios.py OUT'
Starts a two-node Ray cluster (`ray start --head` and a second `ray start --address`, one CPU each,
their own ports and temp dirs), runs the scenarios against it, writes OUT/results.json, and stops
every process it started, by PID.
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

from radar_local.cluster import ClusterSpec  # noqa: E402
from radar_local.config import AuditConfig, GridConfig, ModelSpec  # noqa: E402
from radar_local.errors import RadarError  # noqa: E402
from radar_local.grid import run_grid  # noqa: E402
from radar_local.run import EnginePool, load_run, run_audit  # noqa: E402
from tests.test_pipeline import SMALL_RUBRIC, tiny_config  # noqa: E402


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

    def __init__(self, root: Path):
        self.root, self.port = root, free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: dict[str, subprocess.Popen] = {}

    def _start(self, name: str, args: list[str]) -> None:
        ray = str(Path(sys.executable).with_name("ray"))
        log = (self.root / f"{name}.log").open("w")
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        self.nodes[name] = subprocess.Popen(
            [
                ray,
                "start",
                "--block",
                "--num-cpus",
                "1",
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
                assert alive, (self.root / "head.log").read_text()[-2000:]
                time.sleep(1)
        self._start("worker", ["--address", self.address])
        ray.init(address=self.address, log_to_driver=False)
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.monotonic() < deadline, (self.root / "worker.log").read_text()[-2000:]
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


def main(out: Path) -> None:
    # A test cluster in a loopback-only namespace: no tokens to share between its nodes and the driver.
    os.environ["RAY_AUTH_MODE"] = "disabled"
    results: dict = {}
    with TwoNodeCluster(out) as cluster:
        # A replica that cannot find its model: one line naming its node, not a hang.
        start = time.monotonic()
        try:
            EnginePool(ClusterSpec(ray=cluster.address, replicas=1)).get(
                ModelSpec(engine="vllm", model=str(out / "no-such-model"))
            )
            results["missing"] = {"error": None}
        except RadarError as exc:
            results["missing"] = {"error": str(exc), "seconds": round(time.monotonic() - start, 1)}

        # The same config in this process and on two replicas.
        cfg = config()
        run_audit(cfg, out / "single", pool=None)
        pool = EnginePool(ClusterSpec(ray=cluster.address, replicas=2, piece=2))
        try:
            run_audit(cfg, out / "cluster", pool=pool)
            results["same"] = {
                name: compare(out / "single" / name, out / "cluster" / name)
                for name in ("probes.jsonl", "scores.jsonl")
            }
            results["same"]["cluster"] = load_run(out / "cluster").info()["stages"]["score"]["cluster"]

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
                "cluster": info["stages"]["score"]["cluster"],
            }
        finally:
            pool.close()

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
            "replicas": {v: len(run.info(v)["stages"]["score"]["cluster"]["replicas"]) for v in ("judge-a", "judge-b")},
        }

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
            "waves": len(remote.adaptive["waves"]),
            "cluster": "cluster" in load_run(out / "adaptive-cluster").info()["stages"]["score"],
        }
    (out / "results.json").write_text(json.dumps(results, indent=2))


def planted_grid() -> GridConfig:
    from tests.conftest import planted_config

    settings = {k: v for k, v in planted_config().items() if k not in ("generator", "verifier")}
    coupling = {"Helpfulness / Understanding": {"Correctness / Completeness": 0.5}}
    judges = [
        {"engine": "testing", "model": "judge-a"},
        {"engine": "testing", "model": "judge-b", "options": {"coupling": coupling}},
    ]
    return GridConfig.model_validate(
        {**settings, "generators": [{"engine": "testing", "model": "gen"}], "verifiers": judges}
    )


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
    main(Path(sys.argv[1]))
