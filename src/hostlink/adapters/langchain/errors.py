"""Provider failures as LangChain's model errors (`langchain_core.exceptions`), so code that
handles any provider's authentication, rate-limit or context errors handles Claude Code's.

Each carries the provider's message (written to be shown), its `code`, and for a usage
limit `retry_after`, the seconds until it resets.
"""

from __future__ import annotations

import time

from langchain_core import exceptions

from hostlink.host import ErrorEvent


class ClaudeCodeError(exceptions.ModelError):
    """A failed Claude Code request; `code` is the provider's error code."""

    def __init__(self, message: str, *, code: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after


class ClaudeAuthenticationError(ClaudeCodeError, exceptions.ModelAuthenticationError):
    """`claude` is not signed in, or its sign-in was refused."""


class ClaudePlanRefusedError(ClaudeCodeError, exceptions.ModelPermissionDeniedError):
    """The Claude plan refused the request (third-party apps on extra usage, extra usage off,
    an organization's spend cap): its settings must change, so retrying cannot help."""


class ClaudeRateLimitError(ClaudeCodeError, exceptions.ModelRateLimitError):
    """A rate limit: retrying later may succeed."""


class ClaudeQuotaExceededError(ClaudeCodeError, exceptions.ModelRateLimitError):
    """The plan's usage limit (or the extra-usage guard): nothing succeeds before `retry_after`."""

    is_retryable = False


class ClaudeInvalidRequestError(ClaudeCodeError, exceptions.ModelInvalidRequestError):
    """The request cannot be sent as it is."""


class ClaudeContextOverflowError(ClaudeCodeError, exceptions.ContextOverflowError):
    """The conversation is longer than the model's context."""


class ClaudeServerError(ClaudeCodeError, exceptions.ModelAPIError):
    """The provider failed or is overloaded: retrying may succeed."""


_ERRORS: dict[str, type[ClaudeCodeError]] = {
    "not_signed_in": ClaudeAuthenticationError,
    "auth_failed": ClaudeAuthenticationError,
    "plan_refused": ClaudePlanRefusedError,
    "rate_limited": ClaudeRateLimitError,
    "quota_exceeded": ClaudeQuotaExceededError,
    "invalid_request": ClaudeInvalidRequestError,
    "context_length_exceeded": ClaudeContextOverflowError,
    "provider_unavailable": ClaudeServerError,
}


def model_error(error: ErrorEvent) -> ClaudeCodeError:
    retry_after = None if error.resets_at is None else float(max(0, error.resets_at - int(time.time())))
    return _ERRORS.get(error.code, ClaudeCodeError)(error.message, code=error.code, retry_after=retry_after)
