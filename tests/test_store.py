"""The store never loses a record: torn writes, damaged lines, two writers, signals, a full disk
(issue 7, part 2). All on the planted engine: no model is loaded."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from radar_local.config import AuditConfig
from radar_local.errors import InputError
from radar_local.pool import EnginePool
from radar_local.resolved import resolve
from radar_local.run import Run
from radar_local.rundir import PROBES, SCORES, open_store
from radar_local.store import unlock_run_dir
from tests.conftest import planted_config, radar_cli, radar_run

REPO = Path(__file__).resolve().parents[1]


def generate(cfg: dict, run: Path) -> dict:
    return Run.create(resolve(AuditConfig.model_validate(cfg), REPO), run).generate(EnginePool(), progress=False)


def records(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert data.endswith(b"\n")  # only whole lines
    return [json.loads(line) for line in data.splitlines()]


@pytest.mark.parametrize("every", [False, pytest.param(True, marks=pytest.mark.thorough)])
def test_torn_last_line_at_every_byte_offset_is_cut_and_redone(tmp_path, caplog, every):
    cfg = planted_config(rubric=str(REPO / "tests/data/small_rubric.yaml"), tasks=[planted_config()["tasks"][0]])
    whole = tmp_path / "whole"
    generate(cfg, whole)
    expected = records(whole / PROBES)
    lines = (whole / PROBES).read_bytes().splitlines(keepends=True)
    head, last = b"".join(lines[:-1]), lines[-1]
    run = tmp_path / "run"
    offsets = range(1, len(last)) if every else (1, 2, len(last) // 2, len(last) - 2, len(last) - 1)
    for cut in offsets:  # offsets inside the last record, newline excluded: every one in `make test`
        shutil.rmtree(run, ignore_errors=True)
        unlock_run_dir(run)
        run.mkdir()
        (run / PROBES).write_bytes(head + last[:cut])
        caplog.clear()
        first = generate(cfg, run)
        got = records(run / PROBES)
        assert [r["key"] for r in got] == [r["key"] for r in expected] and got == expected, cut
        # Only the torn record's variant was sampled again, under its own seed.
        assert first["calls"] == 1, cut
        if cut in (1, len(last) - 1):  # and a run after that has nothing left to do
            assert generate(cfg, run)["calls"] == 0, cut
        (side,) = run.glob(f"{PROBES}.torn-*")
        assert side.read_bytes() == last[:cut]
        (note,) = [r.getMessage() for r in caplog.records]
        assert "cut a torn last line" in note and side.name in note


def test_a_damaged_line_that_is_not_the_last_is_refused(tmp_path):
    cfg_path = tmp_path / "audit.yaml"
    cfg_path.write_text(yaml.safe_dump(planted_config()))
    run = tmp_path / "run"
    assert radar_run("audit", cfg_path, "--out", run, "--quiet", "--no-report").returncode == 0
    lines = (run / SCORES).read_text().splitlines(keepends=True)
    lines[1] = lines[1][:20] + "\n"  # damage, not a torn write: the line is terminated
    (run / SCORES).write_text("".join(lines))
    before = (run / SCORES).read_bytes()
    res = radar_run("audit", cfg_path, "--out", run, "--quiet")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert f"{run / SCORES}: line 2 is damaged" in res.stderr
    assert (run / SCORES).read_bytes() == before  # refused, nothing rewritten
    with pytest.raises(InputError, match="line 2 is damaged"):
        open_store(run, writer=False)


def test_second_writer_is_refused_with_the_holder_pid(tmp_path):
    cfg_path = tmp_path / "audit.yaml"
    cfg_path.write_text(yaml.safe_dump(planted_config()))
    run = tmp_path / "run"
    open_store(run)  # this test process now holds the run directory
    try:
        res = radar_cli("audit", cfg_path, "--out", run)
        assert res.returncode == 2 and res.stderr.count("\n") == 1
        assert f"in use by PID {os.getpid()}" in res.stderr and "Traceback" not in res.stderr
        assert not (run / PROBES).exists() and not (run / "config.yaml").exists()  # refused before any work
    finally:
        unlock_run_dir(run)


@pytest.mark.process
def test_a_lock_left_by_a_killed_process_does_not_block(tmp_path):
    cfg_path = tmp_path / "audit.yaml"
    cfg_path.write_text(yaml.safe_dump(planted_config()))
    run = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from radar_local.rundir import open_store; open_store({str(run)!r}); "
            "print('held', flush=True); import time; time.sleep(300)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        assert radar_cli("audit", cfg_path, "--out", run, "--quiet", "--no-report").returncode == 2
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    res = radar_cli("audit", cfg_path, "--out", run, "--quiet", "--no-report")
    assert res.returncode == 0, res.stderr


@pytest.mark.process
@pytest.mark.parametrize("sig,code,word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_a_signal_mid_stage_leaves_whole_records_and_resumes(tmp_path, sig, code, word):
    cfg_path = tmp_path / "audit.yaml"
    cfg_path.write_text(yaml.safe_dump(planted_config(batch_size=2, options={"delay_s": 0.05})))
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "radar_local.cli", "audit", str(cfg_path), "--out", str(run), "--quiet", "--no-report"]
    # A shell that runs the suite in the background hands its children SIGINT ignored; Ctrl-C's default back.
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while not ((run / PROBES).exists() and len((run / PROBES).read_bytes().splitlines()) >= 4):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert (
        err.strip().startswith(f"{word}:") and "run the same command again to resume" in err and "Traceback" not in err
    )
    kept = records(run / PROBES)
    assert 4 <= len(kept) < 40 and not list(run.glob("*.tmp"))
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    done = records(run / PROBES)
    assert len(done) == len({r["key"] for r in done}) == 2 * 5 * 2 * 2  # tasks x criteria x directions x n
    assert done[: len(kept)] == kept  # stored records untouched


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs the test mounts (root only) and unmounts."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True).returncode
        != 0
    ):
        pytest.skip("mounting a small tmpfs needs root")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_is_one_line_and_keeps_what_was_stored(tmp_path, small_disk):
    cfg_path = tmp_path / "audit.yaml"
    cfg_path.write_text(yaml.safe_dump(planted_config(n=20, batch_size=4)))
    filler = small_disk / "filler"
    free = shutil.disk_usage(small_disk).free
    filler.write_bytes(b"x" * (free - 64 * 1024))  # leave 64 KiB: the snapshots and some probes, not all 400
    run = small_disk / "run"
    res = radar_run("audit", cfg_path, "--out", run, "--quiet", "--no-report")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert "cannot write (the disk is full)" in res.stderr and str(run) in res.stderr
    kept = records(run / PROBES)  # whole records only, each readable
    assert 0 < len(kept) < 400
    filler.unlink()
    res = radar_run("audit", cfg_path, "--out", run, "--quiet", "--no-report")
    assert res.returncode == 0, res.stderr
    done = records(run / PROBES)
    assert len(done) == len({r["key"] for r in done}) == 400 and done[: len(kept)] == kept


def test_a_disk_already_full_when_a_command_starts_is_one_line(tmp_path, small_disk):
    """Even the lock's PID cannot be written (issue 21): one line, exit 2, nothing else made."""
    from radar_local.cli.main import cli

    cfg_path = tmp_path / "audit.yaml"
    cfg_path.write_text(yaml.safe_dump(planted_config()))
    run = small_disk / "run"
    run.mkdir()
    filler = small_disk / "filler"
    with filler.open("wb") as fh:  # every byte of the disk
        try:
            while True:
                fh.write(b"x" * 65536)
                fh.flush()
        except OSError:
            pass
    res = CliRunner().invoke(cli, ["audit", str(cfg_path), "--out", str(run), "--quiet", "--no-report"])
    assert res.exit_code == 2 and (res.exception is None or isinstance(res.exception, SystemExit)), res.output
    assert res.stderr.count("\n") == 1 and "the disk is full" in res.stderr, res.stderr
    assert not (run / PROBES).exists()


