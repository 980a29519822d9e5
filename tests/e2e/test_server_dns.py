"""Through the real server: a service by name, resolved by a real DNS server (dnsmasq)."""

from __future__ import annotations

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support import dnsmasq
from tests.support.dnsmasq import Dnsmasq
from tests.support.greet import COLUMN, EXPECTED, LINE, TEXT, URI
from tests.support.reference import ReferenceService

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not dnsmasq.available(), reason="dnsmasq is not installed"),
]

NAME = "completions.test"


async def test_server_counters_match_what_dnsmasq_and_the_service_saw(
    upstream: ReferenceService,
) -> None:
    with Dnsmasq({NAME: "127.0.0.1"}, ttl=300) as dns:
        options = {
            "endpoint": f"https://{NAME}:{upstream.port}/v1",
            "transport": {"caFile": str(upstream.ca_file), "nameservers": [dns.nameserver]},
            "cache": {"l2": "none"},
            "speculative": {"enabled": False},
        }
        before = upstream.stats()
        queries_before = dns.queries(NAME)  # the readiness probe asked once
        async with ServerProcess(options) as server:
            server.open(URI, TEXT)
            for _ in range(5):
                await server.clear_cache()  # every request a miss: five upstream calls
                assert await server.inline_text(URI, LINE, COLUMN) == EXPECTED
            stats = await server.stats()
        after = upstream.stats()
        # DNS: A and AAAA once, at start-up; nothing on the request path.
        assert stats["transport"]["dnsLookups"] == dns.queries(NAME) - queries_before == 2
        # One HTTP/2 connection carried every completion.
        assert stats["transport"]["connectionsOpened"] == 1
        assert after["connections"] - before["connections"] == 1
        assert after["requests"]["total"] - before["requests"]["total"] == 5
        assert after["httpVersions"].get("HTTP/2", after["httpVersions"].get("2", 0)) >= 5
