"""The ``scopecache`` command line: what a newcomer types first."""

from __future__ import annotations

import re

import pytest

from lsp_server.cli import main
from lsp_server.kit.simulate.strategies import STRATEGY_NAMES


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert re.fullmatch(r"scopecache \d+\.\d+\.\d+\S*\n", capsys.readouterr().out)


def test_simulate_help_names_an_option_that_exists(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    help_text = capsys.readouterr().out
    for option in re.findall(r"see (--[\w-]+)", help_text):
        assert option in help_text.split("options:")[1].split()


def test_help_strategies_lists_every_key_design(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--help-strategies"])
    assert exit_.value.code == 0
    listed = capsys.readouterr().out
    for name in STRATEGY_NAMES:
        assert re.search(rf"^\s+{re.escape(name)}\s", listed, re.M), name


def test_replay_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0" in text and "1 some requests failed" in text and "2 bad usage" in text
