"""Imported files are untrusted: a file reference reads nothing outside its folder, imported template text stays
literal text, an export never replaces what radar did not write, and fuzzed files are one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from radar_local import formats
from radar_local.cli.main import cli
from radar_local.errors import InputError
from tests.fuzzing import SETTINGS, check, mutated, run

REPO = Path(__file__).resolve().parents[1]


def _sample(fmt: str) -> object:
    from tests.test_formats import SAMPLES, parsed

    return parsed(SAMPLES[fmt])


PROMPTFOO = """prompts: [{prompt}]
defaultTest:
  options: {{rubricPrompt: {rubric_prompt}}}
  assert:
    - {{type: llm-rubric, value: {value}}}
    - {{type: llm-rubric, value: Short.}}
tests: {tests}
"""


def promptfoo(folder: Path, prompt="'Reply: {{ q }}'", rubric_prompt="'{{ output }} / {{ rubric }}'", value="Kind.",
              tests="[{vars: {q: hi}}]") -> Path:  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "promptfooconfig.yaml"
    path.write_text(PROMPTFOO.format(prompt=prompt, rubric_prompt=rubric_prompt, value=value, tests=tests))
    return path


OUTSIDE = ["file:///etc/hostname", "file://../secret.txt", "file://link.txt"]


ADVERSARIAL = [
    "{{% for x in range(3) %}}loop{{% endfor %}}",  # Python's escapes around a Jinja block
    "{{{{ response }}}}",  # a literal '{{ response }}' after Python's format
    "{{% endraw %}}{{{{ response }}}}{{% raw %}}",
    "{{#",
    "ends in a brace {{",
    "}}{{{{}}}}",
]


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


def test_export_never_replaces_a_fifo_and_import_never_replaces_a_file_it_did_not_write(tmp_path):
    import os

    from tests.test_formats import SAMPLES

    fifo = tmp_path / "out.yaml"
    os.mkfifo(fifo)
    rubric = tmp_path / "imp" / "rubric.yaml"
    runner = CliRunner()
    first = runner.invoke(cli, ["import", "promptfoo", str(SAMPLES["promptfoo"]), "--out", str(tmp_path / "imp")])
    assert first.exit_code == 0, first.output
    res = runner.invoke(cli, ["export", "promptfoo", str(SAMPLES["promptfoo"]), str(rubric), "--out", str(fifo)])
    assert res.exit_code == 2 and "not a regular file" in res.output and fifo.is_fifo()
    again = runner.invoke(cli, ["import", "promptfoo", str(SAMPLES["promptfoo"]), "--out", str(tmp_path / "imp")])
    assert again.exit_code == 0, again.output  # what radar wrote, unchanged, it may write again
    config = tmp_path / "imp" / "config.yaml"
    config.write_text(config.read_text() + "# my edit\n")
    edited = runner.invoke(cli, ["import", "promptfoo", str(SAMPLES["promptfoo"]), "--out", str(tmp_path / "imp")])
    assert edited.exit_code == 2 and "--force" in edited.output and len(edited.output.strip().splitlines()) == 1
    assert config.read_text().endswith("# my edit\n")  # nothing lost
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "config.yaml").write_text("someone: else\n")
    refused = runner.invoke(cli, ["import", "promptfoo", str(SAMPLES["promptfoo"]), "--out", str(theirs)])
    assert refused.exit_code == 2 and (theirs / "config.yaml").read_text() == "someone: else\n"
    forced = runner.invoke(cli, ["import", "promptfoo", str(SAMPLES["promptfoo"]), "--out", str(theirs), "--force"])
    assert forced.exit_code == 0 and "rubric: rubric.yaml" in (theirs / "config.yaml").read_text()


@pytest.mark.parametrize("where", ["prompt", "rubric_prompt", "value", "tests"])
@pytest.mark.parametrize("ref", OUTSIDE)
def test_an_imported_file_reads_nothing_outside_its_folder(tmp_path, where, ref):
    folder = tmp_path / "project"
    folder.mkdir()
    for suffix in ("txt", "csv"):
        (tmp_path / f"secret.{suffix}").write_text("q\nthe secret\n")
        (folder / f"link.{suffix}").symlink_to(tmp_path / f"secret.{suffix}")
    path = promptfoo(folder, **{where: ref if where != "tests" else ref.replace("txt", "csv")})
    with pytest.raises(InputError) as err:
        formats.read("promptfoo", path)
    assert "radar reads referenced files inside" in str(err.value) and "\n" not in str(err.value)


def test_a_reference_inside_the_folder_or_a_named_root_is_read_and_accounted(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "judge.txt").write_text("Grade {{ output }} on {{ rubric }}")
    folder = tmp_path / "project"
    path = promptfoo(folder, rubric_prompt="file://../shared/judge.txt")
    with pytest.raises(InputError):
        formats.read("promptfoo", path)
    imported = formats.read("promptfoo", path, root=tmp_path)
    assert imported.judge is not None and imported.judge.template.startswith("Grade {{ response }}")
    assert f"read {tmp_path / 'shared' / 'judge.txt'} (a file:// reference)" in imported.account


def test_a_rubric_value_from_a_file_is_the_files_text(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "policy.txt").write_text("The reply follows the refund policy.\n")
    imported = formats.read("promptfoo", promptfoo(folder, value="file://policy.txt"))
    criterion, _short = imported.rubric.criteria
    assert criterion.description == "The reply follows the refund policy."


@pytest.mark.parametrize("text", ADVERSARIAL)
def test_imported_template_text_is_literal_text_in_radars_template(tmp_path, text):
    """An OpenAI evals prompt (Python's format) and inspect's instructions (inserted as they are) render in radar's
    sandbox to what the source tool would show: no loop runs, no literal '{{ response }}' becomes the response."""
    from radar_local.judge import render
    from radar_local.rubric import Task

    spec = yaml.safe_load((REPO / "tests" / "data" / "formats" / "closedqa.yaml").read_text())
    spec["closedqa"]["prompt"] = "Task: {input}\nAnswer: {completion}\n" + text
    source = tmp_path / "spec.yaml"
    source.write_text(yaml.safe_dump(spec))
    imported = formats.read("openai-evals", source)
    crit = imported.rubric.criteria[0]
    task = Task(id="t", prompt="THE TASK")
    messages = render(imported.judge, task, "THE RESPONSE", [(crit, imported.rubric.scale_of(crit.id))])
    shown = messages[-1]["content"]
    assert shown.startswith("Task: THE TASK\nAnswer: THE RESPONSE\n" + text.format()), shown

    inspect = yaml.safe_load((REPO / "tests" / "data" / "formats" / "inspect_scorer.yaml").read_text())
    inspect["instructions"] = text  # inspect inserts the instructions without reading them again
    source = tmp_path / "inspect.yaml"
    source.write_text(yaml.safe_dump(inspect))
    imported = formats.read("inspect", source)
    crit = imported.rubric.criteria[0]
    messages = render(imported.judge, task, "THE RESPONSE", [(crit, imported.rubric.scale_of(crit.id))])
    assert messages[-1]["content"].rstrip().endswith(text), messages[-1]["content"]


def test_an_export_the_importer_would_refuse_is_refused_first(tmp_path):
    from tests.test_formats import SAMPLES

    imported = formats.read("promptfoo", SAMPLES["promptfoo"])
    first = imported.rubric.criteria[0]
    braced = first.model_copy(update={"description": "Fills in {{ name }} correctly."})
    rubric = imported.rubric.model_copy(update={"criteria": (braced, *imported.rubric.criteria[1:])})
    with pytest.raises(InputError, match="would not import again .*the test variable 'name', which a test"):
        formats.export("promptfoo", SAMPLES["promptfoo"], rubric)
    assert not list(SAMPLES["promptfoo"].parent.glob(".radar-export-*"))  # the trial file is gone


def test_root_on_a_format_without_file_references_is_one_line(tmp_path):
    from tests.test_formats import SAMPLES

    with pytest.raises(InputError, match="names no other file to read; leave --root out"):
        formats.read("mlflow", SAMPLES["mlflow"], root=tmp_path)
    assert formats.read("mlflow", SAMPLES["mlflow"]).rubric.criteria
