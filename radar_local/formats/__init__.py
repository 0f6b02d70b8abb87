"""Rubrics from where they live: `radar import FORMAT FILE` reads a judge config a team already has (its
criteria, scale, judge prompt, answer and tasks) into radar's rubric, judge and tasks; `radar export FORMAT`
writes a (repaired) rubric back into the original file, touching only the criteria that changed.

Each format is a module with `read(path) -> Imported` and `write(path, imported, rubric, account) -> str` (the new
text of the original file), and for a format of per-prompt items (`ITEMS`: HealthBench's, promptfoo's per-test rubrics)
`write_items(path, imported, tasks) -> (text, account)`.
Every template variable and answer pattern of a source maps to radar's or is refused with one line naming it
(InputError, exit 2); what maps with a difference is said in the import's account, printed and written beside
the rubric.
"""

from __future__ import annotations

from typing import Any

from radar_local.formats.names import EXPORTS, FORMATS, ITEMS, MODULES

__all__ = ["EXPORTS", "FORMATS", "ITEMS", "MODULES", "Imported", "carried", "export", "read", "write_import"]
__all__ += ["export_items", "holds_items", "tasks_with_items"]
# formats.files
LAZY = ("Imported", "carried", "export", "export_items", "holds_items", "read", "tasks_with_items", "write_import")


def __getattr__(name: str) -> Any:
    """The package's functions, loaded when first used: they need ruamel.yaml and the judge's Jinja2, which
    `radar`'s start-up (the CLI's choice of FORMAT names) should not import."""
    if name in LAZY:
        from radar_local.formats import files  # ruamel.yaml and jinja2: not on the CLI's start-up path

        return getattr(files, name)
    raise AttributeError(f"module 'radar_local.formats' has no attribute {name!r}")
