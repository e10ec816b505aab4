"""Writes frontend/src/api/schema.gen.ts: a TypeScript type for every schema of the API's OpenAPI document.

    python scripts/gen_api_types.py          # (re)generate
    python scripts/gen_api_types.py --check  # exit 1 when the committed file is out of date

``frontend/src/api/types.ts`` builds the web app's types on these (aliases, or narrowings that ``tsc`` checks against
them in ``contract.ts``), so a change of the API's response models shows up as a type error in the frontend build.
The server-sent answer events are not part of the OpenAPI document and stay written by hand in ``types.ts``.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "frontend" / "src" / "api" / "schema.gen.ts"
HEADER = (
    "// Generated from the API's OpenAPI schema by scripts/gen_api_types.py: do not edit by hand.\n"
    "// Regenerate with `make api-types` after changing a response model.\n"
)


def openapi() -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    from app.main import create_app
    from core.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        return create_app(Settings(data_dir=Path(tmp), _env_file=None)).openapi()  # type: ignore[call-arg]


def ts(schema: dict[str, Any]) -> str:
    """The TypeScript type of one JSON schema (as FastAPI/pydantic write them)."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if "const" in schema:
        return json.dumps(schema["const"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts = list(dict.fromkeys(ts(s) for s in schema[key]))
            return " | ".join(parts)
    if "allOf" in schema:
        return " & ".join(ts(s) for s in schema["allOf"])
    kind = schema.get("type")
    if kind == "string":
        return "string"
    if kind in ("integer", "number"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "null":
        return "null"
    if kind == "array":
        inner = ts(schema.get("items", {}))
        return f"({inner})[]" if "|" in inner or "&" in inner else f"{inner}[]"
    if kind == "object" or "properties" in schema:
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if props:
            return "{ " + " ".join(_member(k, v, k in schema.get("required", [])) for k, v in props.items()) + " }"
        if isinstance(extra, dict) and extra:
            return f"Record<string, {ts(extra)}>"
        return "Record<string, unknown>"
    return "unknown"


def _member(name: str, schema: dict[str, Any], required: bool) -> str:
    key = name if name.isidentifier() else json.dumps(name)
    return f"{key}{'' if required else '?'}: {ts(schema)};"


def render(spec: dict[str, Any]) -> str:
    out = [HEADER]
    for name, schema in sorted(spec.get("components", {}).get("schemas", {}).items()):
        doc = (schema.get("description") or "").strip().replace("*/", "*\\/")
        if doc:
            out.append("/** " + " ".join(doc.split()) + " */")
        props = schema.get("properties")
        if props is not None and schema.get("type", "object") == "object":
            out.append(f"export interface {name} {{")
            required = set(schema.get("required", []))
            for prop, sub in props.items():
                out.append("  " + _member(prop, sub, prop in required))
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                out.append(f"  [key: string]: {ts(extra)} | undefined;")
            elif extra is True:
                out.append("  [key: string]: unknown;")
            out.append("}\n")
        else:
            out.append(f"export type {name} = {ts(schema)};\n")
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render(openapi())
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.relative_to(REPO)} is out of date: run `make api-types`", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
