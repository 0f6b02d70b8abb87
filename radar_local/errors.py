"""Domain exceptions. The library raises them; only the CLI turns them into messages and exit codes."""

from __future__ import annotations


class RadarError(Exception):
    """Base class: the message is one line that says what went wrong and what to do next."""

    exit_code = 2


class InputError(RadarError):
    """A malformed rubric, config, score or reference file (exit code 2)."""

    def __init__(self, path: object, message: str):
        self.path = str(path)
        one_line = " ".join(message.split("\n"))  # a message that quotes the file's text stays one line
        super().__init__(f"{self.path}: {one_line}")


class MissingDependencyError(RadarError):
    """An optional engine dependency is not installed; carries the exact install command."""

    def __init__(self, package: str, *extras: str):
        commands = " or ".join(f"pip install 'radar_local[{e}]'" for e in extras)
        super().__init__(f"the '{package}' package is needed for this engine; install it with: {commands}")


class ModelNotFoundError(RadarError):
    """Model weights are not on disk; nothing is downloaded at run time."""


class EngineStartError(RadarError):
    """An engine that did not start (vLLM's 'Engine core initialization failed', out of memory, a bad checkpoint):
    one line naming the model and the cause's last line."""

    def __init__(self, engine: str, model: str, cause: BaseException):
        lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
        last = "".join(ch if ch.isprintable() else " " for ch in (lines[-1] if lines else ""))[:300]
        super().__init__(
            f"{model} did not start on the {engine} engine ({type(cause).__name__}: {last or 'no message'}); "
            "see engine.log, free memory or fix the model, then run again (stored calls are kept)"
        )
