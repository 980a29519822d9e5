"""How much text a syntax context reads around the cursor, as one value.

The window sizes are the same for every keystroke of a session, so they
travel as one ``ContextWindows`` tuple, built once per request from the
completion settings (``ContextWindows.of``), instead of as seven arguments
passed on at every step of the keystroke path.
"""

from __future__ import annotations

from typing import NamedTuple

from lsp_server.settings import CompletionSettings, PromptWindowKind


class ContextWindows(NamedTuple):
    """The windows of a syntax context: what its keys and its prompt read."""

    #: the sliding prefix: at most this many characters before the cursor...
    prefix_chars: int
    #: ...from at most this many lines
    prefix_lines: int
    #: the key's suffix: at most this many characters after the cursor...
    suffix_chars: int
    #: ...from at most this many lines, never past the enclosing scope
    suffix_lines: int
    #: the scope-local text before the cursor the key fingerprints
    scope_chars: int
    #: the window a miss sends upstream (``lsp_server.documents.prompt_window``)
    prompt: PromptWindowKind
    #: the anchored prompt's suffix, cut to this many characters (0: not cut)
    prompt_suffix_chars: int

    @classmethod
    def of(cls, settings: CompletionSettings) -> ContextWindows:
        """The windows the completion settings ask for."""
        return cls(
            settings.prefix_chars,
            settings.prefix_lines,
            settings.suffix_chars,
            settings.suffix_lines,
            settings.scope_chars,
            settings.prompt_window,
            # suffix-first prompts only grow at their end: their suffix is evaluated once
            0 if settings.fim_order == "spm" else settings.psm_suffix_chars,
        )


#: the windows of the default completion settings
DEFAULT_WINDOWS = ContextWindows.of(CompletionSettings())
