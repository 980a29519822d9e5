from __future__ import annotations

import dataclasses

import pytest

from lsp_server.settings import Settings
from transport.errors import ConfigurationError
from transport.options import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_KEEPALIVE,
    FIM_TEMPLATES,
    EndpointOptions,
)
from transport.prompt import FIM_TEMPLATES as PROMPT_TEMPLATES


def test_defaults_match_the_documented_pool_limits() -> None:
    options = EndpointOptions(endpoint="https://host:8443/v1")
    assert options.max_connections == DEFAULT_MAX_CONNECTIONS == 12
    assert options.max_keepalive == DEFAULT_MAX_KEEPALIVE == 8
    assert options.http2 == "auto" and options.verify_tls


@pytest.mark.parametrize(
    ("endpoint", "http2", "protocols"),
    [
        ("http://127.0.0.1:8080/v1", "auto", (True, False)),
        ("https://host/v1", "auto", (True, True)),
        ("http://127.0.0.1:8080/v1", True, (False, True)),
        ("https://host/v1", True, (False, True)),
        ("http://127.0.0.1:8080/v1", False, (True, False)),
        ("https://host/v1", False, (True, False)),
    ],
)
def test_http2_mode_decides_the_protocols_per_scheme(
    endpoint: str, http2: bool | str, protocols: tuple[bool, bool]
) -> None:
    """(http1, http2): auto negotiates over TLS and speaks HTTP/1.1 on http://."""
    options = EndpointOptions(endpoint=endpoint, http2=http2)  # type: ignore[arg-type]
    assert options.protocols == protocols


def test_url_parts() -> None:
    options = EndpointOptions(endpoint="https://completions.test:8443/v1/")
    assert options.host == "completions.test"
    assert options.port == 8443
    assert options.origin == "https://completions.test:8443"
    assert options.base_url == "https://completions.test:8443/v1"
    assert EndpointOptions(endpoint="http://[::1]/v1").host == "::1"
    assert EndpointOptions(endpoint="http://h/v1").port == 80


@pytest.mark.parametrize(
    "changes",
    [
        {"endpoint": "ftp://host/v1"},
        {"endpoint": "not a url"},
        {"provider": "bogus"},
        {"fim_template": "bogus"},
        {"auth_kind": "bogus"},
        {"max_connections": 0},
    ],
)
def test_unusable_options_raise_configuration_error(changes: dict[str, object]) -> None:
    options = EndpointOptions(endpoint="https://host/v1").replace(**changes)
    with pytest.raises(ConfigurationError):
        options.validate()


def test_every_transport_setting_has_an_option_of_the_same_name() -> None:
    # The server maps settings field by field; names must not drift apart.
    names = {f.name for f in dataclasses.fields(EndpointOptions)}
    settings = Settings()
    for group in (settings.transport,):
        for f in dataclasses.fields(group):
            assert f.name in names, f.name
    for name in ("max_tokens", "temperature", "stop", "fim_template"):
        assert name in names
    for name in ("token_url", "client_id", "client_secret_env", "scope", "command", "refresh_at"):
        assert name in names


def test_every_fim_template_name_has_a_template() -> None:
    # the setting's choices and the prompt's token table must not drift apart
    assert set(FIM_TEMPLATES) == {"", *PROMPT_TEMPLATES}
    for name in FIM_TEMPLATES:
        EndpointOptions(endpoint="https://host/v1", fim_template=name).validate()  # type: ignore[arg-type]
