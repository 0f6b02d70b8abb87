"""What a config's design can confirm (`radar audit --plan`): the power of its rubric, tasks and N (stats/power.py),
from the spreads and self-effects a pilot run observed where its run directory holds one."""

from __future__ import annotations

from pathlib import Path

from radar_local.askings import askings
from radar_local.config import AuditConfig, load_config
from radar_local.errors import RadarError
from radar_local.resolved import resolve
from radar_local.rubric import Rubric
from radar_local.rundir import load_run
from radar_local.score_table import read_scores
from radar_local.specs import ModelSpec, PairwiseJudge
from radar_local.stats.bootstrap import LEVEL
from radar_local.stats.halo import checked_per_stratum
from radar_local.stats.per_prompt_power import MAX_N, PAIR_DRAWS, pair_power, sign_error_power, smallest_n
from radar_local.stats.power import (
    PLAN_SELF_EFFECT,
    REFERENCE_PACE,
    THINKING,
    Pace,
    ScoringPass,
    duration,
    minimum_confirmed,
    pilot_correlation,
    pilot_pace,
    pilot_spreads,
    plan_lines,
)


def design_lines(config_path: Path, sd: float | None, self_effect: float | None, out: Path | None) -> list[str]:
    """The power of the config's design (stats/power.py), from its rubric and tasks, and from the spreads and
    self-effects its run directory observed where it holds an audit (a pilot); the options override them."""
    resolved = resolve(load_config(config_path), config_path.parent, config_path)
    config, rubric, tasks = resolved.config, resolved.rubric, resolved.tasks
    if rubric.items:  # tasks with their own items: a per-prompt design (its shared criteria, if any, beside)
        return per_prompt_lines(config, rubric, [t.id for t in tasks], out)
    k, n = len(rubric.criteria), config.adaptive.max_n if config.adaptive else config.n
    if config.pairwise is not None and config.pairwise.only:
        return [
            f"Plan: {k} criteria x {len(tasks)} tasks x 2 directions x N = {n} probes: {k * len(tasks) * 2 * n} "
            f"directed probes; the judge is asked only pairs, no pointwise verdict. No call is made.",
            pair_calls(config.pairwise, [k] * len(tasks), n),
            *([pair_attack_calls(config, k * len(tasks), n)] if config.attacks is not None else []),
            "The pairwise findings' power and error rates at this budget: docs/benchmarks/judges.md "
            "(scripts/pairwise_error.py).",
        ]
    narrowest = min(rubric.scales.values(), key=lambda s: s.span)  # mixed scales: the least span, conservative
    span = float(narrowest.span)
    pilot = pilot_of(out or (Path(config.out) if config.out else None))
    observed = ""
    if pilot is not None and (sd is None or self_effect is None):
        observed = f"Observed in {pilot['run']}: " + ", ".join(
            f"{what} {pilot[key]:.2f}"
            for key, what in (
                ("sd", "score sd"),
                ("sd_target", "on the targeted criterion"),
                ("self_effect", "mean self-effect"),
                ("rho", "within-probe correlation"),
            )
            if pilot.get(key) is not None
        )
    sd_target, self_effect_given = sd, self_effect  # --plan-sd sets both spreads
    if pilot is not None:
        floor = span / 400  # a pilot whose scores never moved: not a spread of 0
        sd = sd if sd is not None else max(pilot["sd"], floor) if pilot.get("sd") is not None else None
        if sd_target is None and pilot.get("sd_target") is not None:
            sd_target = max(pilot["sd_target"], floor)
        self_effect = self_effect if self_effect is not None else pilot.get("self_effect")
    sd = sd if sd is not None else span / 4
    sd_target = sd_target if sd_target is not None else sd
    self_effect = self_effect if self_effect is not None else PLAN_SELF_EFFECT
    level = config.adaptive.confidence if config.adaptive else LEVEL
    rho = (pilot or {}).get("rho") or 0.0  # 0 before a pilot: conservative
    power = minimum_confirmed(
        k,
        len(tasks),
        n,
        sd=sd,
        span=span,
        self_effect=self_effect,
        tau=config.tau,
        level=level,
        attributes=len(config.nuisance_specs),
        pairs_per_task=config.unconditioned,
        bias_threshold=config.bias_threshold,
        rho=rho,
        sd_target=sd_target,
    )

    def scoring_pass(spec: ModelSpec, share: float = 1.0) -> ScoringPass:
        judge = spec.judge
        thinks = judge is not None and judge.reasoning is not None and judge.reasoning.think
        return ScoringPass(joint=judge is not None and judge.joint, share=share, thinks=thinks)

    passes = [scoring_pass(spec) for spec in config.verifiers]  # every juror and call mode
    passes += [  # and what is asked beside each one's verdicts: a halo check, repeats, wordings, the ablation
        scoring_pass(a.judge, 1.0 if a.share is None else a.share)
        for spec in config.verifiers
        for a in askings(config, spec)
    ]
    lines = plan_lines(
        k,
        len(tasks),
        n,
        power,
        sd=sd,
        sd_target=sd_target,
        self_effect=self_effect,
        level=level,
        adaptive=bool(config.adaptive),
        passes=passes,
        scale=narrowest.name,
        span=span,
        tau=config.tau,
        rho=rho,
        pace=(pilot or {}).get("pace") or (REFERENCE_PACE if embedded_only(config) else None),
    )
    if pilot is not None and pilot["gates"] == 0 and self_effect_given is None:  # its judge never moved a criterion
        mean = pilot["self_effect"]
        lines = [
            *lines[:2],  # the design and its time
            f"The pilot in {pilot['run']} passed no criterion's gate (tau = {config.tau}: every self-effect below it"
            f"{'' if mean is None else f', the positive ones averaging {mean:.2f}'}"
            "): no design confirms anything with this judge, whatever N. A judge that moves with the steers comes "
            "first (--plan-self-effect plans for one you have not run).",
        ]
    if config.pairwise is not None:  # the verifier asked the pairs too
        lines.append(pair_calls(config.pairwise, [k] * len(tasks), n))
        lines += [pair_attack_calls(config, k * len(tasks), n)] if config.attacks is not None else []
    if config.reward is not None:  # the reward model, once a probe
        probes = k * len(tasks) * 2 * n + len(tasks) * config.unconditioned
        lines.append(f"Reward: {probes} more calls of the reward model {config.reward.label}, one a probe "
                     "(docs/judges.md).")  # fmt: skip
    if config.attacks is not None:  # the first verifier's probes (their share), once per kind, scored as probes are
        lines.append(attack_calls(config, [k] * len(tasks), n))
    return [observed, *lines] if observed else lines


