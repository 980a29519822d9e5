"""Identify the completion service once, and pick its best fill-in-the-middle path.

``detect_service`` asks, in order:

1. ``GET {origin}/props``: llama.cpp's server answers it (and every llama.cpp
   answer carries ``Server: llama.cpp``). Its ``/infill`` is the path; the
   context per slot comes from ``default_generation_settings.n_ctx`` and the
   tokenizer's characters per token from one ``POST /tokenize`` of a code
   sample, so prompts can be kept within the server's limits.
2. ``GET {origin}/api/version``: Ollama answers ``{"version": ...}``. Its
   ``/api/generate`` with ``suffix`` (or ``raw`` with a FIM template) is the path;
   without a configured model the first one ``/api/tags`` lists is used.
3. Anything else is OpenAI-compatible (vLLM, LM Studio, TGI, ...):
   ``/v1/completions``. Such servers often ignore or reject ``suffix``, so when
   no FIM template is configured one is chosen from the model's name (the
   configured one, or the first ``/v1/models`` lists), if the name says which
   family it is.

A service that cannot be reached yields ``None`` (the caller falls back to
the OpenAI path and asks again later); any other odd answer only moves on to
the next question. Nothing here raises.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from transport import errors
from transport.options import EndpointOptions

logger = logging.getLogger(__name__)

#: what ``/tokenize`` is asked to measure characters per token with
TOKENIZE_SAMPLE = '''\
def scale(values: list[float], factor: float = 2.0) -> list[float]:
    """Multiply every value by ``factor``."""
    result = []
    for index, value in enumerate(values):
        if value is None:
            continue
        result.append(value * factor)  # keep the order
    return result
'''

#: model name patterns -> FIM template, for OpenAI-compatible servers
TEMPLATE_BY_MODEL: tuple[tuple[str, str], ...] = (
    (r"qwen.*coder|codeqwen", "qwen"),
    (r"deepseek.*coder", "deepseek"),
    (r"starcoder|stable-?code|santacoder|refact", "starcoder"),
    (r"codellama|code-llama", "codellama"),
)


def template_for_model(name: str) -> str:
    """The FIM template a model's name implies, or ``""``."""
    lowered = name.lower()
    for pattern, template in TEMPLATE_BY_MODEL:
        if re.search(pattern, lowered):
            return template
    return ""


@dataclass(frozen=True, kw_only=True)
class ServiceProfile:
    """What was learnt about the service, and the path chosen for it."""

    #: ``llamacpp``, ``ollama`` or ``openai``
    kind: str
    #: the completion path, e.g. ``/infill``
    path: str
    #: the ``Server`` header, when the service sent one
    server: str = ""
    #: the model name the service reported (or was configured)
    model: str = ""
    #: FIM template chosen from the model's name ("" = none, or configured)
    fim_template: str = ""
    #: context tokens per slot the service reported (0 = unknown)
    context_tokens: int = 0
    #: characters per token of the service's tokenizer on code (0 = unknown)
    chars_per_token: float = 0.0
    #: slots the service reported (llama.cpp ``total_slots``; 0 = unknown)
    slots: int = 0

    def to_json(self) -> dict[str, Any]:
        """The stats and diagnose view."""
        answer: dict[str, Any] = {"detected": self.kind, "path": self.path}
        if self.server:
            answer["server"] = self.server
        if self.model:
            answer["model"] = self.model
        if self.fim_template:
            answer["fimTemplate"] = self.fim_template
        if self.context_tokens:
            answer["contextTokens"] = self.context_tokens
        if self.chars_per_token:
            answer["charsPerToken"] = round(self.chars_per_token, 2)
        if self.slots:
            answer["slots"] = self.slots
        return answer


def _json(response: httpx.Response) -> Any:
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


