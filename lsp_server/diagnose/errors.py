"""One-line explanations of transport failures for the ``diagnose`` report.

Each explanation names the cause and the setting to change: the CA bundle
(``transport.caFile``) for untrusted certificates, the environment variable
named by ``apiKeyEnv`` for 401/403 (whether it is set, never its value), the
base URL and ``provider`` for 404.
"""

from __future__ import annotations

import os
import socket

from transport import errors
from transport.options import EndpointOptions

#: where each provider posts completions, relative to the endpoint or its origin
PROVIDER_PATHS = {
    "openai": "{endpoint}/completions",
    "llamacpp": "{origin}/infill",
    "ollama": "{origin}/api/generate",
}


def explain_status(status: int, options: EndpointOptions) -> str:
    """What an HTTP error status from the completion endpoint means here."""
    if status in (401, 403):
        env = options.api_key_env
        state = "is set" if os.environ.get(env, "").strip() else "is not set"
        if options.auth_kind != "static":
            return (f"the service refused the credentials (HTTP {status}): check the auth.* "
                    f"settings (auth.kind = {options.auth_kind})")
        return (f"the service refused the credentials (HTTP {status}): put a valid key in the "
                f"environment variable named by apiKeyEnv ({env}, which {state} here)")
    if status in (404, 405):
        where = PROVIDER_PATHS.get(options.provider, "{endpoint}")
        return (f"HTTP {status}: wrong base URL or provider (provider {options.provider} posts "
                f"to {where}; OpenAI-compatible endpoints usually end in /v1)")
    if status in (429, 503):
        return f"HTTP {status}: the service is overloaded or rate-limits this key"
    if status == 400:
        return "HTTP 400: the service rejected the request; check model and provider"
    return f"the service answered HTTP {status}"


def explain(exc: errors.TransportError, options: EndpointOptions) -> str:
    """A one-line hint for any transport failure."""
    if isinstance(exc, errors.UpstreamStatusError):
        return explain_status(exc.status, options)
    if isinstance(exc, errors.TLSError):
        text = str(exc)
        if "caFile" not in text and "CERTIFICATE" in text.upper():
            text += "; trust the service's CA with transport.caFile"
        return text
    if isinstance(exc, errors.ProtocolRejected):
        return str(exc)  # names the server and the setting to change
    if isinstance(exc, errors.DNSError):
        return f"{exc}: check the endpoint's host name and transport.nameservers"
    if isinstance(exc, errors.ConnectError):
        return f"{exc}: is the service running, and are host and port right?"
    if isinstance(exc, errors.UpstreamTimeout):
        return (f"{exc}: the service did not answer within the transport timeouts "
                f"(readTimeout {options.read_timeout:g} s)")
    if isinstance(exc, errors.AuthError):
        return f"no credentials could be obtained: {exc}"
    return f"{type(exc).__name__}: {exc}"


def explain_connect(exc: OSError, options: EndpointOptions, address: str) -> str:
    """Why a TCP connect to ``address`` failed, and what to check."""
    where = f"{options.host}:{options.port} ({address})"
    if isinstance(exc, TimeoutError | socket.timeout):
        return (
            f"no answer from {where} within {options.connect_timeout:g} s: "
            "the host is down or a firewall drops the packets"
        )
    if isinstance(exc, ConnectionRefusedError):
        return f"{where} refused the connection: is the service running, and is the port right?"
    return f"cannot connect to {where}: {exc.strerror or exc}"
