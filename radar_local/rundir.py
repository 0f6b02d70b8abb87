"""RunDir: a run directory and its files. It names every file in the directory (including the rule
that names a second verifier's files), holds the config snapshot, the rubric, tasks and human reference
as they were when the run was made (inputs.json), and the store; it reads what the stages stored. A
RunDir only reads: the stages that add to a directory are radar_local.run.Run's."""

from __future__ import annotations

import logging
from collections.abc import Collection
from pathlib import Path
from typing import Self

from pydantic import Field

from radar_local.adaptive import recorded_sizes
from radar_local.askings import halo_sample
from radar_local.attack_probes import attacked, insertions, task_insertions
from radar_local.common import Strict, slug
from radar_local.compare import load_stats
from radar_local.config import AuditConfig, load_config
from radar_local.errors import InputError
from radar_local.inputs import read_model
from radar_local.jury import jury_verdicts
from radar_local.labels import LabelSet
from radar_local.plan import KEYS, GenerationRequest, Plan
from radar_local.records import ProbeRecord, RunInfo, VerdictRecord
from radar_local.resolved import Resolved, resolve
from radar_local.rubric import ReferencePair, Rubric, Task
from radar_local.specs import ModelSpec
from radar_local.stats.pairwise_audit import PairwiseAudit
from radar_local.stats.result import AuditResult
from radar_local.store import Store

# Every file name in a run directory (reports go to report/ and report-<verifier>/, see report_dir).
CONFIG, INPUTS, TABLE, VERIFIERS, WAVES = "config.yaml", "inputs.json", "scores.csv", "verifiers.json", "adaptive.json"
VIEWER = "viewer.html"
LABELS = "labels.json"  # the human labels the config names, as read (radar_local/labels.py)
WEIGHTS = "weights.json"  # model -> the identity of its weights when it last ran here (models.weights_identity)
log = logging.getLogger("radar_local")
PROBES, SCORES, LOCK, ENGINE_LOG = "probes.jsonl", "scores.jsonl", ".radar.lock", "engine.log"


def open_store(root: str | Path, writer: bool = True) -> Store:
    return Store(root, probes=PROBES, scores=SCORES, lock=LOCK, writer=writer)


class InputsSnapshot(Strict):
    """inputs.json: the rubric, tasks and human reference a run was made from, as data, with the paths or
    bundled names they were read from. Reopening a run reads these, never the original files, so editing
    or moving a rubric, or upgrading a bundled one, cannot change what a stored run returns."""

    sources: dict[str, str | list | dict | None]
    rubric: Rubric
    tasks: tuple[Task, ...]
    reference: tuple[ReferencePair, ...] | None
    keys: int = Field(description="The content-key formula of this directory's records (plan.KEYS)")
    note: str | None = None

    @classmethod
    def of(cls, resolved: Resolved, keys: int = KEYS, note: str | None = None) -> InputsSnapshot:
        reference = resolved.reference
        pairs = (
            None if reference is None else tuple(ReferencePair(a=min(k), b=max(k), r=r) for k, r in reference.items())
        )
        sources = resolved.config.model_dump(mode="json", include={"rubric", "tasks", "human"})
        return cls(sources=sources, rubric=resolved.rubric, tasks=resolved.tasks, reference=pairs, keys=keys, note=note)

    @property
    def inputs(self) -> tuple:
        reference = None if self.reference is None else {frozenset((p.a, p.b)): p.r for p in self.reference}
        return self.rubric, self.tasks, reference


OLD_RUN_NOTE = (
    "this run was made before radar kept its inputs: they were read once from the paths its config "
    "names when it was first reopened for writing, and its records keep their first key formula"
)


