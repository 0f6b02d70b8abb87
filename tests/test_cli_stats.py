"""`radar stats` end to end, and one clear line with exit code 2 for every malformed input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from radar_local.cli.main import cli
from radar_local.rubric import bundled_path
from radar_local.score_table import read_scores, write_scores
from tests.conftest import radar_run

EXAMPLE = Path(bundled_path("helpsteer2")).with_name("example_helpsteer2.csv")


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_stats_json_has_the_documented_keys(tmp_path):
    out, md = tmp_path / "s.json", tmp_path / "s.md"
    res = run("stats", EXAMPLE, "--rubric", "helpsteer2", "--bootstrap", 100, "--json", out, "--markdown", md)
    assert res.exit_code == 0, res.output
    r = json.loads(out.read_text())
    for key in ("self_effect", "reliable", "leakage", "pairs", "global", "agreement", "budget", "baselines"):
        assert key in r
    assert set(r["global"]) >= {"positive", "tension", "max_coupling"}
    assert set(r["agreement"]) >= {"pearson", "spearman", "mae", "n_pairs"}
    pair = r["pairs"][0]
    assert set(pair) >= {"a", "b", "leak_ab", "leak_ba", "sym", "asym", "ci", "flags", "human_r"}
    # The example plants helpfulness <-> correctness as the strongest coupling (0.9 / 0.8).
    assert {pair["a"], pair["b"]} == {"helpfulness", "correctness"} and pair["flags"] == ["bidirectional cluster"]
    assert pair["human_r"] == 0.94
    lo, hi = pair["ci"]["sym"]
    assert lo <= pair["sym"] <= hi
    assert [row["n"] for row in r["budget"]] == [1, 2, 3, 4, 5]
    assert "helpfulness / correctness" in md.read_text()
    assert "bidirectional cluster" in res.output


def test_scale_1_to_5_gives_identical_coupling(tmp_path):
    import pandas as pd

    df = pd.read_csv(EXAMPLE, dtype=str, keep_default_na=False)
    df["score"] = [str(int(s) + 1) if s else "" for s in df["score"]]
    shifted = tmp_path / "shifted.csv"
    df.to_csv(shifted, index=False)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run("stats", EXAMPLE, "--bootstrap", 20, "--json", a).exit_code == 0
    assert run("stats", shifted, "--scale", "1-5", "--bootstrap", 20, "--json", b).exit_code == 0
    assert json.loads(a.read_text())["leakage"] == json.loads(b.read_text())["leakage"]


def test_parquet_round_trip(tmp_path):

    df = read_scores(EXAMPLE)
    write_scores(df, tmp_path / "s.parquet")
    out = tmp_path / "s.json"
    assert run("stats", tmp_path / "s.parquet", "--bootstrap", 0, "--json", out).exit_code == 0
    assert json.loads(out.read_text())["probes"]["directed"] == 250


def test_radar_help_does_not_import_torch():
    code = (
        "import sys; from radar_local.cli.main import cli; cli(['--help'], standalone_mode=False); "
        "print([m for m in ('torch', 'vllm', 'scipy', 'pandas') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"  # the statistics' scipy and pandas load when they run


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def _set_column(line: str, col: int, value: str) -> str:
    cells = line.split(",")
    cells[col] = value
    return ",".join(cells)


def _bad_table(tmp_path: Path, edit) -> Path:
    lines = _lines(EXAMPLE)
    return _write(tmp_path / "bad.csv", edit(lines))


BAD_TABLES = {
    "unknown criterion": (
        lambda ls: ls[:1] + [_set_column(ls[1], 6, "friendliness")] + ls[2:],
        "row 2: unknown criterion 'friendliness'",
    ),
    "score off the scale": (
        lambda ls: ls[:1] + [ls[1].rsplit(",", 1)[0] + ",7"] + ls[2:],
        "row 2: score '7' is off the 0-4 scale",
    ),
    "missing column": (lambda ls: [",".join(c.split(",")[:-1]) for c in ls], "missing column(s) score"),
    "duplicate rows": (lambda ls: ls + [ls[1]], "duplicate of an earlier row"),
    "one direction only": (
        lambda ls: [ls[0]] + [row for row in ls[1:] if ",refund,verbosity,-," not in row],
        "target 'verbosity' in task 'refund'",
    ),
    "a rewrite named after a criterion": (  # issue 28, item 20
        lambda ls: ls + [_set_column(_set_column(row, 4, way), 5, "r0") for row in ls[1:6] for way in ("up", "down")],
        "row 1502: a nuisance rewrite (up) names the criterion 'helpfulness' as its attribute",
    ),
    "empty file": (lambda ls: [], "the score file is empty"),
    "header only": (lambda ls: ls[:1], "the score table has no rows"),
}


@pytest.mark.parametrize("case", sorted(BAD_TABLES))
def test_bad_score_table_is_one_line_exit_2_nothing_written(tmp_path, case):
    edit, message = BAD_TABLES[case]
    bad = _bad_table(tmp_path, edit)
    out = tmp_path / "out.json"
    res = radar_run("stats", bad, "--rubric", "helpsteer2", "--json", out)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert str(bad) in res.stderr and message in res.stderr
    assert not out.exists()


BAD_RUBRICS = {
    "malformed YAML": ("id: x\nname: [unclosed\n", "malformed YAML at line 3"),
    "duplicate criterion ids": (
        "id: x\nname: X\ncriteria:\n  - {id: a, label: A, description: d}\n  - {id: a, label: B, description: d}\n",
        "duplicate criterion id 'a'",
    ),
    "unknown key": (
        "id: x\nname: X\ncolour: red\ncriteria:\n  - {id: a, label: A, description: d}\n"
        "  - {id: b, label: B, description: d}\n",
        "key 'colour'",
    ),
    "descriptive without ends": (
        "id: x\nname: X\ncriteria:\n  - {id: a, label: A, description: d, kind: descriptive}\n"
        "  - {id: b, label: B, description: d}\n",
        "needs 'low' and 'high'",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_RUBRICS))
def test_bad_rubric_is_one_line_exit_2(tmp_path, case):
    text, message = BAD_RUBRICS[case]
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text(text)
    res = run("stats", EXAMPLE, "--rubric", rubric)
    assert res.exit_code == 2
    assert f"{rubric}: " in res.output and message in res.output and "Traceback" not in res.output


def test_reference_lacking_a_pair(tmp_path):
    ref = tmp_path / "human.yaml"
    ref.write_text("citation: mine\npairs:\n  - {a: helpfulness, b: correctness, r: 0.9}\n")
    res = run("stats", EXAMPLE, "--rubric", "helpsteer2", "--human", ref)
    assert res.exit_code == 2
    assert f"{ref}: reference lacks the pair helpfulness/coherence" in res.output


def test_missing_score_file():
    res = run("stats", "/nonexistent/scores.csv")
    assert res.exit_code == 2 and "score file not found" in res.output


def test_several_cells_must_be_chosen(tmp_path):
    import pandas as pd

    df = pd.read_csv(EXAMPLE, dtype=str, keep_default_na=False)
    both = pd.concat([df, df.assign(verifier="other-judge")])
    path = tmp_path / "two.csv"
    both.to_csv(path, index=False)
    res = run("stats", path)
    assert res.exit_code == 2 and "pick one with --generator/--verifier" in res.output
    assert run("stats", path, "--verifier", "other-judge", "--bootstrap", 0).exit_code == 0


def test_a_large_table_says_what_it_works_through(monkeypatch):
    """Issue 28, item 19: 10 million rows printed nothing for 600 s."""
    from radar_local import analysis

    monkeypatch.setattr(analysis, "LARGE_TABLE", 1000)  # the example's 1,500 rows count as large here
    res = CliRunner().invoke(cli, ["stats", str(EXAMPLE), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    assert "stats: 1,500 rows, 300 probes; the bootstrap's time grows with probes x resamples (200)" in res.stderr
    assert "stats: bootstrap resamples: 200/200" in res.stderr
    monkeypatch.undo()
    quiet = CliRunner().invoke(cli, ["stats", str(EXAMPLE), "--bootstrap", "200"])
    assert "stats:" not in quiet.stderr  # below the size, nothing is said


REPO = Path(__file__).resolve().parents[1]


def test_stats_scale_applies_where_the_rubric_declares_none(tmp_path):
    """Issue 43 item 6: `radar stats --scale 1-10 --rubric R` read the table on 0-4 when R declares no scale (and
    the error then said R declares 0-4)."""
    import pandas as pd

    from radar_local.analysis import analyze

    table = pd.read_csv(REPO / "radar_local" / "benchmarks" / "example_helpsteer2.csv", dtype={"variant": str})
    table["score"] = table["score"] * 2 + 1  # 0-4 -> 1, 3, ..., 9 on 1-10
    on_four = analyze(table.assign(score=(table["score"] - 1) / 2), rubric="helpsteer2", bootstrap=0)
    on_ten = analyze(table, rubric="helpsteer2", scale="1-10", bootstrap=0)
    # the same shifts on a scale of span 9 instead of 4: every self-effect is 8/9 of its 0-4 value
    assert on_ten.self_effect.to_numpy() == pytest.approx(on_four.self_effect.to_numpy() * 8 / 9)
