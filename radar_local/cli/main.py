"""The `radar` command group: domain errors and interrupts as one line and an exit code. Each command is a
thin module of its own (cli/*.py) that calls library functions and prints."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import sys

import click

from radar_local.errors import RadarError

RESUME = "every stored record is whole and the batch in flight was dropped; run the same command again to resume"


def _one_line(text: str) -> str:
    """One terminal line: line breaks (also U+2028, U+2029, NEL) and other control characters (an ESC
    sequence in a column name) are shown escaped, never acted on by the terminal."""
    return "".join(ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii") for ch in text)


class Terminated(BaseException):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, and like it a BaseException:
    a library's `except Exception` (vLLM's engine loop has some) must not swallow it."""


def _on_sigterm(signum, frame):
    raise Terminated()


class RadarGroup(click.Group):
    """Turns domain errors into one line on stderr and their exit code, never a traceback; an
    interrupt (Ctrl-C: 130, SIGTERM: 143) into one line that says how to resume."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except RadarError as exc:  # one line, even when it quotes a value holding a line break
            click.echo("error: " + _one_line(str(exc)), err=True)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:  # a bad option or argument: one line too, with where to look
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
            click.echo(f"error: {_one_line(exc.format_message())}{where}", err=True)
            ctx.exit(2)
        except (KeyboardInterrupt, click.exceptions.Abort):
            click.echo(f"interrupted: {RESUME}", err=True)
            ctx.exit(130)
        except Terminated:
            click.echo(f"terminated: {RESUME}", err=True)
            ctx.exit(143)
        except OSError as exc:  # a full disk or stdout, a name too long: the system's words, one line
            where = f" ({exc.filename})" if exc.filename else ""
            _output_gone()
            _last_word(
                f"error: {_one_line(exc.strerror or str(exc))}{_one_line(where)[:300]}; every stored record is "
                "whole: fix that and run the same command again"
            )
            ctx.exit(2)


def _output_gone() -> None:
    """Where stdout itself cannot be written (a full device, a closed pipe), point it at /dev/null so
    that the interpreter's final flush does not fail a second time."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _last_word(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        click.echo(line, err=True)


@click.group(
    name="radar",
    cls=RadarGroup,
    context_settings={"auto_envvar_prefix": "RADAR", "help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="radar_local")
def cli() -> None:
    """RADAR rubric coupling audits on local open-weight models, fully offline."""


def _register() -> None:
    from radar_local.cli import audit, doctor, drift, formats, grid, init, models, order, repair, report, score, stats

    for command in (
        init.init,
        stats.stats,
        audit.audit,
        audit.generate,
        score.score,
        drift.drift,
        order.order,
        report.report,
        report.view,
        report.compare,
        grid.grid,
        repair.repair,
        formats.import_rubric,
        formats.export,
        models.models,
        doctor.doctor,
    ):
        cli.add_command(command)


_register()


def main() -> None:
    for stream in (sys.stdout, sys.stderr):  # a character the console's encoding lacks is shown escaped
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    signal.signal(signal.SIGTERM, _on_sigterm)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("note: %(message)s"))
    logging.getLogger("radar_local").addHandler(handler)
    logging.getLogger("radar_local").propagate = False
    cli()
