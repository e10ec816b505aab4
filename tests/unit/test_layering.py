"""Imports are one-way: core <- retrieval <- ingestion; core <- retrieval <- generation <- api."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]

# package -> packages it must never import
FORBIDDEN = {
    "app/core": ("retrieval", "ingestion", "app.generation", "app.api", "app.main", "app.cli"),
    "retrieval": ("ingestion", "app.generation", "app.api", "app.main", "app.cli"),
    "ingestion": ("app.generation", "app.api", "app.main", "app.cli"),
    "app/generation": ("ingestion", "app.api", "app.main", "app.cli"),
    "app/api": ("app.main", "app.cli"),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layer_imports_point_down(package):
    violations = []
    for path in sorted((REPO / package).rglob("*.py")):
        for name in _imports(path):
            for bad in FORBIDDEN[package]:
                if name == bad or name.startswith(bad + "."):
                    violations.append(f"{path.relative_to(REPO)} imports {name}")
    assert not violations, "\n".join(violations)
