"""The Claude Code provider stream: one `claude` child per request, used as transport only.

Order of a request, and why:

1. Cancellation is checked before anything starts: a cancelled request launches nothing.
2. The catalog and system prompt go into a fresh private 0700 directory and the child starts
   there in its own process group (`start_child`) — or
   the session's prewarmed child is taken when it was started for an equal
   `ChildSpec`. Attachments are written next.
3. The child's `Conversation` answers and
   validates a `control_request initialize` (subscription auth, no slash commands,
   dontAsk) before any prompt is written (a prewarmed child did so while the host ran its
   tools); then one user message carries the transcript records and stdin closes. Every
   read and write is interruptible by the request's signal and bounded by its deadline.
4. `system/init` must show exactly the catalog's tools on the one connected proposal
   server before any content is mapped; deltas are then published as they arrive.
5. When the message stops for `tool_use` (or `max_tokens`) the group is terminated at
   once; the exit status, the violation marker and private-path disclosure are checked
   and the private directory is removed, and only then are tool calls and `Done`
   published. Every failure is an `ErrorEvent`, never text. An answer that proposes tool
   calls has the session's prewarmer start the next child as soon as the stop is read,
   before the child is stopped; a request that answers tool results (a tool loop) starts it
   even earlier, just before its own prompt is written, and stops it again when its own
   answer ends the loop.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from hostlink.claude_code import compatibility, plan, protocol
from hostlink.claude_code.catalog import TOOL_PREFIX, Catalog, CatalogError, build_catalog
from hostlink.claude_code.conversation import (
    ChildGone,
    ConversationError,
    DisclosureGuard,
    check_cancelled,
    checked,
)
from hostlink.claude_code.models import PROVIDER_NAME
from hostlink.claude_code.prewarm import Child, ChildSpec, Prewarmer, start_child
from hostlink.claude_code.process import (
    EXIT_AFTER_SIGTERM,
    ClaudeProcess,
    ClaudeTransportOptions,
    ProcessError,
)
from hostlink.claude_code.tracing import RequestTrace
from hostlink.claude_code.transcript import (
    Transcript,
    TranscriptError,
    attachment_block,
    serialize,
)
from hostlink.host import (
    AssistantMessage,
    CancelSignal,
    Context,
    Done,
    ErrorEvent,
    GenerationSettings,
    Message,
    ModelSpec,
    Notifier,
    ProviderHooks,
    ProviderRefused,
    ProviderRequest,
    ProviderResponse,
    StreamEvent,
    TextContent,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolCallEvent,
    ToolResultMessage,
)
from hostlink.host.platform.processes import KILLED_STATUS, STOPPED_STATUSES
from hostlink.host.private import PrivateStateError, write_private_file

if TYPE_CHECKING:
    from hostlink.host import StopReason, ThinkingContent

STARTUP_TIMEOUT_SECONDS = 60.0
EXIT_TIMEOUT_SECONDS = 10.0
# After a proposal a subscription's CLI writes its rate-limit report right after message_stop
# (0.2-3 ms after message_delta, measured on 2.1.332): the child is read at most this much longer.
PLAN_REPORT_GRACE_SECONDS = 0.5
_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop", "stop_sequence": "stop", "tool_use": "toolUse", "max_tokens": "length"}
# After a proposal: 143 / -SIGTERM when our signal stopped it (on Windows, where a stop is no
# signal, the status taskkill or the job gave it), 0 or 1 when its single turn
# (``--max-turns 1``) ended on its own just before the stop arrived.
_ACCEPTED_AFTER_TERMINATE = {0, 1, EXIT_AFTER_SIGTERM, *STOPPED_STATUSES}
_DEFAULT_SETTINGS = GenerationSettings()  # frozen: one shared default is safe


class _Failed(Exception):
    def __init__(self, error: ErrorEvent) -> None:
        super().__init__(error.message)
        self.error = error


def _fail(message: str, code: str = "provider_error", retryable: bool = False) -> _Failed:
    return _Failed(ErrorEvent(message, code=code, retryable=retryable))


class ClaudeCodeProvider:
    """`stream` is a `hostlink.host.ProviderStream` backed by the `claude` CLI.

    `cwd` is the host's working directory (Claude tells the model it is the project);
    `options` is for tests only (see `ClaudeTransportOptions`). `prewarmer` (the
    session's) starts the follow-up child of a request that ends with tool calls, unless
    `may_prewarm()` says no; `start_facts` says how the last request got its child, for
    the metrics. `hooks` are the host's provider hooks (`before_provider_request` before
    anything is built, `after_provider_response` at validated init); `on_plan` is told
    each rate-limit report the CLI writes.
    """

    def __init__(
        self,
        executable: str,
        *,
        cwd: Path | None = None,
        notifier: Notifier | None = None,
        effort: str | None = None,
        options: ClaudeTransportOptions | None = None,
        environ: Mapping[str, str] | None = None,
        prewarmer: Prewarmer | None = None,
        hooks: ProviderHooks | None = None,
        on_plan: Callable[[plan.PlanUsage], None] | None = None,
        may_prewarm: Callable[[], bool] = lambda: True,
        prewarm_early: bool = True,
    ) -> None:
        self.executable = executable
        self.cwd = cwd
        self.notifier = notifier
        self.effort = effort
        self.options = options or ClaudeTransportOptions()
        self._environ = environ
        self.prewarmer = prewarmer
        self.hooks = hooks
        self.on_plan = on_plan
        self.may_prewarm = may_prewarm
        # False under extra usage `refuse`: a plan report that would refuse the follow-up can come
        # after the proposal, so the next child starts only once the whole request was read.
        self.prewarm_early = prewarm_early
        self.start_facts: dict[str, object] = {}

    async def stream(self, model: ModelSpec, context: Context, signal: CancelSignal) -> AsyncIterator[StreamEvent]:
        if signal.cancelled:
            yield ErrorEvent("the request was cancelled", code="aborted")
            return
        if self.hooks is not None:
            try:  # the host's logical replacement, before anything is built from the context
                context = await self.hooks.before_provider_request(ProviderRequest(PROVIDER_NAME, model, context))
            except ProviderRefused as refused:
                yield refused.error
                return
            except Exception as exc:  # noqa: BLE001 - a handler's bug fails this request only
                yield ErrorEvent(f"a before_provider_request handler failed ({type(exc).__name__})", code="hook_failed")
                return
        try:
            catalog = build_catalog(context.tools, context.messages)
            transcript = serialize(context, catalog)
        except (CatalogError, TranscriptError) as exc:
            yield ErrorEvent(str(exc), code="invalid_request")
            return
        # aclosing: a consumer that stops early still closes the request (and its cleanup).
        request = _Request(self, model, catalog, transcript, signal, context.settings)
        request.messages, request.trace = context.messages, RequestTrace(model.id, context)
        request.in_tool_loop = bool(context.messages) and isinstance(context.messages[-1], ToolResultMessage)
        async with aclosing(request.run()) as events:
            async for event in events:
                yield event


class _Request:
    """One provider request: owns its private directory and its child process group."""

    def __init__(
        self, provider: ClaudeCodeProvider, model: ModelSpec, catalog: Catalog, transcript: Transcript,
        signal: CancelSignal, settings: GenerationSettings = _DEFAULT_SETTINGS,
    ) -> None:
        self.provider = provider
        self.model = model
        self.catalog = catalog
        self.transcript = transcript
        self.signal = signal
        self.child: Child | None = None
        self.initialized = False  # the child answered its initialize control request
        self.how = "fresh"  # how the child was got: prewarmed, replaced or fresh
        self.messages: Sequence[Message] = ()  # what its conversation's next round extends
        self.in_tool_loop = False  # it answers tool results: the loop's next round is likely to follow
        self.settings = settings
        self.prompted = False  # the prompt was (being) written: stderr may hold content now
        self.guard: DisclosureGuard | None = None
        self.mapper = protocol.StreamMapper()
        self.started = time.monotonic()
        self.trace: RequestTrace
        self.deadline = anyio.current_time() + STARTUP_TIMEOUT_SECONDS
        provider = self.provider
        self.spec = ChildSpec.of(
            provider.executable, model.id, settings.effort or provider.effort,
            provider.cwd if provider.cwd is not None else Path.cwd(),
            provider._environ if provider._environ is not None else os.environ, provider.options,
            transcript.system_prompt, catalog, settings.max_output_tokens,
        )

    @property
    def process(self) -> ClaudeProcess:
        assert self.child is not None
        return self.child.process

    @property
    def directory(self) -> Path:
        assert self.child is not None
        return self.child.directory

    async def run(self) -> AsyncGenerator[StreamEvent]:
        final: list[StreamEvent] = []
        try:
            try:
                await self._launch()
                await self._handshake()
                async with aclosing(self._content()) as content:
                    async for event in content:
                        yield event
                if self.provider.prewarm_early and self._follow_up_expected():
                    self._prewarm_next("proposal")  # start while the child stops and the host runs the tools
                self.trace.phase("stop and cleanup")
                final = await self._finish()
            except (_Failed, ConversationError) as failure:
                final = [failure.error]
            except Exception as exc:  # noqa: BLE001 - a bug must still end the stream as an error
                final = [ErrorEvent(f"the Claude Code provider failed ({type(exc).__name__})", code="internal_error")]
            self.trace.phase("stop and cleanup")
            cleanup_error = await self._cleanup()
            if cleanup_error is not None and not isinstance(final[0], ErrorEvent):
                final = [cleanup_error]  # success is published only after a clean cleanup
            if self.provider.start_facts.get("next_child") == "ahead" and not self._follow_up_expected():
                assert self.provider.prewarmer is not None  # it started the child ahead
                self.provider.prewarmer.stop(self)  # the loop ended here: nobody will ask for it
                del self.provider.start_facts["next_child"]
            elif not self.provider.prewarm_early and isinstance(final[-1], Done) and self._follow_up_expected():
                self._prewarm_next("after")  # every plan report of the request was read by now
            if (prewarmer := self.provider.prewarmer) is not None:  # for the doctor and the access log
                waiting = prewarmer.waiting
                self.provider.start_facts.update(prewarmed_waiting=waiting, prewarm_slots=prewarmer.slots)
                final = [replace(event, prewarmed_waiting=waiting) if isinstance(event, Done) else event
                         for event in final]
            self.trace.finish(final, self.how)
            for event in final:
                yield event
        finally:
            await self._cleanup()  # no-op unless the consumer stopped early
            self.trace.finish(final, self.how)  # no-op unless the consumer stopped early

    def _follow_up_expected(self) -> bool:
        """The answer proposes tools: the host runs them and asks again, unless the only call
        is the answer tool or the host cuts the answer before its calls (a stop sequence)."""
        proposed = [part.name for part in self.mapper.content if isinstance(part, protocol.Proposal)]
        names = {self.catalog.name_for(name[len(TOOL_PREFIX):]) for name in proposed}
        if self.settings.cut_in(part.text for part in self.mapper.content if isinstance(part, TextContent)):
            return False
        return self.mapper.stop_reason == "tool_use" and bool(names) and names != {self.settings.answer_tool}

    def _prewarm_next(self, when: str) -> None:
        """Have the session's prewarmer start the next round's child (one per request: a second
        call is that child); `when` (ahead, proposal, after) is told to the doctor."""
        if self.provider.prewarmer is not None and self.provider.may_prewarm():
            self.provider.prewarmer.start(self.spec, self, self.messages)
            self.provider.start_facts.setdefault("next_child", when)

    async def _launch(self) -> None:
        """The session's prewarmed child when it matches, else a fresh one; then attachments."""
        check_cancelled(self.signal)
        self.trace.phase("claude start")
        prewarmer = self.provider.prewarmer
        how = "fresh"
        if prewarmer is not None:
            self.child, how = await prewarmer.take(self.spec, self.messages, self.signal, self.deadline)
            self.initialized = self.child is not None
        if self.child is None:
            self.child = await start_child(self.spec)
            self.child.conversation.signal = self.signal
        self.how = how
        self.trace.mark(child=how)
        self.provider.start_facts = {"child": how, "cli_version": self.child.cli_version}
        self.guard = DisclosureGuard(self.directory)
        try:
            self.attachment_paths = [
                write_private_file(self.directory, item.name, item.data) for item in self.transcript.attachments
            ]
        except (PrivateStateError, OSError) as exc:
            raise _fail(f"could not prepare the request's private files ({type(exc).__name__})",
                        code="private_state") from None

    async def _handshake(self) -> None:
        """Validate auth before the prompt is written (done already by a prewarmed child),
        then the inventory before content."""
        assert self.child is not None
        conversation = self.child.conversation
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text} for text in self.transcript.records]
        blocks[-1]["cache_control"] = {"type": "ephemeral"}
        if self.attachment_paths:
            blocks.append({"type": "text", "text": attachment_block(self.attachment_paths)})
        try:
            if not self.initialized:
                await conversation.initialize(self.deadline)
            self.provider.start_facts["start_ms"] = int((time.monotonic() - self.started) * 1000)
            if self.in_tool_loop and self.provider.prewarm_early:
                self._prewarm_next("ahead")  # a child ready before it is asked for: the loop's next round
            self.prompted = True
            self.trace.phase("first token")
            await conversation.prompt(blocks, self.deadline)
        except ChildGone as gone:
            raise await self._unexpected_exit(gone.when) from None
        except ConversationError as exc:  # a CLI outside the verified range: say so with the refusal
            hint = compatibility.unverified_hint(self.child.cli_version)
            if hint is None or exc.error.code in ("aborted", "timeout"):
                raise
            raise _fail(f"{exc}; {hint}", code=exc.error.code, retryable=exc.error.retryable) from None
        if self.provider.hooks is not None:  # init validated: the response boundary, nothing mapped yet
            try:
                await self.provider.hooks.after_provider_response(ProviderResponse(PROVIDER_NAME, self.model))
            except Exception as exc:  # noqa: BLE001 - a failing observer fails the request
                raise _fail(f"an after_provider_response observer failed ({type(exc).__name__})",
                            code="hook_failed") from None

    async def _record(self, deadline: float | None = None, late: str = "start answering") -> dict[str, Any] | None:
        """The next stdout record (None at end of output)."""
        assert self.child is not None
        return await self.child.conversation.receive(deadline, late)

    async def _unexpected_exit(self, when: str) -> _Failed:
        returncode = await self._exit_status()
        if returncode is None:
            return _fail(f"claude stopped its output unexpectedly {when}", code="unexpected_exit")
        message = f"claude exited unexpectedly {when} (status {returncode})"
        if not self.prompted:  # it never saw the prompt: its stderr says why, and holds no content
            assert self.child is not None
            private = {
                str(self.directory): "<private>",
                os.path.realpath(self.directory): "<private>",  # noqa: ASYNC240 - lstats of our own private dir, early-exit path only
            }
            home = dict(self.spec.environment).get("HOME")
            if home:
                private[home] = "~"
            stderr = self.process.stderr_tail(private)
            self.provider.start_facts["exit_stderr"] = " | ".join(stderr)
            message += "; " + compatibility.early_exit_advice(self.child.cli_version, stderr)
        return _fail(message, code="unexpected_exit")

    async def _content(self) -> AsyncGenerator[StreamEvent]:
        """Map records to deltas until the message's stop reason (tool_use stops at once)."""
        assert self.guard is not None
        while True:
            record = await self._record()
            if record is None:
                raise await self._unexpected_exit("while answering")
            for action in checked(self.mapper.feed, record):
                if isinstance(action, (TextDelta, ThinkingDelta)):
                    self.guard.check_piece(action.delta)  # even a path split across deltas
                    self.trace.first_output()
                    yield action
                elif isinstance(action, protocol.Proposal):
                    self._tool_call(action)
                    self.trace.first_output()
                elif isinstance(action, protocol.Notice):
                    if self.provider.notifier is not None:
                        self.provider.notifier.notify(action.message, "warning")
                elif isinstance(action, protocol.PlanReport):
                    self._plan(action.usage)
                elif isinstance(action, protocol.Stop):
                    if action.reason in ("tool_use", "max_tokens"):
                        return
                else:  # protocol.Finished, the last kind of action
                    if action.error is not None:
                        raise _Failed(action.error)
                    if self.mapper.stop_reason is None:
                        raise _fail("claude finished without an answer", code="protocol_error")
                    return

    def _plan(self, usage: plan.PlanUsage) -> None:
        if self.provider.on_plan is not None:
            self.provider.on_plan(usage)

    async def _read_plan_report(self) -> None:
        """After a proposal, the rate-limit report that follows message_stop (a subscription's
        CLI writes one; an API-key sign-in never does), read for a short grace only."""
        if self.provider.options.testing or self.provider.on_plan is None:
            return
        deadline = anyio.current_time() + PLAN_REPORT_GRACE_SECONDS
        try:
            while (record := await self._record(deadline, "report its rate limits")) is not None:
                if record["type"] == "rate_limit_event":
                    usage = plan.parse(record.get("rate_limit_info"))
                    if usage is not None:
                        self._plan(usage)
                    return
                if record["type"] == "result":
                    return
        except ConversationError as error:
            if error.error.code == "aborted":
                raise

    def _tool_call(self, proposal: protocol.Proposal) -> ToolCall:
        alias = proposal.name[len(TOOL_PREFIX) :] if proposal.name.startswith(TOOL_PREFIX) else None
        name = self.catalog.name_for(alias) if alias else None
        if name is None:
            raise _fail("claude proposed a tool that is not in the request's catalog", code="unknown_tool")
        assert self.guard is not None
        self.guard.check(json.dumps(proposal.arguments, ensure_ascii=False))
        return ToolCall(id=proposal.id, name=name, arguments=proposal.arguments)

    async def _finish(self) -> list[StreamEvent]:
        """Stop the child, verify it and the violation marker, then build the result."""
        reason = self.mapper.stop_reason
        if reason in ("tool_use", "max_tokens"):
            await self._read_plan_report()
            returncode = await self._stop_process()
            if returncode not in _ACCEPTED_AFTER_TERMINATE and not (
                self.process.escalated and returncode == KILLED_STATUS
            ):
                raise _fail(f"claude exited with status {returncode} when stopped", code="unexpected_exit")
        else:
            await self._expect_result_and_exit()
        if (self.directory / "violation.json").exists():
            raise _fail("claude tried to execute a tool instead of proposing it", code="tool_execution_attempted")
        if reason not in _STOP_REASONS:
            raise _fail(f"claude stopped for an unsupported reason ({str(reason)[:40]})", code="provider_error")
        content: list[TextContent | ThinkingContent | ToolCall] = []
        calls: list[ToolCall] = []
        for part in self.mapper.content:
            if isinstance(part, protocol.Proposal):
                call = self._tool_call(part)
                calls.append(call)
                content.append(call)
            else:
                content.append(part)
        stop_reason = _STOP_REASONS[reason]
        if calls and stop_reason == "length":
            raise _fail("claude's answer was cut off while proposing a tool call", code="length")
        if calls and stop_reason != "toolUse":
            raise _fail("claude proposed a tool call without stopping for it", code="protocol_error")
        if stop_reason == "toolUse" and not calls:
            raise _fail("claude stopped for a tool call but proposed none", code="protocol_error")
        message = AssistantMessage(content=tuple(content), stop_reason=stop_reason, usage=self.mapper.usage,
                                   model=self.model.id)
        return [*(ToolCallEvent(call) for call in calls), Done(message, prewarmed=self.how == "prewarmed")]

    async def _expect_result_and_exit(self) -> None:
        while True:
            record = await self._record(anyio.current_time() + EXIT_TIMEOUT_SECONDS, "finish its answer")
            if record is None:
                break
            for action in checked(self.mapper.feed, record):
                if isinstance(action, protocol.PlanReport):
                    self._plan(action.usage)
                if isinstance(action, protocol.Finished) and action.error is not None:
                    raise _Failed(action.error)
        returncode = await self._exit_status()
        if returncode is None:
            raise _fail("claude did not exit after answering", code="unexpected_exit")
        if returncode != 0:
            raise _fail(f"claude exited with status {returncode}", code="unexpected_exit")

    async def _exit_status(self) -> int | None:
        """The child's own exit status once its whole group is gone (None: it did not exit)."""
        with anyio.move_on_after(EXIT_TIMEOUT_SECONDS):
            try:
                return await self.process.wait()
            except ProcessError as exc:
                raise _fail(str(exc), code="cleanup_failed") from None
        return None

    async def _stop_process(self) -> int:
        try:
            return await self.process.terminate()
        except ProcessError as exc:
            raise _fail(str(exc), code="cleanup_failed") from None

    async def _cleanup(self) -> ErrorEvent | None:
        """Stop the group and remove the private directory; idempotent."""
        if self.child is None:
            return None
        child, self.child = self.child, None
        error = await child.close()
        return None if error is None else ErrorEvent(error, code="cleanup_failed")
