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
    flag = pair["flag"]
    if flag == "directional":
        return f"directional ({pair['upstream']} -> {pair['downstream']})"
    if flag == "gated":
        return "gated (unreliable criterion)"
    return flag or ""


def verdict(result: dict) -> list[str]:
    """Plain sentences a reviewer reads first."""
    lines = []
    bad = result["flags"]["unreliable"]
    if bad:
        names = ", ".join(u["criterion"] for u in bad)
        lines.append(
            f"The verifier could not read {len(bad)} of {len(result['criteria'])} criteria ({names}): "
            f"self-effect below tau={result['tau']}; no coupling is claimed for them."
        )
    for p in result["pairs"]:
        if p["flag"] in ("bidirectional cluster", "directional", "tradeoff"):
            lines.append(f"{p['a']} / {p['b']}: {flag_text(p)}, Sym {num(p['sym'])}, Asym {num(p['asym'], signed=False)}.")
    if not lines:
        lines.append("No pair crosses the flag thresholds.")
    return lines
