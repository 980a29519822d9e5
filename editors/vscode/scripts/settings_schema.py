"""Generate the VS Code settings schema from the server's settings model.

The server's `lsp_server.settings.Settings` dataclasses are the one source
of truth. This script turns them into `settings-schema.json` (one
`scopecache.<camelCasePath>` property per leaf setting, with JSON type,
default and description) and copies those properties into
`package.json`'s `contributes.configuration`, keeping the extension's own
`scopecache.server.*` keys. Descriptions come from the `#:` comment above
each field; `FALLBACK_DESCRIPTIONS` covers fields that have none.

    python scripts/settings_schema.py          # rewrite both files
    python scripts/settings_schema.py --check  # exit 1 if either is stale
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import sys
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

HERE = Path(__file__).resolve().parent.parent
SCHEMA_PATH = HERE / "settings-schema.json"
PACKAGE_PATH = HERE / "package.json"
#: keys the extension owns (never sent to the server)
EXTENSION_PREFIX = "scopecache.server."

FALLBACK_DESCRIPTIONS: dict[str, str] = {
    "provider": "Wire protocol of the completion service: auto (identify the service once at "
    "start: llama.cpp, Ollama, else OpenAI-compatible, and use its best fill-in-the-middle path), "
    "openai (POST {endpoint}/completions), llamacpp (/infill) or ollama (/api/generate).",
    "model": "Model name sent upstream.",
    "cache.policy": "L1 eviction policy.",
    "cache.l2": "Shared second-level cache: none, sqlite or redis.",
    "cache.redisUrl": "Redis URL of the L2 cache (when cache.l2 is redis).",
    "transport.maxConnections": "Most connections open to the completion service.",
    "transport.maxKeepalive": "Most idle connections kept open.",
    "transport.keepaliveExpiry": "Seconds an idle connection is kept open.",
    "transport.connectTimeout": "Connect timeout in seconds.",
    "transport.readTimeout": "Read timeout in seconds.",
    "transport.writeTimeout": "Write timeout in seconds.",
    "transport.poolTimeout": "Seconds to wait for a free connection.",
    "completion.maxTokens": "Most tokens asked for per completion.",
    "completion.temperature": "Sampling temperature sent upstream.",
    "completion.stop": "Extra stop sequences sent upstream.",
    "completion.prefixLines": "Prompt prefix window: lines before the cursor.",
    "completion.suffixLines": "Prompt suffix window: lines after the cursor.",
    "completion.multiline": "Ask for several lines after a block opener.",
    "speculative.enabled": "Prefetch the completion for the state after an accepted suggestion.",
    "speculative.maxPerMinute": "Most speculative prefetches per minute.",
    "auth.kind": "How the bearer credential is obtained: static (key from apiKeyEnv), "
    "oauth2-client-credentials or command.",
    "auth.tokenUrl": "OAuth 2.0 token endpoint (client-credentials grant).",
    "auth.clientId": "OAuth 2.0 client id.",
    "auth.clientSecretEnv": "Name of the environment variable holding the OAuth 2.0 client secret.",
    "auth.scope": "OAuth 2.0 scope.",
    "auth.command": "Command printing a token (or JSON with token and expiresIn).",
    "metricsHost": "Address the metrics endpoint listens on.",
}

EXTENSION_PROPERTIES: dict[str, Any] = {
    "scopecache.server.command": {
        "type": "array",
        "items": {"type": "string"},
        "default": [],
        "description": "Command that starts the language server over stdio, e.g. "
        '["scopecache", "serve"] or ["/path/to/python", "-m", "lsp_server", "serve"]. '
        "Empty (the default): the server bundled with the extension, installed on first "
        "start into a private virtualenv with a Python 3.11+ found on this machine.",
    },
    "scopecache.server.logLevel": {
        "type": "string",
        "enum": ["DEBUG", "INFO", "WARNING", "ERROR"],
        "default": "INFO",
        "description": "Log level of the language server (its log is shown in the "
        "scopecache output channel).",
    },
    "scopecache.server.statusPollSeconds": {
        "type": "number",
        "minimum": 1,
        "default": 5,
        "description": "How often the status bar item asks the server for its stats "
        "(only while a handled document is visible and the window has focus).",
    },
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _field_comments(cls: type) -> dict[str, str]:
    """The `#:` comment block directly above each field of `cls`."""
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in inspect.getsource(cls).splitlines():
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"([a-z_][a-z0-9_]*)\s*:", stripped)
        if match and pending:
            comments[match.group(1)] = " ".join(pending)
        pending = []
    return comments


def _json_type(hint: Any) -> dict[str, Any]:
    origin = get_origin(hint)
    if origin is Literal:
        values = list(get_args(hint))
        return {"type": "string", "enum": values}
    if origin is list:
        (item,) = get_args(hint)
        return {"type": "array", "items": _json_type(item)}
    if origin in (Union, UnionType):
        types: list[str] = []
        extra: dict[str, Any] = {}
        for option in get_args(hint):
            if option is type(None):
                types.append("null")
                continue
            part = _json_type(option)
            types.append(part["type"])
            extra.update({k: v for k, v in part.items() if k != "type"})
        options = [o for o in get_args(hint) if o is not type(None)]
        if "enum" in extra and all(o is bool or get_origin(o) is Literal for o in options):
            # a switch with named modes ("auto" | true | false): every value is listed
            extra["enum"] = [*extra["enum"], True, False]
        elif "enum" in extra:  # a literal among other types: the enum would reject them
            extra.pop("enum")
        return {"type": types, **extra}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    return {"type": simple[hint]}


def _sentence(text: str) -> str:
    text = text.strip().replace("``", "`")  # reST literals read as Markdown code
    text = text[:1].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def server_properties() -> dict[str, Any]:
    """One VS Code configuration property per leaf of the server's settings."""
    from lsp_server.settings import Settings

    properties: dict[str, Any] = {}

    def walk(obj: Any, prefix: str) -> None:
        hints = get_type_hints(type(obj))
        comments = _field_comments(type(obj))
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            path = prefix + _camel(f.name)
            if dataclasses.is_dataclass(value):
                walk(value, path + ".")
                continue
            description = comments.get(f.name) or FALLBACK_DESCRIPTIONS.get(path)
            if description is None:
                raise SystemExit(f"settings_schema: no description for {path}")
            prop = _json_type(hints[f.name])
            prop["default"] = value
            prop["description"] = _sentence(description)
            properties["scopecache." + path] = prop

    walk(Settings(), "")
    return properties


def render(data: Any) -> str:
    """JSON as committed: two-space indent, trailing newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or check) settings-schema.json and package.json's configuration."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a file is stale")
    args = parser.parse_args(argv)

    properties = server_properties()
    schema: dict[str, Any] = {"title": "scopecache", "properties": properties}
    package = json.loads(PACKAGE_PATH.read_text(encoding="utf-8"))
    contributes = package.setdefault("contributes", {})
    contributes["configuration"] = {
        "title": "scopecache",
        "properties": {**properties, **EXTENSION_PROPERTIES},
    }
    wanted = {SCHEMA_PATH: render(schema), PACKAGE_PATH: render(package)}
    stale = [p for p, text in wanted.items() if not p.exists() or p.read_text("utf-8") != text]
    if args.check:
        for path in stale:
            print(f"{path.name} is out of date: run scripts/settings_schema.py", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path], encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
