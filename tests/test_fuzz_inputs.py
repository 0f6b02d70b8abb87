"""Malformed inputs, built by hypothesis, through the CLI in-process: exit 0, or exit 2 with one line on
stderr naming the file; never a traceback, never a file left half-written (issue 7, part 3)."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from radar_local.cli.main import cli
from radar_local.report.build import write_report
from radar_local.rubric import load_benchmark
from radar_local.rundir import load_run
from tests.conftest import planted_config

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # examples: conftest
ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.lists(st.integers(0, 4), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
CELL = st.one_of(
    st.sampled_from(["", "nan", "+", "-", "none", "a", "b", "0", "4", "5", "-1", "2.5", "t1", "x,y", '"']),
    st.text(max_size=6),
)


def valid_table() -> pd.DataFrame:
    rows = []
    for task in ("t1", "t2"):
        for target in ("a", "b"):
            for d, hi in (("+", 4), ("-", 0)):
                for v in range(2):
                    rows += [("g", "v", task, target, d, str(v), c, hi if c == target else 2) for c in ("a", "b")]
    return pd.DataFrame(
        rows, columns=["generator", "verifier", "task_id", "target", "direction", "variant", "criterion", "score"]
    )


@st.composite
def broken_tables(draw) -> pd.DataFrame:
    return broken(
        draw, valid_table().astype(str), 4, ["cell", "drop_col", "rename_col", "drop_rows", "dup_row", "extra_col"]
    )


def broken(draw, df: pd.DataFrame, most: int, ops: list[str]) -> pd.DataFrame:
    """`df` after 1 to `most` of `ops`: a cell set, a column dropped or renamed, rows cut, a row twice, a column
    added."""
    for _ in range(draw(st.integers(1, most))):
        op = draw(st.sampled_from(ops))
        if op == "cell" and len(df):
            df.iat[draw(st.integers(0, len(df) - 1)), draw(st.integers(0, df.shape[1] - 1))] = draw(CELL)
        elif op == "drop_col" and df.shape[1]:
            df = df.drop(columns=draw(st.sampled_from(list(df.columns))))
        elif op == "rename_col" and df.shape[1]:
            df = df.rename(columns={draw(st.sampled_from(list(df.columns))): draw(st.text(max_size=5))})
        elif op == "drop_rows":
            df = df.iloc[draw(st.integers(0, len(df))) :]
        elif op == "dup_row" and len(df):
            df = pd.concat([df, df.iloc[[draw(st.integers(0, len(df) - 1))]]])
        elif op == "extra_col":
            df[draw(st.text(min_size=1, max_size=5))] = "x"
    return df


def check(res, named: Path | str, written: list[Path]) -> None:
    """Exit 0; or 2 with one line naming the file (or, for a config, the file it refers to, which
    lives in its folder). No traceback; no half-written output."""
    event(f"exit {res.exit_code}")  # --hypothesis-show-statistics: both outcomes are exercised
    assert res.exit_code in (0, 2), (res.exit_code, res.output, res.exception)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    if res.exit_code == 2:
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr
        assert str(named) in res.stderr or "--" in res.stderr, res.stderr
        assert not any(p.exists() for p in written)
    for p in written:
        assert not p.with_name(p.name + ".tmp").exists()


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@SETTINGS
@given(df=broken_tables(), fmt=st.sampled_from(["csv", "parquet"]))
def test_malformed_score_tables(tmp_path_factory, df, fmt):
    tmp = tmp_path_factory.mktemp("t")
    path = tmp / f"scores.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        df.columns = [str(c) for c in df.columns]
        try:
            df.loc[:, ~df.columns.duplicated()].to_parquet(path, index=False)
        except (ValueError, TypeError):
            pytest.skip("pyarrow cannot store this frame")
    out = tmp / "stats.json"
    check(run("stats", path, "--bootstrap", 0, "--json", out), path, [out])


@SETTINGS
@given(data=st.binary(max_size=200), suffix=st.sampled_from([".csv", ".parquet"]))
def test_score_files_of_random_bytes(tmp_path_factory, data, suffix):
    path = tmp_path_factory.mktemp("b") / f"scores{suffix}"
    path.write_bytes(data)
    check(run("stats", path, "--bootstrap", 0), path, [])


def _mutate(draw, obj):
    """Replace, drop or add one key somewhere in a nested mapping / list."""
    if isinstance(obj, dict) and obj:
        key = draw(st.sampled_from(list(obj)))
        op = draw(st.sampled_from(["replace", "drop", "add", "recurse", "recurse"]))
        if op == "replace":
            return {**obj, key: draw(ANY_VALUE)}
        if op == "drop":
            return {k: v for k, v in obj.items() if k != key}
        if op == "add":
            return {**obj, draw(st.text(min_size=1, max_size=6)): draw(ANY_VALUE)}
        return {**obj, key: _mutate(draw, obj[key])}
    if isinstance(obj, list) and obj:
        i = draw(st.integers(0, len(obj) - 1))
        op = draw(st.sampled_from(["replace", "duplicate", "recurse"]))
        if op == "replace":
            return obj[:i] + [draw(ANY_VALUE)] + obj[i + 1 :]
        if op == "duplicate":
            return obj + [obj[i]]
        return obj[:i] + [_mutate(draw, obj[i])] + obj[i + 1 :]
    return draw(ANY_VALUE)


@st.composite
def mutated(draw, base):
    obj = base
    for _ in range(draw(st.integers(1, 3))):
        obj = _mutate(draw, obj)
    return obj


BENCH = load_benchmark("helpsteer2")
RUBRIC = BENCH.rubric.model_dump(mode="json")
REFERENCE = BENCH.reference.model_dump(mode="json")
EXAMPLE = Path(__file__).resolve().parents[1] / "radar_local" / "benchmarks" / "example_helpsteer2.csv"


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


# ---- Issue 21: bytes, depth, aliases, hand-edited run directories, links, output paths ----------

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


@SETTINGS
@given(parts=YAMLISH, depth=st.integers(0, 120), raw=st.binary(max_size=40))
def test_configs_of_yaml_tokens_bytes_depth_and_aliases(tmp_path_factory, parts, depth, raw):
    path = tmp_path_factory.mktemp("yt") / "audit.yaml"
    path.write_bytes(("[" * depth + "".join(parts) + "]" * depth).encode() + raw)
    check(run("audit", path, "--out", path.parent / "run", "--quiet", "--no-report"), path, [])
    assert not (path.parent / "run").exists() or (path.parent / "run" / "config.yaml").exists()


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory):
    from radar_local.auditing import run_audit

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


def _sample(fmt: str) -> object:
    from tests.test_formats import SAMPLES, parsed

    return parsed(SAMPLES[fmt])


@SETTINGS
@given(
    data=st.data(), fmt=st.sampled_from(["promptfoo", "openai-evals", "mlflow", "prometheus", "inspect", "helpsteer"])
)
def test_malformed_files_to_import(tmp_path_factory, data, fmt):
    """Issue 33: a team's file, one to three keys replaced, dropped or added, imports or is one line."""
    from tests.test_formats import SAMPLES

    source = data.draw(mutated(_sample(fmt)))
    tmp = tmp_path_factory.mktemp("i")
    path = tmp / SAMPLES[fmt].name
    path.write_text(json.dumps(source) if path.suffix == ".json" else yaml.safe_dump(source))
    out = tmp / "imported"
    res = run("import", fmt, path, "--out", out, "--engine", "testing")
    check(res, path, [])
    if res.exit_code == 2:
        assert not out.exists()
        return
    from radar_local import formats  # what imports also exports, unchanged, and reads back the same

    imported = formats.read(fmt, path)
    text, _ = formats.export(fmt, path, imported.rubric)
    again = tmp / f"again{path.suffix}"
    again.write_text(text)
    assert formats.carried(formats.read(fmt, again).rubric) == formats.carried(imported.rubric)