def attack_calls(config: AuditConfig, sizes: list[int], n: int) -> str:
    """The attacked probes (attack_probes.py): each stratum's share of its probes once per attack kind, each scored
    by the first verifier as a probe is (one call a criterion, or one joint call); `sizes`: the criteria each task
    is steered and graded on."""
    assert config.attacks is not None
    share, kinds, spec = config.attacks.share, len(config.attacks.of(False)), config.verifiers[0]
    unconditioned = checked_per_stratum(share, config.unconditioned) if config.unconditioned else 0
    per_task = [k * 2 * checked_per_stratum(share, n) + unconditioned for k in sizes]
    joint = spec.judge is not None and spec.judge.joint
    bases, scored = sum(per_task), sum(b * (1 if joint else k) for b, k in zip(per_task, sizes))
    calls = scored * kinds
    thinks = spec.judge is not None and spec.judge.reasoning is not None and spec.judge.reasoning.think
    defences = config.attacks.defences
    defended = len(defences) * scored * (kinds + 1)  # each defence: the attacked probes and their bases
    return (
        f"Attacks: {bases} probes x {kinds} kinds = {bases * kinds} attacked probes, no generation; "
        f"{calls * (2 if thinks else 1)} more calls of the verifier {spec.label}{THINKING if thinks else ''}"
        + (
            f"; defences ({', '.join(defences)}): {defended * (2 if thinks else 1)} more, each defence scoring the "
            "attacked probes and their bases again"
            if defences
            else ""
        )
        + " (docs/judge-bias.md)."
    )


