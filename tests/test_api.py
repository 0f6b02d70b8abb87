"""The library API: analyze, run_audit, load_run and AuditResult (a typed result, exact JSON round trip)."""

import ast
import json
import re
from pathlib import Path

import pandas as pd
import pytest

import radar_local
from radar_local.errors import InputError
from radar_local.stats.result import SCHEMA_VERSION, AuditResult
from radar_local.stats.stored import DoubleCount
from tests.conftest import planted_config

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "radar_local" / "benchmarks" / "example_helpsteer2.csv"


def test_analyze_the_bundled_example_and_round_trip_exactly():
    result = radar_local.analyze(EXAMPLE, rubric="helpsteer2", bootstrap=100, seed=0)
    assert isinstance(result, AuditResult)
    assert isinstance(result.leakage, pd.DataFrame) and result.leakage.shape == (5, 5)
    assert isinstance(result.self_effect, pd.Series) and list(result.self_effect.index) == result.criteria
    assert {"a", "b", "sym", "flags", "sym_ci"} <= set(result.pairs.columns)
    data = result.to_json()
    text = json.dumps(data)
    again = AuditResult.from_json(json.loads(text))
    assert again.to_json() == data and json.dumps(again.to_json()) == text  # exact, float for float
    assert again == result
    pd.testing.assert_frame_equal(again.leakage, result.leakage)
    assert again.pairs.iloc[0]["sym_ci"] == result.pairs.iloc[0]["sym_ci"]


def test_every_stored_block_is_held_by_the_result_as_its_producer_made_it():
    """A stats.json block is one model: StatsFile and AuditResult hold it with one type, so to_json writes it and
    from_json reads it with no code of its own (docs/ARCHITECTURE.md, "Adding a measurement")."""
    from typing import get_args

    from radar_local.stats.result import AS_STORED, MEASURED, NAMED, Measurements, StatsFile
    from radar_local.stats.stored import Block

    blocks = [
        k
        for k, f in StatsFile.model_fields.items()
        if any(isinstance(t, type) and issubclass(t, Block) for t in (f.annotation, *get_args(f.annotation)))
    ]
    file_shapes = {"pairs", "global_", "flags", "family"}  # the result holds these as frames or plain values
    assert set(blocks) - file_shapes - {"measurements"} <= set(AS_STORED)
    assert {"calibration", "bootstrap", "per_prompt"} <= set(AS_STORED)
    # a measurement's block is stored by its name, one type a name (schema 4): read back as the type its name says
    assert len(NAMED) == len(MEASURED) and all(issubclass(t, Block) for t in MEASURED.values())
    assert Measurements.model_fields.keys() == MEASURED.keys()
    # a list of blocks too (budget rows)
    assert "budget" in AS_STORED


def test_analyze_takes_a_dataframe_like_a_file():
    df = pd.read_csv(EXAMPLE, dtype=str, keep_default_na=False)
    assert radar_local.analyze(df, rubric="helpsteer2", bootstrap=0) == radar_local.analyze(
        EXAMPLE, rubric="helpsteer2", bootstrap=0
    )


@pytest.mark.parametrize(
    "version,needle", [(1, "re-run"), (SCHEMA_VERSION + 1, "upgrade radar_local"), (None, "schema_version None")]
)
def test_reading_another_schema_version_is_one_line(version, needle):
    data = radar_local.analyze(EXAMPLE, bootstrap=0).to_json()
    with pytest.raises(InputError, match=needle):
        AuditResult.from_json({**data, "schema_version": version}, "stats.json")


PREVIOUS_RELEASE = REPO / "tests" / "data" / "stats_v3"  # written by radar_local at f4d16b4 (its README says how)


