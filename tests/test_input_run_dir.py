"""A run directory and the paths radar writes: hand-edited or damaged store lines and run files, links planted where
radar writes, outputs that are files or too long, a full disk; one line naming the file, no earlier result lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import event, given
from hypothesis import strategies as st

from radar_local.auditing import run_audit
from radar_local.cli.main import cli
from radar_local.report.build import write_report
from radar_local.rundir import CONFIG, PROBES, SCORES, load_run
from tests.conftest import invoke, one_line_exit_2, planted_config, write_config
from tests.fuzzing import SETTINGS, check, mutated, run

REPO = Path(__file__).resolve().parents[1]


EXAMPLE = REPO / "radar_local" / "benchmarks" / "example_helpsteer2.csv"


SMALL_RUBRIC = REPO / "tests" / "data" / "small_rubric.yaml"


def _audit_again(run: Path):
    return invoke("audit", run / CONFIG, "--out", run, "--quiet", "--no-report")


def _edit_line(path: Path, number: int, edit) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = edit(json.loads(lines[number - 1])) + "\n"
    path.write_text("".join(lines))


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory):

    out = tmp_path_factory.mktemp("stored") / "run"
    run_audit(
        planted_config(rubric=str(Path(__file__).parent / "data" / "small_rubric.yaml"), bootstrap=0),
        out,
        base=Path(__file__).resolve().parents[1],
    )
    write_report(load_run(out))  # its figures are reused by the copies' reports (the statistics do not change)
    return out


def _copy(run_dir: Path, tmp_path_factory) -> Path:
    import shutil

    copy = tmp_path_factory.mktemp("c") / "run"
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns(".radar.lock"))
    return copy


@pytest.mark.parametrize("option", ["--json", "--markdown"])
def test_stats_output_into_a_missing_folder(tmp_path, option):
    target = tmp_path / "no" / "such" / "out.json"
    one_line_exit_2(
        invoke("stats", EXAMPLE, "--rubric", "helpsteer2", "--bootstrap", 0, option, target), target, "does not exist"
    )
    assert not (tmp_path / "no").exists()


def test_out_that_is_a_file(tmp_path):
    cfg = write_config(tmp_path, planted_config())
    target = tmp_path / "afile"
    target.write_text("keep me")
    one_line_exit_2(invoke("audit", cfg, "--out", target), target, "is a file, not a run directory")
    assert target.read_text() == "keep me"


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


def test_a_runs_config_snapshot_that_is_not_utf8(run_copy):
    (run_copy / CONFIG).write_bytes((run_copy / CONFIG).read_bytes() + b"# \xff\n")
    one_line_exit_2(invoke("report", run_copy), run_copy / CONFIG, "not UTF-8")


@pytest.mark.parametrize(
    "file,edit,needle",
    [
        (PROBES, lambda r: json.dumps({**r, "key": ["a"]}), "'key' is missing or not text"),
        (PROBES, lambda r: json.dumps({k: v for k, v in r.items() if k != "text"}), "'text' is missing or not text"),
        (PROBES, lambda r: json.dumps({**r, "text": 3}), "'text' is missing or not text"),
        (PROBES, lambda r: json.dumps([r]), "not a JSON object"),
        (PROBES, lambda r: "[" * 100_000, "not a whole JSON record"),
        (
            SCORES,
            lambda r: json.dumps({k: v for k, v in r.items() if k != "score"}),
            "'score' is missing or not a number",
        ),
        (SCORES, lambda r: json.dumps({**r, "score": "4"}), "'score' is missing or not a number"),
        (SCORES, lambda r: json.dumps({**r, "score": True}), "'score' is missing or not a number"),
    ],
)
def test_a_hand_edited_store_line_is_one_line_naming_it(run_copy, file, edit, needle):
    _edit_line(run_copy / file, 3, edit)
    stored = [p for p in run_copy.iterdir() if p.is_file() and p.name != ".radar.lock"]
    before = {p: p.read_bytes() for p in stored}
    one_line_exit_2(_audit_again(run_copy), run_copy / file, "line 3 is damaged", needle)
    assert {p: p.read_bytes() for p in stored} == before  # nothing rewritten


@pytest.mark.parametrize(
    "field,value", [("task_id", "elsewhere"), ("target", "verbosity"), ("direction", "?"), ("variant", 7)]
)
def test_a_probe_whose_fields_disagree_with_its_key_is_refused(run_copy, field, value):
    """The key is the hash of what was asked; a record saying otherwise was edited."""
    _edit_line(run_copy / PROBES, 2, lambda r: json.dumps({**r, field: value}))
    one_line_exit_2(_audit_again(run_copy), run_copy / PROBES, "line 2", f"'{field}'", "does not match its key")


def test_a_verdict_off_its_criterion_scale_is_refused(run_copy):
    """A line is checked against the scale of the criterion it scores (the rubric's), when it is read for an audit."""
    stored = [p for p in run_copy.iterdir() if p.is_file() and p.name != ".radar.lock"]
    before = {p: p.read_bytes() for p in stored}
    _edit_line(run_copy / SCORES, 3, lambda r: json.dumps({**r, "score": 9}))
    one_line_exit_2(_audit_again(run_copy), run_copy / SCORES, "line 3", "score 9 is off the 0-4 scale", "edited")
    assert {p: p.read_bytes() for p in stored if p.name != SCORES} == {
        p: b for p, b in before.items() if p.name != SCORES
    }


def test_a_verdict_whose_criterion_disagrees_with_its_key_is_refused(run_copy):
    first = json.loads((run_copy / SCORES).read_text().splitlines()[0])
    other = "coherence" if first["criterion"] != "coherence" else "correctness"
    _edit_line(run_copy / SCORES, 1, lambda r: json.dumps({**r, "criterion": other}))
    one_line_exit_2(_audit_again(run_copy), run_copy / SCORES, "line 1", "'criterion'", "does not match its key")


def test_a_store_file_that_is_a_folder(run_copy):
    (run_copy / SCORES).unlink()
    (run_copy / SCORES).mkdir()
    one_line_exit_2(_audit_again(run_copy), run_copy / SCORES, "is a folder")


@pytest.mark.parametrize(
    "name,content,needle",
    [
        ("verifiers.json", "[]", "not a JSON object"),
        ("verifiers.json", '{"planted": {"engine": "nope", "model": "m"}}', "key 'planted.engine'"),
        ("verifiers.json", '{"planted": 3}', "key 'planted'"),
        ("run.json", "[]", "not a JSON object"),
        ("run.json", "{}", "key 'stages'"),
        (
            "run.json",
            '{"stages": {"score": {"calls": 1, "prompt_tokens": 0, "output_tokens": 0, "seconds": "fast"}}}',
            "key 'stages.score.seconds'",
        ),
    ],
)
def test_run_files_of_the_wrong_shape_are_one_line(run_copy, name, content, needle):
    (run_copy / name).write_text(content)
    res = invoke("report", run_copy, "--out", run_copy / "again") if name == "run.json" else _audit_again(run_copy)
    one_line_exit_2(res, run_copy / name, needle)


@pytest.mark.parametrize("name", [".radar.lock", PROBES, SCORES])
def test_a_link_planted_in_a_run_directory_is_never_written_through(run_copy, tmp_path, name):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    if (run_copy / name).exists():
        (run_copy / name).unlink()
    (run_copy / name).symlink_to(victim)
    res = _audit_again(run_copy)
    one_line_exit_2(res, run_copy / name, "symbolic link")
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("name", ["stats.json", "scores.csv", "stats.json.tmp"])
def test_a_link_where_radar_writes_a_whole_file_is_replaced_not_followed(run_copy, tmp_path, name):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (run_copy / name).unlink(missing_ok=True)
    (run_copy / name).symlink_to(victim)
    assert _audit_again(run_copy).exit_code == 0
    assert victim.read_text() == "precious\n"
    if name != "stats.json.tmp":
        assert not (run_copy / name).is_symlink() and (run_copy / name).stat().st_size > 10


def test_report_out_that_is_a_file(finished_run, tmp_path):
    out = tmp_path / "report.html"
    out.write_text("mine")
    one_line_exit_2(invoke("report", finished_run, "--out", out), out, "is a file")
    assert out.read_text() == "mine"


def test_a_runs_report_folder_that_is_a_file(run_copy):
    (run_copy / "report").write_text("mine")
    one_line_exit_2(invoke("report", run_copy), run_copy / "report", "is a file")


def test_repair_out_that_is_a_file(tmp_path):
    out = tmp_path / "repair-out"
    out.write_text("mine")
    path = write_config(tmp_path, planted_config(rubric=str(SMALL_RUBRIC), bootstrap=0, out=str(tmp_path / "run")))
    res = invoke("repair", path, "--out", out)
    one_line_exit_2(res, out, "is a file")
    assert out.read_text() == "mine"


def test_names_too_long_for_the_file_system(run_copy, tmp_path):
    stored = {p: p.read_bytes() for p in run_copy.iterdir() if p.is_file() and p.name != ".radar.lock"}
    res = invoke("score", run_copy, "--verifier", "testing:planted", "--name", "v" * 300, "--quiet")
    one_line_exit_2(res, "too long")
    res = invoke("audit", run_copy / CONFIG, "--out", tmp_path / ("r" * 300), "--quiet")
    one_line_exit_2(res, "too long")
    assert {p: p.read_bytes() for p in stored} == stored  # the stored run is intact, byte for byte


def test_a_second_config_in_a_run_directory_is_refused(run_copy, tmp_path):
    stats = (run_copy / "stats.json").read_bytes()
    other = write_config(tmp_path, planted_config(rubric="helpsteer2", bootstrap=0))
    one_line_exit_2(
        invoke("audit", other, "--out", run_copy, "--quiet"), run_copy, "another config (its rubric differ", "--out"
    )
    assert (run_copy / "stats.json").read_bytes() == stats


def test_the_same_config_from_another_file_resumes(run_copy, tmp_path):
    """StatsSettings that re-analyse the same probes (bootstrap count, tau, where the file lies) are no new config."""
    same = write_config(tmp_path, planted_config(rubric=str(SMALL_RUBRIC), bootstrap=0))
    assert invoke("audit", same, "--out", run_copy, "--quiet", "--no-report").exit_code == 0
    more = write_config(tmp_path, planted_config(rubric=str(SMALL_RUBRIC), bootstrap=30, tau=0.5), name="more.yaml")
    assert invoke("audit", more, "--out", run_copy, "--quiet", "--no-report").exit_code == 0
    assert json.loads((run_copy / "run.json").read_text())["stages"]["score"]["calls"] == 0


def test_a_run_without_its_config_snapshot_says_so(run_copy):
    (run_copy / CONFIG).unlink()
    one_line_exit_2(invoke("report", run_copy), run_copy, f"but no {CONFIG}")


def test_a_dangling_out_link_is_named_as_a_link(tmp_path):
    (tmp_path / "run").symlink_to(tmp_path / "nowhere")
    path = write_config(tmp_path, planted_config())
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run"), tmp_path / "run", "symbolic link to nothing")
    assert not (tmp_path / "nowhere").exists()


@SETTINGS
@given(file=st.sampled_from(["probes.jsonl", "scores.jsonl"]), line=st.integers(0, 5), data=st.data())
def test_hand_edited_store_lines_of_valid_json(stored_run, tmp_path_factory, file, line, data):
    copy = _copy(stored_run, tmp_path_factory)
    lines = (copy / file).read_text().splitlines(keepends=True)
    lines[line] = json.dumps(data.draw(mutated(json.loads(lines[line])))) + "\n"
    (copy / file).write_text("".join(lines))
    res = run("audit", copy / "config.yaml", "--out", copy, "--quiet", "--no-report")
    check(res, copy, [])


@SETTINGS
@given(name=st.sampled_from(["run.json", "verifiers.json"]), data=st.data())
def test_run_directory_files_of_the_wrong_shape(stored_run, tmp_path_factory, name, data):
    copy = _copy(stored_run, tmp_path_factory)
    (copy / name).write_text(json.dumps(data.draw(mutated(json.loads((copy / name).read_text())))))
    check(run("report", copy), copy, [])
    check(run("audit", copy / "config.yaml", "--out", copy, "--quiet", "--no-report"), copy, [])


@SETTINGS
@given(
    name=st.sampled_from(
        [
            ".radar.lock",
            "probes.jsonl",
            "scores.jsonl",
            "stats.json",
            "run.json",
            "scores.csv",
            "config.yaml",
            "report",
            "verifiers.json",
        ]
    ),
    target=st.sampled_from(["file", "folder", "nothing"]),
)
def test_links_planted_in_a_run_directory(stored_run, tmp_path_factory, name, target):
    copy = _copy(stored_run, tmp_path_factory)
    victim = copy.parent / "victim"
    if target == "file":
        victim.write_text("precious\n")
    elif target == "folder":
        victim.mkdir()
    if (copy / name).is_dir():
        import shutil

        shutil.rmtree(copy / name)
    else:
        (copy / name).unlink(missing_ok=True)
    (copy / name).symlink_to(victim)
    report = (
        ["report", copy]
        if name == "report"
        else ["audit", copy / "config.yaml", "--out", copy, "--quiet", "--no-report"]
    )
    for args in (["audit", copy / "config.yaml", "--out", copy, "--quiet", "--no-report"], report):
        res = run(*args)
        event(f"exit {res.exit_code}")
        assert res.exit_code in (0, 2) and (res.exception is None or isinstance(res.exception, SystemExit)), res.output
    if target == "file":
        assert victim.read_text() == "precious\n"  # never written through
    elif target == "folder":
        assert not any(victim.iterdir())


@SETTINGS
@given(
    kind=st.sampled_from(["file", "file-in-path", "long", "dangling", "dot"]),
    command=st.sampled_from(["report", "stats", "repair"]),
)
def test_unusual_output_paths(stored_run, tmp_path_factory, kind, command):
    tmp = tmp_path_factory.mktemp("o")
    (tmp / "f").write_text("mine")
    out = {
        "file": tmp / "f",
        "file-in-path": tmp / "f" / "x",
        "long": tmp / ("n" * 300),
        "dangling": tmp / "link",
        "dot": tmp / ".",
    }[kind]
    if kind == "dangling":
        out.symlink_to(tmp / "nowhere")
    args = {
        "report": ["report", stored_run, "--out", out],
        "repair": ["repair", _copy(stored_run, tmp_path_factory), "--out", out],
        "stats": ["stats", EXAMPLE, "--bootstrap", 0, "--json", out],
    }[command]
    res = run(*args)
    event(f"exit {res.exit_code}")
    assert res.exit_code in (0, 1, 2) and (res.exception is None or isinstance(res.exception, SystemExit)), (
        res.output,
        res.exception,
    )
    if res.exit_code == 2:
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr
    if not (kind == "file" and command == "stats"):  # --json FILE writes that file, as asked
        assert (tmp / "f").read_text() == "mine"
    assert not (tmp / "nowhere").exists()


@pytest.mark.parametrize(
    ("edit", "needle"),
    [({"score": 99.0}, "score 99 is not a level"), ({"task_id": "nowhere"}, "task 'nowhere' is none of the run's")],
)
def test_a_hand_edited_labels_json_is_one_line(labelled_run, tmp_path, edit, needle):
    import json
    import shutil

    from tests.conftest import invoke

    run = tmp_path / "run"
    shutil.copytree(labelled_run, run, ignore=shutil.ignore_patterns(".radar.lock"))
    data = json.loads((run / "labels.json").read_text())
    data["labels"][0].update(edit)
    (run / "labels.json").write_text(json.dumps(data))
    for command in (("report", run), ("score", run, "--verifier", "testing:planted", "--name", "again")):
        res = invoke(*command)
        assert res.exit_code == 2 and needle in res.output and len(res.output.strip().splitlines()) == 1, res.output


@pytest.mark.parametrize(  # each renders a report: one in make test-fast, all in make test
    "block",
    ["labels", pytest.param("halo", marks=pytest.mark.thorough), pytest.param("jury", marks=pytest.mark.thorough)],
)
def test_a_hand_edited_stats_block_is_one_line(labelled_run, tmp_path, block):
    import json
    import shutil

    from tests.conftest import invoke

    run = tmp_path / "run"
    shutil.copytree(labelled_run, run, ignore=shutil.ignore_patterns(".radar.lock"))
    stats = run / "stats.json"
    data = json.loads(stats.read_text())
    data[block] = {"judges": {"x": 1}, "pairs": [1], "coupling": {"jurors": [1]}, "side_by_side": {"x": 1}}
    stats.write_text(json.dumps(data))
    res = invoke("report", run)
    assert res.exit_code == 2 and "stats.json" in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_drift_and_order_json_never_write_through_a_fifo_or_a_link(tmp_path):
    """Issue 60 item 18: `radar drift --json` and `radar order --json` opened their output as given: a FIFO hung
    the command, a link had its target overwritten. They write as every output does (store.write_atomic)."""
    import os

    joint = {"engine": "testing", "model": "planted", "judge": {"calls": "joint", "order": "balanced"}}
    run = tmp_path / "run"
    run_audit(planted_config(verifier=joint, bootstrap=0), run)
    assert invoke("score", run, "--verifier", "testing:planted", "--name", "again", "--quiet").exit_code == 0
    commands = {
        "drift": ["drift", run, "--before", "planted", "--after", "again", "--bootstrap", "20"],
        "order": ["order", run, "--verifier", "planted"],
    }
    for name, args in commands.items():
        fifo = tmp_path / f"{name}.fifo"
        os.mkfifo(fifo)
        one_line_exit_2(invoke(*args, "--json", fifo), "is not a regular file")
        target, link = tmp_path / f"{name}-target.txt", tmp_path / f"{name}.json"
        target.write_text("keep me")
        link.symlink_to(target)
        result = invoke(*args, "--json", link)
        assert result.exit_code == 0, result.output
        assert target.read_text() == "keep me" and not link.is_symlink() and json.loads(link.read_text())


def test_commands_on_verdicts_a_run_does_not_hold_name_why(tmp_path):
    """Issue 60 item 20: `radar drift` on a pairwise-only run said "score file not found", `radar order` listed no
    verifier, and `radar drift` / `radar report` on a repeat's label said "not an audit run directory"."""
    template = "{{ prompt }} A: {{ response_a }} B: {{ response_b }} {{ criterion.label }}? [[A]] or [[B]]."
    pairs, repeats = tmp_path / "pairs", tmp_path / "repeats"
    run_audit(planted_config(pairwise={"template": template, "only": True}, bootstrap=0), pairs)
    run_audit(planted_config(consistency={"repeats": 2}, bootstrap=0), repeats)
    for args in (["drift", pairs, "--before", "planted", "--after", "planted-pairwise"], ["order", pairs, "--verifier",
                 "planted"]):  # fmt: skip
        one_line_exit_2(invoke(*args), "asked only pairs (pairwise: {only: true})", "no pointwise verdicts")
    for args in (["drift", repeats, "--before", "planted", "--after", "planted-repeat-2"], ["report", repeats,
                 "--verifier", "planted-repeat-2"]):  # fmt: skip
        one_line_exit_2(invoke(*args), "'planted-repeat-2' has no audit of its own here", "a repeat")
