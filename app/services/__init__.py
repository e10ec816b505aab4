"""Services: what the product does, between the HTTP edge (``app.api``) and the parts (generation, retrieval,
ingestion, the database). Routes parse a request, call one service function and return its result as a pydantic
``response_model``; services never see a ``Request``. Each module is keyword-only functions or a small class."""

from collections.abc import Callable
from typing import Any, TypeVar

from core.db.session import Database

T = TypeVar("T")


def in_transaction(db: Database, fn: Callable[..., T], /, **kwargs: Any) -> T:
    """Run a service function that takes ``session=`` in a transaction of its own (committed on success); for the
    service functions written to compose inside a caller's transaction."""
    with db.session() as s:
        return fn(session=s, **kwargs)
