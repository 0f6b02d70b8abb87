"""Quiet by default: engine output goes to the run's engine.log, radar's own progress to the console."""

import subprocess
import sys
import textwrap

from radar_local.engines.base import EngineCounters
from radar_local.meter import efficiency

SCRIPT = textwrap.dedent("""
    import logging, os, subprocess, sys, warnings
    from pathlib import Path
    from radar_local.quiet import console, engine_output_to

    logging.getLogger("radar_local").addHandler(logging.StreamHandler())
    with engine_output_to(Path(sys.argv[1]), verbose=sys.argv[2] == "1"):
        subprocess.run("echo engine-process-noise >&2", shell=True)  # an engine's own process
        warnings.warn("library-warning")  # a library in this process
        print("progress-line", file=console(), flush=True)
        logging.getLogger("radar_local").warning("radar-note")
        if sys.argv[3] == "1":
            raise RuntimeError("engine core initialization failed")
""")


def run(tmp_path, verbose=False, crash=False):
    log = tmp_path / "engine.log"
    res = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log), str(int(verbose)), str(int(crash))], capture_output=True, text=True
    )
    return res, (log.read_text() if log.exists() else "")


def test_engine_output_goes_to_the_log_and_progress_to_the_console(tmp_path):
    res, log = run(tmp_path)
    assert res.returncode == 0, res.stderr
    assert "progress-line" in res.stderr and "radar-note" in res.stderr
    assert "engine-process-noise" not in res.stderr + res.stdout and "library-warning" not in res.stderr
    assert "engine-process-noise" in log and "library-warning" in log and "progress-line" not in log


def test_verbose_streams_the_engine_output(tmp_path):
    res, log = run(tmp_path, verbose=True)
    assert "engine-process-noise" in res.stderr and "progress-line" in res.stderr and log == ""


def test_a_crash_shows_the_logs_last_lines(tmp_path):
    res, log = run(tmp_path, crash=True)
    assert res.returncode == 1 and "engine output (last" in res.stderr and "engine-process-noise" in res.stderr


def test_efficiency_against_the_floor_and_the_scheduler_limit():
    """Computed = 1,000 queried - 600 hit = 400 against a floor of 320: 1.25; 10 steps with 48 running
    in all against max_num_seqs 8: 0.6; the 4 fed steps ran 28: 28 / 4 / 8 = 0.875."""
    before = EngineCounters(100, 50, 80, 5, 10, 1, 4)
    after = EngineCounters(1100, 650, 400, 15, 58, 5, 32)
    out = efficiency(before, after, {"max_num_seqs": 8})
    assert (
        out["prompt_tokens_computed"] == 400
        and out["prompt_tokens_floor"] == 320
        and out["computed_over_floor"] == 1.25
    )
    assert out["occupancy"] == 0.6 and out["occupancy_fed"] == 0.875
    assert out["capped_by"] == "sequences" and out["occupancy_parts"] == {"sequences": 0.875}
    assert efficiency(EngineCounters(), EngineCounters(), {})["occupancy"] is None  # an engine that cannot count


def test_occupancy_is_the_binding_limits_fill():
    """Issue 34: 10 steps running 48 requests in all against max_num_seqs 256 fill its sequences to
    48 / 10 / 256 = 0.01875, while the KV cache's blocks were 9.5 / 10 = 0.95 in use: the cache bound the
    scheduler, and occupancy is 0.95, not the 0.02 the sequences alone would say (the fed steps: 3.8 / 4)."""
    before = EngineCounters(0, 0, 0, 0, 0, 0, 0, 0.0, 0.0)
    after = EngineCounters(0, 0, 0, 10, 48, 4, 20, 9.5, 3.8)
    out = efficiency(before, after, {"max_num_seqs": 256})
    assert out["occupancy"] == 0.95 and out["occupancy_fed"] == 0.95 and out["capped_by"] == "kv_blocks"
    assert out["occupancy_parts"] == {"sequences": round(20 / 4 / 256, 4), "kv_blocks": 0.95}
