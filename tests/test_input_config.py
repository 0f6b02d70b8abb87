"""Configs, rubrics, task files, templates and options as a user may hand them: malformed, hostile or fuzzed,
each is one line naming the file and exit 2, before anything is written. The planted engine, no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from radar_local.auditing import run_audit
from radar_local.errors import InputError, RadarError
from radar_local.rubric import load_benchmark
from tests.conftest import PLANTED_TASKS, invoke, one_line_exit_2, planted_config, probes, table, write_config
from tests.fuzzing import SETTINGS, check, mutated, run

REPO = Path(__file__).resolve().parents[1]


EXAMPLE = REPO / "radar_local" / "benchmarks" / "example_helpsteer2.csv"


SMALL_RUBRIC = REPO / "tests" / "data" / "small_rubric.yaml"


BENCH = load_benchmark("helpsteer2")


RUBRIC = BENCH.rubric.model_dump(mode="json")


REFERENCE = BENCH.reference.model_dump(mode="json")


YAMLISH = st.lists(
    st.sampled_from(
        [
            "[",
            "]",
            "{",
            "}",
            "&a ",
            "*a ",
            "&b ",
            "*b ",
            "rubric: ",
            "n: ",
            "- ",
            "\n",
            "  ",
            "x",
            "1",
            ", ",
            ": ",
            "'",
            '"',
            "#",
            "!!str ",
            "\xe9",
            "\t",
            "?",
        ]
    ),
    max_size=60,
)


HOSTILE_TEMPLATES = {
    "nested loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "a long repeat": "{{ 'x' * 10**9 }}",
    "a tower of powers": "{{ 10**10**10 }}",
    "lipsum": "{{ lipsum(10**6) }}",
    "a huge wordwrap": "{{ response|wordwrap(10**9) }}",
    "a big range": "{{ range(10**9)|list }}",
    "macro recursion": "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "include": "{% include 'x.txt' %}",
    "import": "{% import 'x.txt' as y %}",
    "extends": "{% extends 'x.txt' %}",
    "division by zero": "{{ 1 // 0 }}",
    "digits past int-to-str's limit": "{{ (10**60) * (10**60) * (10**60) }}{{ ((10**60) ** 64) }}",
    "loops over the response": "{% for a in response %}{% for b in response %}{% for c in response %}"
    "{% endfor %}{% endfor %}{% endfor %}",
}


def test_duplicate_task_ids_inline_are_refused_before_any_model(tmp_path):
    cfg = write_config(tmp_path, planted_config(tasks=[PLANTED_TASKS[0], {**PLANTED_TASKS[1], "id": "refund"}]))
    one_line_exit_2(invoke("audit", cfg, "--out", tmp_path / "run"), cfg, "duplicate task id 'refund'")
    assert not (tmp_path / "run").exists()


def test_duplicate_task_ids_in_a_task_file(tmp_path):
    tasks = write_config(tmp_path, {"tasks": [PLANTED_TASKS[0], PLANTED_TASKS[0]]}, "tasks.yaml")
    cfg = write_config(tmp_path, planted_config(tasks=str(tasks)))
    one_line_exit_2(invoke("audit", cfg, "--out", tmp_path / "run"), tasks, "duplicate task id 'refund'")
    assert not (tmp_path / "run" / "probes.jsonl").exists()


@pytest.mark.parametrize("role", ["generators", "verifiers"])
def test_grid_models_sharing_a_label_are_refused(tmp_path, role):
    a = {"engine": "testing", "model": "one", "name": "judge"}
    b = {"engine": "testing", "model": "two", "name": "judge"}
    other = [{"engine": "testing", "model": "three"}]
    data = {"rubric": "helpsteer2", "generators": other, "verifiers": other, role: [a, b]}
    cfg = write_config(tmp_path, data, "grid.yaml")
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
    cfg = write_config(tmp_path, data, "grid.yaml")
    res = invoke("grid", cfg, "--out", tmp_path / "g", "--quiet", "--no-report")
    assert res.exit_code == 1 and isinstance(res.exception, ValueError) and "config" not in res.output


def test_nan_tau_and_unknown_options_are_one_line():
    one_line_exit_2(invoke("stats", EXAMPLE, "--tau", "nan"), "--tau", "nan is not a number in [0, 1]")
    one_line_exit_2(invoke("stats", EXAMPLE, "--screening", "nan"), "--screening", "nan is not a number")  # issue 60
    one_line_exit_2(invoke("stats", EXAMPLE, "--bogus"), "--bogus", "radar stats --help")


def test_verifier_labels_that_share_a_file_name(tmp_path):
    from radar_local.config import AuditConfig
    from radar_local.errors import InputError
    from radar_local.resolved import resolve
    from radar_local.run import Run
    from radar_local.specs import ModelSpec

    run = Run.create(resolve(AuditConfig.model_validate(planted_config()), tmp_path), tmp_path / "run")
    run.register_verifier(ModelSpec(engine="testing", model="one", name="judge/a"))
    with pytest.raises(InputError, match="share a file name"):
        run.register_verifier(ModelSpec(engine="testing", model="two", name="judge_a"))


@pytest.mark.parametrize("key", ["rubric", "human", "out"])
def test_a_nul_byte_in_a_path_is_one_line(tmp_path, key):
    """Found by hypothesis (the fuzzing tests): the OS's 'embedded null byte' was a traceback."""
    path = write_config(tmp_path, planted_config(**{key: "\x00"}))
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run"), path, "NUL byte")


