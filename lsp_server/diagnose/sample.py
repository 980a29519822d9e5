"""The prompt ``scopecache diagnose`` sends: a built-in Python sample or the user's file.

The cursor is placed inside a line about four fifths into the text, so the
prompt has a long prefix (it fills the default ``completion.prefixChars``
window) and a suffix, as a fill-in-the-middle request in an editor would.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from lsp_server.documents.languages import default_registry
from transport.backend import CompletionRequest

logger = logging.getLogger(__name__)

#: where in the text the cursor goes (share of the characters)
CURSOR_AT = 0.8
BUILTIN_SAMPLE = "inventory.py"


class SampleError(Exception):
    """The ``--file`` sample cannot be read."""


@dataclass(frozen=True)
class PromptSample:
    """Text before and after the cursor, its language and where it came from."""

    prefix: str
    suffix: str
    language: str
    origin: str

    def request(self, max_tokens: int) -> CompletionRequest:
        """The completion request for this sample."""
        return CompletionRequest(
            prefix=self.prefix,
            suffix=self.suffix,
            language=self.language,
            max_tokens=max_tokens,
            request_id="diagnose",
        )


def split_at_cursor(text: str, at: float = CURSOR_AT) -> tuple[str, str]:
    """Split ``text`` inside the first non-blank line from ``at`` of the way in."""
    lines = text.splitlines(keepends=True)
    offset = 0
    target = int(len(text) * at)
    for line in lines:
        stripped = line.strip()
        if offset >= target and len(stripped) >= 4:
            indent = len(line) - len(line.lstrip())
            cut = offset + indent + len(stripped) // 2
            return text[:cut], text[cut:]
        offset += len(line)
    return text[:target], text[target:]


def builtin_sample() -> PromptSample:
    """The built-in Python sample (a file shipped with the package)."""
    # Read directly: diagnose does not build on the tuning kit (synth.sample_files).
    text = (resources.files("lsp_server") / "samples" / BUILTIN_SAMPLE).read_text(encoding="utf-8")
    prefix, suffix = split_at_cursor(text)
    return PromptSample(prefix, suffix, "python", f"built-in Python sample ({BUILTIN_SAMPLE})")


def file_sample(path: str) -> PromptSample:
    """A sample from the user's file; raises ``SampleError``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SampleError(f"cannot read --file {path}: {exc}") from exc
    if not text.strip():
        raise SampleError(f"--file {path} is empty")
    prefix, suffix = split_at_cursor(text)
    spec = default_registry().for_uri(path)
    language = spec.name if spec is not None else (Path(path).suffix.lstrip(".") or "text")
    return PromptSample(prefix, suffix, language, path)
