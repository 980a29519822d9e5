"""Build the completion backend for a set of endpoint options.

The language server calls ``build_backend`` once per endpoint (and again
when the endpoint setting changes), then ``await backend.start()`` to
prefetch DNS and pre-connect before the first keystroke needs it.
"""

from __future__ import annotations

from transport.backend import CompletionBackend
from transport.http import HttpCompletionBackend
from transport.options import EndpointOptions


def build_backend(options: EndpointOptions) -> CompletionBackend:
    """The HTTP backend for ``options``; raises ``ConfigurationError`` if they cannot work."""
    options.validate()
    return HttpCompletionBackend(options)
