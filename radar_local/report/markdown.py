"""The audit as a Markdown document."""

from __future__ import annotations

from radar_local.report.text import flag_text, interval, num, verdict


def audit_markdown(result: dict) -> str:
    crit = result["criteria"]
    out = [f"# RADAR audit: {result['generator']} -> {result['verifier']}", ""]
    out += [f"- {line}" for line in verdict(result)] + [""]
    out += ["## Self-effects", "", "| criterion | self-effect | 95% CI | reliable |", "|---|---|---|---|"]
    for c in crit:
        ci = (result["self_effect_ci"] or {}).get(c)
        out.append(f"| {c} | {num(result['self_effect'][c])} | {interval(ci)} | {'yes' if result['reliable'][c] else 'no'} |")
    out += ["", f"## Leakage (row -> column; tau = {result['tau']})", "", "| source | " + " | ".join(crit) + " |",
            "|---" * (len(crit) + 1) + "|"]
    for a in crit:
        mark = "" if result["reliable"][a] else " (gated)"
        out.append(f"| {a}{mark} | " + " | ".join(num(result["leakage"][a][b]) for b in crit) + " |")
    out += ["", "## Pairs", "", "| pair | l_ab | l_ba | Sym | Sym 95% CI | Asym | human r | flag |", "|---|---|---|---|---|---|---|---|"]
    for p in result["pairs"]:
        out.append(f"| {p['a']} / {p['b']} | {num(p['leak_ab'])} | {num(p['leak_ba'])} | {num(p['sym'])} | "
                   f"{interval((p['ci'] or {}).get('sym'))} | {num(p['asym'], signed=False)} | {num(p['human_r'])} | {flag_text(p)} |")
    g = result["global"]
    out += ["", f"Global: positive {num(g['positive'])}, tension {num(g['tension'])}, max coupling {num(g['max_coupling'])}."]
    if "agreement" in result:
        a = result["agreement"]
        out.append(f"Agreement with the human reference over {a['n_pairs']} reliable pairs: Pearson {num(a['pearson'])}, "
                   f"Spearman {num(a['spearman'])}, MAE {num(a['mae'], signed=False)}.")
    return "\n".join(out) + "\n"