@pytest.mark.parametrize("command", ["audit", "repair"])
def test_unknown_intended_criteria_are_refused_before_anything_is_made(tmp_path, command):
    """Named in the user's file, before a run directory, a lock or any model call exists."""
    path = write_config(tmp_path, planted_config(intended=[["helpfulness", "charm"]], out=str(tmp_path / "run")))
    one_line_exit_2(invoke(command, path), path, "unknown criterion 'charm'")
    assert not (tmp_path / "run").exists()


def test_a_bad_rubric_file_leaves_no_run_directory(tmp_path):
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("criteria: [")
    path = write_config(tmp_path, planted_config(rubric=str(rubric)))
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
    path = write_config(
        tmp_path, {**grid, "generators": [spec], "verifiers": [{"engine": "testing", "model": "judge"}]}
    )
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
    path = write_config(tmp_path, planted_config(tasks=str(tasks)))
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


@pytest.mark.parametrize(
    "which,file,needle",
    [
        ("config", "audit.yaml", "is not UTF-8 text (byte 0xe9"),
        ("rubric", "rubric.yaml", "is not UTF-8 text (byte 0xe9"),
        ("tasks", "tasks.yaml", "is not UTF-8 text (byte 0xe9"),
        ("human", "human.yaml", "is not UTF-8 text (byte 0xe9"),
        ("tasks", "tasks.jsonl", "can't decode byte 0xe9"),
        ("tasks", "tasks.csv", "can't decode byte 0xe9"),
    ],
)
def test_bytes_that_are_not_utf8_are_one_line(tmp_path, which, file, needle):
    bad = {".jsonl": b'{"id": "a", "prompt": "caf\xe9"}\n', ".csv": b"id,prompt\na,caf\xe9\n"}.get(
        Path(file).suffix, b"id: x\nname: caf\xe9\n"
    )
    config = planted_config(rubric=str(SMALL_RUBRIC))
    if which != "config":
        (tmp_path / file).write_bytes(bad)
        config[which] = str(tmp_path / file)
    path = write_config(tmp_path, config)
    if which == "config":
        path.write_bytes(yaml.safe_dump(config).encode() + b"# caf\xe9\n")
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run"), tmp_path / file, needle)
    assert not (tmp_path / "run").exists()


