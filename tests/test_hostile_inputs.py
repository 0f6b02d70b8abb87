"""Hostile and hand-edited inputs (issue 21): one line and exit 2 naming the file, nothing written
outside the run directory, no earlier result lost. The planted engine, no model."""

import json
from pathlib import Path

import pytest
import yaml

from radar_local.auditing import run_audit
from radar_local.rundir import CONFIG, PROBES, SCORES
from tests.conftest import planted_config
from tests.test_bad_input import _config, invoke, one_line_exit_2

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "radar_local" / "benchmarks" / "example_helpsteer2.csv"
SMALL_RUBRIC = REPO / "tests" / "data" / "small_rubric.yaml"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A finished planted audit; tests copy it before changing anything."""
    run = tmp_path_factory.mktemp("finished") / "run"
    run_audit(planted_config(rubric=str(SMALL_RUBRIC), bootstrap=0), run, base=REPO)
    return run


@pytest.fixture
def run_copy(finished_run, tmp_path) -> Path:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy, ignore=shutil.ignore_patterns(".radar.lock"))
    return copy


def _audit_again(run: Path):
    return invoke("audit", run / CONFIG, "--out", run, "--quiet", "--no-report")


# ---- One reader: bytes, depth, aliases --------------------------------------------------------


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
    path = _config(tmp_path, config)
    if which == "config":
        path.write_bytes(yaml.safe_dump(config).encode() + b"# caf\xe9\n")
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run"), tmp_path / file, needle)
    assert not (tmp_path / "run").exists()


def test_a_runs_config_snapshot_that_is_not_utf8(run_copy):
    (run_copy / CONFIG).write_bytes((run_copy / CONFIG).read_bytes() + b"# \xff\n")
    one_line_exit_2(invoke("report", run_copy), run_copy / CONFIG, "not UTF-8")


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


def test_compare_on_deeply_nested_stats(tmp_path, finished_run):
    stats = tmp_path / "stats.json"
    stats.write_text("[" * 100_000 + "]" * 100_000)
    one_line_exit_2(invoke("compare", finished_run, stats), stats, "not valid JSON")


# ---- Hand-edited store lines -----------------------------------------------------------------


def _edit_line(path: Path, number: int, edit) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = edit(json.loads(lines[number - 1])) + "\n"
    path.write_text("".join(lines))


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


# ---- Run-directory files of the wrong shape --------------------------------------------------


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


# ---- Links in the run directory --------------------------------------------------------------


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


# ---- Output paths ----------------------------------------------------------------------------


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
    path = _config(tmp_path, planted_config(rubric=str(SMALL_RUBRIC), bootstrap=0, out=str(tmp_path / "run")))
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


# ---- One config per run directory ------------------------------------------------------------


def test_a_second_config_in_a_run_directory_is_refused(run_copy, tmp_path):
    stats = (run_copy / "stats.json").read_bytes()
    other = _config(tmp_path, planted_config(rubric="helpsteer2", bootstrap=0))
    one_line_exit_2(
        invoke("audit", other, "--out", run_copy, "--quiet"), run_copy, "another config (its rubric differ", "--out"
    )
    assert (run_copy / "stats.json").read_bytes() == stats


def test_the_same_config_from_another_file_resumes(run_copy, tmp_path):
    """StatsSettings that re-analyse the same probes (bootstrap count, tau, where the file lies) are no new config."""
    same = _config(tmp_path, planted_config(rubric=str(SMALL_RUBRIC), bootstrap=0))
    assert invoke("audit", same, "--out", run_copy, "--quiet", "--no-report").exit_code == 0
    more = _config(tmp_path, planted_config(rubric=str(SMALL_RUBRIC), bootstrap=30, tau=0.5), name="more.yaml")
    assert invoke("audit", more, "--out", run_copy, "--quiet", "--no-report").exit_code == 0
    assert json.loads((run_copy / "run.json").read_text())["stages"]["score"]["calls"] == 0


# ---- Stats files for compare -----------------------------------------------------------------


@pytest.mark.parametrize(
    "edit,needle",
    [
        (lambda d: d["pairs"][0].update(a=["helpfulness"]), "key 'pairs.0.a': Input should be a valid string"),
        (lambda d: d["pairs"][0].update(ci={"sym": [], "asym": [0, 0]}), "key 'pairs.0.ci.sym.0': Field required"),
        (lambda d: d["pairs"][0].update(ci={"sym": [0.1], "asym": [0, 0]}), "key 'pairs.0.ci.sym.1': Field required"),
        (lambda d: d["pairs"][0].update(sym=10**400), "key 'pairs.0.sym': Input should be a finite number"),
        (lambda d: d["pairs"][0].update(sym="high"), "key 'pairs.0.sym': Input should be a valid number"),
    ],
)
def test_compare_on_stats_of_the_wrong_shape(finished_run, tmp_path, edit, needle):
    data = json.loads((finished_run / "stats.json").read_text())
    edit(data)
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps(data))
    one_line_exit_2(invoke("compare", finished_run, stats, "--fail-on-sym", "0.5"), stats, needle)


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
    figures and compare: matplotlib, numpy and scipy stay silent (they leaked onto stderr)."""
    import warnings

    from radar_local.analysis import stats_for_table
    from radar_local.report.plots import FIGURES, png
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
            png(make(gated))
        run = tmp_path / "run"
        run_audit(planted_config(rubric=str(SMALL_RUBRIC), options={"noise": 3.0}, n=1), run, base=REPO)
        assert invoke("compare", run, run).exit_code == 0
    assert [str(w.message) for w in caught] == []


def test_a_run_without_its_config_snapshot_says_so(run_copy):
    (run_copy / CONFIG).unlink()
    one_line_exit_2(invoke("report", run_copy), run_copy, f"but no {CONFIG}")


def test_a_dangling_out_link_is_named_as_a_link(tmp_path):
    (tmp_path / "run").symlink_to(tmp_path / "nowhere")
    path = _config(tmp_path, planted_config())
    one_line_exit_2(invoke("audit", path, "--out", tmp_path / "run"), tmp_path / "run", "symbolic link to nothing")
    assert not (tmp_path / "nowhere").exists()


def test_a_grid_label_too_long_for_a_file_name_is_refused_at_config_time(tmp_path):
    grid = {k: v for k, v in planted_config().items() if k not in ("generator", "verifier")}
    spec = {"engine": "testing", "model": "m", "name": "g" * 300}
    path = _config(tmp_path, {**grid, "generators": [spec], "verifiers": [{"engine": "testing", "model": "judge"}]})
    one_line_exit_2(invoke("grid", path, "--out", tmp_path / "grid"), path, "longer than 100 characters")
    assert not (tmp_path / "grid").exists()


def test_an_alias_bomb_in_an_option_value_is_refused(tmp_path):
    levels = ["&a0 [" + ", ".join(["x"] * 10) + "]"]
    levels += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    res = invoke("score", tmp_path, "--verifier", "testing:planted", "--option", f"edits=[{', '.join(levels)}]")
    assert res.exit_code == 2 and "expands past 1,000,000 values" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1
