"""PairwiseAudit: the audit of a judge asked only pairs (config `pairwise: {only: true}`), and its stats.json.

Such a judge gives no pointwise verdict, so there is no pointwise core (self-effects, the leakage matrix, Sym and
Asym of scores, the reliability gate on them): its findings are the pairwise block's alone (stats/pairwise.py:
the pairwise gates, leakages, pair flags and position, family-wise together), and on a per-prompt rubric the
item_pairs block's (stats/item_pairs.py: the tasks' own items, exact tests). Its stats.json says so with
`kind: pairwise`; stats/result.read_stats reads either kind (strictly, its schema_version checked).
"""

from __future__ import annotations

from typing import Any, Literal

from radar_local.stats.attacks import PairAttacks
from radar_local.stats.item_pairs import ItemPairs
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
    pairwise: Pairwise | None  # the shared criteria's pairs; None where every task brings its own items
    attacks: PairAttacks | None = None  # the pairs' worse responses attacked (config attacks:, stats/attacks.py)
    item_pairs: ItemPairs | None = None  # a per-prompt rubric's items (stats/item_pairs.py)

    def measured(self, kind: type[B]) -> B | None:
        """Its measurements, as AuditResult.measured gives a judge's audit's."""
        return next((m for m in (self.pairwise, self.item_pairs, self.attacks) if isinstance(m, kind)), None)

    @property
    def block(self) -> Pairwise | ItemPairs:
        """Its main block: the shared criteria's, else the items' (one of them is always there)."""
        found = self.pairwise or self.item_pairs
        assert found is not None
        return found

    def to_json(self) -> dict[str, Any]:
        return self.stored()