def test_the_alias_bomb_is_refused_at_once(tmp_path):
    """872 bytes that expand to 10^9 values (issue 21, item 3) inside a free-form engine option."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
        f"*a{i - 1}, *a{i - 1}]"
        for i in range(1, 9)
    ]
    config = planted_config()
    body = yaml.safe_dump({k: v for k, v in config.items() if k not in ("generator", "verifier")})
    text = body + "bombs:\n" + "".join(f"  {line}\n" for line in lines)
    text += "generator: {engine: testing, model: planted, options: {edits: [{x: *a8}]}}\n"
    text += "verifier: {engine: testing, model: planted}\n"
    path = tmp_path / "audit.yaml"
    path.write_text(text)
    assert len(text.encode()) < 2000
    one_line_exit_2(
        invoke("audit", path, "--out", tmp_path / "run"), path, "expands past 1,000,000 values", "YAML aliases"
    )
    assert not (tmp_path / "run").exists()


def test_aliases_that_share_a_block_still_work(tmp_path):
    """Ordinary YAML: one block of options shared by two verifiers through &opts / *opts."""
    grid = {k: v for k, v in planted_config().items() if k not in ("generator", "verifier")}
    text = yaml.safe_dump(grid) + (
        "generators: [{engine: testing, model: gen}]\n"
        "verifiers:\n  - {engine: testing, model: a, options: &opts {noise: 0.5}}\n"
        "  - {engine: testing, model: b, options: *opts}\n"
    )
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    from radar_local.config import GridConfig, load_config

    grid_config = load_config(path, GridConfig)
    assert [v.options for v in grid_config.verifiers] == [{"noise": 0.5}, {"noise": 0.5}]


@pytest.mark.parametrize(
    "suffix,depth,needle",
    [
        (".yaml", 100_000, "malformed YAML"),
        (".yaml", 100, "nested deeper than 64"),
        (".json", 100_000, "nested too deeply"),
    ],
)
def test_deep_nesting_is_one_line(tmp_path, suffix, depth, needle):
    rubric = tmp_path / f"rubric{suffix}"
    rubric.write_text("[" * depth + "]" * depth)
    one_line_exit_2(invoke("stats", EXAMPLE, "--rubric", rubric, "--bootstrap", 0), rubric, needle)


def test_models_dir_too_long(tmp_path, monkeypatch):
    from radar_local.errors import InputError
    from radar_local.models import models_dir

    monkeypatch.setenv("RADAR_MODELS_DIR", str(tmp_path / ("m" * 300)))
    with pytest.raises(InputError, match="longer than 255 bytes"):
        models_dir()


def test_doctor_with_a_damaged_fetch_record(tmp_path, monkeypatch):
    """The doctor's model check (its library checks import torch and vLLM in child processes: slow)."""
    from radar_local.doctor import check_models

    model = tmp_path / "smollm2-135m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    monkeypatch.setenv("RADAR_MODELS_DIR", str(tmp_path))
    for damaged in ("{not json", "[]", '{"sha256": {"../../etc/passwd": "x"}}'):
        (model / "radar_fetch.json").write_text(damaged)
        problems: list[str] = []
        (row,) = [r for r in check_models(problems) if r["name"] == "smollm2-135m"]
        assert row["on_disk"] and row["checksum"] is None, damaged
        assert any(
            p.startswith(str(model / "radar_fetch.json")) and "radar models fetch smollm2-135m" in p for p in problems
        ), (damaged, problems)


@pytest.mark.parametrize(
    "option,value",
    [
        ("--verifier", "a}b"),
        ("--generator", "m, name: x"),
        ("--tasks", "my tasks: v2.jsonl"),
        ("--verifier", 'q"uote\\'),
    ],
)
def test_init_writes_any_model_name_as_that_name(tmp_path, option, value):
    from radar_local.config import load_config

    path = tmp_path / "audit.yaml"
    assert invoke("init", path, option, value).exit_code == 0
    config = load_config(path)
    got = {
        "--verifier": config.verifier.model,
        "--generator": config.generator.model,
        "--tasks": getattr(config.tasks, "path", None),
    }[option]
    assert got == value and config.generator.name is None


