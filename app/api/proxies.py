"""The client's address, with proxy headers trusted only from configured proxies.

``kbqa serve`` runs uvicorn with its own proxy-header handling off, so ``request.client`` is the TCP peer. Only when
that peer is one of ``KBQA_API__TRUSTED_PROXIES`` (addresses or networks, e.g. ``10.0.0.0/8``) is ``X-Forwarded-For``
read: from the right, skipping trusted proxies, the first other address is the client. Anyone else's header is
ignored, so it cannot dodge the per-address login limit.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from fastapi import Request


def _trusted(address: str, proxies: Sequence[str]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address in proxies  # a name such as a unix socket peer: only an exact entry trusts it
    for entry in proxies:
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue
    return False


def client_address(request: Request, trusted_proxies: Sequence[str]) -> str:
    peer = request.client.host if request.client else "unknown"
    if not trusted_proxies or not _trusted(peer, trusted_proxies):
        return peer
    hops = [h.strip() for h in ",".join(request.headers.getlist("x-forwarded-for")).split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, trusted_proxies):
            return hop
    return hops[0] if hops else peer
