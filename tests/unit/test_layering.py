"""Imports are one-way: core <- retrieval <- ingestion; core <- retrieval <- generation <- api; evaluation on top.

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
    "app/generation": ("ingestion", "app.api", "app.main", "app.cli", "evaluation"),
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


def _violations(package: str) -> list[str]:
    found = []
    for path in sorted((REPO / package).rglob("*.py")):
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
    for old in ("retrieval/evaluation.py", "retrieval/eval_backends.py", "retrieval/beir.py", "retrieval/metrics.py",
                "app/generation/evaldata.py", "app/generation/calibrate.py"):
        assert not (REPO / old).exists(), old


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
