"""How fast `radar view`'s page opens and answers on a large planted audit, in headless Chromium on this machine.

A planted audit (tests/report_fixtures.py: the real store and statistics, helpsteer2's five criteria, scores drawn
from a planted coupling) of TASKS x 5 criteria x 2 directions x N probes, each response and each verdict's
explanation of a stated length; `radar view` writes its viewer.html; Chromium (offline) opens it REPS times.
Reported: the file's size, the Python side's seconds, and per opening the milliseconds from navigation start to the
page drawn (data-ready), then a matrix cell clicked, the list scrolled to its end, and a search typed, each until
drawn. The default is the issue's bound: 10,000 probes x 5 criteria with explanations, opened in under 3 s.

    .venv/bin/python scripts/bench_viewer.py [--n 200] [--tasks 5] [--reps 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from radar_local.hardware import cpu_info  # noqa: E402
from radar_local.report.build import write_run_viewers  # noqa: E402
from tests.report_fixtures import planted_run  # noqa: E402

WORDS = "the reply states the refund policy and names the next step for the customer clearly "


def filler(chars: int) -> str:
    return (WORDS * (chars // len(WORDS) + 1))[:chars]


def timed(page, action: str) -> float:
    """Milliseconds from `action` (a script run in the page) to the next frame drawn after it."""
    return page.evaluate(
        """async (action) => { const t = performance.now(); (new Function(action))();
        await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))); return performance.now() - t; }""",
        action,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="probes per (task, criterion, direction)")
    ap.add_argument("--tasks", type=int, default=5)
    ap.add_argument("--response-chars", type=int, default=600)
    ap.add_argument("--explanation-chars", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = planted_run(Path(tmp) / "run", n=args.n, tasks=args.tasks, response=" " + filler(args.response_chars),
                           explanation=filler(args.explanation_chars))  # fmt: skip
        start = time.perf_counter()
        (path,) = write_run_viewers(root)
        written, size = time.perf_counter() - start, path.stat().st_size
        probes = args.tasks * 5 * 2 * args.n
        opened, clicked, scrolled, searched = [], [], [], []
        if shutil.which("chromium") is None:
            print(f"viewer.html {size / 1e6:.1f} MB, written in {written:.1f} s; no chromium here (`make test` "
                  "installs Debian's): nothing opened")  # fmt: skip
            return 0
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=shutil.which("chromium"),
                                         args=["--headless", "--no-sandbox", "--disable-gpu"])  # fmt: skip
            for _ in range(args.reps):
                page = browser.new_context(offline=True, viewport={"width": 1500, "height": 1000}).new_page()
                page.goto(path.as_uri(), wait_until="load")
                page.wait_for_selector("body[data-ready]")
                opened.append(float(page.get_attribute("body", "data-ready") or "nan"))
                clicked.append(
                    timed(page, 'document.querySelector(\'#matrix button[data-row="1"][data-col="2"]\').click()')
                )
                scrolled.append(timed(page, "const l = document.getElementById('list'); l.scrollTop = l.scrollHeight"))
                searched.append(timed(page, "const s = document.getElementById('f-search'); s.value = 'variant 7'; "
                                            "s.dispatchEvent(new Event('input'))"))  # fmt: skip
                page.context.close()
            browser.close()
    med = statistics.median
    print(f"CPU: {cpu_info().label}")
    print(f"{probes} probes x 5 criteria, responses {args.response_chars} chars, explanations "
          f"{args.explanation_chars} chars: viewer.html {size / 1e6:.1f} MB, written in {written:.1f} s")  # fmt: skip
    print("| opened (ms) | a cell clicked (ms) | scrolled to the end (ms) | a search typed (ms) |")
    print("|---|---|---|---|")
    times = f"{med(clicked):.0f} | {med(scrolled):.0f} | {med(searched):.0f}"
    print(f"| {med(opened):.0f} (max {max(opened):.0f}) | {times} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
