"""Shared helpers for the deployment checks: paths, tool lookup, Settings env names, Compose interpolation."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from core.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
ENV_PREFIX = "KBQA_"

_INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def find_tool(name: str) -> str | None:
    """The tool next to this interpreter (the project venv) first, then on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def settings_env_names(model: type[BaseModel] = Settings, prefix: str = ENV_PREFIX) -> set[str]:
    """Every environment variable name Settings reads: ``KBQA_FIELD`` and ``KBQA_GROUP__FIELD`` (nested)."""
    names: set[str] = set()
    for field_name, field in model.model_fields.items():
        name = f"{prefix}{field_name}".upper()
        names.add(name)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names |= settings_env_names(annotation, f"{name}__")
    return names


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose-style ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}`` substitution; a missing required
    variable raises ``KeyError`` naming it."""

    def substitute(match: re.Match[str]) -> str:
        name, op, arg = match.group("name"), match.group("op"), match.group("arg")
        current = env.get(name)
        if op in (":?", "?"):
            if not current:
                raise KeyError(f"{name}: {arg}")
            return current
        if op in (":-", "-"):
            return current if current else (arg or "")
        return current or ""

    return _INTERPOLATION.sub(substitute, value)


def interpolation_names(text: str) -> set[str]:
    return {match.group("name") for match in _INTERPOLATION.finditer(text)}


def build_settings(env: dict[str, str], monkeypatch: Any, tmp_path: Path) -> Settings:
    """Build Settings from exactly ``env`` (no other KBQA_ variables, no .env file)."""
    for key in list(os.environ):
        if key.upper().startswith(ENV_PREFIX):
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    return Settings()