def test_no_library_warning_reaches_the_user(tmp_path):
    """A gated criterion, undefined correlations and NaN leakage, through the statistics, the report's
    figures and compare: numpy and scipy stay silent (they and matplotlib leaked onto stderr)."""
    import warnings

    from radar_local.analysis import stats_for_table
    from radar_local.report.plots import FIGURES
    from radar_local.stats.settings import StatsSettings
    from tests.conftest import probes, table

    flat = {"a": 2, "b": 2}
    rows = [r for t in ("t1", "t2") for c in ("a", "b") for d in "+-" for r in probes(t, c, d, [flat] * 2)]
    one = probes("t", "a", "+", [{"a": 4, "b": 2}]) + probes("t", "a", "-", [{"a": 0, "b": 2}])
    one += probes("t", "b", "+", [{"a": 2, "b": 4}]) + probes("t", "b", "-", [{"a": 2, "b": 0}])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats_for_table(
            table(one), "t.csv", StatsSettings(resamples=30)
        )  # one probe per cell: no spread, no correlation
        gated = stats_for_table(
            table(rows), "t.csv", StatsSettings(resamples=30)
        )  # a flat judge: every criterion gated
        for make in FIGURES.values():
            make(gated).svg()
        run = tmp_path / "run"
        run_audit(planted_config(rubric=str(SMALL_RUBRIC), options={"noise": 3.0}, n=1), run, base=REPO)
        assert invoke("compare", run, run).exit_code == 0
    assert [str(w.message) for w in caught] == []


def test_a_grid_label_too_long_for_a_file_name_is_refused_at_config_time(tmp_path):
    grid = {k: v for k, v in planted_config().items() if k not in ("generator", "verifier")}
    spec = {"engine": "testing", "model": "m", "name": "g" * 300}
    path = write_config(
        tmp_path, {**grid, "generators": [spec], "verifiers": [{"engine": "testing", "model": "judge"}]}
    )
    one_line_exit_2(invoke("grid", path, "--out", tmp_path / "grid"), path, "longer than 100 characters")
    assert not (tmp_path / "grid").exists()


def test_an_alias_bomb_in_an_option_value_is_refused(tmp_path):
    levels = ["&a0 [" + ", ".join(["x"] * 10) + "]"]
    levels += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    res = invoke("score", tmp_path, "--verifier", "testing:planted", "--option", f"edits=[{', '.join(levels)}]")
    assert res.exit_code == 2 and "expands past 1,000,000 values" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1


@SETTINGS
@given(rubric=mutated(RUBRIC))
def test_malformed_rubrics(tmp_path_factory, rubric):
    path = tmp_path_factory.mktemp("r") / "rubric.yaml"
    path.write_text(yaml.safe_dump(rubric))
    check(run("stats", EXAMPLE, "--rubric", path, "--bootstrap", 0), path, [])


@SETTINGS
@given(reference=mutated(REFERENCE))
def test_malformed_reference_files(tmp_path_factory, reference):
    path = tmp_path_factory.mktemp("h") / "human.json"
    path.write_text(json.dumps(reference))
    check(run("stats", EXAMPLE, "--rubric", "helpsteer2", "--human", path, "--bootstrap", 0), path, [])


@SETTINGS
@given(config=mutated(planted_config(n=1, bootstrap=0)))
def test_malformed_configs(tmp_path_factory, config):
    tmp = tmp_path_factory.mktemp("c")
    path = tmp / "audit.yaml"
    path.write_text(yaml.safe_dump(config))
    run_dir = tmp / "run"
    res = run("audit", path, "--out", run_dir, "--quiet", "--no-report")
    check(res, tmp, [])
    if res.exit_code == 2:
        assert not (run_dir / "probes.jsonl").exists()  # refused before any model call


