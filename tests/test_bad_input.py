"""Every bad input found in review gets one line and exit 2 (issue 7, part 3)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from radar_local.cli.main import cli
from radar_local.engines.openai import OpenAIEngine
from radar_local.errors import RadarError
from radar_local.scoring import ScoreFormat
from tests.conftest import PLANTED_TASKS, planted_config, probes, table

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "radar_local" / "benchmarks" / "example_helpsteer2.csv"


def invoke(*args):
    res = CliRunner().invoke(cli, [str(a) for a in args])
    return res


def one_line_exit_2(res, *needles):
    assert res.exit_code == 2, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)  # no traceback
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr
    for needle in needles:
        assert str(needle) in res.stderr, res.stderr


def test_stats_on_a_table_of_only_unconditioned_probes(tmp_path):
    path = tmp_path / "none.csv"
    table(probes("t", "", "none", [{"a": 1, "b": 2}, {"a": 3, "b": 2}])).to_csv(path, index=False)
    one_line_exit_2(invoke("stats", path), path, "only unconditioned ('none') probes")


@pytest.mark.parametrize("option", ["--json", "--markdown"])
def test_stats_output_into_a_missing_folder(tmp_path, option):
    target = tmp_path / "no" / "such" / "out.json"
    one_line_exit_2(
        invoke("stats", EXAMPLE, "--rubric", "helpsteer2", "--bootstrap", 0, option, target), target, "does not exist"
    )
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(
    "content,needle",
    [
        ({"pairs": [], "reliable": {}}, "schema_version None"),
        ({"schema_version": 99, "pairs": [], "reliable": {}}, "upgrade radar_local"),
        (
            {"schema_version": 2, "pairs": [{"a": "x"}], "reliable": {}, "criteria": []},
            "is not a complete RADAR stats file",
        ),
        (
            {"schema_version": 2, "pairs": [], "reliable": {}, "criteria": ["x"]},
            "is not a complete RADAR stats file (key 'generator': Field required)",
        ),
    ],
)
def test_compare_on_json_without_the_expected_keys(tmp_path, content, needle):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(content))
    one_line_exit_2(invoke("compare", bad, bad), bad, needle)


class _Server:
    """A real HTTP server on 127.0.0.1 answering every POST with one canned reply."""

    def __init__(self, status: int, body: bytes):
        reply = (status, body)
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                outer.hits += 1
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(reply[0])
                self.send_header("Content-Length", str(len(reply[1])))
                self.end_headers()
                self.wfile.write(reply[1])

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize(
    "status,body,needle",
    [
        (200, b"<html>not an API</html>", "not JSON"),
        (200, json.dumps({"object": "chat.completion", "usage": {}}).encode(), "without completion choices"),
        (200, json.dumps({"choices": []}).encode(), "without completion choices"),
        (503, b"overloaded", "answered HTTP 503 after 3 attempts: overloaded"),
    ],
)
def test_openai_engine_bad_answers_are_one_line(status, body, needle):
    server = _Server(status, body)
    engine = OpenAIEngine("m", OpenAIEngine.Options(base_url=server.url, retries=2, backoff_s=0.01))
    try:
        with pytest.raises(RadarError) as err:
            engine.score([[{"role": "user", "content": "hi"}]], fmt=ScoreFormat())
        msg = str(err.value)
        assert server.url in msg and needle in msg and "\n" not in msg
        assert server.hits == (3 if status == 503 else 1)
    finally:
        engine.close()
        server.close()


def test_audit_against_a_server_that_answers_5xx(tmp_path):
    server = _Server(500, b"boom")
    try:
        spec = {"engine": "openai", "model": "m", "options": {"base_url": server.url, "retries": 1, "backoff_s": 0.01}}
        cfg = tmp_path / "audit.yaml"
        cfg.write_text(yaml.safe_dump(planted_config(generator=spec, verifier=spec)))
        one_line_exit_2(invoke("audit", cfg, "--out", tmp_path / "run", "--quiet"), server.url, "HTTP 500")
    finally:
        server.close()


def _config(tmp_path, data: dict, name: str = "audit.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def test_duplicate_task_ids_inline_are_refused_before_any_model(tmp_path):
    cfg = _config(tmp_path, planted_config(tasks=[PLANTED_TASKS[0], {**PLANTED_TASKS[1], "id": "refund"}]))
    one_line_exit_2(invoke("audit", cfg, "--out", tmp_path / "run"), cfg, "duplicate task id 'refund'")
    assert not (tmp_path / "run").exists()


def test_duplicate_task_ids_in_a_task_file(tmp_path):
    tasks = _config(tmp_path, {"tasks": [PLANTED_TASKS[0], PLANTED_TASKS[0]]}, "tasks.yaml")
    cfg = _config(tmp_path, planted_config(tasks=str(tasks)))
    one_line_exit_2(invoke("audit", cfg, "--out", tmp_path / "run"), tasks, "duplicate task id 'refund'")
    assert not (tmp_path / "run" / "probes.jsonl").exists()


@pytest.mark.parametrize("role", ["generators", "verifiers"])
def test_grid_models_sharing_a_label_are_refused(tmp_path, role):
    a = {"engine": "testing", "model": "one", "name": "judge"}
    b = {"engine": "testing", "model": "two", "name": "judge"}
    other = [{"engine": "testing", "model": "three"}]
    data = {"rubric": "helpsteer2", "generators": other, "verifiers": other, role: [a, b]}
    cfg = _config(tmp_path, data, "grid.yaml")
    one_line_exit_2(invoke("grid", cfg, "--out", tmp_path / "g"), cfg, f"two {role} share the label 'judge'")
    assert not (tmp_path / "g").exists()


def test_grid_lets_a_bug_surface_as_a_bug(tmp_path, monkeypatch):
    """A ValueError raised by a bug is not relabelled as a config error."""
    import radar_local.grid

    def broken(results):
        raise ValueError("a bug deep in the statistics")

    monkeypatch.setattr(radar_local.grid, "grid_summary", broken)
    data = {k: v for k, v in planted_config().items() if k not in ("generator", "verifier")}
    data |= {
        "generators": [{"engine": "testing", "model": "one"}],
        "verifiers": [{"engine": "testing", "model": "two"}],
    }
    cfg = _config(tmp_path, data, "grid.yaml")
    res = invoke("grid", cfg, "--out", tmp_path / "g", "--quiet")
    assert res.exit_code == 1 and isinstance(res.exception, ValueError) and "config" not in res.output


def test_nan_tau_and_unknown_options_are_one_line():
    one_line_exit_2(invoke("stats", EXAMPLE, "--tau", "nan"), "--tau", "nan is not a number in [0, 1]")
    one_line_exit_2(invoke("stats", EXAMPLE, "--bogus"), "--bogus", "radar stats --help")


def test_out_that_is_a_file(tmp_path):
    cfg = _config(tmp_path, planted_config())
    target = tmp_path / "afile"
    target.write_text("keep me")
    one_line_exit_2(invoke("audit", cfg, "--out", target), target, "is a file, not a run directory")
    assert target.read_text() == "keep me"


def test_verifier_labels_that_share_a_file_name(tmp_path):
    from radar_local.config import AuditConfig, ModelSpec
    from radar_local.errors import InputError
    from radar_local.resolved import resolve
    from radar_local.run import Run

    run = Run.create(resolve(AuditConfig.model_validate(planted_config()), tmp_path), tmp_path / "run")
    run.register_verifier(ModelSpec(engine="testing", model="one", name="judge/a"))
    with pytest.raises(InputError, match="share a file name"):
        run.register_verifier(ModelSpec(engine="testing", model="two", name="judge_a"))


def test_report_on_stats_from_an_older_schema(tmp_path):
    from tests.report_fixtures import planted_run

    run = planted_run(tmp_path / "run")
    stats = json.loads((run / "stats.json").read_text())
    (run / "stats.json").write_text(json.dumps({**stats, "schema_version": 1}))
    one_line_exit_2(invoke("report", run), run / "stats.json", "schema_version 1")
    assert not (run / "report").exists()


@pytest.mark.parametrize("key", ["rubric", "human", "out"])
def test_a_nul_byte_in_a_path_is_one_line(tmp_path, key):
    """Found by hypothesis (tests/test_fuzz_inputs.py): the OS's 'embedded null byte' was a traceback."""
    path = _config(tmp_path, planted_config(**{key: "\x00"}))
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run"), path, "NUL byte")


