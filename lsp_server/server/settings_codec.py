"""Settings in and out: client data and TOML files into the model, and back.

Settings come as LSP ``initializationOptions``, as
``workspace/didChangeConfiguration`` (``settings.scopecache`` or the object
itself), camelCase, or from a TOML file (``[scopecache]`` or
``[tool.scopecache]`` in pyproject.toml), snake_case. ``parse_settings``
accepts both spellings, applies every valid key, keeps the default for every
invalid one and returns one readable problem per rejected key, so the server
can tell the user once and keep running. ``settings_to_dict`` writes them
back as camelCase JSON-able data.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from lsp_server.settings import Settings, camel_case


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class _Invalid(ValueError):
    pass


_BOOL_SPELLINGS = {"true": True, "false": False}


def _choices(options: tuple[Any, ...]) -> list[Any] | None:
    """The allowed values of a union of literals and ``bool``, else None."""
    choices: list[Any] = []
    for option in options:
        if get_origin(option) is Literal:
            choices.extend(get_args(option))
        elif option is bool:
            choices.extend((True, False))
        else:
            return None
    return choices


def _spell(value: Any) -> str:
    """A value as the user writes it: ``"auto"``, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _coerce(value: Any, hint: Any) -> Any:
    """Check ``value`` against a (simple) type hint; return it converted."""
    origin = get_origin(hint)
    if origin is Literal:
        allowed = get_args(hint)
        if value not in allowed:
            raise _Invalid("must be one of " + ", ".join(repr(a) for a in allowed))
        return value
    if origin in (list,):
        (item,) = get_args(hint)
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
            raise _Invalid("must be a list")
        return [_coerce(v, item) for v in value]
    if origin in (Union, UnionType):
        options = get_args(hint)
        if value is None and type(None) in options:
            return None
        if bool in options and isinstance(value, str) and value.lower() in _BOOL_SPELLINGS:
            # A switch with named modes ("auto" | true | false): "true" and
            # "false" written as strings mean the booleans.
            return _BOOL_SPELLINGS[value.lower()]
        choices = _choices(options)
        if choices is not None:
            # Compare types too: 1 == True, but 1 is not a valid switch value.
            if not any(type(value) is type(c) and value == c for c in choices):
                raise _Invalid("must be one of " + ", ".join(_spell(c) for c in choices))
            return value
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(value, option)
            except _Invalid as exc:
                errors.append(str(exc))
        raise _Invalid(" or ".join(dict.fromkeys(errors)))
    if hint is bool:
        if not isinstance(value, bool):
            raise _Invalid("must be true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid("must be an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Invalid("must be a number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise _Invalid("must be a string")
        return value
    raise _Invalid(f"unsupported type {hint!r}")  # pragma: no cover - model bug


def _apply(target: Any, data: Mapping[str, Any], path: str, problems: list[str]) -> None:
    hints = get_type_hints(type(target))
    names = {f.name for f in dataclasses.fields(target)}
    for raw_key, value in data.items():
        name = _snake(raw_key) if raw_key not in names else raw_key
        key_path = f"{path}{camel_case(name)}"
        if name not in names:
            problems.append(f"{path}{raw_key}: unknown setting")
            continue
        current = getattr(target, name)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, Mapping):
                problems.append(f"{key_path}: must be a table/object")
                continue
            _apply(current, value, key_path + ".", problems)
            continue
        try:
            converted = _coerce(value, hints[name])
        except _Invalid as exc:
            problems.append(f"{key_path}: {exc} (got {value!r})")
            continue
        setattr(target, name, converted)
        try:
            target.validate()
        except ValueError as exc:
            setattr(target, name, current)
            problems.append(f"{key_path}: {exc} (got {value!r})")


def parse_settings(
    data: Mapping[str, Any] | None, base: Settings | None = None
) -> tuple[Settings, list[str]]:
    """Build settings from camelCase or snake_case data.

    Returns the settings (defaults, or a copy of ``base``, with every valid
    key applied) and a list of problems, one per rejected key.
    """
    settings = dataclasses.replace(base) if base is not None else Settings()
    if base is not None:
        # Deep-copy the nested groups so that a failed update leaves base alone.
        for f in dataclasses.fields(settings):
            value = getattr(settings, f.name)
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                setattr(settings, f.name, dataclasses.replace(value))
    problems: list[str] = []
    if data is None:
        return settings, problems
    if not isinstance(data, Mapping):
        return settings, ["settings must be an object"]
    _apply(settings, data, "", problems)
    return settings, problems


def settings_from_client(payload: Any) -> Mapping[str, Any] | None:
    """Unwrap ``{"settings": {"scopecache": {}}}``, ``{"scopecache": {}}`` or the object."""
    if not isinstance(payload, Mapping):
        return None
    data: Mapping[str, Any] = payload
    outer = data.get("settings")
    if isinstance(outer, Mapping):
        data = outer
    inner = data.get("scopecache")
    if isinstance(inner, Mapping):
        return inner
    return data


class SettingsFileError(Exception):
    """A settings file could not be read or parsed."""


def load_toml(path: str | Path) -> Mapping[str, Any]:
    """Read the scopecache table of a TOML file (``[scopecache]`` or ``[tool.scopecache]``)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise SettingsFileError(f"cannot read {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsFileError(f"{path} is not valid TOML: {exc}") from exc
    if "scopecache" in data:
        table = data["scopecache"]
    else:
        table = data.get("tool", {}).get("scopecache", {})
    if not isinstance(table, dict):
        raise SettingsFileError(f"{path}: [scopecache] must be a table")
    return table


def settings_to_dict(settings: Settings) -> dict[str, Any]:
    """The settings as camelCase JSON-able data (for stats and replay output)."""

    def convert(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return {
                camel_case(f.name): convert(getattr(obj, f.name)) for f in dataclasses.fields(obj)
            }
        if isinstance(obj, list | tuple):
            return [convert(v) for v in obj]
        return obj

    result = convert(settings)
    assert isinstance(result, dict)
    return result