@SETTINGS
@given(text=st.text(max_size=120))
def test_config_files_of_random_text(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("y") / "audit.yaml"
    path.write_text(text)
    check(run("audit", path, "--out", path.parent / "run", "--quiet"), path, [])


@SETTINGS
@given(parts=YAMLISH, depth=st.integers(0, 120), raw=st.binary(max_size=40))
def test_configs_of_yaml_tokens_bytes_depth_and_aliases(tmp_path_factory, parts, depth, raw):
    path = tmp_path_factory.mktemp("yt") / "audit.yaml"
    path.write_bytes(("[" * depth + "".join(parts) + "]" * depth).encode() + raw)
    check(run("audit", path, "--out", path.parent / "run", "--quiet", "--no-report"), path, [])
    assert not (path.parent / "run").exists() or (path.parent / "run" / "config.yaml").exists()


def test_inputs_a_run_could_not_read_back_are_refused_before_anything_is_written(tmp_path, monkeypatch):
    from radar_local import labels, run

    # the cap read back is 64 MiB (inputs.MAX_BYTES); here 1 MiB, so the test writes megabytes, not hundreds
    monkeypatch.setattr(run, "MAX_BYTES", 1 << 20)
    monkeypatch.setattr(labels, "MAX_BYTES", 1 << 20)
    huge = [{"id": "t0", "prompt": "x" * (2 << 20)}, {"id": "t1", "prompt": "Hi."}]
    with pytest.raises(RadarError, match=r"would make inputs.json \d+ MiB, more than the 1 MiB radar reads back"):
        run_audit(planted_config(tasks=huge, n=1, bootstrap=0), tmp_path / "run")
    assert not (tmp_path / "run" / "inputs.json").exists() and not (tmp_path / "run" / "config.yaml").exists()
    labels = tmp_path / "labels.csv"
    with labels.open("wb") as fh:
        fh.truncate(2 << 20)  # sparse: no disk used
    with pytest.raises(RadarError, match="larger than 1 MiB; radar reads no labels file this large"):
        run_audit(planted_config(labels=str(labels), n=1, bootstrap=0), tmp_path / "labelled")


@pytest.mark.parametrize("name", HOSTILE_TEMPLATES)
def test_a_template_that_would_hang_or_crash_is_one_line(name, monkeypatch):
    from radar_local import sandbox
    from radar_local.judge import Judge, render
    from radar_local.rubric import Criterion, Task
    from radar_local.scale import LIKERT

    monkeypatch.setattr(sandbox, "RENDER_S", 0.5)
    judge = Judge(template=HOSTILE_TEMPLATES[name] + "{{ response }}{{ criterion.label }}")
    crit = Criterion(id="c", label="C", description="The c.")
    with pytest.raises(InputError) as err:
        render(judge, Task(id="t", prompt="Hi."), "y" * 2000, [(crit, LIKERT)])
    assert "does not render" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [("((?:[0-4]+)+)!", "repeats a repeated part"), ("(?<=a)([0-4])", "must be literal text"), ("(a*)*b", "repeats")],
)
def test_a_grade_pattern_that_backtracks_or_bounds_nothing_is_refused(tmp_path, pattern, needle):
    from radar_local.config import load_config
    from radar_local.resolved import resolve

    config = tmp_path / "c.yaml"
    judge = {"template": "{{ response }} {{ criterion.label }}", "answer": {"kind": "grade", "pattern": pattern}}
    config.write_text(yaml.safe_dump(planted_config(verifier={"engine": "testing", "model": "p", "judge": judge})))
    with pytest.raises(RadarError) as err:
        resolve(load_config(config), tmp_path, config)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_template_file_is_capped_like_every_input(tmp_path):
    from radar_local.config import load_config
    from radar_local.resolved import resolve

    big = tmp_path / "judge.txt"
    with big.open("wb") as fh:
        fh.truncate(200 << 20)  # sparse
    config = tmp_path / "c.yaml"
    judge = {"template_file": str(big)}
    config.write_text(yaml.safe_dump(planted_config(verifier={"engine": "testing", "model": "p", "judge": judge})))
    with pytest.raises(RadarError, match="larger than 64 MiB"):
        resolve(load_config(config), tmp_path, config)


def test_level_values_stay_within_what_a_table_holds():
    from pydantic import ValidationError

    from radar_local.scale import Scale

    with pytest.raises(ValidationError):
        Scale(levels={"big": 1e19, "small": 0})


def test_a_refused_grid_leaves_nothing_behind(tmp_path):
    from tests.conftest import invoke

    spec = {"engine": "testing", "model": "p"}
    bad_judge = {**spec, "model": "q", "judge": {"template": "{{ criterion.label }} only"}}
    config = tmp_path / "grid.yaml"
    grid = {**planted_config(), "generators": [spec], "verifiers": [{**spec, "model": "v"}, bad_judge]}
    for key in ("generator", "verifier"):
        grid.pop(key)
    config.write_text(yaml.safe_dump({**grid, "out": str(tmp_path / "out")}))
    res = invoke("grid", config)
    assert res.exit_code == 2 and "never shows the response" in res.output, res.output
    assert not (tmp_path / "out").exists()