@pytest.mark.parametrize("command", ["audit", "repair"])
def test_unknown_intended_criteria_are_refused_before_anything_is_made(tmp_path, command):
    """Named in the user's file, before a run directory, a lock or any model call exists."""
    path = _config(tmp_path, planted_config(intended=[["helpfulness", "charm"]], out=str(tmp_path / "run")))
    one_line_exit_2(invoke(command, path), path, "unknown criterion 'charm'")
    assert not (tmp_path / "run").exists()


def test_a_bad_rubric_file_leaves_no_run_directory(tmp_path):
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("criteria: [")
    path = _config(tmp_path, planted_config(rubric=str(rubric)))
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run"), rubric)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "weight,needle", [("-1", "greater than or equal to 0"), (".inf", "finite number"), (".nan", "finite number")]
)
def test_rubric_weights_must_be_finite_and_non_negative(tmp_path, weight, needle):
    """A negative weight was a traceback, .inf wrote non-JSON Infinity into stats.json, .nan a silent null."""
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(
        "id: r\nname: R\ncriteria:\n  - {id: a, label: A, description: x}\n"
        f"  - {{id: b, label: B, description: y}}\nweights: {{a: {weight}, b: 1}}\n"
    )
    rows = probes("t", "a", "+", [{"a": 4, "b": 2}]) + probes("t", "a", "-", [{"a": 0, "b": 2}])
    rows += probes("t", "b", "+", [{"a": 2, "b": 4}]) + probes("t", "b", "-", [{"a": 2, "b": 0}])
    scores = tmp_path / "scores.csv"
    table(rows).to_csv(scores, index=False)
    one_line_exit_2(invoke("stats", scores, "--rubric", rubric, "--bootstrap", "0"), rubric, "weights.a", needle)


