"""What `radar import` makes of the real files in tests/data/formats/<format>/ (issue 45): per format, the files,
how many import (with how many criteria) and each refusal's reason, counted. Whether each outcome is the right
one is tests/test_format_corpus.py's table, file by file.

    .venv/bin/python scripts/import_corpus.py [--format openai-evals] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from radar_local import formats
from radar_local.errors import InputError

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "formats"
FILES = {  # the files a user would import (not the prompt and test files a promptfoo config names)
    "openai-evals": ("registry/evals/*.yaml", "registry/modelgraded/*.yaml"),
    "healthbench": ("*.jsonl",),
    "prometheus": ("*.json",),
    "promptfoo": (
        "**/promptfooconfig*.yaml",
        "redteam-foundation-model/redteam.yaml",  # a generated red-team config
        "standalone-assertions/asserts.yaml",  # a list for `promptfoo eval --assertions`
        "openai-realtime/test-webui-audio.yaml",
    ),
}


def corpus_files(fmt: str) -> list[Path]:
    return sorted({p for pattern in FILES[fmt] for p in (CORPUS / fmt).glob(pattern)})


def reason(line: str) -> str:
    """A refusal's reason without what names one file (its path, spec and eval names, counts)."""
    text = re.sub(r"^line \d+: ", "", line.split(": ", 1)[-1])
    text = re.sub(r"'[^']*'|\([^)]*\)|\b\d+\b", "_", text)
    return re.split(r"[:;]", text)[0][:90]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--format", choices=sorted(FILES), nargs="*", default=sorted(FILES))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    report: dict = {}
    for fmt in args.format:
        paths = corpus_files(fmt)
        imported, refused, crashed = [], Counter(), []
        for path in paths:
            try:
                found = formats.read(fmt, path)
                items = sum(len(t.items) for t in found.tasks)  # per-prompt items (issue 63)
                imported.append((str(path.relative_to(CORPUS / fmt)), len(found.rubric.ids), items))
            except InputError as exc:
                refused[reason(str(exc))] += 1
            except Exception as exc:  # a crash is what this script counts
                crashed.append(f"{path.name}: {type(exc).__name__}")
        report[fmt] = {"files": len(paths), "imported": imported, "refused": dict(refused), "crashed": crashed}
        print(f"{fmt}: {len(paths)} files, {len(imported)} imported, {sum(refused.values())} refused, "
              f"{len(crashed)} crashed")  # fmt: skip
        for name, k, items in imported:
            print(f"  imported {name} ({k} criteria{f', {items} items of their tasks' if items else ''})")
        for why, count in refused.most_common():
            print(f"  refused {count:3d}: {why}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 1 if any(r["crashed"] for r in report.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