class RunDir:
    """A run directory, read-only: its config, inputs, probes, score table and stored results."""

    def __init__(self, root: Path, config: AuditConfig, store: Store, snapshot: InputsSnapshot):
        self.root, self.config, self.store = root, config, store
        self.snapshot = snapshot
        # engine_log: the engines' own output unless --verbose (radar_local.quiet); waves_path: an adaptive audit's
        # waves (radar_local.adaptive); viewer_path: every judge's audit and verdicts in one page (report/viewer.py)
        self.repair_dir, self.engine_log, self.waves_path, self.table_path, self.viewer_path = (
            root / name for name in ("repair", ENGINE_LOG, WAVES, TABLE, VIEWER)
        )
        self.rubric, self.tasks, self.reference = snapshot.inputs
        path = root / WEIGHTS
        self.weights: dict[str, str] = read_model(path, dict[str, str]) if path.is_file() else {}
        self.left_out: frozenset[str] = frozenset()  # jurors that failed in this audit: out of the jury as a whole
        labels = root / LABELS
        kept = read_model(labels, LabelSet) if config.labels is not None and labels.is_file() else None
        if kept is not None and (problem := kept.problem(self.rubric, self.tasks)) is not None:
            raise InputError(
                labels,
                f"{problem}; it was edited since radar wrote it: delete it and run the audit again, which writes it "
                "from the labels file",
            )
        self.use_labels(kept)

    def use_labels(self, labels: LabelSet | None) -> None:
        """The human labels this run scores (labels.json), and the plan that keys their verdicts."""
        self.labels = labels
        label_tasks = () if labels is None else labels.tasks
        self.plan = Plan(self.config, self.rubric, self.tasks, self.weights, self.snapshot.keys, label_tasks)

    def close(self) -> None:
        """Let go of the directory's lock (a writer's); reading goes on working."""
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def open(cls, root: str | Path) -> RunDir:
        """An existing run directory, for reading: its config and inputs from their snapshots."""
        return cls._open(Path(root), writer=False)

    @classmethod
    def _open(cls, root: Path, writer: bool):
        if not (root / PROBES).is_file():
            raise InputError(root, f"not a run directory (no {PROBES}); run `radar audit` or `radar generate` first")
        if not (root / CONFIG).is_file():
            raise InputError(
                root,
                f"has {PROBES} but no {CONFIG} (the config it was made from); put that config's "
                f"snapshot back, or run `radar audit CONFIG --out {root}` to write it again",
            )
        config = load_config(root / CONFIG)
        store = open_store(root, writer)
        if (root / INPUTS).is_file():
            return cls(root, config, store, read_model(root / INPUTS, InputsSnapshot))
        # A run made before inputs.json: its inputs once more from the paths its config names, and its
        # records' keys by their old formula (Run.open keeps them from here on).
        snapshot = InputsSnapshot.of(resolve(config, root, root / CONFIG), 1, OLD_RUN_NOTE)
        return cls(root, config, store, snapshot)

    # ---- file names: the only place that names a file in a run directory ----
    def _suffix(self, verifier: str | None) -> str:
        """'' for the config's own verifier, '.<label>' for one added later (radar score, a grid)."""
        return "" if verifier in (None, self.config.verifier.label) else f".{slug(verifier)}"

    def stats_path(self, verifier: str | None = None) -> Path:
        return self.root / f"stats{self._suffix(verifier)}.json"

    def info_path(self, verifier: str | None = None) -> Path:
        return self.root / f"run{self._suffix(verifier)}.json"

    def report_dir(self, verifier: str | None = None) -> Path:
        suffix = self._suffix(verifier)
        return self.root / ("report" + (f"-{suffix[1:]}" if suffix else ""))

    def probes(self) -> list[ProbeRecord]:
        """The stored probes this config plans, in plan order (an adaptive audit's: up to its last wave)."""
        return self.stored_probes(self.plan.generation_requests(self.adaptive_sizes()))

    def rewrite_requests(self, probes: list[ProbeRecord] | None = None) -> list[GenerationRequest]:
        """The nuisance rewrites this config plans: two per stored unconditioned probe (of `probes`, default
        the planned ones) and attribute."""
        specs = self.config.nuisance_specs
        if not specs:
            return []
        bases = [p for p in (self.probes() if probes is None else probes) if p.direction == "none"]
        return self.plan.rewrite_requests(bases, specs)

    def rewrites(self, probes: list[ProbeRecord] | None = None) -> list[ProbeRecord]:
        """The stored nuisance rewrites this config plans (of the bases among `probes`), in plan order."""
        return self.stored_probes(self.rewrite_requests(probes))

    def attack_probes(self, verifier: ModelSpec, probes: list[ProbeRecord] | None = None) -> list[ProbeRecord]:
        """The attacked probes this config plans for `verifier` (`attacks:`, attack_probes.py): each kind on the first
        share of each stratum's probes (of `probes`, default the planned ones), built from its answer format and
        template; computed, not generated, so the same on every reading."""
        settings = self.config.attacks
        if settings is None:
            return []
        judge = verifier.judge if verifier.judge is not None and verifier.judge.template else None
        shape = judge.answer if judge is not None else self.config.scoring.shape
        joint = verifier.judge is not None and verifier.judge.joint
        template = judge.template if judge is not None else None
        kinds = settings.of(False)
        made = {t.id: task_insertions(kinds, shape, self.rubric, t, joint, template) for t in self.tasks}
        bases = halo_sample(self.probes() if probes is None else probes, settings.share)
        return [attacked(base, kind, *made[base.task_id][kind], verifier.label) for base in bases for kind in kinds]

    def pair_attacks(
        self, judge: ModelSpec, probes: list[ProbeRecord] | None = None
    ) -> list[tuple[ProbeRecord, ProbeRecord]]:
        """The pairwise judge's attacked pairs (`attacks:` beside `pairwise:`), as (better, attacked worse): each
        steered pair it is asked (of each stratum's share of `probes`, default the planned ones) with its worse
        response attacked by each kind in the pairwise answer format; computed, as attack_probes. The worse response
        is the down one, but on a pitfall item the up one (it commits the pitfall)."""
        settings, spec = self.config.attacks, self.config.pairwise
        if settings is None or spec is None:
            return []
        kinds, kept = settings.of(True), halo_sample(self.probes() if probes is None else probes, settings.share)
        made = {t.id: insertions(kinds, spec.answer, spec.choices, (), spec.template, t.reference) for t in self.tasks}
        up = {(p.task_id, p.target, p.variant): p for p in kept if p.direction == "+"}
        pitfalls = {it.id for it in self.rubric.items if it.pitfall}
        oriented = [
            (p, first) if p.target in pitfalls else (first, p)
            for p in kept
            if p.direction == "-" and (spec.pairs is None or p.variant < spec.pairs)
            if (first := up.get((p.task_id, p.target, p.variant))) is not None
        ]
        return [
            (better, attacked(worse, kind, *made[worse.task_id][kind], f"{judge.label}-pairwise"))
            for better, worse in oriented
            for kind in kinds
        ]

    def stored_probes(self, requests: list[GenerationRequest]) -> list[ProbeRecord]:
        out = []
        for r in requests:
            for v in r.variants:
                if (p := self.store.probes.get(r.variant_key(v))) is None:
                    continue
                for field, expected in (
                    ("task_id", r.task.id),
                    ("target", r.target),
                    ("direction", r.direction),
                    ("variant", v),
                ):
                    if getattr(p, field) != expected:
                        raise self.store.mismatch("probes", p, field, expected)
                out.append(p)
        return out

    def adaptive_sizes(self) -> dict | None:
        """An adaptive audit's variants per cell as (0, n), from its last recorded wave; None for a fixed n."""
        return None if self.config.adaptive is None else recorded_sizes(self.config, self.plan, self.waves_path)

    def verifiers(self) -> dict[str, ModelSpec]:
        path = self.root / VERIFIERS
        return read_model(path, dict[str, ModelSpec]) if path.exists() else {}

    def verdicts(
        self, probes: list[ProbeRecord], verifiers: Collection[str] | None = None
    ) -> list[tuple[str, VerdictRecord]]:
        """The stored verdicts on these probes, as (verifier label, verdict), of every registered verifier
        (or those named in `verifiers`), in plan order; a jury's (radar_local/jury.py) after its jurors'."""
        jury = self.config.jury
        if jury is None or (verifiers is not None and jury.label not in verifiers):
            return self._stored_verdicts(probes, verifiers)
        if self.left_out:  # a juror is in or out of the jury as a whole: none of a failed juror's verdicts count
            kept = [j for j in jury.jurors if j.label not in self.left_out]
            jury = jury.model_copy(update={"jurors": kept, "min_jurors": jury.quorum})
        jurors = {j.label for j in jury.jurors}
        out = self._stored_verdicts(probes, None if verifiers is None else {*verifiers, *jurors})
        out += jury_verdicts(jury, out)
        return out if verifiers is None else [(label, v) for label, v in out if label in verifiers]

    def _stored_verdicts(
        self, probes: list[ProbeRecord], verifiers: Collection[str] | None
    ) -> list[tuple[str, VerdictRecord]]:
        out = []
        for label, spec in self.verifiers().items():
            if verifiers is not None and label not in verifiers:
                continue  # a judge an earlier configuration stored is no judge of this one
            for req in self.plan.score_requests(probes, spec):
                for criterion in req.criteria:
                    if (s := self.store.scores.get(req.verdict_key(criterion))) is not None:
                        for field, expected in (("criterion", criterion), ("probe_key", req.probe_key)):
                            if getattr(s, field) != expected:
                                raise self.store.mismatch("scores", s, field, expected)
                        scale = self.rubric.scale_of(criterion)
                        if s.score is not None and not scale.contains(s.score):
                            raise self.store.edited("scores", s, f"score {s.score} is off the {scale.name} scale")
                        out.append((label, s))
        return out

    # ---- stored outputs ----
    def stats(self, verifier: str | None = None) -> AuditResult | PairwiseAudit:
        """That verifier's stats.json, of either kind: a judge's audit, or a judge asked only pairs."""
        path = self.stats_path(verifier)
        if not path.is_file() and verifier is not None and verifier in self.verifiers():
            raise InputError(
                self.root,
                f"'{verifier}' has no audit of its own here: it scored as part of another verifier's audit (a repeat, "
                "a paraphrase, a halo check, the thinking ablation or pairwise verdicts; that report holds what it "
                "measured), or its own audit has not finished (run it again)",
            )
        if not path.is_file():
            raise InputError(self.root, f"not an audit run directory (no {path.name}); run `radar audit` first")
        return load_stats(path)

    def require_pointwise(self, what: str) -> None:
        """One line where this run's judge was asked only pairs: `what` reads pointwise verdicts it has none of."""
        pairwise = getattr(self.config, "pairwise", None)
        if pairwise is not None and pairwise.only:
            raise InputError(
                self.root,
                f"its judge was asked only pairs (pairwise: {{only: true}}), so it holds no pointwise verdicts for "
                f"{what}; read its report, or `radar compare --fail-on-pairwise`",
            )

    def result(self, verifier: str | None = None) -> AuditResult:
        """That verifier's audit of pointwise verdicts: a judge asked only pairs has none (one line)."""
        found = self.stats(verifier)
        if isinstance(found, PairwiseAudit):
            raise InputError(
                self.stats_path(verifier),
                "is a pairwise audit (pairwise.only): it holds no pointwise verdicts to read here; read its report, "
                "or `radar compare --fail-on-pairwise`",
            )
        return found

    def info(self, verifier: str | None = None) -> RunInfo:
        """run.json of that verifier's audit: its own costs, never another verifier's."""
        path = self.info_path(verifier)
        if not path.is_file():
            raise InputError(
                self.root, f"no {path.name} here; run `radar audit` (or `radar score` for that verifier) first"
            )
        return read_model(path, RunInfo)


def load_run(path: str | Path) -> RunDir:
    """A stored run, read-only: `.result()`, `.info()`, `.probes()`, `audited_set(run).table()` (its report:
    `write_report(run)`); to add to it, `with Run.open(path) as run: ...` (radar_local.run) takes its lock for
    the block."""
    return RunDir.open(path)
