"""Token sources: OAuth 2.0 client credentials against the real reference service, commands."""

from __future__ import annotations

import json
import sys

import pytest

from tests.support.reference import ReferenceService
from transport.auth.command import CommandTokenSource, command_argv, parse_command_output
from transport.auth.oauth import ClientCredentialsSource, parse_token_response
from transport.errors import AuthError, ConfigurationError

SECRET = "cc-secret-7f3a9"


def oauth_source(svc: ReferenceService, secret: str = SECRET) -> ClientCredentialsSource:
    ca = str(svc.ca_file) if svc.ca_file else None
    return ClientCredentialsSource(
        svc.token_url, "scopecache", "TEST_CLIENT_SECRET",
        scope="completions", environ={"TEST_CLIENT_SECRET": secret}, ca_file=ca,
    )


async def test_client_credentials_token_is_accepted_by_the_service(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    svc.enable_tokens("scopecache", SECRET, lifetime=30)
    source = oauth_source(svc)
    try:
        token = await source.fetch()
    finally:
        await source.aclose()
    assert token.lifetime == 30
    assert token.value not in repr(token)
    with svc.client() as client:
        answer = client.post(
            svc.url + "/completions",
            json={"model": "m", "prompt": "def ", "max_tokens": 4},
            headers={"Authorization": f"Bearer {token.value}"},
        )
    assert answer.status_code == 200
    stats = svc.stats()
    assert (stats["tokenRequests"], stats["authFailures"]) == (1, 0)


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ({"mode": "status", "status": 503}, "HTTP 503"),
        ({"mode": "malformed-json"}, "not JSON"),
        ({"mode": "reset"}, "unreachable"),
    ],
)
async def test_token_endpoint_failures_become_auth_errors(
    shared_reference_service: ReferenceService, fault: dict[str, object], message: str
) -> None:
    svc = shared_reference_service
    svc.enable_tokens("scopecache", SECRET)
    svc.set_fault(target="token", **fault)  # type: ignore[arg-type]
    source = oauth_source(svc)
    try:
        with pytest.raises(AuthError, match=message) as caught:
            await source.fetch()
    finally:
        await source.aclose()
    assert SECRET not in str(caught.value)


async def test_wrong_secret_and_missing_secret(shared_reference_service: ReferenceService) -> None:
    svc = shared_reference_service
    svc.enable_tokens("scopecache", SECRET)
    wrong = oauth_source(svc, secret="not-the-secret")
    missing = oauth_source(svc, secret="")
    try:
        with pytest.raises(AuthError, match=r"HTTP 401 \(invalid_client\)"):
            await wrong.fetch()
        with pytest.raises(AuthError, match="TEST_CLIENT_SECRET is not set"):
            await missing.fetch()
    finally:
        await wrong.aclose()
        await missing.aclose()


@pytest.mark.parametrize(
    ("body", "lifetime"),
    [
        ({"access_token": "abc", "token_type": "Bearer", "expires_in": 60}, 60.0),
        ({"access_token": "abc", "token_type": "bearer", "expires_in": "3600"}, 3600.0),
        ({"access_token": "abc"}, None),
    ],
)
def test_token_response_shapes(body: dict[str, object], lifetime: float | None) -> None:
    token = parse_token_response(json.dumps(body).encode())
    assert (token.value, token.lifetime) == ("abc", lifetime)


@pytest.mark.parametrize(
    "body",
    [
        b"[1]",
        b'{"token_type": "Bearer"}',
        b'{"access_token": ""}',
        b'{"access_token": "abc", "token_type": "mac"}',
        b'{"access_token": "abc", "expires_in": -5}',
        b'{"access_token": "abc", "expires_in": "soon"}',
    ],
)
def test_garbage_token_responses_are_rejected(body: bytes) -> None:
    with pytest.raises(AuthError):
        parse_token_response(body)


def test_command_strings_are_split_never_given_to_a_shell() -> None:
    assert command_argv("print-token --audience 'my api'") == [
        "print-token", "--audience", "my api"
    ]
    assert command_argv("echo $HOME | cat") == ["echo", "$HOME", "|", "cat"]
    assert command_argv(["sh", "-c", "a | b"]) == ["sh", "-c", "a | b"]
    with pytest.raises(ConfigurationError):
        command_argv("  ")


@pytest.mark.parametrize(
    ("stdout", "lifetime"),
    [
        (b"tok-abc\n", None),
        (b'{"token": "tok-abc", "expiresIn": 120}', 120.0),
        (b'{"access_token": "tok-abc", "expires_in": 5}\n', 5.0),
    ],
)
def test_command_output_shapes(stdout: bytes, lifetime: float | None) -> None:
    token = parse_command_output(stdout)
    assert (token.value, token.lifetime) == ("tok-abc", lifetime)


@pytest.mark.parametrize("stdout", [b"", b"two words", b"{not json", b'{"expiresIn": 5}'])
def test_bad_command_output_is_rejected(stdout: bytes) -> None:
    with pytest.raises(AuthError):
        parse_command_output(stdout)


async def test_command_source_runs_the_command() -> None:
    script = "import json; print(json.dumps({'token': 'cmd-tok-1', 'expiresIn': 42}))"
    token = await CommandTokenSource([sys.executable, "-c", script]).fetch()
    assert (token.value, token.lifetime) == ("cmd-tok-1", 42.0)


async def test_command_failures_are_auth_errors() -> None:
    failing = CommandTokenSource([sys.executable, "-c", "import sys; sys.exit(3)"])
    with pytest.raises(AuthError, match="status 3"):
        await failing.fetch()
    slow = CommandTokenSource([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.3)
    with pytest.raises(AuthError, match="did not finish"):
        await slow.fetch()
    with pytest.raises(AuthError, match="cannot run"):
        await CommandTokenSource(["/nonexistent/print-token"]).fetch()