@pytest.mark.parametrize("path", sorted(PREVIOUS_RELEASE.glob("*.json")), ids=lambda p: p.stem)
def test_a_stats_json_the_previous_release_wrote_reads_as_it_was_written(path):
    """Schema 3 kept each measurement at the top level; schema 4 stores them by name under `measurements`. A file of
    schema 3 reads with every value as written, each measurement under its name, and its report is written."""
    from radar_local.report.markdown import audit_markdown, render_markdown
    from radar_local.report.outline import pairwise_audit_sections, title
    from radar_local.stats.result import MEASURED, read_stats

    old = json.loads(path.read_text())
    assert old["schema_version"] == 3
    result = read_stats(json.loads(path.read_text()), path)
    if old.get("kind") == "pairwise":  # a judge asked only pairs: the same shape
        assert result.to_json() == old | {"schema_version": SCHEMA_VERSION}
        assert "## Pairwise judge" in render_markdown(title(result), pairwise_audit_sections(result))
        return
    moved = {k: v for k, v in old.items() if k in MEASURED}
    if "bias" in moved:  # schema 3's judge bias did not write its band's level, 95% in every audit
        moved["bias"] = {"threshold": moved["bias"]["threshold"], "level": 0.95} | moved["bias"]
    today = {k: v for k, v in old.items() if k not in MEASURED} | {"schema_version": SCHEMA_VERSION}
    assert result.to_json() == today | {"measurements": moved}
    assert audit_markdown(result).startswith("# RADAR audit")


def test_a_stats_file_naming_a_criterion_it_does_not_fill_in_is_one_line():
    data = radar_local.analyze(EXAMPLE, bootstrap=0).to_json()
    with pytest.raises(InputError, match=r"is not a complete RADAR stats file \(no entry for 'extra'\)"):
        AuditResult.from_json({**data, "criteria": [*data["criteria"], "extra"]}, "stats.json")


def test_result_renders_in_a_notebook():
    from IPython.core.interactiveshell import InteractiveShell

    result = radar_local.analyze(EXAMPLE, rubric="helpsteer2", bootstrap=0)
    shell = InteractiveShell.instance()
    try:
        assert "text/html" not in shell.display_formatter.format(result)[0]  # radar_local was imported before the shell
        radar_local._register_notebook_view()  # what importing radar_local in a notebook does
        html = shell.display_formatter.format(result)[0]["text/html"]
    finally:
        InteractiveShell.clear_instance()
    assert "<table>" in html and "helpfulness / correctness" in html and "Self-effects" in html
    # helpsteer2 sets no weights: equal weights, and the planted coupling double-counts a visible share
    assert result.measured(DoubleCount).rubric_weights is False and 0.1 < result.measured(DoubleCount).share < 1
    assert "Weighted aggregate (equal weights" in html


def test_run_audit_and_load_run_on_the_planted_engine(tmp_path):
    result = radar_local.run_audit(planted_config(), tmp_path / "run")
    run = radar_local.load_run(tmp_path / "run")
    assert run.result() == result and len(run.probes()) == 40 and run.info().stages["score"].calls == 200
    assert result.reliable.all()  # the planted judge reads every criterion it was steered on


def test_readme_notebook_example_runs(tmp_path, monkeypatch):
    """The notebook-style example of docs/audits.md, executed as written."""
    readme = (REPO / "docs/audits.md").read_text()
    block = readme.split("<!-- notebook-example -->", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(REPO)
    block = block.replace('"runs/notebook"', repr(str(tmp_path / "notebook")))
    namespace: dict = {}
    exec(compile(block, "docs/audits.md", "exec"), namespace)
    assert isinstance(namespace["result"], AuditResult)


def test_the_public_names_load_on_first_use():
    """radar_local's names are loaded when first used (so `radar` starts fast); each one resolves."""
    import radar_local

    assert radar_local.__all__ == sorted(radar_local._HOMES)
    for name in radar_local.__all__:
        assert getattr(radar_local, name).__name__ == name
    # the imports type checkers read name each public name from its home, and nothing else
    source = Path(radar_local.__file__).read_text()
    block = next(n for n in ast.parse(source).body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test))
    checked = {a.name: n.module.removeprefix("radar_local.") for n in block.body for a in n.names}
    assert checked == radar_local._HOMES
    with pytest.raises(AttributeError):
        radar_local.no_such_name  # noqa: B018


def _yaml_blocks(path: Path) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", path.read_text(), re.S)


def test_the_documented_configs_are_configs_and_name_every_key():
    """README's config and docs/audits.md's "Every key" parse as they are written, and the latter names every
    key a config has: a key renamed or added in config.py shows up here, not in a user's error."""
    from radar_local.config import AuditConfig
    from radar_local.inputs import load_yaml

    readme, every = _yaml_blocks(REPO / "README.md")[0], _yaml_blocks(REPO / "docs/audits.md")[0]
    for block in (readme, every):
        AuditConfig.model_validate(load_yaml(block, "docs"))
    assert set(load_yaml(every, "docs")) == set(AuditConfig.model_fields)