def pair_calls(pairwise: PairwiseJudge, sizes: list[int], n: int) -> str:
    """The pairwise judge's calls: each pair (task, criterion, variant) per question asked, in both orders; `sizes`
    the criteria (and items) each task is asked about."""
    per = n if pairwise.pairs is None else min(n, pairwise.pairs)
    asked = [{"all": k, "diagonal": 1, "overall": 0}[pairwise.asked] + pairwise.asks_overall for k in sizes]
    pairs, calls = per * sum(sizes), 2 * per * sum(k * q for k, q in zip(sizes, asked))
    questions = f"{asked[0]} questions" if len(set(asked)) == 1 else f"its task's {min(asked)}-{max(asked)} questions"
    asker = "the verifier" if pairwise.verifier is None else f"the pairwise judge {pairwise.verifier.label}"
    more = "" if pairwise.only else " more"
    return f"Pairwise: {pairs} pairs x {questions} x 2 orders = {calls}{more} calls of {asker} (docs/pairwise.md)."


def pair_attack_calls(config: AuditConfig, steered: int, n: int) -> str:
    """The pairwise judge's attacked pairs (RunDir.pair_attacks): each pair it is asked (of each stratum's share)
    once per kind, asked about its steered criterion and overall (where it asks those), in both orders; `steered`
    the (task, criterion or item) pairs steered."""
    assert config.pairwise is not None and config.attacks is not None
    spec, kinds = config.pairwise, len(config.attacks.of(True))
    pairs = steered * min(checked_per_stratum(config.attacks.share, n), n if spec.pairs is None else spec.pairs)
    asked = spec.asks_criteria + spec.asks_overall
    return (
        f"Pairwise under attack: {pairs} pairs x {kinds} kinds, the worse response attacked, x {asked} questions x 2 "
        f"orders = {pairs * kinds * asked * 2} more pairwise calls (docs/judge-bias.md)."
    )


def embedded_only(config: AuditConfig) -> bool:
    """Every model of the audit the embedded default on vLLM: the reference pace applies."""
    specs = [config.generator, *config.verifiers]
    return all(s.engine == "vllm" and s.model == "smollm2-135m" for s in specs)


def pilot_of(run_dir: Path | None) -> dict | None:
    """A finished audit's observed spread and self-effects in `run_dir`, else None (no run, or not one yet)."""
    if run_dir is None or not run_dir.is_dir():
        return None
    try:
        run = load_run(run_dir)
        result = run.result()
        table = read_scores(run.table_path, run.rubric.scales)
        stages = run.info().stages
    except (RadarError, OSError):
        return None
    effects = [float(v) for v in result.self_effect if v == v and v > 0]
    sd, sd_target = pilot_spreads(table)
    return {
        "run": str(run_dir),
        "sd": sd,
        "sd_target": sd_target,
        "rho": pilot_correlation(table),
        "pace": pilot_pace(stages, str(run_dir)),
        "self_effect": min(1.0, sum(effects) / len(effects)) if effects else None,
        "gates": int(sum(bool(v) for v in result.reliable)),  # criteria whose gate the pilot's estimate passed
    }


def pace_of(config: AuditConfig, out: Path | None) -> Pace | None:
    """The seconds a call of the run in `out` (or the config's) took, else the embedded model's reference pace where
    every model is it; None where neither is known."""
    folder = out or (Path(config.out) if config.out else None)
    if folder is not None and folder.is_dir():
        try:
            if (pace := pilot_pace(load_run(folder).info().stages, str(folder))) is not None:
                return pace
        except (RadarError, OSError):
            pass
    return REFERENCE_PACE if embedded_only(config) else None


