"""The package's layers (docs/ARCHITECTURE.md): every import, at the top of a module, inside a function
or only for type checking, points to the module's own layer or one below it, and no two modules import
each other, however indirectly. A new module must be given a layer here."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "radar_local"

# Lowest first. A module is named by its dotted path under radar_local; a package name covers its modules.
LAYERS = {
    "utilities": ["errors", "common", "inputs", "quiet", "progress", "hardware"],
    "data": [
        "records",
        "scale",
        "answer",
        "rubric",
        "tasks",
        "scoring",
        "score_table",
        "prompts",
        "sandbox",
        "judge",
        "formats",
        "models",
        "injection",
        "synthetic",
        "store",
        "nuisance",
    ],
    "statistics": ["stats", "judges", "analysis", "compare"],
    "machinery": ["labels", "config", "engines", "cluster", "plan", "jury", "adaptive"],
    "runs": ["rundir", "audited", "pool", "scorers", "run"],
    "report": ["report"],
    "workflows": ["grid", "repair"],
    "interface": ["doctor", "starter", "cli", ""],  # "": the package itself, the public API
}


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def layer_of(module: str) -> int:
    for rank, members in enumerate(LAYERS.values()):
        if any(module == m or module.startswith(m + ".") for m in members if m) or module in members:
            return rank
    raise AssertionError(f"radar_local.{module} has no layer: add it to LAYERS in {Path(__file__).name}")


def imports(module: str, path: Path, names: dict[str, Path]) -> set[str]:
    """Every module of the package that `module` imports, wherever the import statement is."""
    package = module.split(".") if module else []
    if path.name != "__init__.py":
        package = package[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            prefix = node.module or ""
            if node.level:
                prefix = ".".join(
                    ["radar_local", *package[: len(package) - node.level + 1], *filter(None, [node.module])]
                )
            targets = [f"{prefix}.{a.name}" for a in node.names]  # a module, or a name in one
        else:
            continue
        for target in targets:
            if not target.startswith("radar_local."):
                continue
            target = target.removeprefix("radar_local.")
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target != module:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    names = module_names()
    return {m: imports(m, p, names) for m, p in names.items()}


def test_every_import_points_down_or_sideways():
    upward = [
        f"radar_local.{m} ({list(LAYERS)[layer_of(m)]}) imports radar_local.{t} ({list(LAYERS)[layer_of(t)]})"
        for m, targets in sorted(graph().items())
        for t in sorted(targets)
        if layer_of(t) > layer_of(m)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    edges, order, low, stack, cycles = graph(), {}, {}, [], []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in edges[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in order:
            visit(v)
    assert not cycles, cycles


# Deferred by design (docs/ARCHITECTURE.md: `radar --help` never loads them): the name is the reason.
HEAVY = {"torch", "vllm", "transformers", "outlines", "ray", "matplotlib", "datasets"}


def _reason(line: str) -> str:
    """A line's comment without lint pragmas (noqa, type: ignore): what is left says why, or nothing."""
    comment = line.partition("#")[2]
    return re.sub(r"(?:noqa|type:\s*ignore)(?:\[[^\]]*\]|:\s*[A-Z0-9, ]+)?", "", comment).strip(" #")


def deferred_imports_without_reason(source: str, where: str) -> list[str]:
    """Imports inside a function that do not say why: a standard-library module (cheap: it belongs at the
    top), or any other module but a heavy dependency without a comment that is a reason (two words or more)."""
    lines, silent = source.splitlines(), []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or (isinstance(node, ast.ImportFrom) and node.level):
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            top = {n.split(".")[0] for n in names}
            line = lines[node.lineno - 1]
            if top & set(sys.stdlib_module_names) or (not top <= HEAVY and len(_reason(line).split()) < 2):
                silent.append(f"{where}:{node.lineno}: {line.strip()}")
    return silent


def test_an_import_inside_a_function_says_why():
    """Outside the CLI (whose commands import the library when they run, so `radar --help` and a bad input's
    one line come at once), an import inside a function is for a heavy dependency, and says so."""
    silent = [
        line
        for module, path in module_names().items()
        if not module.startswith("cli")
        for line in deferred_imports_without_reason(path.read_text(), f"radar_local/{path.relative_to(PACKAGE)}")
    ]
    assert not silent, "\n".join(silent)


def test_the_import_rule_refuses_what_it_says():
    source = """
def f():
    import json
    from radar_local.x import y  # noqa: E402
    from radar_local.x import z  # type: ignore[attr-defined]
    from radar_local.x import w  # scipy: not at radar --help
    import torch
    import pandas
"""
    found = [line.split(": ", 1)[1] for line in deferred_imports_without_reason(source, "m")]
    assert found == [
        "import json",
        "from radar_local.x import y  # noqa: E402",
        "from radar_local.x import z  # type: ignore[attr-defined]",
        "import pandas",
    ]


def test_the_statistics_core_imports_without_pandas_or_engines():
    """The pure statistics (all of stats/ but the AuditResult and its assembly, which hold DataFrames) load
    numpy and scipy only: neither pandas nor an engine, a store or a run."""
    pure = [
        f"radar_local.stats.{p.stem}"
        for p in (PACKAGE / "stats").glob("*.py")
        if p.stem not in ("__init__", "result", "audit", "decisions")
    ]
    code = f"import json, sys; import {', '.join(pure)}; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert not [
        m
        for m in loaded
        if m == "pandas"
        or m.startswith(("radar_local.engines", "radar_local.run", "radar_local.store", "torch", "vllm"))
    ]
