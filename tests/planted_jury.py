"""A planted jury's configs, shared by the jury's tests and the labels' tests."""

from __future__ import annotations

from tests.conftest import planted_config

TASKS = [{"id": f"t{i}", "prompt": f"Customer question number {i}."} for i in range(6)]


COUPLING = {"Coherence / Clarity": {"Helpfulness / Understanding": 0.25}}


def juror(name: str, **options) -> dict:
    judge = options.pop("judge", None)
    spec = {"engine": "testing", "model": name, "options": {"coupling": COUPLING, **options}}
    return {**spec, **({"judge": judge} if judge else {})}


def jury_config(jurors: list[dict], **kw) -> dict:
    extra = {k: kw.pop(k) for k in ("aggregate", "min_jurors") if k in kw}
    return planted_config(**{"tasks": TASKS, "n": 4, "bootstrap": 300, "verifier": {"jury": jurors, **extra}, **kw})


SMALL = {"tasks": TASKS[:2], "n": 2, "bootstrap": 0}  # an audit whose statistics the test does not read
