"""Datetime helpers shared by the embedded index backends."""

from __future__ import annotations

import datetime as dt

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICRO = dt.timedelta(microseconds=1)


def epoch_micros(value: dt.datetime) -> int:
    """Exact microseconds since the Unix epoch; a naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH) // _MICRO
