"""Tell the user about a problem once, not on every keystroke.

A problem is identified by a topic (``"settings"``, ``"upstream"``, ``"l2"``
...). It is shown with ``window/showMessage`` the first time it is reported;
further reports of the same topic are only logged until the topic is
resolved, after which a new failure is shown again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from lsprotocol import types

logger = logging.getLogger(__name__)

ShowMessage = Callable[[types.ShowMessageParams], None]


class UserNotifier:
    """Show each topic's problem once until it is resolved."""

    def __init__(self, show: ShowMessage) -> None:
        self._show = show
        self._active: dict[str, str] = {}

    def problem(
        self, topic: str, message: str, kind: types.MessageType = types.MessageType.Warning
    ) -> None:
        """Report a problem; the user sees it only the first time."""
        if topic in self._active:
            logger.debug("%s (already reported): %s", topic, message)
            return
        self._active[topic] = message
        logger.warning("%s: %s", topic, message)
        self._send(kind, message)

    def resolved(self, topic: str, message: str | None = None) -> None:
        """The topic's problem is over; optionally tell the user it recovered."""
        if self._active.pop(topic, None) is None:
            return
        logger.info("%s recovered", topic)
        if message:
            self._send(types.MessageType.Info, message)

    def _send(self, kind: types.MessageType, message: str) -> None:
        try:
            self._show(types.ShowMessageParams(type=kind, message=f"scopecache: {message}"))
        except Exception:  # the client may be gone; never let telling it fail a request
            logger.debug("could not send window/showMessage", exc_info=True)

    def active(self) -> dict[str, str]:
        """Topics with an unresolved problem and their message."""
        return dict(self._active)
