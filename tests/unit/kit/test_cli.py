"""The ``scopecache`` command line: what a newcomer types first."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from lsp_server.cli import build_parser, main
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


# -- every command explains itself --------------------------------------------

#: the share of value-taking options whose --help must give the default (issue 41)
STATED_DEFAULTS_FLOOR = 0.85


def leaf_commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every command that runs (``serve``, ``trace synth``, ...), with its parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from leaf_commands(sub, (*path, name))
    if parser.get_default("module"):
        yield " ".join(path), parser


def documented(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]  # fmt: skip


def takes_a_value(action: argparse.Action) -> bool:
    return bool(action.option_strings) and action.nargs != 0


def states_default(action: argparse.Action) -> bool:
    return bool(re.search(r"\b(default|required)\b", action.help or ""))


def shown(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


COMMANDS = dict(leaf_commands(build_parser()))


def test_the_walk_finds_every_command() -> None:
    assert set(COMMANDS) == {
        "serve", "upstream", "trace synth", "replay", "simulate", "prewarm", "demo",
        "diagnose", "slo check",
    }  # fmt: skip


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_says_what_it_is_for(command: str) -> None:
    missing = [a.dest for a in documented(COMMANDS[command]) if not (a.help or "").strip()]
    assert missing == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_gives_the_default_of_the_options_that_take_a_value(command: str) -> None:
    options = [a for a in documented(COMMANDS[command]) if takes_a_value(a)]
    silent = [a.option_strings[-1] for a in options if not states_default(a)]
    assert len(options) - len(silent) >= STATED_DEFAULTS_FLOOR * len(options), silent


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_default_a_help_gives_is_the_one_argparse_uses(command: str) -> None:
    for action in documented(COMMANDS[command]):
        if not takes_a_value(action):
            continue
        if action.required:
            assert "(required)" in (action.help or ""), action.option_strings
        elif action.default not in (None, [], False):
            assert f"default: {shown(action.default)}" in (action.help or ""), (
                action.option_strings
            )


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_states_the_exit_codes(command: str) -> None:
    epilog = COMMANDS[command].epilog or ""
    codes = [int(c) for c in re.findall(r"(?:^exit codes: |; )(\d+) ", epilog)]
    assert codes[:1] == [0] and len(codes) >= 2 and codes == sorted(set(codes)), epilog
    assert epilog in " ".join(COMMANDS[command].format_help().split())


def test_the_upstream_command_is_the_reference_services_own() -> None:
    from lsp_server.kit.reference.cli import build_parser as reference_parser

    assert COMMANDS["upstream"].epilog == reference_parser().epilog
    assert "--control" in COMMANDS["upstream"].format_help()
