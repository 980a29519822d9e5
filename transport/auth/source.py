"""The seam between refresh-ahead auth and where tokens come from.

A ``TokenSource`` fetches one fresh token (``IssuedToken``: the value and
its lifetime, if stated) and raises ``AuthError`` for every failure, with a
message that never contains a secret. ``RefreshingTokenAuth``
(``tokens``) decides when to call it. The sources that ship:
``oauth.ClientCredentialsSource`` and ``command.CommandTokenSource``;
tests pass their own.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from transport.errors import AuthError


@dataclass(frozen=True)
class IssuedToken:
    """A token as a source hands it out; ``lifetime`` in seconds, None if not stated."""

    value: str = field(repr=False)
    lifetime: float | None = None


def lifetime_seconds(value: object, name: str) -> float | None:
    """A token lifetime from JSON: positive seconds (numeric strings too), None if absent.

    Raises ``AuthError`` naming ``name`` for anything else.
    """
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise AuthError(f"{name} is not a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AuthError(f"{name} is not a number")
    if not (0 < value < math.inf):
        raise AuthError(f"{name} must be a positive number of seconds")
    return float(value)


class TokenSource(ABC):
    """Fetches a fresh token; raises ``AuthError`` (never anything else) on failure."""

    #: what the source is, for log lines (never a secret)
    description: str = "token source"

    @abstractmethod
    async def fetch(self) -> IssuedToken:
        """A new token."""

    def secrets(self) -> list[str]:
        """Long-lived secrets the source uses (masked in logs)."""
        return []

    async def aclose(self) -> None:
        """Release connections."""
        return None
