"""What an audit measures beyond its coupling (issue 62): the registry's checklist, and a unit test for each
statistics module a measurement rests on (halo, drift, wording, jurors, joint, budget), on probe matrices made here
with a planted effect, so a one-line change to one of them fails here and not only in a whole audit."""

from __future__ import annotations

import ast
import inspect
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from radar_local import audited, measures
from radar_local.stats.probes import ProbeMatrix
from radar_local.stats.result import MEASURED, AuditResult

TESTS = Path(__file__).parent
CRITERIA = ("a", "b", "c")


def matrix(label: str, *, leak: float = 0.0, shift: float = 0.0, noise: float = 0.3, seed: int = 0) -> ProbeMatrix:
    """4 tasks x 3 criteria steered + and - x 4 variants on a 0-4 scale: the target moves 2 points, `leak` of that
    reaches the next criterion, `shift` is added to every score; `seed` draws the noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(4):
        for target in range(3):
            for d, sign in ((0, 1), (1, -1)):
                for v in range(4):
                    s = np.full(3, 2.0) + shift + rng.normal(0, noise, 3)
                    s[target] += 2 * sign * 0.9
                    s[(target + 1) % 3] += 2 * sign * 0.9 * leak
                    rows.append((t, target, d, v, np.clip(s, 0, 4)))
    return ProbeMatrix(
        generator="g",
        verifier=label,
        criteria=CRITERIA,
        tasks=tuple(f"t{t}" for t in range(4)),
        scores=np.array([r[4] for r in rows]),
        task=np.array([r[0] for r in rows]),
        target=np.array([r[1] for r in rows]),
        direction=np.array([r[2] for r in rows]),
        variant=np.array([r[3] for r in rows]),
        spans=(Fraction(4),) * 3,
    )


LEVELS = {c: [0.0, 1.0, 2.0, 3.0, 4.0] for c in CRITERIA}
ORDINAL = dict.fromkeys(CRITERIA, "interval")


def test_halo_finds_a_planted_halo_and_nothing_without_one():
    from radar_local.stats.halo import halo

    per = matrix("per", seed=1)
    same = halo(per, matrix("joint", seed=2), resamples=200)
    haloed = halo(per, matrix("joint", leak=0.6, seed=2), resamples=200)
    assert same.index_ci is not None and same.index_ci[0] <= 0 <= same.index_ci[1]
    assert haloed.index_ci is not None and haloed.index_ci[0] > 0 and haloed.index > same.index
    moved = {(p.source, p.target) for p in haloed.pairs if p.ci is not None and p.ci[0] > 0}
    assert moved == {("a", "b"), ("b", "c"), ("c", "a")}  # the planted leak, each source into the next


def test_the_paired_comparison_settles_a_planted_rise_on_its_band_and_is_exact_on_the_same_verdicts():
    from radar_local.stats.paired import UP, paired_leakage, same_probes

    before = matrix("before", seed=1)
    itself = paired_leakage(before, before, resamples=200)
    assert itself.index == 0 and all(p.change == 0 and way is None for p, way in itself.pairs)
    leaked = paired_leakage(before, matrix("after", leak=0.6, seed=2), resamples=200)
    ways = {(p.source, p.target): way for p, way in leaked.pairs}
    assert {k for k, w in ways.items() if w == UP} == {("a", "b"), ("b", "c"), ("c", "a")}
    assert all(w is None for k, w in ways.items() if k not in {("a", "b"), ("b", "c"), ("c", "a")})
    first = leaked.pairs[0][0]
    assert first.band is not None and first.ci is not None and first.band[0] <= first.ci[0]  # the band is wider
    fewer = matrix("fewer", seed=2)
    fewer = ProbeMatrix(**{**vars(fewer), **{f: getattr(fewer, f)[1:] for f in ("scores", "task", "target",
                                                                                 "direction", "variant")}})  # fmt: skip
    a, b = same_probes(before, fewer)
    assert len(a.scores) == len(b.scores) == len(before.scores) - 1  # paired on the probes both hold


def test_drift_reads_a_shift_and_leaves_the_same_judge_alone():
    from radar_local.stats.drift import drift

    before = matrix("before", seed=3)
    again = drift(before, matrix("after", seed=4), LEVELS, ORDINAL, resamples=200)
    moved = drift(before, matrix("after", shift=0.8, seed=4), LEVELS, ORDINAL, resamples=200)
    assert again.probes == moved.probes == len(before.scores)
    assert all(abs(c.shift) < 0.2 for c in again.criteria) and all(c.shift > 0.5 for c in moved.criteria)


def test_wording_compares_each_paraphrase_with_the_judge_own_template():
    from radar_local.stats.wording import wording

    own = matrix("own", seed=5)
    found = wording([own, matrix("own-p1", seed=5), matrix("own-p2", shift=1.0, seed=5)], LEVELS, ORDINAL,
                    resamples=100)  # fmt: skip
    assert found.templates == ["own", "own-p1", "own-p2"]
    first, second = found.against
    assert all(c.shift == 0 for c in first.criteria) and all(c.shift > 0.5 for c in second.criteria)


def test_jurors_against_the_jury_and_among_themselves():
    from radar_local.stats.jurors import against_jurors, among_jurors

    jury = matrix("jury", leak=0.3, seed=6)
    found = against_jurors(jury, {"calm": matrix("calm", seed=7), "leaky": matrix("leaky", leak=0.8, seed=8)},
                           resamples=200)  # fmt: skip
    rows = {r.juror: r for r in found.jurors}
    assert rows["leaky"].difference is not None and rows["calm"].difference is not None
    assert rows["leaky"].difference < rows["calm"].difference  # the jury couples less than its leaky juror
    same = np.vstack([jury.scores[:, 0], jury.scores[:, 0]])
    agree = among_jurors({"a": same}, ["x", "y"], {"a": "interval"}, resamples=100)
    assert agree.criteria["a"].alpha == pytest.approx(1.0)


def test_the_joint_reading_demotes_what_no_halo_check_rules_out():
    from radar_local.stats.joint import beyond, read_joint

    pairs = pd.DataFrame([{"a": "a", "b": "b", "flags": ["directional"], "evidence": {"directional": "confirmed"}}])
    read, record = read_joint(pairs, None, "rubric")
    assert record.demoted == [["a", "b"]] and read.iloc[0]["evidence"]["directional"] == "possible"
    kept, deployed = read_joint(pairs, None, "deployed")
    assert deployed.demoted == [] and kept.iloc[0]["evidence"]["directional"] == "confirmed"
    assert (beyond([0.1, 0.3]), beyond([-0.3, -0.1]), beyond([-0.1, 0.1]), beyond(None)) == (1, -1, 0, 0)


def test_the_probe_budget_narrows_toward_the_full_audit():
    """stats/budget.py (RADAR App. G): subsets of 1, 2, 3 probes per stratum, then every probe; the spread of a
    pair's Sym across subsets shrinks as N grows."""
    from radar_local.stats.bootstrap import Strata
    from radar_local.stats.budget import probe_budget
    from radar_local.stats.exact import exact_point

    strata = Strata.from_probes(matrix("j", leak=0.5, seed=9))
    full = exact_point(strata).coupling(0.2)
    rows = probe_budget(strata, [(0, 1), (1, 2), (0, 2)], None, full, tau=0.2, seed=0, n_subsets=20)
    assert [r["n"] for r in rows] == [1, 2, 3, 4] and rows[-1]["all_probes"] and rows[-1]["subsets"] == 1
    spread = [r["sym"][0]["sd"] for r in rows[:-1]]
    assert spread[0] > spread[-1]


