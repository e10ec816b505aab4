"""The routes of the FastAPI app, however the installed FastAPI nests included routers."""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import FastAPI
from fastapi.routing import APIRoute


def api_routes(app: FastAPI) -> list[APIRoute]:
    """Every ``APIRoute`` of ``app``. FastAPI >= 0.16x keeps an included router as one ``_IncludedRouter`` entry of
    ``app.routes`` (its routes under ``original_router``); older versions copy the routes in. Both are walked."""
    found: list[APIRoute] = []

    def walk(routes: Iterable[object]) -> None:
        for route in routes:
            if isinstance(route, APIRoute):
                found.append(route)
            elif hasattr(route, "original_router"):
                walk(route.original_router.routes)

    walk(app.routes)
    return found


def operations(app: FastAPI) -> set[tuple[str, str]]:
    """``(METHOD, path)`` of every API route, HEAD and OPTIONS left out."""
    return {(m, r.path) for r in api_routes(app) for m in r.methods - {"HEAD", "OPTIONS"}}