def per_prompt_lines(config: AuditConfig, rubric: Rubric, tasks: list[str], out: Path | None = None) -> list[str]:
    """A per-prompt design (stats/per_prompt.py): its probes and verdicts, and what its exact tests confirm at N
    (stats/per_prompt_power.py): a pitfall read backwards 9 times in 10, a redundant pair of leakage 0.6 both ways.
    An adaptive design's at its max_n, its tests over its looks, with its first wave's cost."""
    adaptive = config.adaptive
    n, looks = (adaptive.max_n, adaptive.looks) if adaptive else (config.n, 1)
    sizes = [len(rubric.criteria_of(t)) for t in tasks]
    items, shared = sum(sizes), len(rubric.shared)
    pairs = sum(k * (k - 1) // 2 for k in sizes) - len(tasks) * shared * (shared - 1) // 2
    joint = [spec.label for spec in config.verifiers if spec.judge is not None and spec.judge.joint]
    per_n = 2 * sum(k * (1 if joint else k) for k in sizes)  # each probe of a task graded on its K_t, per N
    calls = per_n * n
    own = items - len(tasks) * shared
    sign, pair = sign_error_power(n, own, looks=looks), pair_power(n, pairs, looks=looks)
    sign_n = smallest_n(lambda m: sign_error_power(m, own, looks=looks))
    pair_n = smallest_n(lambda m: pair_power(m, pairs, looks=looks))

    def needs(found: int | None) -> str:
        return f"N = {found} reaches 80%" if found is not None else f"no N up to {MAX_N} reaches 80%"

    pace = pace_of(config, out)
    wall = (
        f"Expected wall time: about {duration(pace.seconds(2 * n * items, calls))} (the pace of {pace.source})."
        if pace is not None
        else "Expected wall time: unknown before a pilot on this engine (run a small N first: --plan then reads "
        "its pace from run.json)."
    )
    at = "at most " if adaptive else ""
    waves = (
        [
            f"Adaptive: the first wave at N = {adaptive.start_n} makes {per_n * adaptive.start_n} verifier calls; each "
            f"later one adds {adaptive.step} probes a side to every stratum of the prompts whose own findings are "
            f"open, up to N = {n}; its tests count its {looks} looks (docs/adaptive.md). The power below is a "
            f"finding's at N = {n}, where its prompt grows.",
        ]
        if adaptive
        else []
    )
    looked = f" and its {looks} looks" if adaptive else ""
    if config.pairwise is not None and config.pairwise.only:  # no pointwise verdict: the items' pairs alone
        return [
            f"Plan (per-prompt rubric): {len(tasks)} tasks, {own} items of their own, each steered + and - at N = {n}:"
            f" {2 * n * items} probes; the judge is asked only pairs, no pointwise verdict. No call is made.",
            pair_calls(config.pairwise, sizes, n),
            *([pair_attack_calls(config, items, n)] if config.attacks is not None else []),
            "An item's pairwise finding needs N = 15-20 pairs (its p-values are no smaller than 2^-N): "
            "docs/pairwise.md#per-prompt-rubrics, measured by scripts/item_pairs_error.py.",
        ]
    return [
        f"Plan (per-prompt rubric): {len(tasks)} tasks, {own} items of their own ({min(sizes) - shared}-"
        f"{max(sizes) - shared} a task){f' beside {shared} shared criteria' if shared else ''}, each steered + and - "
        f"at N = {n}: {at}{2 * n * items} probes; every item of a task graded on each of its probes: {at}{calls} "
        f"verifier calls ({'one a probe: a joint judge' if joint else 'one an item, as HealthBench grades'}). No call "
        "is made.",
        wall,
        *waves,
        f"A pitfall the judge reads backwards (9 verdicts in 10 on the wrong side) is confirmed a sign error (Holm "
        f"over the {own} items{looked} at a third of the audit's {1 - LEVEL:.0%} error) with probability {sign:.0%} "
        f"at N = {n}; {needs(sign_n)} (exact).",
        f"A redundant pair (each item moving the other's met rate by 0.6, both ways) is confirmed (Holm over the "
        f"{pairs} item pairs{looked}, a third of the error) with probability {pair:.0%} at N = {n}; {needs(pair_n)} "
        f"(simulated, {PAIR_DRAWS} draws). Screening at a false discovery rate finds them sooner: docs/per-prompt.md.",
    ] + [
        *([pair_calls(config.pairwise, sizes, n)] if config.pairwise is not None else []),
        *([attack_calls(config, sizes, n)] if config.attacks is not None else []),
        *([pair_attack_calls(config, items, n)] if config.pairwise is not None and config.attacks is not None else []),
    ]
