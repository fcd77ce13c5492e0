"""The Claude Code provider as a host extension: provider `claude-code`, the visible
`claude_code_web_search` tool and the `claude-code` command.

Registration does no I/O beyond a PATH lookup (`shutil.which`, no subprocess), so a host
that loads every extension at start pays nothing for this one. Without a `claude`
executable the provider registers with an `unavailable` notice saying how to fix it;
whether the CLI is signed in is only known by asking it, so the first request checks that
and fails with an explanatory error. Leftover private directories of dead hostlink processes
are recovered by the host session when it starts.

A provider is made per request, so the prewarmed children a session may hold
(`hostlink.claude_code.prewarm`: one per conversation the host carries on at once,
`Session.conversations`) belong to the extension, which lives for the session and stops
them at shutdown. Only a lasting session prewarms: a one-shot host shuts down right
after its request, so a prewarmed child would only be started to be stopped.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hostlink.claude_code.compatibility import find_claude
from hostlink.claude_code.guard import PlanGuard
from hostlink.claude_code.models import MODELS, PROVIDER_NAME
from hostlink.claude_code.web_search import WebSearch
from hostlink.host import (
    CancelSignal,
    CommandSpec,
    Context,
    Done,
    ErrorEvent,
    ModelSpec,
    ProviderSpec,
    Registry,
    Session,
    StreamEvent,
    meters,
)

if TYPE_CHECKING:
    from hostlink.claude_code.plan import PlanUsage
    from hostlink.claude_code.prewarm import Prewarmer
    from hostlink.claude_code.process import ClaudeTransportOptions
    from hostlink.host.output import OutputSession

COMMAND_USAGE = "usage: /claude-code doctor | usage"
NOT_INSTALLED = (
    "the claude CLI was not found on PATH: install Claude Code "
    "(npm install -g @anthropic-ai/claude-code), sign in with `claude auth login`, "
    "and start the host with `claude` on PATH"
)


class ClaudeCodeExtension:
    """`extra_usage` (allow | warn | refuse, None: `HOSTLINK_CLAUDE_EXTRA_USAGE` or warn) is
    the host's extra-usage guard (`hostlink.claude_code.guard`); a request's own
    `extra_usage` option wins. `options` (a local fake API) and `environ` (whose PATH
    finds `claude`) are for tests."""

    def __init__(
        self, *, extra_usage: str | None = None, options: ClaudeTransportOptions | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.guard = PlanGuard(extra_usage, environ)
        self._options = options
        self._environ = environ
        self._executable: str | None = None
        self._session: Session | None = None
        self._output: OutputSession | None = None
        self._prewarmer: Prewarmer | None = None

    def register(self, registry: Registry) -> None:
        self._executable = find_claude(self._environ)
        unavailable = None if self._executable is not None else NOT_INSTALLED
        registry.register_provider(ProviderSpec(PROVIDER_NAME, MODELS, self._stream, unavailable))
        search = WebSearch(
            self._executable, output=lambda: self._output, cwd=self._cwd, options=self._options, environ=self._environ
        )
        registry.register_tool(search.tool())
        registry.register_command(CommandSpec("claude-code", "Claude Code provider: doctor, usage", self._command))
        registry.on_before_provider_request(self.guard.before_request)
        registry.on_session_start(self._start)
        registry.on_session_shutdown(self._shutdown)

    def _cwd(self) -> Path | None:
        return self._session.cwd if self._session is not None else None

    async def _start(self, session: Session) -> None:
        self._session = session
        self._output = session.output
        self.guard.notifier = session.notifier
        if session.lasting and self._executable is not None:
            from hostlink.claude_code.prewarm import Prewarmer

            self._prewarmer = Prewarmer(session.notifier, slots=session.conversations)

    async def _shutdown(self) -> None:
        self._output = self._session = None
        prewarmer, self._prewarmer = self._prewarmer, None
        if prewarmer is not None:
            await prewarmer.aclose()

    async def _stream(self, model: ModelSpec, context: Context, signal: CancelSignal) -> AsyncIterator[StreamEvent]:
        if self._executable is None:
            yield ErrorEvent(NOT_INSTALLED, code="unavailable")
            return
        from hostlink.claude_code import metrics
        from hostlink.claude_code.provider import ClaudeCodeProvider

        session = self._session
        try:
            mode = self.guard.mode(context.options)
        except ValueError:
            mode = "warn"  # the guard's handler refuses the request, naming the setting
        facts: dict[str, object] = {"model": model.id, "tools": len(context.tools),
                                    "records": len(context.messages) + 1}

        def on_plan(usage: PlanUsage) -> None:
            facts["plan"] = usage.to_json()
            self.guard.observe(usage, mode)

        provider = ClaudeCodeProvider(
            self._executable,
            cwd=self._cwd(),
            notifier=session.notifier if session is not None else None,
            options=self._options,
            environ=self._environ,
            prewarmer=self._prewarmer,
            hooks=session.provider_hooks if session is not None else None,
            on_plan=on_plan,
            may_prewarm=lambda: self.guard.refusing(mode) is None,
            prewarm_early=mode != "refuse",
        )
        started = time.monotonic()
        first_token: float | None = None
        done: Done | None = None
        try:
            async for event in provider.stream(model, context, signal):
                facts.setdefault("first_event_ms", _ms(started))
                if first_token is None and not isinstance(event, ErrorEvent):  # a token, a call or the end
                    first_token = time.monotonic() - started
                if isinstance(event, Done):
                    done = event
                    usage = event.message.usage
                    facts.update(
                        outcome="done",
                        stop_reason=event.message.stop_reason,
                        input_tokens=usage.input_tokens,
                        output_tokens=usage.output_tokens,
                        cache_read_tokens=usage.cache_read_tokens,
                        cache_write_tokens=usage.cache_write_tokens,
                    )
                elif isinstance(event, ErrorEvent):
                    facts.update(outcome="error", error_code=event.code)
                yield event
        finally:
            facts.setdefault("outcome", "stopped")
            facts.update(provider.start_facts)
            facts["duration_ms"] = _ms(started)
            metrics.record(facts)
            _measured(model.id, facts, time.monotonic() - started, first_token, done)

    async def _command(self, argv: Sequence[str], signal: CancelSignal) -> str:
        if list(argv) == ["usage"]:
            from hostlink.claude_code.usage import describe

            return describe(self.guard.latest(), self.guard.mode())
        if list(argv) not in ([], ["doctor"]):
            return COMMAND_USAGE
        from hostlink.claude_code.doctor import diagnose

        return (await diagnose(self._environ)).text()


def _measured(model: str, facts: dict[str, object], seconds: float, first_token: float | None,
              done: Done | None) -> None:
    """The request in the OpenTelemetry metrics (when the application reads them)."""
    if not meters.recording():
        return
    error = None if done is not None else str(facts.get("error_code") or "abandoned")  # as the chat span says
    usage = done.message.usage if done is not None else None
    meters.provider_request(PROVIDER_NAME, model, seconds=seconds, error=error, first_token=first_token,
                            response_model=done.message.model if done is not None else None,
                            tokens=(usage.input_tokens, usage.output_tokens) if usage is not None else None,
                            prewarmed=done.prewarmed if done is not None else None)


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
