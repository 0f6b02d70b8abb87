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

ARCHITECTURE = PACKAGE.parent / "docs" / "ARCHITECTURE.md"


def layer_table(text: str) -> dict[str, list[str]]:
    """The layer table of docs/ARCHITECTURE.md, lowest first: layer -> the modules its row names in backticks
    (a package, `stats/`, covers its modules; the package itself, `radar_local/__init__.py`, is "")."""
    table = text[text.index("| layer | modules |") :].split("\n\n")[0]
    rows = re.findall(r"^\| (\w+) \| ([^|]*`[^|]*) \|", table, re.M)
    return {
        layer: ["" if m == "radar_local/__init__.py" else m.rstrip("/") for m in re.findall(r"`([^`]+)`", modules)]
        for layer, modules in rows
        if layer != "layer"
    }


# Lowest first, as the docs list them: the table is the rule, so a module's layer is changed in one place.
LAYERS = layer_table(ARCHITECTURE.read_text())


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
    raise AssertionError(f"radar_local.{module} has no layer: add it to the layer table of {ARCHITECTURE}")


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


def test_the_layer_table_is_read_from_the_docs():
    assert list(LAYERS) == ["utilities", "data", "statistics", "machinery", "runs", "report", "workflows", "interface"]
    assert "run" in LAYERS["runs"] and "stats" in LAYERS["statistics"] and "" in LAYERS["interface"]
    assert layer_table("| layer | modules |\n| a | `x`, `y/` |\n| b | `radar_local/__init__.py` |") == {
        "a": ["x", "y"],
        "b": [""],
    }


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
# A deferred import's reason: the dependencies it defers, named before a colon ("scipy: ...", "ruamel and jinja2: ...").
REASON = re.compile(r"#\s*([\w.]+(?:(?:,\s*|\s+and\s+)[\w.]+)*):")