def test_scale_errors_are_one_line_without_pydantics_dump(tmp_path):
    from tests.conftest import invoke

    res = invoke("stats", REPO / "radar_local" / "benchmarks" / "example_helpsteer2.csv", "--scale", "5-1")
    assert res.exit_code == 2 and "max (1) must be above min (5)" in res.output
    assert "pydantic" not in res.output and "\\n" not in res.output and len(res.output.strip().splitlines()) == 1


THINKING = {"template": "{{ response }} {{ criterion.label }}", "reasoning": {"budget": 64, "ablation": True}}


@pytest.mark.parametrize(
    ("verifier", "needle"),
    [
        ({"repeat": 2}, "`repeat` is set by radar"),
        ({"judge": {**THINKING, "reasoning": {**THINKING["reasoning"], "think": False}}}, "`reasoning.think` is set"),
    ],
)
def test_fields_radar_sets_are_refused_in_a_config(tmp_path, verifier, needle):
    """Issue 60 item 16: `repeat: 2` made a verifier's repeats come from the store (changed 0, --fail-on-changed
    passing); `think: false` beside `ablation: true` compared a judge with itself. They mark radar's own twins."""
    config = planted_config()
    config["verifier"] = {**config["verifier"], **verifier}
    path = write_config(tmp_path, config)
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run", "--quiet"), needle)
    assert not (tmp_path / "run").exists()


def test_features_are_refused_together_from_what_each_needs(tmp_path):
    """Issue 62: which features run together is derived from what each needs (radar_local/interactions.py): every
    feature whose need a setting takes away is one line naming both, every other pair runs; the config's check
    names exactly the table's features and settings."""
    import inspect

    from radar_local.config import AuditSettings
    from radar_local.interactions import NEEDS, TAKES, conflict

    for setting, (need, _, _) in TAKES.items():
        for feature, needs in NEEDS.items():
            line = conflict([feature], [setting])
            assert (line is not None) == (need in needs), (setting, feature)
            assert line is None or (line.startswith(f"{setting} ") and f", and {feature} " in line)
    assert conflict(list(NEEDS), []) is None
    source = inspect.getsource(AuditSettings._features_run_together)
    assert all(f'"{name}"' in source for name in [*NEEDS, *TAKES])
    both = planted_config(nuisance=["length"], unconditioned=2, adaptive={"start_n": 2, "max_n": 4})
    one_line_exit_2(invoke("audit", write_config(tmp_path, both), "--out", tmp_path / "run"),
                    "adaptive draws its probes in waves, and nuisance needs a fixed n")  # fmt: skip


def test_each_render_has_its_own_deadline_and_one_past_it_leaves_the_next_untouched(monkeypatch):
    """One watchdog thread bounds every render: a render past RENDER_S stops with RenderRefused while renders in
    other threads finish, and the thread that overran renders again as usual (no exception left pending)."""
    from concurrent.futures import ThreadPoolExecutor

    from radar_local import sandbox

    monkeypatch.setattr(sandbox, "RENDER_S", 0.3)
    hang = "{% for a in r %}{% for b in r %}{% for c in r %}{% endfor %}{% endfor %}{% endfor %}"
    with ThreadPoolExecutor(3) as pool:
        hung = pool.submit(sandbox.render_bounded, hang, {"r": "y" * 2000})
        quick = [pool.submit(sandbox.render_bounded, "{{ x }}!", {"x": i}) for i in range(200)]
        assert [q.result() for q in quick] == [f"{i}!" for i in range(200)]
        with pytest.raises(sandbox.RenderRefused, match="ran for more than 0.3 s"):
            hung.result()
    with pytest.raises(sandbox.RenderRefused, match="ran for more than 0.3 s"):
        sandbox.render_bounded(hang, {"r": "y" * 2000})
    assert sandbox.render_bounded("{{ x }}", {"x": "again"}) == "again"
