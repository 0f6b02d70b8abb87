"""HelpSteer-style attribute lists: `attributes:` mapping each attribute to its definition, or naming
HelpSteer2's five (helpfulness, correctness, coherence, complexity, verbosity), whose definitions and human
correlations are radar's bundled `helpsteer2` reference. Every attribute is scored 0-4, as HelpSteer2's
annotators did (NVIDIA's HelpSteer2 dataset card).
"""

from __future__ import annotations

from pathlib import Path

from radar_local.errors import InputError
from radar_local.formats import shared
from radar_local.formats.shared import Imported
from radar_local.rubric import LIKERT, Rubric, load_benchmark


def _attributes(path: Path, data: dict) -> dict[str, str]:
    bundled = {c.id: c.description for c in load_benchmark("helpsteer2").rubric.criteria}
    attrs = data.get("attributes")
    if isinstance(attrs, list):
        unknown = [a for a in attrs if not isinstance(a, str) or a not in bundled]
        if unknown:
            raise InputError(
                path, f"attribute '{unknown[0]}' is none of HelpSteer2's; give its definition (name: text)"
            )
        return {a: bundled[a] for a in attrs}
    if not isinstance(attrs, dict) or not attrs:
        raise InputError(path, "'attributes' must map each attribute to its definition (or list HelpSteer2's names)")
    return {str(k): v for k, v in shared.named_texts(path, attrs, "attributes").items()}


def read(path: Path) -> Imported:
    data = shared.mapping(path, shared.load_yaml(path), "an attribute list (attributes: name -> definition)")
    attrs = _attributes(path, data)
    taken: set[str] = set()
    crit = [
        shared.criterion(path, f"attributes.{k}", id=shared.criterion_id(k, taken), label=k.capitalize(), description=v)
        for k, v in attrs.items()
    ]
    rub = shared.rubric(path, str(data.get("name") or path.stem), str(data.get("name") or path.stem), crit, LIKERT)
    bundled = set(load_benchmark("helpsteer2").rubric.ids)
    account = [f"{len(crit)} attributes scored 0-4; the judge is radar's own (the paper's prompt)"]
    if set(rub.ids) <= bundled:
        account.append("the attributes are HelpSteer2's: `radar audit` compares with its bundled human correlations")
    account.append("tasks: the bundled helpsteer2 tasks")
    return Imported("helpsteer", path, rub, None, (), {}, account)


def write(path: Path, imported: Imported, rub: Rubric, account: list[str]) -> str:
    data = shared.load_yaml(path)
    old = data["attributes"]
    if isinstance(old, list):  # names alone carry HelpSteer2's definitions; any other needs the mapping
        bundled = load_benchmark("helpsteer2").rubric
        if all(c.id in bundled.ids and bundled.criterion(c.id).description == c.description for c in rub.criteria):
            data["attributes"] = [c.id for c in rub.criteria]
        else:
            data["attributes"] = {c.id: shared.block(c.description) for c in rub.criteria}
        return shared.dump_yaml(data, path)
    shared.write_named(old, imported.rubric, rub)
    return shared.dump_yaml(data, path)
