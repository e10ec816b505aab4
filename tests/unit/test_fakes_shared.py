"""Unit-test fakes live in one module, tests/fakes.py: no other test file defines a ``Fake*`` class of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parents[1]


def _fake_classes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        f"{path.relative_to(TESTS.parent)}:{node.lineno}: class {node.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name.startswith("Fake")
    ]


def test_fake_classes_are_defined_only_in_tests_fakes():
    found = [f for p in sorted(TESTS.rglob("*.py")) if p != TESTS / "fakes.py" for f in _fake_classes(p)]
    assert found == [], "move these to tests/fakes.py (and import them from there):\n" + "\n".join(found)


def test_the_shared_module_holds_the_fakes():
    names = {line.split("class ")[1] for line in _fake_classes(TESTS / "fakes.py")}
    assert {"FakeEmbedder", "FakeDispatcher", "FakeIndex", "FakeLLM", "FakeClock"} <= names
