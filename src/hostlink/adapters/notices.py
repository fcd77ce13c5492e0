"""Notices of the hosts that are libraries (pydantic-ai, LangChain, LiteLLM) go to the
`logging` tree: a program in code has no terminal of its own to print them on."""

from __future__ import annotations

import logging
from contextvars import ContextVar

from hostlink.host import NoticeLevel

_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class LogNotifier:
    """The host's notifier, logging each notice (rate-limit warnings, ignored project
    servers, a sign-in that ended) on `logger` at its level."""

    def __init__(self, logger: str) -> None:
        self._log = logging.getLogger(logger)

    def notify(self, message: str, level: NoticeLevel = "info") -> None:
        self._log.log(_LEVELS.get(level, logging.INFO), "%s", message)


# The notices of the request being run, in the task that runs it (see `KeptNotices`)
REQUEST_NOTICES: ContextVar[list[str] | None] = ContextVar("hostlink_request_notices", default=None)


class KeptNotices(LogNotifier):
    """A notifier for a session that serves one request after another: each notice is logged
    and kept with the request being run (in `REQUEST_NOTICES`), for the host to put beside
    its answer."""

    def notify(self, message: str, level: NoticeLevel = "info") -> None:
        super().notify(message, level)
        kept = REQUEST_NOTICES.get()
        if kept is not None:
            kept.append(message)
