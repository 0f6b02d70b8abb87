"""The blocks of stats.json: each made by its producer as a model, dumped as it is stored and read back by the
same class, so the report reads attributes the type checker checks against the producer."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Num = float | None  # a stored number; null is undefined (NaN)
Interval = tuple[float | None, float | None]
Matrix = dict[str, dict[str, float | None]]
Evidence = Literal["confirmed", "coupled", "possible"]  # stats/flags.EVIDENCE


class Block(BaseModel):
    """A block of stats.json: names are text, numbers numbers (read back strictly: never a string or a bool),
    intervals [low, high], no NaN (null); a key it does not know is an error."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    def stored(self) -> dict[str, Any]:
        """The block as stats.json holds it: what its producer set (an optional key left out stays out)."""
        return self.model_dump(mode="json", exclude_unset=True)
