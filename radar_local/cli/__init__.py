"""The `radar` command line. `main` is its entry point; the commands live in cli/main.py."""

from __future__ import annotations

import sys


def main() -> None:
    """Ctrl-C while the commands import (the first fraction of a second) is one line too, not a traceback."""
    try:
        from radar_local.cli.main import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: nothing was started\n")
        raise SystemExit(130) from None
    run()
