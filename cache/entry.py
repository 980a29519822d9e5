"""What the cache stores: one entry per upstream answer.

An entry keeps, beside the suggestion, what is needed to serve it again: the
exact key it was asked under, the line anchor and the line prefix at the time,
so a typed-through lookup can check that what the user typed since is the
start of the suggestion, and whether the answer was cut, at the token limit
or by a stream cancelled after some finished lines (then its end is not the
end of the model's answer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cache.keys import LineAnchor, ScopeKey


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
            )
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"malformed cache entry: {exc}") from exc
