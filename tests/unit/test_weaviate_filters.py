"""Offline checks of the Weaviate backend's pure parts: tenant names and filter translation."""

from __future__ import annotations

import datetime as dt

import pytest

from core.types import SearchFilter

pytest.importorskip("weaviate", reason="weaviate-client (the 'weaviate' extra) is not installed")
from retrieval.weaviate_backend import PUBLIC_ACL, build_filter, tenant_name  # noqa: E402

pytestmark = pytest.mark.unit


def test_tenant_names_are_valid_and_stable() -> None:
    assert tenant_name("acme-1_x") == "acme-1_x"
    odd = tenant_name("acme corp/eu")
    assert odd == tenant_name("acme corp/eu") and odd.startswith("t_") and len(odd) <= 64
    assert tenant_name("a" * 65) != tenant_name("a" * 66)


def test_unrestricted_filter_is_none() -> None:
    assert build_filter(SearchFilter("t")) is None


def test_acl_filter_admits_public_marker() -> None:
    f = build_filter(SearchFilter("t", acl_groups=("eng",)))
    assert f.target == "acl" and list(f.value) == [PUBLIC_ACL, "eng"]


def test_all_filter_kinds_are_and_ed() -> None:
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    f = build_filter(
        SearchFilter(
            "t",
            acl_groups=(),
            doc_types=("faq",),
            tags=("hr",),
            document_ids=("d1", "d2"),
            created_from=t0,
            created_to=t0,
        )
    )
    assert type(f).__name__ == "_FilterAnd"
    assert len(f.filters) == 6