@pytest.mark.parametrize(
    "spec",
    [
        {"engine": "testing", "model": "x/.."},
        {"engine": "testing", "model": "m", "name": ".."},
        {"engine": "testing", "model": "m", "name": "."},
    ],
)
def test_a_label_that_names_another_folder_is_refused(tmp_path, spec):
    """A grid's generator labelled '..' made its run directory the grid folder's parent (issue 21, item 1)."""
    grid = {k: v for k, v in planted_config().items() if k not in ("generator", "verifier")}
    path = _config(tmp_path, {**grid, "generators": [spec], "verifiers": [{"engine": "testing", "model": "judge"}]})
    one_line_exit_2(invoke("grid", path, "--out", tmp_path / "grid"), path, "cannot name a folder")
    assert not (tmp_path / "config.yaml").exists() and not (tmp_path / "grid").exists()


def test_an_option_value_that_is_not_yaml_is_one_line(tmp_path):
    res = invoke("score", tmp_path, "--verifier", "testing:planted", "--option", "noise={")
    assert res.exit_code == 2 and "not YAML" in res.output and len(res.output.strip().splitlines()) == 1, res.output


@pytest.mark.parametrize(
    "line,kind",
    [
        ('{"id": "a", "prompt": null}', "null"),
        ('{"id": null, "prompt": "p"}', "null"),
        ('{"id": "a", "prompt": ["x"]}', "list"),
        ('{"id": "a", "prompt": 3}', "int"),
    ],
)
def test_a_task_that_is_not_text_is_refused_naming_the_row(tmp_path, line, kind):
    """A null prompt was audited as the text 'None' or 'nan' (issue 21, item 6)."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "ok", "prompt": "A fine prompt."}\n' + line + "\n")
    path = _config(tmp_path, planted_config(tasks=str(tasks)))
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run"), tasks, "row 2", kind)
    assert not (tmp_path / "run").exists()


def test_error_lines_show_control_characters_escaped(tmp_path):
    """An ESC sequence or U+2028 in a score cell reaches the error line escaped: one inert line."""
    scores = tmp_path / "scores.csv"
    scores.write_text(
        "generator,verifier,task_id,target,direction,variant,criterion,score\ng,v,t,a,+,0,a,\x1b[31mfour\u2028x\n"
    )
    res = invoke("stats", scores)
    assert res.exit_code == 2 and "\\x1b[31m" in res.output and "\\u2028" in res.output
    assert "\x1b" not in res.output and "\u2028" not in res.output and len(res.output.strip().splitlines()) == 1


def test_ctrl_c_while_the_commands_import_is_one_line(tmp_path):
    """The first fraction of a second: a library whose import is interrupted (a shim click raises it)."""
    import os
    import subprocess
    import sys

    (tmp_path / "click").mkdir()
    (tmp_path / "click" / "__init__.py").write_text("raise KeyboardInterrupt\n")
    res = subprocess.run(
        [sys.executable, "-m", "radar_local.cli", "doctor"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        timeout=60,
    )
    assert res.returncode == 130 and res.stderr == "interrupted: nothing was started\n"


@pytest.mark.parametrize(
    "options,needle",
    [
        ({"timeout_s": ".inf"}, "option 'timeout_s'"),
        ({"backoff_s": ".inf"}, "option 'backoff_s'"),
        ({"backoff_s": ".nan"}, "option 'backoff_s'"),
        ({"timeout_s": 10**9}, "option 'timeout_s'"),
    ],
)
def test_unbounded_http_options_are_refused_before_a_snapshot(tmp_path, options, needle):
    """Issue 28, item 10: `.inf` was stored as null in the snapshot, which then locked the user out."""
    spec = {"engine": "openai", "model": "m", "options": {"base_url": "http://127.0.0.1:9/v1", **options}}
    text = yaml.safe_dump(planted_config(generator=spec, verifier=spec))
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(text.replace("'.inf'", ".inf").replace("'.nan'", ".nan"))
    one_line_exit_2(invoke("audit", cfg, "--out", tmp_path / "run", "--quiet"), cfg, needle)
    assert not (tmp_path / "run").exists()


def test_no_float_setting_anywhere_takes_an_infinity(tmp_path):
    from radar_local.config import AuditConfig

    for key, value in (("tau", float("inf")), ("bias_threshold", float("nan"))):
        with pytest.raises(ValueError, match="finite number"):
            AuditConfig.model_validate({**planted_config(), key: value})
    planted = {"engine": "testing", "model": "planted", "options": {"coupling": {"a": {"b": float("inf")}}}}
    with pytest.raises(ValueError, match="finite number"):
        AuditConfig.model_validate({**planted_config(), "generator": planted})


@pytest.mark.process  # a child process, so a reader that blocks on the FIFO fails the test instead of hanging it
@pytest.mark.parametrize("which", ["config", "rubric", "tasks.yaml", "tasks.csv", "score table", "folder table"])
def test_a_fifo_or_a_folder_as_an_input_is_one_line(tmp_path, which):
    """Issue 28, items 13 and 16: a FIFO blocked forever; a FIFO or a folder as a table was 'not found'."""
    import os

    from tests.conftest import radar_cli

    odd = tmp_path / ("odd.csv" if which.endswith("table") or which == "tasks.csv" else "odd.yaml")
    if which == "folder table":
        odd.mkdir()
    else:
        os.mkfifo(odd)
    config = tmp_path / "audit.yaml"
    settings = planted_config()
    if which == "rubric":
        settings["rubric"] = str(odd)
    elif which.startswith("tasks"):
        settings["tasks"] = str(odd) if which == "tasks.yaml" else {"path": str(odd)}
    config.write_text(yaml.safe_dump(settings))
    if which.endswith("table"):
        args = ["stats", odd]
    else:
        args = ["audit", odd if which == "config" else config, "--out", tmp_path / "run", "--quiet"]
    res = radar_cli(*args, timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    expected = "is a directory, not a score file" if which == "folder table" else "is not a regular file (a FIFO"
    assert str(odd) in res.stderr and expected in res.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "extra,needle",
    [
        (
            {"nuisance": [{"id": "emoji", "up": "Add emoji.", "down": 3}]},
            "key 'nuisance.0.down': Input should be a valid",
        ),
        ({"nuisance": [{"id": "emoji", "up": "Add emoji."}]}, "key 'nuisance.0.down': Field required"),
        ({"nuisance": ["lenght"]}, "key 'nuisance.0': Input should be 'length', 'formatting'"),
        ({"tasks": {"path": "x.csv", "sample": 0}}, "key 'tasks.sample': Input should be greater than or equal to 1"),
        ({"tasks": 7}, "key 'tasks': Input should be"),
    ],
)
def test_a_union_setting_is_answered_from_the_branch_it_was_meant_for(tmp_path, extra, needle):
    """Issue 28, item 16: a custom attribute with one bad field got the bundled names' answer, and
    `sample: 0` named `tasks.constrained-str`."""
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(yaml.safe_dump(planted_config(unconditioned=2, **extra)))
    one_line_exit_2(invoke("audit", cfg, "--out", tmp_path / "run", "--quiet"), cfg, needle)


@pytest.mark.process
def test_an_ascii_console_and_a_full_stdout_are_no_traceback(tmp_path):
    """Issue 28, item 14: a model named "gén" under LC_ALL=POSIX stopped the audit after generating, and
    `> /dev/full` ended it in a traceback."""
    import os

    from tests.conftest import radar_cli

    config = tmp_path / "audit.yaml"
    planted = {"engine": "testing", "model": "planted"}
    config.write_text(
        yaml.safe_dump(planted_config(generator={**planted, "name": "gén"}, verifier={**planted, "name": "vér"}))
    )
    ascii_env = {"LC_ALL": "POSIX", "LANG": "", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
    res = radar_cli("audit", config, "--out", tmp_path / "run", "--no-report", env=ascii_env, timeout=300)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert "g\\xe9n" in res.stderr and (tmp_path / "run" / "stats.json").is_file()
    if not os.path.exists("/dev/full"):
        return
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        args = [sys.executable, "-m", "radar_local.cli", "audit", str(config), "--out", str(tmp_path / "again")]
        res = subprocess.run([*args, "--no-report"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    assert res.returncode == 2 and res.stderr.splitlines()[-1].startswith("error: No space left on device")
    assert "Traceback" not in res.stderr and (tmp_path / "again" / "stats.json").is_file()


def test_names_too_long_for_the_file_system_are_one_line(tmp_path):
    """Issue 28, item 21: a 300-character --verifier label and a 6,000-character RADAR_MODELS_DIR ended
    in ENAMETOOLONG tracebacks."""
    from tests.report_fixtures import planted_run

    run = planted_run(tmp_path / "run")
    one_line_exit_2(invoke("report", run, "--verifier", "v" * 300), "File name too long")
    res = CliRunner().invoke(cli, ["models", "fetch", "smollm2-135m"], env={"RADAR_MODELS_DIR": "/" + "m" * 6000})
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and "too long" in res.stderr, res.stderr


def test_a_torn_line_that_cannot_be_set_aside_on_a_full_disk_changes_nothing(tmp_path, monkeypatch):
    """Issue 28, item 21: resuming on a full disk ended in an OSError traceback."""
    import errno

    from radar_local import store
    from radar_local.rundir import PROBES

    config = tmp_path / "audit.yaml"
    config.write_text(yaml.safe_dump(planted_config()))
    assert invoke("audit", config, "--out", tmp_path / "run", "--no-report", "--quiet").exit_code == 0
    probes = tmp_path / "run" / PROBES
    probes.write_bytes(probes.read_bytes()[:-30])  # a kill mid-write
    before = probes.read_bytes()

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "_write_all", full)
    one_line_exit_2(invoke("audit", config, "--out", tmp_path / "run", "--quiet"), probes, "No space left on device")
    assert probes.read_bytes() == before and not list(probes.parent.glob("*.torn-*"))
