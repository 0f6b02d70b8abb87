"""A jury's verdicts: each juror scores under its own label and keys (so adding a juror costs only its calls and
dropping one costs none), and the jury's verdict on a (probe, criterion) is computed from theirs whenever it is
read, never stored. A juror's unscored verdict is left out, never read as 0; a verdict with fewer than
`min_jurors` scores is unscored, and says so."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from fractions import Fraction

from radar_local.common import digest, json_number, to_json
from radar_local.records import VerdictRecord
from radar_local.scale import Scale
from radar_local.specs import Aggregate, Jury
from radar_local.stats.jurors import JudgeSide
from radar_local.stats.raters import Measurement
from radar_local.stats.result import AuditResult


def aggregate(scores: Sequence[float], how: Aggregate, quorum: int) -> tuple[float | None, str | None]:
    """(the jury's score, None) or (None, why it has none). Sums in exact fractions: the mean of 1, 2 and 2 is
    the float nearest 5/3 however the scores are ordered."""
    if len(scores) < quorum:
        return None, f"{len(scores)} juror score(s), fewer than min_jurors ({quorum})"
    exact = sorted(Fraction(s) for s in scores)
    if how == "majority":
        (top, count), *rest = Counter(exact).most_common()
        if rest and rest[0][1] == count:
            return None, f"no majority: {count} juror(s) each for two or more levels"
        return _number(top), None
    if how == "median":
        middle = len(exact) // 2
        return _number(exact[middle] if len(exact) % 2 else (exact[middle - 1] + exact[middle]) / 2), None
    if how == "trimmed_mean" and len(exact) >= 3:
        exact = exact[1:-1]  # the lowest and the highest score left out
    return _number(sum(exact, Fraction(0)) / len(exact)), None


def measurement(scale: Scale, expected: bool) -> Measurement:
    """A criterion's level of measurement for agreement: interval for expected scores (any number between the
    ends), nominal for named levels, ordinal for an integer range (Likert)."""
    return "interval" if expected else "nominal" if scale.levels is not None else "ordinal"


def _number(x: Fraction) -> int | float:
    return int(x) if x.denominator == 1 else float(x)


def jury_verdicts(jury: Jury, verdicts: Iterable[tuple[str, VerdictRecord]]) -> list[tuple[str, VerdictRecord]]:
    """The jury's verdict on every (probe, criterion) a juror of `jury` scored, in the order first seen."""
    jurors = {j.label for j in jury.jurors}
    votes: dict[tuple[str, str], list[float]] = {}
    for label, v in verdicts:
        if label in jurors:
            scores = votes.setdefault((v.probe_key, v.criterion), [])
            if v.score is not None:
                scores.append(v.score)
    identity = digest([jury.label, jury.aggregate, jury.quorum, sorted(jurors)])
    out = []
    for (probe, criterion), scores in votes.items():
        score, why = aggregate(scores, jury.aggregate, jury.quorum)
        record = VerdictRecord(
            key=f"{identity}:{probe}:{criterion}",
            probe_key=probe,
            verifier=jury.label,
            criterion=criterion,
            score=score,
            unscored=why,
        )
        out.append((jury.label, record))
    return out


def side_by_side(results: dict[str, AuditResult]) -> dict[str, JudgeSide]:
    """The jury and each juror as the report shows them together: per judge, each criterion's self-effect and
    gate, each ordered pair's leakage, and each pair's Sym and flags (with their evidence, as report.text's
    flag_text reads them)."""
    out: dict[str, JudgeSide] = {}
    for label, r in results.items():
        out[label] = JudgeSide.model_validate(
            {
                "self_effect": {c: json_number(r.self_effect[c]) for c in r.criteria},
                "reliable": {c: bool(r.reliable[c]) for c in r.criteria},
                "leakage": {a: {b: json_number(r.leakage.loc[a, b]) for b in r.criteria if b != a} for a in r.criteria},
                "pairs": {
                    f"{p['a']} / {p['b']}": {
                        "sym": json_number(p["sym"]),
                        # a pair without a direction holds NaN in the frame: null here, as JSON has no NaN
                        **to_json({k: p.get(k) for k in ("flags", "evidence", "upstream", "downstream")}),
                    }
                    for p in r.pairs.to_dict("records")
                },
            }
        )
    return out