def valid_labels() -> pd.DataFrame:
    rows = [
        ("refund", "We will refund the jug today.", c, s, r)
        for c, s in (("helpfulness", "4"), ("correctness", "3"))
        for r in ("ann", "bob")
    ]
    return pd.DataFrame(rows, columns=["task_id", "response", "criterion", "score", "rater"])


@st.composite
def broken_labels(draw) -> pd.DataFrame:
    return broken(draw, valid_labels(), 3, ["cell", "drop_col", "rename_col", "drop_rows", "dup_row"])


@SETTINGS
@given(df=broken_labels(), fmt=st.sampled_from(["csv", "jsonl"]))
def test_malformed_labels_files(tmp_path_factory, df, fmt):
    """Issue 32: a labels file read when the config is resolved: exit 0, or 2 naming the file, before any call."""
    tmp = tmp_path_factory.mktemp("l")
    path = tmp / f"labels.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    else:
        path.write_text("".join(json.dumps(dict(zip(map(str, df.columns), row))) + "\n" for row in df.values.tolist()))
    config = tmp / "audit.yaml"
    tasks = [{"id": "refund", "prompt": "A customer wants a refund."}]
    config.write_text(yaml.safe_dump(planted_config(n=1, bootstrap=0, tasks=tasks, labels=str(path))))
    run_dir = tmp / "run"
    res = run("audit", config, "--out", run_dir, "--quiet", "--no-report")
    check(res, path, [])
    if res.exit_code == 2:
        assert not (run_dir / "probes.jsonl").exists()  # refused before any model call