async def _get(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> httpx.Response:
    response = await client.get(url, headers=headers)
    await response.aread()
    return response


def _positive_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


async def _llamacpp_profile(
    client: httpx.AsyncClient, options: EndpointOptions, props: Any, server: str,
    headers: dict[str, str],
) -> ServiceProfile:
    context = 0
    slots = 0
    model = options.model
    if isinstance(props, dict):
        slots = _positive_int(props.get("total_slots"))
        settings = props.get("default_generation_settings")
        if isinstance(settings, dict):
            context = _positive_int(settings.get("n_ctx"))
        alias = props.get("model_alias")
        model = model or (alias if isinstance(alias, str) else "")
    chars_per_token = 0.0
    try:
        response = await client.post(
            f"{options.origin}/tokenize", json={"content": TOKENIZE_SAMPLE}, headers=headers
        )
        tokens = (_json(response) or {}).get("tokens")
        if isinstance(tokens, list) and tokens:
            chars_per_token = len(TOKENIZE_SAMPLE) / len(tokens)
    except (errors.TransportError, httpx.HTTPError, AttributeError):
        pass
    return ServiceProfile(
        kind="llamacpp", path="/infill", server=server or "llama.cpp", model=model,
        context_tokens=context, chars_per_token=chars_per_token, slots=slots,
    )


async def _ollama_profile(
    client: httpx.AsyncClient, options: EndpointOptions, server: str, headers: dict[str, str]
) -> ServiceProfile:
    model = options.model
    if not model:
        tags = _json(await _get(client, f"{options.origin}/api/tags", headers))
        listed = tags.get("models") if isinstance(tags, dict) else None
        if isinstance(listed, list) and listed and isinstance(listed[0], dict):
            name = listed[0].get("name") or listed[0].get("model")
            model = name if isinstance(name, str) else ""
    return ServiceProfile(
        kind="ollama", path="/api/generate", server=server, model=model,
        fim_template=options.fim_template,
    )


async def _openai_profile(
    client: httpx.AsyncClient, options: EndpointOptions, server: str, headers: dict[str, str]
) -> ServiceProfile:
    model = options.model
    if not model:
        listed = _json(await _get(client, f"{options.openai_base}/models", headers))
        data = listed.get("data") if isinstance(listed, dict) else None
        if isinstance(data, list) and data and isinstance(data[0], dict):
            name = data[0].get("id")
            model = name if isinstance(name, str) else ""
    template = options.fim_template or template_for_model(model)
    base_path = urlsplit(options.openai_base).path.rstrip("/")
    return ServiceProfile(
        kind="openai", path=f"{base_path}/completions", server=server, model=model,
        fim_template=template,
    )


async def detect_service(
    client: httpx.AsyncClient, options: EndpointOptions, headers: dict[str, str] | None = None
) -> ServiceProfile | None:
    """Identify the service behind ``options.endpoint``; None when it cannot be reached."""
    headers = headers or {}
    try:
        response = await _get(client, f"{options.origin}/props", headers)
        server = response.headers.get("server", "")
        props = _json(response)
        if server.lower().startswith("llama.cpp") or (
            isinstance(props, dict) and "default_generation_settings" in props
        ):
            return await _llamacpp_profile(client, options, props, server, headers)
        version = _json(await _get(client, f"{options.origin}/api/version", headers))
        if isinstance(version, dict) and isinstance(version.get("version"), str):
            return await _ollama_profile(client, options, server, headers)
        return await _openai_profile(client, options, server, headers)
    except (errors.ConnectError, errors.TLSError, errors.UpstreamTimeout) as exc:
        logger.info("could not identify the service at %s: %s", options.origin, exc)
        return None
    except (errors.TransportError, httpx.HTTPError) as exc:
        # It answered, but oddly: the plain OpenAI path is the safe guess.
        logger.info("service at %s answered the identification oddly: %s", options.origin, exc)
        return ServiceProfile(kind="openai", path=urlsplit(options.openai_base).path.rstrip("/")
                              + "/completions", fim_template=options.fim_template)
