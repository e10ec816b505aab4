"""Engine and session factory. One :class:`Database` per process, built from settings at start-up."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from core.errors import AppError, ErrorCode


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def make_engine(url: str, *, connect_timeout_s: float = 3.0, pool_size: int = 5) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 10})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    connect_args: dict[str, Any] = {}
    if url.startswith("postgresql"):
        connect_args["connect_timeout"] = max(1, int(connect_timeout_s))
    return create_engine(
        url, pool_size=pool_size, pool_pre_ping=True, pool_timeout=connect_timeout_s, connect_args=connect_args
    )


class Database:
    def __init__(self, url: str, *, connect_timeout_s: float = 3.0, pool_size: int = 5) -> None:
        self.url = url
        self.engine = make_engine(url, connect_timeout_s=connect_timeout_s, pool_size=pool_size)
        self._factory = sessionmaker(self.engine, expire_on_commit=False)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session in a transaction: committed on success, rolled back on error. A database that cannot be
        reached raises ``AppError(DATABASE_UNAVAILABLE)``."""
        s = self._factory()
        try:
            yield s
            s.commit()
        except OperationalError as exc:
            s.rollback()
            raise AppError(ErrorCode.DATABASE_UNAVAILABLE, "the database is unavailable") from exc
        except BaseException:
            s.rollback()
            raise
        finally:
            s.close()

    def ping(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return True
        except Exception:
            return False

    def dispose(self) -> None:
        self.engine.dispose()
