"""The walk a reader takes through the code of `radar audit CONFIG`: every call from one of radar_local's modules
into another, traced while a planted audit runs in this process. It prints the modules entered (the rooms), how
many times the call stack enters each from another module and how many of its functions run (run.py's figures are
the ones issue 44 tracks), and how many calls cross modules in all. Run it in two checkouts to compare their
structure on the same audit.

    python scripts/config_walk.py [--config planted.yaml] [--top 12]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@cache  # called twice on every Python call the audit makes: a path's parts once per file, not per call
def module_of(filename: str) -> str | None:
    """radar_local's module a code object lives in, as a path under the package; None outside it."""
    parts = Path(filename).parts
    if "radar_local" not in parts:
        return None
    return "/".join(parts[len(parts) - parts[::-1].index("radar_local") :])


def walk(config: Path, out: Path) -> tuple[Counter[str], dict[str, set[str]]]:
    """Entries into each module from another, and each module's functions that ran, over
    `radar audit config --out out` run in this process."""
    from click.testing import CliRunner

    from radar_local.cli.main import cli

    entries: Counter[str] = Counter()
    functions: dict[str, set[str]] = {}

    def profile(frame, event, _arg):
        if event != "call":
            return
        here = module_of(frame.f_code.co_filename)
        caller = frame.f_back and module_of(frame.f_back.f_code.co_filename)
        if here is None:
            return
        functions.setdefault(here, set()).add(frame.f_code.co_qualname)
        if here != caller:
            entries[here] += 1

    sys.setprofile(profile)
    try:
        res = CliRunner().invoke(cli, ["audit", str(config), "--out", str(out), "--quiet", "--no-report"])
    finally:
        sys.setprofile(None)
    if res.exit_code != 0:
        raise SystemExit(f"radar audit failed ({res.exit_code}): {res.output}")
    return entries, functions


def planted(folder: Path) -> Path:
    """The quickstart's shape on the planted engine: two tasks, the helpsteer2 rubric, N = 2, no resampling."""
    import yaml

    spec = {"engine": "testing", "model": "planted", "options": {}}
    config = {
        "generator": spec,
        "verifier": spec,
        "rubric": "helpsteer2",
        "tasks": [{"id": "t0", "prompt": "A customer wants a refund."}, {"id": "t1", "prompt": "A late parcel."}],
        "n": 2,
        "bootstrap": 0,
    }
    path = folder / "planted.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, help="an audit config (default: a planted quickstart shape)")
    ap.add_argument("--top", type=int, default=12, help="modules to list, most entered first")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = args.config or planted(Path(tmp))
        entries, functions = walk(config, Path(tmp) / "run")
    print(f"modules entered: {len(entries)}; entries from another module: {sum(entries.values())}")
    print(f"run.py entered {entries.get('run.py', 0)} times, {len(functions.get('run.py', ()))} of its functions ran")
    print("   entries  functions  module")
    for name, count in entries.most_common(args.top):
        print(f"  {count:8d}  {len(functions[name]):9d}  {name}")


if __name__ == "__main__":
    main()
