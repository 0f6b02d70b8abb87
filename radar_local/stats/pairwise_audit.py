"""PairwiseAudit: the audit of a judge asked only pairs (config `pairwise: {only: true}`), and its stats.json.

Such a judge gives no pointwise verdict, so there is no pointwise core (self-effects, the leakage matrix, Sym and
Asym of scores, the reliability gate on them): its findings are the pairwise block's alone (stats/pairwise.py:
the pairwise gates, leakages, pair flags and position, family-wise together). Its stats.json says so with
`kind: pairwise`; stats/result.read_stats reads either kind.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import ValidationError

from radar_local.errors import InputError
from radar_local.stats.pairwise import Pairwise
from radar_local.stats.stored import Block

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

    def to_json(self) -> dict[str, Any]:
        return self.stored()

    @classmethod
    def from_json(cls, data: dict[str, Any], version: int, where: object = "stats") -> PairwiseAudit:
        """The stats.json of a pairwise audit, checked: a file radar could not have written is one line."""
        rewrite = "re-run `radar audit` to rewrite it"
        if data.get("schema_version") != version:
            raise InputError(where, f"stats schema_version {data.get('schema_version')!r}, this radar_local reads "
                             f"{version}; {rewrite}")  # fmt: skip
        try:
            return cls.model_validate_json(json.dumps(data), strict=True)
        except (ValidationError, ValueError) as exc:  # ValueError: a number beyond JSON's (10**400)
            first = exc.errors()[0] if isinstance(exc, ValidationError) else None
            why = str(exc) if first is None else f"key '{'.'.join(str(p) for p in first['loc'])}': {first['msg']}"
            raise InputError(where, f"is not a complete RADAR pairwise stats file ({why}); {rewrite}") from None
