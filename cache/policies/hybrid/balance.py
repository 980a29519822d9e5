"""The hybrid policy's balance: how the context weight alpha sizes its two regions.

The context weight ``alpha`` in [0.3, 0.7] sets the balance:

    target |T1|     = capacity * alpha * 0.6       (ARC's p when alpha is set)
    LRU-K limit     = floor(capacity * (1 - alpha) / 2)

so alpha 0.3 (repetitive, calm editing) gives the frequency region 35% of the
capacity and T1 a target of 18%; alpha 0.7 (fast, fresh code) gives the
frequency region 15% and T1 42%. ARC still adapts p on ghost hits; when
alpha moves, p moves by the same amount as the target. ``alpha="auto"``
reads it from a ``ContextHeat`` the server feeds (``cache.heat``); a number
fixes it.
"""

from __future__ import annotations

import math

from cache.heat import ALPHA_MAX, ALPHA_MIN, ContextHeat

#: share of alpha * capacity given to T1's target (the seed design's constant)
T1_SHARE = 0.6


def check_alpha(alpha: float | str) -> float | None:
    """Validate an alpha setting; returns None for ``"auto"``."""
    if alpha == "auto":
        return None
    if isinstance(alpha, str) or isinstance(alpha, bool):
        raise ValueError(
            f'alpha must be "auto" or a number in [{ALPHA_MIN}, {ALPHA_MAX}], not {alpha!r}'
        )
    value = float(alpha)
    if not ALPHA_MIN <= value <= ALPHA_MAX or math.isnan(value):
        raise ValueError(f"alpha must be in [{ALPHA_MIN}, {ALPHA_MAX}], not {value}")
    return value


def hot_limit_for(capacity: int, alpha: float) -> int:
    """The LRU-K region's hard limit for a capacity and alpha."""
    return int(capacity * (1.0 - alpha) / 2.0)


def t1_target_for(capacity: int, alpha: float) -> float:
    """ARC's T1 target size for a capacity and alpha."""
    return capacity * alpha * T1_SHARE


class AlphaBalance:
    """The hybrid's current alpha and the LRU-K limit it sets: fixed, or following the heat."""

    def __init__(self, capacity: int, fixed: float | None, heat: ContextHeat) -> None:
        self.capacity = capacity
        #: the alpha the setting fixes; None follows ``heat``
        self.fixed = fixed
        self.heat = heat
        self.alpha = fixed if fixed is not None else heat.alpha()
        self.hot_limit = hot_limit_for(capacity, self.alpha)

    @property
    def mode(self) -> str:
        """``"fixed"`` or ``"auto"``."""
        return "fixed" if self.fixed is not None else "auto"

    @property
    def t1_target(self) -> float:
        """T1's target derived from alpha alone."""
        return t1_target_for(self.capacity, self.alpha)

    def heat_moved(self) -> float | None:
        """The alpha the heat asks for when it differs from the current one (never when fixed)."""
        if self.fixed is not None:
            return None
        alpha = self.heat.alpha()
        return alpha if alpha != self.alpha else None

    def move(self, alpha: float) -> float | None:
        """Set alpha (clamped to its range); how far T1's target moved, or None if unchanged."""
        alpha = min(ALPHA_MAX, max(ALPHA_MIN, alpha))
        if alpha == self.alpha:
            return None
        shift = t1_target_for(self.capacity, alpha) - t1_target_for(self.capacity, self.alpha)
        self.alpha = alpha
        self.hot_limit = hot_limit_for(self.capacity, alpha)
        return shift
