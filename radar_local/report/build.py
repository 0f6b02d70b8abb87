"""`radar report`: report.html (self-contained) and report.md with its figures as SVG files beside it."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from radar_local.errors import InputError
from radar_local.report import plots, svg
from radar_local.report.examples import example_probes, nuisance_examples
from radar_local.report.html import audit_html, page, render_html
from radar_local.report.markdown import render_markdown
from radar_local.report.outline import pairwise_report_sections, report_sections, subtitle, title
from radar_local.report.viewer import write_viewer
from radar_local.stats.pairwise_audit import PairwiseAudit
from radar_local.store import make_folder, write_atomic

if TYPE_CHECKING:
    from radar_local.records import RunInfo
    from radar_local.rundir import RunDir
    from radar_local.stats.result import AuditResult
    from radar_local.stats.stored import Calibration


def write_report(
    run: RunDir,
    verifier: str | None = None,
    out: str | Path | None = None,
    result: AuditResult | PairwiseAudit | None = None,
) -> Path:
    """report.html and report.md (figures beside it) for one verifier's audit of a run (default: the
    config's own; `result`: that audit as just computed, else read from its stats file), in `out` or the
    run directory's own report folder."""
    from radar_local.audited import audited_set  # pandas: the score table's, not for `radar report --help`

    result = result if result is not None else run.stats(verifier)
    info = run.info(result.verifier)
    out = make_folder(Path(out)) if out is not None else make_folder(run.report_dir(result.verifier), own=True)
    if isinstance(result, PairwiseAudit):  # a judge asked only pairs: no pointwise figure or example to show
        sections = pairwise_report_sections(result, info)
        write_atomic(out / "report.html", page(title(result), render_html(sections), subtitle(result)))
        write_atomic(out / "report.md", render_markdown(title(result), sections))
        return out
    records = audited_set(run)  # every judge's verdicts: the examples read this one's, the viewer all
    examples = example_probes(result, records)
    pairs = nuisance_examples(result, records)
    try:
        figures = _figures(result, make_folder(out / "figures", own=True))
        viewer = Path(os.path.relpath(run.viewer_path, out)).as_posix()  # the findings link into it
        html = audit_html(result, figures, examples, info, result.calibration, pairs, viewer)
        markdown = report_markdown(result, examples, info, result.calibration, pairs, set(figures), viewer)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # the optional blocks (halo, jury, labels, ...) are read by key; a hand-edited one is one line
        raise InputError(
            run.stats_path(result.verifier),
            f"a block does not have the shape radar wrote ({type(exc).__name__}: {str(exc)[:80]}); it was edited "
            "since: run `radar audit` again to write it",
        ) from None
    write_atomic(out / "report.html", html)
    write_atomic(out / "report.md", markdown)
    write_viewer(run, records, result)  # the report's findings link into it
    return out


def write_run_viewers(folder: Path) -> list[Path]:
    """viewer.html of a run directory, or of each generator's run directory in a grid's folder (grid.json)."""
    from radar_local.audited import audited_set  # pandas: the score table's, not for `radar view --help`
    from radar_local.rundir import load_run  # pandas: a run's statistics

    runs = [folder]
    if (folder / "grid.json").is_file():
        runs = sorted(d for d in folder.iterdir() if d.is_dir() and (d / "config.yaml").is_file())
    written = []
    for root in runs:  # each judge's audit read from its stats file
        run = load_run(root)
        written.append(write_viewer(run, audited_set(run)))
    return written


def _figures(result: AuditResult, folder: Path) -> dict[str, bytes]:
    """The report's SVG figures, drawn again only when the statistics (or the plotting code) changed:
    a report rebuilt for an unchanged audit (a grid run again, `radar report`) reuses them."""
    stats = json.dumps(result.to_json(), sort_keys=True, default=str).encode()
    code = b"".join(Path(m.__file__ or "").read_bytes() for m in (plots, svg))
    digest = hashlib.sha256(stats + code).hexdigest()
    drawn = plots.figures_for(result)
    stamp, files = folder / "figures.sha256", {name: folder / f"{name}.svg" for name in drawn}
    if stamp.is_file() and stamp.read_text() == digest and all(f.is_file() for f in files.values()):
        return {name: f.read_bytes() for name, f in files.items()}
    stamp.unlink(missing_ok=True)  # the figures below are being redrawn
    for name in drawn:  # an earlier release drew them as PNG
        (folder / f"{name}.png").unlink(missing_ok=True)
    figures = {name: make(result).svg() for name, make in drawn.items()}
    for name, data in figures.items():
        write_atomic(files[name], data)
    write_atomic(stamp, digest)
    return figures


def report_markdown(
    result: AuditResult,
    examples: list[dict],
    info: RunInfo,
    calibration: Calibration | None,
    bias: list[dict] | None = None,
    drawn: set[str] | None = None,
    viewer: str | None = None,
) -> str:
    sections = report_sections(result, examples, bias or [], info, calibration, viewer)
    return render_markdown(title(result), sections, drawn)
