"""The frontend's generated API types match the API's OpenAPI schema (regenerate with `make api-types`)."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def test_schema_gen_ts_is_up_to_date():
    out = subprocess.run(
        [sys.executable, "scripts/gen_api_types.py", "--check"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr


def test_the_generator_maps_schemas_to_typescript():
    sys.path.insert(0, str(REPO / "scripts"))
    from gen_api_types import render

    spec = {"components": {"schemas": {
        "Item": {"type": "object", "required": ["id", "tags"], "properties": {
            "id": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
            "page": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "role": {"$ref": "#/components/schemas/Role"},
            "meta": {"type": "object", "additionalProperties": {"type": "number"}},
        }},
        "Role": {"type": "string", "enum": ["agent", "admin"]},
    }}}
    text = render(spec)
    head = "export interface Item {\n  id: string;\n  tags: string[];\n  page?: number | null;\n  role?: Role;\n"
    assert head in text
    assert "  meta?: Record<string, number>;\n}" in text
    assert 'export type Role = "agent" | "admin";' in text
