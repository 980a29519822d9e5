"""A token printed by a command, as a ``TokenSource`` (``auth.kind = "command"``).

How many enterprise set-ups hand out tokens: ``gcloud auth
print-access-token``, ``az account get-access-token``, a vault helper. The
command runs with asyncio's subprocess support, stdin closed, the server's
environment, a timeout (the process is killed when it expires).

Never a shell. ``auth.command`` is either a list (the argv, used as is) or
a string, split with POSIX shell-word rules (``shlex.split``: quotes work,
pipes, ``$VAR`` and ``~`` do not). A pipeline needs an explicit shell:
``["sh", "-c", "vault read -field=token secret/llm"]``. This keeps a
setting from being interpreted differently than it reads.

Standard output is either the token alone (one line; it is treated as
valid until the service rejects it, and refreshed after an hour) or a JSON
object ``{"token": "...", "expiresIn": seconds}`` (``access_token`` and
``expires_in`` are accepted too). A non-zero exit status, a timeout, empty
or malformed output is an ``AuthError``; the command's stderr is never
logged (tools print tokens there too).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shlex
from collections.abc import Mapping, Sequence

from transport.auth.source import IssuedToken, TokenSource, lifetime_seconds
from transport.errors import AuthError, ConfigurationError

logger = logging.getLogger(__name__)

#: seconds the command may run
DEFAULT_TIMEOUT = 15.0
#: output larger than this is not a token
MAX_OUTPUT_BYTES = 64 * 1024


def command_argv(command: Sequence[str] | str) -> list[str]:
    """The argv for ``auth.command`` (a string is split with ``shlex``, never a shell)."""
    try:
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    except ValueError as exc:
        raise ConfigurationError(f"auth.command cannot be split into words: {exc}") from None
    if not argv or not argv[0]:
        raise ConfigurationError("auth.command is empty")
    return argv


class CommandTokenSource(TokenSource):
    """Runs a command and reads a token from its standard output."""

    def __init__(
        self,
        command: Sequence[str] | str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.argv = command_argv(command)
        self.timeout = timeout
        self._env = dict(env) if env is not None else None
        self.description = f"auth command {os.path.basename(self.argv[0])!r}"

    async def fetch(self) -> IssuedToken:
        """Run the command once and parse what it printed."""
        try:
            process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env=self._env,
            )
        except OSError as exc:
            raise AuthError(f"cannot run {self.description}: {exc.strerror}") from None
        try:
            stdout, _ = await asyncio.wait_for(process.communicate(), self.timeout)
        except BaseException as exc:  # timeout or cancellation: never leave it running
            if process.returncode is None:
                process.kill()
                await process.wait()
            if isinstance(exc, TimeoutError):
                raise AuthError(f"{self.description} did not finish in {self.timeout:g}s") from None
            raise
        if process.returncode != 0:
            raise AuthError(f"{self.description} exited with status {process.returncode}")
        return parse_command_output(stdout)


def parse_command_output(stdout: bytes) -> IssuedToken:
    """The token in a command's output: a bare token or JSON; raises ``AuthError``."""
    if len(stdout) > MAX_OUTPUT_BYTES:
        raise AuthError("the auth command printed too much to be a token")
    try:
        text = stdout.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise AuthError("the auth command printed bytes that are not UTF-8") from None
    if not text:
        raise AuthError("the auth command printed nothing")
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            raise AuthError("the auth command printed malformed JSON") from None
        token = data.get("token", data.get("access_token"))
        expires = data.get("expiresIn", data.get("expires_in"))
        if not isinstance(token, str) or not token or any(c.isspace() for c in token):
            raise AuthError("the auth command's JSON has no usable token")
        return IssuedToken(token, lifetime_seconds(expires, "expiresIn"))
    if any(c.isspace() for c in text):
        raise AuthError("the auth command printed more than a single token")
    return IssuedToken(text, None)