def _top_level(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The import statements a module runs when it is imported: at its top, in a try or an if, never in a
    function, a class or under TYPE_CHECKING."""
    out: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
            todo += node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo += node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
    return out


def loads(names: dict[str, Path]) -> dict[str, set[str]]:
    """Every module of the package -> the outside packages importing it loads (its top-level imports and
    those of the package modules they import, transitively)."""
    direct: dict[str, tuple[set[str], set[str]]] = {}
    for module, path in names.items():
        outside, inside = set(), set()
        for node in _top_level(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                continue
            targets = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for t in targets:
                if t.startswith("radar_local"):
                    t = t.removeprefix("radar_local").lstrip(".")
                    if isinstance(node, ast.ImportFrom):  # `from radar_local.x import y`: y may be a module
                        inside |= {f"{t}.{a.name}".lstrip(".") for a in node.names} & names.keys()
                    while t and t not in names:
                        t = t.rpartition(".")[0]
                    inside.add(t)
                else:
                    outside.add(t.split(".")[0])
        direct[module] = (outside, inside - {module})
    closure: dict[str, set[str]] = {}
    for module in names:
        seen, todo, found = {module}, [module], set()
        while todo:
            outside, inside = direct[todo.pop()]
            found |= outside
            todo += [m for m in inside if m not in seen and not seen.add(m)]  # type: ignore[func-returns-value]
        closure[module] = found
    return closure


def deferred_imports_without_reason(
    source: str, where: str, module: str | None = None, closure: dict[str, set[str]] | None = None
) -> list[str]:
    """Imports inside a function that do not say why: a standard-library module (cheap: it belongs at the
    top), or anything but a heavy dependency whose comment does not name, before a colon, a dependency that
    the import loads (the module itself, or one a package module imported loads at its top) and `module`,
    the importing one, does not load already."""
    names = module_names()
    closure = loads(names) if closure is None else closure
    already = closure.get(module, set()) if module is not None else set()
    lines, silent = source.splitlines(), []
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or (isinstance(node, ast.ImportFrom) and node.level):
                continue
            targets = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            top = {n.split(".")[0] for n in targets}
            line = lines[node.lineno - 1]
            if top & set(sys.stdlib_module_names):
                silent.append(f"{where}:{node.lineno}: {line.strip()}")
                continue
            if top <= HEAVY:
                continue
            loaded = set(top - {"radar_local"})
            for t in targets:
                t = t.removeprefix("radar_local").lstrip(".")
                subs = {f"{t}.{a.name}".lstrip(".") for a in node.names} if isinstance(node, ast.ImportFrom) else set()
                for m in {t} | subs:
                    while m and m not in names:
                        m = m.rpartition(".")[0]
                    if m in names or m == "":
                        loaded |= closure.get(m, set())
            reason = REASON.search(line)
            named = set(re.split(r",\s*|\s+and\s+", reason.group(1))) if reason else set()
            if not named or not {n.split(".")[0] for n in named} <= loaded - already:
                silent.append(f"{where}:{node.lineno}: {line.strip()}")
    return silent


def test_an_import_inside_a_function_says_why():
    """Outside the CLI (whose commands import the library when they run, so `radar --help` and a bad input's
    one line come at once), an import inside a function is for a heavy dependency, and names one it loads."""
    names = module_names()
    closure = loads(names)
    silent = [
        line
        for module, path in names.items()
        if not module.startswith("cli")
        for line in deferred_imports_without_reason(
            path.read_text(), f"radar_local/{path.relative_to(PACKAGE)}", module, closure
        )
    ]
    assert not silent, "\n".join(silent)


def test_the_import_rule_refuses_what_it_says():
    source = """
def f():
    import json
    from radar_local.stats.exact import at_least  # noqa: E402
    from radar_local.stats.exact import decimal  # scipy: not at radar --help
    from radar_local.stats.intervals import gatekept  # scipy: not at radar --help
    from radar_local.stats import intervals  # scipy: the module's own import
    from radar_local.common import slug  # the compare module's policy, one rule
    from scipy import special  # scipy: loaded when a p-value is
    from rich.console import Console  # scipy: a wrong name
    import torch
    import pandas
"""
    found = [line.split(": ", 1)[1] for line in deferred_imports_without_reason(source, "m")]
    assert found == [
        "import json",
        "from radar_local.stats.exact import at_least  # noqa: E402",
        "from radar_local.stats.exact import decimal  # scipy: not at radar --help",
        "from radar_local.common import slug  # the compare module's policy, one rule",
        "from rich.console import Console  # scipy: a wrong name",
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


DRAWS = re.compile(r"\.(integers|multinomial|choice|poisson|permutation|shuffle)\(")
INTERVALS = re.compile(r"\b(np\.)?(nan)?(quantile|percentile)\(")
T_OR_Z = re.compile(r"\b(special\.)?(stdtrit|ndtri)\(")  # a Student t or normal quantile: an interval's half-width
MAKES_INTERVAL = re.compile(r"(?<!class )\bInterval\(")  # the one type of a stored interval (stats/stored.Interval)
PLANNING = ("stats/power.py", "stats/decisions.py")  # critical values of a design, before any data: no interval


def statistics_homes(modules: dict[str, str]) -> list[str]:
    """Outside stats/bootstrap.py no statistics module draws a resample; outside stats/intervals.py none turns
    replicates into an interval (a quantile of them) or builds a Student t or normal one (issue 62: two modules built
    t intervals and Bonferroni bands by hand) or makes a stored `Interval`; the planning modules' critical values are a
    design's, not intervals."""
    found = []
    for name, source in modules.items():
        if name != "stats/bootstrap.py" and DRAWS.search(source):
            found.append(f"{name} draws")
        if name != "stats/intervals.py" and INTERVALS.search(source):
            found.append(f"{name} takes quantiles")
        if name not in ("stats/intervals.py", *PLANNING) and T_OR_Z.search(source):
            found.append(f"{name} builds a t or z interval")
        if name != "stats/intervals.py" and MAKES_INTERVAL.search(source):
            found.append(f"{name} makes an Interval")
    return found


def test_one_module_draws_and_one_makes_intervals():
    stats = {f"stats/{p.name}": p.read_text() for p in (PACKAGE / "stats").glob("*.py")}
    stats |= {f"{m}.py": (PACKAGE / f"{m}.py").read_text() for m in LAYERS["statistics"] if m != "stats"}
    assert len(stats) > 20 and not statistics_homes(stats)
    assert statistics_homes(
        {"stats/raters.py": "rng.multinomial(n, p)\nnp.quantile(x, 0.5)\nspecial.stdtrit(3, q)\nInterval(lo, hi)"}
    ) == [
        "stats/raters.py draws",
        "stats/raters.py takes quantiles",
        "stats/raters.py builds a t or z interval",
        "stats/raters.py makes an Interval",
    ]
