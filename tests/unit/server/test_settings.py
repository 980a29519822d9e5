from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.server.settings_codec import (
    SettingsFileError,
    load_toml,
    parse_settings,
    settings_from_client,
    settings_to_dict,
)
from lsp_server.settings import Settings


def test_defaults_need_no_input() -> None:
    settings, problems = parse_settings(None)
    assert problems == []
    assert settings.endpoint is None
    assert settings.cache.policy == "hybrid" and settings.cache.l2 == "sqlite"
    assert settings.api_key_env == "SCOPECACHE_API_KEY"
    assert settings.transport.http2 == "auto" and settings.transport.verify_tls is True


def test_camel_case_over_lsp_and_snake_case_from_toml_mean_the_same() -> None:
    camel, p1 = parse_settings({"cache": {"ttlSeconds": 30, "sqlitePath": "/x"}, "apiKeyEnv": "K"})
    snake, p2 = parse_settings(
        {"cache": {"ttl_seconds": 30, "sqlite_path": "/x"}, "api_key_env": "K"}
    )
    assert p1 == p2 == []
    assert camel == snake
    assert camel.cache.ttl_seconds == 30.0 and camel.api_key_env == "K"


@pytest.mark.parametrize("policy", ["none", "lru", "lfu", "arc", "lruk", "hybrid"])
def test_every_policy_name_is_accepted(policy: str) -> None:
    settings, problems = parse_settings({"cache": {"policy": policy}})
    assert problems == [] and settings.cache.policy == policy


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"cache": {"capacity": 0}}, "cache.capacity"),
        ({"cache": {"capacity": -3}}, "cache.capacity"),
        ({"cache": {"k": 0}}, "cache.k"),
        ({"cache": {"alpha": 0.9}}, "cache.alpha"),
        ({"cache": {"alpha": "sometimes"}}, "cache.alpha"),
        ({"cache": {"policy": "fifo"}}, "cache.policy"),
        ({"provider": "someone"}, "provider"),
        ({"endpoint": "ftp://x"}, "endpoint"),
        ({"transport": {"nameservers": "10.0.0.1"}}, "transport.nameservers"),
        ({"transport": {"connectTimeout": 0}}, "transport.connectTimeout"),
        ({"transport": {"http2": "yes"}}, "transport.http2"),
        ({"transport": {"http2": 1}}, "transport.http2"),
        ({"auth": {"refreshAt": 1.5}}, "auth.refreshAt"),
        ({"apiKeyEnv": "not a name"}, "apiKeyEnv"),
        ({"completion": {"minProbability": 1.5}}, "completion.minProbability"),
        ({"completion": {"minOnwardProbability": -0.1}}, "completion.minOnwardProbability"),
        ({"completion": {"minOnwardProbability": 1.0}}, "completion.minOnwardProbability"),
    ],
)
def test_a_bad_value_names_its_key_and_keeps_the_default(data: dict[str, object], key: str) -> None:
    settings, problems = parse_settings(data)
    assert len(problems) == 1
    assert problems[0].startswith(key + ":")
    defaults = Settings()
    assert settings_to_dict(settings) == settings_to_dict(defaults)


@pytest.mark.parametrize(
    ("value", "meant"),
    [(True, True), (False, False), ("auto", "auto"), ("true", True), ("false", False)],
)
def test_http2_accepts_booleans_from_old_settings_and_the_auto_mode(
    value: object, meant: object
) -> None:
    settings, problems = parse_settings({"transport": {"http2": value}})
    assert problems == []
    assert settings.transport.http2 == meant and type(settings.transport.http2) is type(meant)


def test_http2_from_toml_accepts_auto_and_booleans(tmp_path: Path) -> None:
    path = tmp_path / "scopecache.toml"
    for written, meant in (('"auto"', "auto"), ("false", False), ("true", True)):
        path.write_text(f"[scopecache.transport]\nhttp2 = {written}\n")
        settings, problems = parse_settings(load_toml(path))
        assert problems == [] and settings.transport.http2 == meant


def test_a_bad_http2_value_names_the_key_and_the_allowed_values() -> None:
    _, problems = parse_settings({"transport": {"http2": "h2c"}})
    assert problems == ['transport.http2: must be one of "auto", true, false (got \'h2c\')']


def test_valid_keys_still_apply_next_to_invalid_ones() -> None:
    settings, problems = parse_settings(
        {"cache": {"capacity": -1, "policy": "arc"}, "model": "m", "bogus": 1}
    )
    assert settings.cache.policy == "arc" and settings.model == "m"
    assert settings.cache.capacity == Settings().cache.capacity
    assert sorted(p.split(":")[0] for p in problems) == ["bogus", "cache.capacity"]


def test_an_update_starts_from_the_current_settings_and_leaves_them_alone() -> None:
    base, _ = parse_settings({"model": "a", "cache": {"policy": "lru"}})
    updated, problems = parse_settings({"cache": {"capacity": 10}}, base)
    assert problems == []
    assert updated.model == "a" and updated.cache.policy == "lru" and updated.cache.capacity == 10
    assert base.cache.capacity == Settings().cache.capacity


@pytest.mark.parametrize(
    "payload",
    [
        {"settings": {"scopecache": {"model": "m"}}},
        {"scopecache": {"model": "m"}},
        {"model": "m"},
    ],
)
def test_did_change_configuration_payloads_are_unwrapped(payload: dict[str, object]) -> None:
    assert settings_from_client(payload) == {"model": "m"}


def test_toml_reads_scopecache_or_tool_scopecache(tmp_path: Path) -> None:
    own = tmp_path / "scopecache.toml"
    own.write_text('[scopecache]\nmodel = "m"\n[scopecache.cache]\npolicy = "lruk"\n')
    project = tmp_path / "pyproject.toml"
    project.write_text('[tool.scopecache]\nmodel = "m"\n[tool.scopecache.cache]\npolicy = "lruk"\n')
    for path in (own, project):
        settings, problems = parse_settings(load_toml(path))
        assert problems == [] and settings.model == "m" and settings.cache.policy == "lruk"


def test_unreadable_or_invalid_toml_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsFileError, match="cannot read"):
        load_toml(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[scopecache\nmodel=")
    with pytest.raises(SettingsFileError, match="not valid TOML"):
        load_toml(broken)


def test_settings_round_trip_as_camel_case_json() -> None:
    settings, _ = parse_settings({"cache": {"ttlSeconds": 5}, "transport": {"caFile": "/ca.pem"}})
    data = settings_to_dict(settings)
    assert data["cache"]["ttlSeconds"] == 5.0 and data["transport"]["caFile"] == "/ca.pem"
    again, problems = parse_settings(data)
    assert problems == [] and again == settings


def test_slot_pinning_is_off_by_default_and_reaches_the_endpoint_options() -> None:
    from lsp_server.server.assembly import endpoint_options

    default, _ = parse_settings({"endpoint": "http://127.0.0.1:8080"})
    pinned, problems = parse_settings(
        {"endpoint": "http://127.0.0.1:8080", "completion": {"slotPinning": True}}
    )
    assert problems == []
    assert endpoint_options(default).slot_pinning is False
    assert endpoint_options(pinned).slot_pinning is True
