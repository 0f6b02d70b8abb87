"""Domain exceptions. The library raises them; only the CLI turns them into messages and exit codes."""

from __future__ import annotations


class RadarError(Exception):
    """Base class: the message is one line that says what went wrong and what to do next."""

    exit_code = 2


class InputError(RadarError):
    """A malformed rubric, config, score or reference file (exit code 2)."""

    def __init__(self, path: object, message: str):
        self.path = str(path)
        super().__init__(f"{self.path}: {message}")


class MissingDependencyError(RadarError):
    """An optional engine dependency is not installed; carries the exact install command."""

    def __init__(self, package: str, *extras: str):
        commands = " or ".join(f"pip install 'radar_local[{e}]'" for e in extras)
        super().__init__(f"the '{package}' package is needed for this engine; install it with: {commands}")


class ModelNotFoundError(RadarError):
    """Model weights are not on disk; nothing is downloaded at run time."""