def _blocks(fn) -> set[str]:
    """The stats.json blocks a measurement returns: the keys of the dicts it returns."""
    tree = ast.parse(inspect.getsource(fn))
    keys = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            keys |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    return keys


@pytest.mark.parametrize("measure", [*measures.MEASUREMENTS, *audited.RUN_MEASUREMENTS], ids=lambda f: f.__name__)
def test_every_measurement_is_a_block_a_module_and_a_unit_test(measure):
    """The checklist (issue 62): a measurement names the statistics module it rests on in its docstring (or is the
    run's own record), returns stats.json blocks AuditResult holds, and its module is imported by a unit test."""
    blocks = _blocks(measure)
    assert blocks and blocks - {"pairs"} <= set(MEASURED), blocks  # the joint reading rereads the core's pairs
    assert "pairs" in AuditResult.__dataclass_fields__
    named = re.findall(r"(stats/\w+|labels)\.py", measure.__doc__ or "")
    if not named:
        return  # the jury's record and the rubric's double count are the run's and the rubric's, not a module's
    module = named[0].replace("/", ".")
    imported = [p.name for p in TESTS.glob("test_*.py") if re.search(rf"radar_local\.{module}\b", p.read_text())]
    assert imported, f"no unit test imports radar_local.{module}"


# The measurements that change the findings' lines (the aggregate's double count, a joint judge's reading) rather
# than add a section of their own.
IN_FINDINGS = {"double_count", "joint"}


@pytest.mark.parametrize("name", list(MEASURED))
def test_every_stored_measurement_shows_in_the_report_and_has_a_glossary_row(name):
    """The checklist's last two steps: a result holding the measurement (read from a stats.json of tests/data/stats_v*:
    the previous release's, schema 3, or today's) has a report section a result without it lacks, and the glossary
    names its key."""
    import json
    from dataclasses import replace

    from radar_local.report.markdown import audit_markdown
    from radar_local.report.outline import audit_sections
    from radar_local.stats.result import read_stats

    files = sorted((TESTS / "data").glob("stats_v*/*.json"))
    written = [r for p in files if isinstance(r := read_stats(json.loads(p.read_text()), p), AuditResult)]
    holding = [r for r in written if name in r.measurements]
    assert holding, f"no stats.json of tests/data/stats_v*/ holds `{name}`: add one (`radar stats --json`) that does"
    result = holding[0]
    without = replace(result, measurements={k: v for k, v in result.measurements.items() if k != name})
    if name in IN_FINDINGS:
        assert audit_markdown(result) != audit_markdown(without)
    else:
        assert {str(s.title) for s in audit_sections(result)} > {str(s.title) for s in audit_sections(without)}
    glossary = (TESTS.parent / "docs" / "ARCHITECTURE.md").read_text().split("| name | means | not |")[1]
    assert f"`measurements.{name}`" in glossary.split("\n\n")[0], f"no glossary row names `measurements.{name}`"


def test_every_stored_measurement_is_made_by_one_in_the_registries():
    """stats.json's `measurements` holds what the registries make and nothing else: a block named in MEASURED that
    no measurement returns would never be written."""
    made = set().union(*(_blocks(m) for m in [*measures.MEASUREMENTS, *audited.RUN_MEASUREMENTS]))
    assert made - {"pairs"} == set(MEASURED)
