from __future__ import annotations

import pytest

from transport.auth.kinds import auth_for
from transport.auth.provider import StaticKeyAuth
from transport.errors import ConfigurationError
from transport.options import EndpointOptions


async def test_static_key_is_read_at_request_time() -> None:
    environ: dict[str, str] = {}
    auth = StaticKeyAuth("MY_KEY", environ=environ)
    assert await auth.header() == {}
    environ["MY_KEY"] = "sk-live-1234"
    assert await auth.header() == {"Authorization": "Bearer sk-live-1234"}
    assert auth.secrets() == ["sk-live-1234"]
    assert not await auth.on_rejected()  # a static key cannot be refreshed


def test_auth_kind_selects_the_provider() -> None:
    options = EndpointOptions(endpoint="https://svc.test/v1", api_key_env="X_KEY")
    assert isinstance(auth_for(options), StaticKeyAuth)
    with pytest.raises(ConfigurationError):
        auth_for(options.replace(auth_kind="command"))
