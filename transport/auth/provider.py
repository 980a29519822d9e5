"""Credentials for the completion service, behind one small interface.

``AuthProvider`` is what the HTTP backend asks for headers. ``header()`` is
on the request path, so it must answer from memory whenever a valid
credential is cached; fetching belongs in ``start()`` and in background
refreshes. ``on_rejected(headers)`` is called once when the service
answers 401/403 to the request that carried ``headers``, to force one
refresh before the single retry. ``secrets()`` lists the values that must
never appear in logs (the backend's redaction filter uses it).

``StaticKeyAuth`` (``auth.kind = "static"``) reads the environment
variable named by ``apiKeyEnv`` at request time, so a key exported after
start-up is picked up; no variable, no header. The other kinds, and which
provider each setting names, are in ``kinds``.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping

logger = logging.getLogger(__name__)


def bearer_token(headers: Mapping[str, str] | None) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header in ``headers``."""
    if not headers:
        return None
    for name, value in headers.items():
        if name.lower() == "authorization":
            scheme, _, token = value.partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None


class AuthProvider(ABC):
    """Where the ``Authorization`` header comes from."""

    async def start(self) -> None:
        """Obtain the first credential (called at backend start, off the request path)."""
        return None

    @abstractmethod
    async def header(self) -> dict[str, str]:
        """Headers to add to a request; never blocks on a fetch while a token is valid."""

    async def on_rejected(self, rejected: Mapping[str, str] | None = None) -> bool:
        """The service refused the request that carried ``rejected``: refresh once.

        True if a retry makes sense (a different credential is now available).
        """
        return False

    def secrets(self) -> list[str]:
        """Credential values that must be masked in logs."""
        return []

    async def aclose(self) -> None:
        """Stop background refreshes."""
        return None


class StaticKeyAuth(AuthProvider):
    """A bearer key from an environment variable, read at request time."""

    def __init__(self, env_var: str, *, environ: Mapping[str, str] | None = None) -> None:
        self._env_var = env_var
        self._environ = environ if environ is not None else os.environ

    def _key(self) -> str:
        return self._environ.get(self._env_var, "").strip()

    async def header(self) -> dict[str, str]:
        """``Authorization: Bearer <key>``, or nothing when the variable is unset."""
        key = self._key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def secrets(self) -> list[str]:
        """The key itself."""
        key = self._key()
        return [key] if key else []


class NoAuth(AuthProvider):
    """No credentials at all."""

    async def header(self) -> dict[str, str]:
        """No headers."""
        return {}
