"""Imports are one-way: core <- retrieval <- ingestion; core <- retrieval <- generation <- services <- api;
evaluation on top.

The tree reads the same way: `core/` is the ground floor beside `retrieval/`, `ingestion/` and `app/`
(generation, api, the entry points). Both `import x` statements and string imports (`importlib.import_module("x")`,
`"module:attr"` targets handed to a child process or Celery) count.
"""

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]

# folder -> packages it must never import
FORBIDDEN = {
    "core": ("retrieval", "ingestion", "app", "evaluation"),
    "retrieval": ("ingestion", "app", "evaluation"),
    "ingestion": ("app", "evaluation"),
    "app/generation": ("ingestion", "app.api", "app.services", "app.container", "app.main", "app.cli", "evaluation"),
    "app/services": ("app.api", "app.container", "app.main", "app.cli", "evaluation"),
    "app/api": ("app.main", "app.cli", "evaluation"),
    "app": ("evaluation",),  # the entry points (main, cli) serve too
    "evaluation": ("app.api", "app.main", "app.cli"),  # on top of retrieval, ingestion and app.generation
}

# a string that is nothing but a dotted module path, optionally with ":attr" (docstrings and messages never match)
_MODULE_STRING = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+(:[A-Za-z_][A-Za-z0-9_]*)?$")
_OUR_PACKAGES = ("core", "retrieval", "ingestion", "app", "evaluation")


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_STRING.match(node.value):
            module = node.value.partition(":")[0]
            if module.split(".")[0] in _OUR_PACKAGES:
                names.add(module)
    return names


#: Command-line aliases kept where an old ``python -m`` path must keep working: they run the moved module only as
#: ``__main__`` (checked below) and are never imported, so they do not make the layer depend on it.
CLI_ALIASES = {"retrieval/evaluation.py"}


def _violations(package: str) -> list[str]:
    found = []
    for path in sorted((REPO / package).rglob("*.py")):
        if path.relative_to(REPO).as_posix() in CLI_ALIASES and Path(__file__).resolve().parents[2] == REPO:
            continue
        for name in _imports(path):
            for bad in FORBIDDEN[package]:
                if name == bad or name.startswith(bad + "."):
                    found.append(f"{path.relative_to(REPO)} imports {name}")
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layer_imports_point_down(package):
    violations = _violations(package)
    assert not violations, "\n".join(violations)


def test_the_ground_floor_is_a_top_level_package():
    assert (REPO / "core" / "__init__.py").is_file()
    assert not (REPO / "app" / "core").exists()


def test_evaluation_lives_outside_the_serving_packages():
    assert (REPO / "evaluation" / "__init__.py").is_file()
    for old in ("retrieval/eval_backends.py", "retrieval/beir.py", "retrieval/metrics.py",
                "app/generation/evaldata.py", "app/generation/calibrate.py"):
        assert not (REPO / old).exists(), old


def test_cli_aliases_only_run_as_main():
    """An alias has no module-level import: everything it does sits under ``if __name__ == "__main__":``."""
    for alias in CLI_ALIASES:
        tree = ast.parse((REPO / alias).read_text(encoding="utf-8"))
        body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        assert len(body) == 1 and isinstance(body[0], ast.If), alias
        assert ast.unparse(body[0].test) in ("__name__ == '__main__'", '__name__ == "__main__"'), alias


def test_string_imports_are_seen(tmp_path):
    """The check would catch an upward import hidden in a string (guards the regex above)."""
    bad = tmp_path / "core"
    bad.mkdir()
    (bad / "x.py").write_text('import importlib\nimportlib.import_module("app.api.routes")\n'
                              'TARGET = "ingestion.tasks:run"\nDOC = "see app.main for details."\n')
    globals()["REPO"] = tmp_path
    try:
        found = _violations("core")
    finally:
        globals()["REPO"] = Path(__file__).resolve().parents[2]
    assert sorted(found) == ["core/x.py imports app.api.routes", "core/x.py imports ingestion.tasks"]


def test_routes_reach_the_database_only_through_services():
    """The HTTP edge parses, calls a service and returns its response model: no route module opens a database
    session or calls the repositories itself."""
    offenders = []
    for path in sorted((REPO / "app" / "api" / "routes").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        names = _imports(path)
        if "core.db.repositories" in names or any(n == "core.db" for n in names) and "repositories" in text:
            offenders.append(f"{path.relative_to(REPO)} imports the repositories")
        if ".db.session()" in text or "sessionmaker" in text:
            offenders.append(f"{path.relative_to(REPO)} opens a database session")
    assert not offenders, "\n".join(offenders)
