"""Typed access to the process's parts from a route: ``container: Container = Depends(get_container)`` or, inside
a handler that already has the request, ``get_container(request)``."""

from __future__ import annotations

from fastapi import Request

from app.container import Container


def get_container(request: Request) -> Container:
    container: Container = request.app.state.container
    return container
