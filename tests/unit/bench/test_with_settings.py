"""The benchmarks' dotted settings (``--set completion.runOn=true``) reach the server's options."""

from __future__ import annotations

from lsp_server.server.settings_codec import parse_settings
from tests.support.typing_session import scopecache_settings, with_settings


def test_dotted_settings_are_set_in_nested_tables_and_parse() -> None:
    base = scopecache_settings("http://127.0.0.1:8012")
    options = with_settings(
        base,
        {"completion.psmSuffixChars": 64, "completion.runOn": True, "cache.l2": "sqlite"},
    )
    assert options["completion"] == {"psmSuffixChars": 64, "runOn": True}
    assert options["cache"] == {"l2": "sqlite"}
    assert base["cache"] == {"l2": "none"}  # the base is left as it was
    settings, problems = parse_settings(options)
    assert problems == []
    assert settings.completion.psm_suffix_chars == 64
    assert settings.completion.run_on


def test_a_top_level_setting_is_set_as_it_is() -> None:
    assert with_settings({"endpoint": "x"}, {"model": "m"}) == {"endpoint": "x", "model": "m"}
