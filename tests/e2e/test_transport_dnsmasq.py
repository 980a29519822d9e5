"""DNS prefetch against a real DNS server (dnsmasq) and the reference service by name."""

from __future__ import annotations

import pytest

from tests.support import dnsmasq
from tests.support.backend import complete, started_backend
from tests.support.conditions import until_true
from tests.support.dnsmasq import Dnsmasq
from tests.support.reference import ReferenceService
from transport.options import EndpointOptions

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not dnsmasq.available(), reason="dnsmasq is not installed"),
]

TTL = 5
NAME = "completions.test"


async def test_prefetched_name_needs_no_query_until_the_ttl_nears_expiry(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    with Dnsmasq({NAME: "127.0.0.1"}, ttl=TTL) as server:
        options = EndpointOptions(
            endpoint=f"https://{NAME}:{svc.port}/v1",
            ca_file=str(svc.ca_file),
            nameservers=(server.nameserver,),
            keep_warm_seconds=0,
        )
        before = server.queries(NAME)
        connections = svc.stats()["connections"]
        async with started_backend(options) as backend:
            assert server.queries(NAME) - before == 2  # A and AAAA, once
            for _ in range(20):
                assert await complete(backend)
            assert server.queries(NAME) - before == 2  # no query on the request path
            assert backend.counters().dns_lookups == 2
            # TLS name checks and SNI used the name; the socket went to the pinned IP.
            assert svc.stats()["connections"] == connections + 1
            assert backend.counters().connections_opened == 1

            await until_true(
                lambda: server.queries(NAME) - before >= 4, "the refresh ahead of expiry"
            )
            assert server.queries(NAME) - before == 4  # one refresh ahead of expiry
            assert backend.counters().dns_lookups == 4
            assert await complete(backend)
