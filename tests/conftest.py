"""Shared pytest fixtures."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

# The repository root must be importable so tests can share ``tests.support``
# (pytest's rootdir insertion only adds ``tests/`` itself).
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.support.reference import ReferenceService  # noqa: E402

# The servers the tests start keep what they learn under the user's cache
# directory by default (the SQLite L2, the kept record): give the session a
# cache directory of its own, so that no test reads what a developer's editor
# or an earlier test left there. The installed tools (code-server, the code
# model, wheels) stay where they are cached.
os.environ.setdefault(
    "SCOPECACHE_TOOLS_DIR",
    str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "scopecache" / "tools"),
)
os.environ["XDG_CACHE_HOME"] = _SESSION_CACHE = tempfile.mkdtemp(prefix="scopecache-test-cache-")
atexit.register(shutil.rmtree, _SESSION_CACHE, ignore_errors=True)

# In CI every run explores the same examples, so a property failure there is
# reproducible from the log; developers' runs keep exploring new ones.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


@pytest.fixture
def reference_service() -> Iterator[ReferenceService]:
    """A fresh reference service over TLS (HTTP/2) with the test corpus, per test."""
    with ReferenceService(tls=True) as service:
        yield service


@pytest.fixture(scope="session")
def reference_service_session() -> Iterator[ReferenceService]:
    """One reference service (TLS, test corpus) for the whole session; state is shared."""
    with ReferenceService(tls=True) as service:
        yield service


@pytest.fixture
def shared_reference_service(
    reference_service_session: ReferenceService,
) -> ReferenceService:
    """The session's service, reset (stats, faults, auth, latency) before the test."""
    reference_service_session.reset()
    return reference_service_session
