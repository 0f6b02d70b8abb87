"""The glossary of docs/ARCHITECTURE.md, enforced: what a concept is never called is refused as an identifier (or
a word of one), as a class's attribute, or as a stats.json key; and no two modules share a stem."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from radar_local.stats.result import AuditResult, StatsFile

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "radar_local"


def rejected(text: str) -> list[str]:
    """The backticked names of the glossary's last column, e.g. `fake`, `Jury.jury`, `nuisance` (stats.json)."""
    table = text[text.index("| name | means | not |") :].split("\n\n")[0]
    out = []
    for row in table.splitlines()[2:]:
        last = row.strip().removeprefix("|").removesuffix("|").split("|")[-1]
        out += [
            m.group(1) + (" (stats.json)" if m.group(2) else "")
            for m in re.finditer(r"`([^`]+)`( \(stats\.json\))?", last)
        ]
    return out


def words(identifier: str) -> set[str]:
    """An identifier and its snake_case and CamelCase words: ProbeSample -> ProbeSample, Probe, Sample."""
    return {identifier, *re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", identifier)}


def named(entry: str, identifier: str) -> bool:
    """A lowercase entry is refused as a word in any case (fake: fake_scores, FakeEngine); a capitalised one
    as that word exactly (Level: Level, LevelSet; not LEVEL or level)."""
    if entry.islower():
        return entry in {w.lower() for w in words(identifier)}
    return entry in words(identifier)


def identifiers(tree: ast.AST) -> set[str]:
    """The names a module defines: functions, classes, parameters, assigned names and attributes, class fields."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
    return found


def class_attributes(tree: ast.AST) -> dict[str, set[str]]:
    """Class -> the names its body defines (fields, methods, properties)."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    names.add(item.target.id)
                elif isinstance(item, ast.Assign):
                    names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
            out.setdefault(node.name, set()).update(names)
    return out


def violations(text: str, modules: dict[str, str], stats_keys: set[str]) -> list[str]:
    trees = {name: ast.parse(source) for name, source in modules.items()}
    names = {name: sorted(identifiers(tree)) for name, tree in trees.items()}  # each module's, read once
    attributes = {name: class_attributes(tree) for name, tree in trees.items()}
    found = []
    for entry in rejected(text):
        if entry.endswith(" (stats.json)"):
            key = entry.removesuffix(" (stats.json)")
            found += [f"stats.json key '{key}'"] if key in stats_keys else []
        elif "." in entry:
            cls, attr = entry.split(".", 1)
            found += [f"{name}: {cls}.{attr}" for name in trees if attr in attributes[name].get(cls, set())]
        else:
            found += [f"{name}: {ident}" for name in trees for ident in names[name] if named(entry, ident)]
    return found


def shared_stems(paths: list[str]) -> list[tuple[str, ...]]:
    """Modules (and packages) outside cli/ whose stems agree but for a trailing s."""
    stems: dict[str, list[str]] = {}
    for path in paths:
        parts = path.removesuffix(".py").split("/")
        if "cli" in parts[:-1] or parts[-1] in ("__init__", "__main__"):
            continue
        stems.setdefault(parts[-1].removesuffix("s"), []).append(path)
    return [tuple(v) for v in stems.values() if len(v) > 1]


def package_modules() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in PACKAGE.rglob("*.py")}


def test_no_rejected_name_in_the_code_or_in_stats_json():
    keys = set(StatsFile.model_fields) | {f.alias for f in StatsFile.model_fields.values() if f.alias}
    keys |= set(AuditResult.__dataclass_fields__)
    assert not violations((ROOT / "docs" / "ARCHITECTURE.md").read_text(), package_modules(), keys)


def test_no_two_modules_share_a_stem():
    paths = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")]
    paths += [str(p.relative_to(PACKAGE)) + "/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()]
    assert not shared_stems([p.rstrip("/") for p in paths])


GLOSSARY = """
| name | means | not |
|---|---|---|
| planted engine | the testing engine | `fake`, mock |
| juror | one judge | `Jury.jury` |
| judge bias | sensitivity | `nuisance` (stats.json) |
| probe | a `ProbeRecord` | |
| level of measurement | nominal | `Level` |
"""


@pytest.mark.parametrize(
    "source,keys,found",
    [
        ("class FakeEngine: pass", set(), ["m.py: FakeEngine"]),
        ("def run(fake_scores): pass", set(), ["m.py: fake_scores"]),
        ("mock = 1", set(), []),  # prose in the column, not backticked: not enforced
        ("class Jury:\n    jury: list", set(), ["m.py: Jury.jury"]),
        ("class Panel:\n    jury: list", set(), []),
        ("x = 1", {"nuisance"}, ["stats.json key 'nuisance'"]),
        ("nuisance_pairs = 1", set(), []),  # a stats.json key, not an identifier
        ("unfaked = 1", set(), []),  # a whole word, not a substring
        ("class Level: pass\nLEVEL = 1\nlevel = 2", set(), ["m.py: Level"]),  # capitalised: that word exactly
    ],
)
def test_the_rules_refuse_what_they_say(source, keys, found):
    assert rejected(GLOSSARY) == ["fake", "Jury.jury", "nuisance (stats.json)", "Level"]
    assert violations(GLOSSARY, {"m.py": source}, keys) == found


def test_a_shared_stem_is_found_outside_the_cli():
    assert shared_stems(["jury.py", "stats/jury.py", "judge.py", "judges.py", "cli/audit.py", "stats/audit.py"]) == [
        ("jury.py", "stats/jury.py"),
        ("judge.py", "judges.py"),
    ]
    assert shared_stems(["report", "cli/report.py", "repair/report.py"]) == [("report", "repair/report.py")]
