"""Shared by the tests that start a host session themselves (no tests here)."""

from __future__ import annotations


class Notices:
    """A host's notifier that keeps every notice: `seen` holds (message, level) pairs."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def notify(self, message: str, level: str = "info") -> None:
        self.seen.append((message, level))

    @property
    def messages(self) -> list[str]:
        return [message for message, _ in self.seen]
