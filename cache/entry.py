"""What the cache stores: one entry per upstream answer.

An entry keeps, beside the suggestion, what is needed to serve it again: the
exact key it was asked under, the line anchor and the line prefix at the time,
so a typed-through lookup can check that what the user typed since is the
start of the suggestion, and whether the answer was cut, at the token limit
or by a stream cancelled after some finished lines (then its end is not the
end of the model's answer).

Where the service reported how sure the model was of each token, the entry
keeps that too (``Confidence``): a suggestion served from it, whole or typed
through, is cut where the model became unsure, as the fresh answer was.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cache.keys import LineAnchor, ScopeKey

#: tokens at least this sure are not kept: no bar to show sits this high
SURE = 0.995


def token_bar(first: bool, bar: float, onward: float) -> float:
    """The probability a token must reach: ``bar`` for an answer's first, ``onward`` past it.

    An onward bar below ``bar`` is ``bar``.
    """
    return bar if first else max(bar, onward)


@dataclass(frozen=True, slots=True)
class Confidence:
    """Where an answer's doubtful tokens start and how sure the model was of each.

    Only tokens below ``SURE`` are kept (offsets into the answer's text,
    ascending): the rest would pass any bar, and an answer is mostly sure
    tokens, so an entry stays small. Any bar can be applied afterwards, and
    from any point of the text, which is what a typed-through hit needs.
    """

    #: (character offset where the token starts, its probability), ascending offsets
    doubts: tuple[tuple[int, float], ...] = ()

    @classmethod
    def of_tokens(cls, tokens: Iterable[tuple[int, float]]) -> Confidence:
        """From (start offset, probability) of every token, in order."""
        return cls(tuple((start, round(p, 4)) for start, p in tokens if p < SURE))

    def sure_length(self, bar: float, start: int = 0, onward: float = 0.0) -> int | None:
        """Characters from ``start`` before the first token below the bar; None: all sure.

        The token at ``start`` must reach ``bar``; the tokens after it
        ``max(bar, onward)``. A token that starts before ``start`` was typed
        by the user: it no longer counts.
        """
        for offset, probability in self.doubts:
            if offset >= start and probability < token_bar(offset == start, bar, onward):
                return offset - start
        return None

    def after(self, start: int) -> Confidence:
        """The confidence of the text from ``start`` on (offsets moved to it)."""
        if start <= 0 or not self.doubts:
            return self
        return Confidence(tuple((o - start, p) for o, p in self.doubts if o >= start))

    def to_list(self) -> list[list[float]]:
        """JSON-ready: ``[[offset, probability], ...]``."""
        return [[offset, probability] for offset, probability in self.doubts]

    @classmethod
    def from_list(cls, raw: Any) -> Confidence:
        """Parse ``to_list`` output; raises ValueError on anything malformed."""
        if not isinstance(raw, list):
            raise ValueError("confidence is not a list")
        doubts = []
        for item in raw:
            offset, probability = item
            doubts.append((int(offset), float(probability)))
        return cls(tuple(doubts))


@dataclass(frozen=True, kw_only=True, slots=True)
class CachedCompletion:
    """A suggestion and the context it answers."""

    key: ScopeKey
    anchor: LineAnchor
    #: the text of the cursor's line before the cursor when it was asked
    line_prefix: str
    #: the suggestion, possibly several lines
    text: str
    #: seconds on the store's clock
    created_at: float = 0.0
    #: where it came from: ``upstream``, ``speculative``, ``l2``, ``continuation``
    origin: str = "upstream"
    #: the answer was cut at the token limit (``maxTokens``), or is what a cancelled
    #: stream had finished: its end is not where the model ended the line
    truncated: bool = False
    #: how sure the model was of the text's tokens (None: the service did not say)
    confidence: Confidence | None = None
    #: handed out by the shared tier (L2), where another process may have fetched it;
    #: never stored: it says how this process got the entry
    from_l2: bool = field(default=False, compare=False)

    def to_json(self) -> str:
        """Serialize for an L2 store (fingerprints only, no key material)."""
        return json.dumps(
            {
                "v": 1,
                "language": self.key.language,
                "structure": self.key.structure,
                "scopeFp": self.key.scope_fp,
                "suffixFp": self.key.suffix_fp,
                "contextFp": self.anchor.context_fp,
                "linePrefix": self.line_prefix,
                "text": self.text,
                "createdAt": self.created_at,
                "origin": self.origin,
                # written only when set: older readers ignore it, older entries lack it
                **({"truncated": True} if self.truncated else {}),
                **(
                    {"confidence": self.confidence.to_list()}
                    if self.confidence is not None
                    else {}
                ),
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, raw: str | bytes) -> CachedCompletion:
        """Parse ``to_json`` output; raises ValueError on anything malformed."""
        try:
            data: Any = json.loads(raw)
            if not isinstance(data, dict) or data.get("v") != 1:
                raise ValueError("unknown entry format")
            language = str(data["language"])
            suffix_fp = int(data["suffixFp"])
            return cls(
                key=ScopeKey(language, str(data["structure"]), int(data["scopeFp"]), suffix_fp),
                anchor=LineAnchor(language, int(data["contextFp"]), suffix_fp),
                line_prefix=str(data["linePrefix"]),
                text=str(data["text"]),
                created_at=float(data.get("createdAt", 0.0)),
                origin=str(data.get("origin", "upstream")),
                truncated=data.get("truncated") is True,
                confidence=(
                    Confidence.from_list(data["confidence"]) if "confidence" in data else None
                ),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"malformed cache entry: {exc}") from exc
