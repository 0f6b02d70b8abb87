"""Small formatting helpers shared by the console and Markdown renderings."""

from __future__ import annotations


def num(x: float | None, digits: int = 2, signed: bool = True) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def interval(ci: list | None) -> str:
    if not ci or ci[0] is None:
        return ""
    return f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"


def flag_text(pair: dict) -> str:
    """Every flag of a pair, e.g. 'directional (a -> b), tradeoff'."""
    named = {"directional": f"directional ({pair.get('upstream')} -> {pair.get('downstream')})",
             "gated": "gated (unreliable criterion)"}
    return ", ".join(named.get(f, f) for f in pair["flags"])


def injection_line(run: dict) -> str:
    """How many probes address the judge, where, and whether the statistics use them."""
    inj = run.get("injection")
    if not inj:
        return "Probes addressing the judge: not checked (run stored before this check existed)."
    if not inj["flagged"]:
        return f"No probe of {inj['probes']} addresses the judge or asks for a score."
    where = ", ".join(f"{k}: {n}" for k, n in inj["by_target_direction"].items())
    use = ("excluded from the statistics" if inj["excluded"]
           else "kept in the statistics (set exclude_flagged_probes: true to leave them out)")
    return f"{inj['flagged']} of {inj['probes']} probes address the judge or ask for a score ({where}); {use}."


def verdict(result: dict) -> list[str]:
    """Plain sentences a reviewer reads first."""
    lines = [f"Warning: {w}." for w in result["warnings"]]
    bad = result["flags"]["unreliable"]
    if bad:
        names = ", ".join(f"{u['criterion']} ({u['reason']})" for u in bad)
        lines.append(f"{len(bad)} of {len(result['criteria'])} criteria fail the reliability gate: {names}; "
                     "no coupling is claimed for them.")
    for p in result["pairs"]:
        if p["flags"] and p["flags"] != ["gated"]:
            lines.append(f"{p['a']} / {p['b']}: {flag_text(p)}, Sym {num(p['sym'])}, Asym {num(p['asym'], signed=False)}.")
    if not lines:
        lines.append("No pair crosses the flag thresholds.")
    return lines
