"""PairwiseAudit: the audit of a judge asked only pairs (config `pairwise: {only: true}`), and its stats.json.

Such a judge gives no pointwise verdict, so there is no pointwise core (self-effects, the leakage matrix, Sym and
Asym of scores, the reliability gate on them): its findings are the pairwise block's alone (stats/pairwise.py:
the pairwise gates, leakages, pair flags and position, family-wise together). Its stats.json says so with
`kind: pairwise`; stats/result.read_stats reads either kind (strictly, its schema_version checked).
"""

from __future__ import annotations

from typing import Any, Literal

from radar_local.stats.attacks import PairAttacks
from radar_local.stats.pairwise import Pairwise
from radar_local.stats.stored import B, Block

KIND = "pairwise"


class PairwiseAudit(Block):
    """One judge's pairwise audit: the pairs drawn from `probes` steered probes of `tasks`, asked in both orders."""

    schema_version: int
    kind: Literal["pairwise"]
    generator: str
    verifier: str
    rubric: str | None
    criteria: list[str]
    tasks: list[str]
    probes: int  # the steered probes the pairs were drawn from
    warnings: list[str]
    pairwise: Pairwise
    attacks: PairAttacks | None = None  # the pairs' worse responses attacked (config attacks:, stats/attacks.py)

    def measured(self, kind: type[B]) -> B | None:
        """Its measurements, as AuditResult.measured gives a judge's audit's."""
        return next((m for m in (self.pairwise, self.attacks) if isinstance(m, kind)), None)

    def to_json(self) -> dict[str, Any]:
        return self.stored()
