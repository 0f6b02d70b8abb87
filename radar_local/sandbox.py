"""Templates are user input, and so is every file an import turns into one: they render in Jinja2's immutable
sandbox with strict undefined variables, and within bounds, so no template hangs or exhausts an audit.

The bounds: a render's loops over `range` take at most RANGE_BUDGET steps in all (nested loops multiply, the
budget does not); a number passed to a filter or call, a repeated or joined text and a power stay small; the
text rendered is at most MAX_OUTPUT characters; and a render that still runs after RENDER_S seconds (a loop over
a long text inside a loop over it) is stopped. Whatever a template does wrong ends as `RenderRefused` (a
TemplateError), which callers turn into one line.
"""

from __future__ import annotations

import ctypes
import functools
import operator
import os
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

RANGE_BUDGET = 100_000  # steps over range() in one render
MAX_NUMBER = 100_000  # the largest number a filter or call takes (a width, a count)
MAX_OUTPUT = 4 << 20  # characters of one rendered message (a prompt far beyond any model's context)
RENDER_S = 5.0  # seconds one render may take
_steps: ContextVar[int] = ContextVar("steps", default=0)


class RenderRefused(TemplateError):
    """A template that exceeded a bound, or failed in a way Jinja does not report as a TemplateError."""


def _bounded_range(*args: int) -> range:
    numbers = range(*args)
    spent = _steps.get() + len(numbers)
    if spent > RANGE_BUDGET:
        raise RenderRefused(f"its loops over range() take more than {RANGE_BUDGET:,} steps")
    _steps.set(spent)
    return numbers


def _small(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_NUMBER:
        raise RenderRefused(f"a number above {MAX_NUMBER:,} ({str(value)[:20]}...) is passed where text is sized")


def _checked(filter_: Callable) -> Callable:
    @functools.wraps(filter_)  # keeps Jinja's pass_context / pass_environment marks
    def guarded(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            _small(value)
        return filter_(*args, **kwargs)

    return guarded


class BoundedSandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+"})

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
        self.globals["range"] = _bounded_range
        self.globals.pop("lipsum", None)  # text generation has no place in a judge's prompt
        self.filters = {name: _checked(f) for name, f in self.filters.items()}

    def call_binop(self, context: Any, operator_: str, left: Any, right: Any) -> Any:
        if operator_ == "**":
            if isinstance(right, int) and abs(right) > 64 or isinstance(left, int) and abs(left) > MAX_NUMBER:
                raise RenderRefused(f"the power {str(left)[:20]} ** {str(right)[:20]} is too large")
            return operator.pow(left, right)
        if operator_ == "*":
            count, seq = (left, right) if isinstance(left, int) else (right, left)
            if isinstance(seq, str | list | tuple) and isinstance(count, int) and len(seq) * count > MAX_OUTPUT:
                raise RenderRefused(f"a text or list repeated {count:,} times is too long")
            return operator.mul(left, right)
        out = operator.add(left, right)
        if isinstance(out, str | list | tuple) and len(out) > MAX_OUTPUT:
            raise RenderRefused(f"a text or list joined to more than {MAX_OUTPUT:,} items")
        return out

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            _small(value)
        return super().call(__context, __obj, *args, **kwargs)


@functools.cache
def environment() -> BoundedSandbox:
    return BoundedSandbox()


@functools.cache
def compiled(text: str) -> Any:
    return environment().from_string(text)


def render_bounded(text: str, values: dict[str, Any]) -> str:
    """`text` rendered with `values` within the bounds; RenderRefused (a TemplateError) naming what went wrong."""
    _steps.set(0)
    try:
        out = _within_time(lambda: compiled(text).render(**values))
    except TemplateError:
        raise
    except RecursionError:
        raise RenderRefused("it recurses too deeply (a macro that calls itself?)") from None
    except MemoryError:
        raise RenderRefused("it needs more memory than this machine has") from None
    except (ArithmeticError, ValueError, TypeError, LookupError, AttributeError) as exc:
        raise RenderRefused(f"{type(exc).__name__}: {str(exc)[:200]}") from None
    if len(out) > MAX_OUTPUT:
        raise RenderRefused(f"it renders {len(out):,} characters, more than {MAX_OUTPUT:,}")
    return out


class _Overtime(BaseException):
    """Raised into a render that passed RENDER_S (a BaseException, so no template-level handler swallows it)."""


class _Watchdog:
    """One thread that raises _Overtime into each render still running at its deadline. A timer thread per render
    cost about 0.3 ms, more than the render of a judge's prompt itself."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running: dict[object, tuple[int, float]] = {}  # render -> (its thread, its deadline)
        self._fired: set[object] = set()
        self._thread: threading.Thread | None = None
        os.register_at_fork(after_in_child=self._forget)  # a forked child has no watchdog thread

    def _forget(self) -> None:
        self._cond, self._running, self._fired, self._thread = threading.Condition(), {}, set(), None

    def arm(self, render: object) -> None:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, name="radar-render-watchdog", daemon=True)
                self._thread.start()
            self._running[render] = (threading.get_ident(), time.monotonic() + RENDER_S)
            if len(self._running) == 1:  # the watchdog waits without a deadline while nothing renders
                self._cond.notify()

    def disarm(self, render: object) -> None:
        with self._cond:
            self._running.pop(render, None)
            if render in self._fired:  # fired as the render ended: take back an exception not yet delivered
                self._fired.discard(render)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.get_ident()), None)

    def _watch(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for render, (ident, deadline) in list(self._running.items()):
                    if deadline <= now:
                        del self._running[render]
                        self._fired.add(render)
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(_Overtime))
                first = min((deadline for _, deadline in self._running.values()), default=None)
                self._cond.wait(None if first is None else first - now)


_watchdog = _Watchdog()


def _within_time(render: Callable[[], str]) -> str:
    """render() in this thread, stopped by an exception raised into it once RENDER_S have passed."""
    token = object()
    _watchdog.arm(token)
    try:
        return render()
    except _Overtime:
        raise RenderRefused(f"it ran for more than {RENDER_S:g} s") from None
    finally:
        _watchdog.disarm(token)
