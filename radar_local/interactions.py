"""Which audit features run together, derived from what each needs (issue 62), not refused pair by pair by hand.

A feature needs some of what an audit usually has (pointwise verdicts, one judge, a fixed n, levels); a few settings
take one of them away (a judge asked only pairs asks no pointwise verdict, a jury is several judges, adaptive waves
draw their probes as they go, scoring mode `expected` scores between levels). A config that sets a feature and takes
away what it needs is one line naming both and why. A new feature is one row of `NEEDS`; a new setting that takes
something away, one row of `TAKES`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

Need = Literal["pointwise", "one judge", "fixed n", "levels"]

# What each setting that takes a need away says of itself, and what a feature that needs it is said to need.
TAKES: dict[str, tuple[Need, str, str]] = {
    "pairwise.only": ("pointwise", "asks no pointwise verdict", "needs them"),
    "a jury": ("one judge", "is several judges", "needs one"),
    "adaptive": ("fixed n", "draws its probes in waves", "needs a fixed n"),
    "scoring mode 'expected'": ("levels", "gives scores between levels", "needs levels"),
}

# Each feature (as a config names it): what it needs, and why.
NEEDS: dict[str, dict[Need, str]] = {
    "verifier.judge": {"pointwise": "the pairwise template is pairwise's own (template, answer, preset)"},
    "verifier.repeat": {"pointwise": "it repeats pointwise verdicts"},
    "nuisance": {
        "pointwise": "its rewrites are scored pointwise",
        "fixed n": "its rewrites are not yet asked in waves: audit them apart",
    },
    "unconditioned": {"pointwise": "its probes are scored pointwise"},
    "adaptive": {
        "pointwise": "its waves follow the pointwise intervals",
        "one judge": "its waves follow one judge's intervals: audit a jury at a fixed n",
    },
    "consistency": {
        "pointwise": "it repeats pointwise verdicts",
        "one judge": "consistency repeats one judge's verdicts: audit a juror alone to measure its repeats",
    },
    "reward": {"pointwise": "its profile reads the verifier's pointwise scores beside the rewards"},
    "pairwise": {
        "one judge": "pairwise asks one judge the pairs: audit a juror alone as a pairwise judge",
    },
    "aggregate: majority": {"levels": "a majority counts levels: use aggregate mean or median"},
    "attacks": {
        "one judge": "it attacks one judge's format: audit a juror alone under attack",
        "fixed n": "its probes are attacked once the audit's are written",
    },
}


def conflict(features: Collection[str], taken: Collection[str]) -> str | None:
    """The first feature set (`features`, keys of NEEDS) whose need a setting in `taken` (keys of TAKES) takes
    away, in one line; None where they all run together."""
    for setting in TAKES:
        if setting not in taken:
            continue
        need, says, needs = TAKES[setting]
        for feature in NEEDS:
            if feature in features and (why := NEEDS[feature].get(need)) is not None:
                return f"{setting} {says}, and {feature} {needs} ({why}): drop one of the two"
    return None
