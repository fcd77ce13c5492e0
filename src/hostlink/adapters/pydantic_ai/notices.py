"""Notices of the pydantic-ai host go to the `logging` tree: a program in code has no
terminal of its own to print them on."""

from __future__ import annotations

import logging

from hostlink.host import NoticeLevel

_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class LogNotifier:
    """The host's notifier, logging each notice (rate-limit warnings, ignored project
    servers, a sign-in that ended) on `logger` at its level."""

    def __init__(self, logger: str) -> None:
        self._log = logging.getLogger(logger)

    def notify(self, message: str, level: NoticeLevel = "info") -> None:
        self._log.log(_LEVELS.get(level, logging.INFO), "%s", message)