def test_verdicts_finishing_out_of_order_are_stored_under_their_own_requests(tmp_path):
    """A continuously fed engine finishes answers in any order; each is stored as the answer to its request."""
    from radar_local.auditing import run_audit

    tables = {}
    for finish in ("batch", "shuffled"):
        cfg = planted_config(options={"finish": finish, "coupling": {"Helpfulness": {"Correctness": 0.5}}})
        run_audit(cfg, tmp_path / finish, base=REPO)
        tables[finish] = (tmp_path / finish / "scores.csv").read_text()
    assert tables["batch"] == tables["shuffled"] and tables["batch"].count("\n") == 1 + 40 * 5


@pytest.mark.process
def test_sigkill_mid_stream_keeps_every_stored_verdict_and_resume_plans_only_the_rest(tmp_path):
    cfg_path = tmp_path / "audit.yaml"
    cfg_path.write_text(yaml.safe_dump(planted_config(options={"finish": "shuffled", "delay_s": 0.005})))
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "radar_local.cli", "audit", str(cfg_path), "--out", str(run), "--quiet", "--no-report"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not ((run / SCORES).exists() and len((run / SCORES).read_bytes().splitlines()) >= 20):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = records(run / SCORES)
    assert 20 <= len(kept) < 200  # killed mid-stage, every stored line whole
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    done = records(run / SCORES)
    assert len(done) == len({r["key"] for r in done}) == 200 and done[: len(kept)] == kept
    info = json.loads((run / "run.json").read_text())
    assert info["stages"]["score"]["calls"] == 200 - len(kept)  # exactly the unfinished requests were planned


def test_a_reader_cannot_write(tmp_path):
    """load_run is read-only: a RunDir has no stage, and its store refuses every write."""
    from radar_local.auditing import run_audit
    from radar_local.rundir import RunDir, load_run
    from radar_local.store import ReadOnlyRunError

    run_audit(
        planted_config(rubric=str(REPO / "tests/data/small_rubric.yaml"), bootstrap=0), tmp_path / "run", base=REPO
    )
    before = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file()}
    reader = load_run(tmp_path / "run")
    assert type(reader) is RunDir and len(reader.probes()) == len(before["probes.jsonl"].splitlines())
    assert not any(
        hasattr(reader, stage)
        for stage in ("generate", "score", "finish", "rescore", "audit", "adopt", "register_verifier", "waves")
    )
    for attempt in (
        lambda: reader.store.add_scores([{"key": "k"}]),
        lambda: reader.store.add_probes([{"key": "k"}]),
        lambda: reader.store.write_json("x.json", {}),
    ):
        with pytest.raises(ReadOnlyRunError, match="opened for reading"):
            attempt()
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir() if p.is_file()} == before


@pytest.mark.process
def test_the_lock_is_let_go_in_process(tmp_path):
    """A notebook's audit, or a `with Run.open(...)` block, does not hold the directory for
    the life of the process: another process can write to it afterwards."""
    from radar_local.auditing import run_audit

    run = tmp_path / "run"
    cfg = planted_config(rubric=str(REPO / "tests/data/small_rubric.yaml"), bootstrap=0)
    run_audit(cfg, run, base=REPO)
    probe = [
        sys.executable,
        "-c",
        f"from radar_local.rundir import open_store; open_store({str(run)!r}); print('took it')",
    ]
    assert subprocess.run(probe, capture_output=True, text=True).stdout.strip() == "took it"
    with Run.open(run):
        held = subprocess.run(probe, capture_output=True, text=True)
        assert held.returncode != 0 and "in use by PID" in held.stderr
    assert subprocess.run(probe, capture_output=True, text=True).stdout.strip() == "took it"


def test_a_signal_waits_for_the_write_while_another_thread_runs():
    """With a second thread alive (rich's refresh, the OpenAI pool), CPython runs a handler in the main
    thread whatever that thread masks: the deferral is one for the whole process."""
    import threading

    from radar_local.store import _signals_held

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    finished_writing = False
    try:
        with pytest.raises(KeyboardInterrupt):
            with _signals_held():
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(50):  # bytecode runs here: a handler that was not deferred would fire now
                    time.sleep(0.002)
                finished_writing = True
    finally:
        stop.set()
        other.join()
        signal.signal(signal.SIGINT, previous)
    assert finished_writing
