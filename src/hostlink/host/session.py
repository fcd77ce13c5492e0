"""The host session every host sits on: the CLI, the llm plugin, and hosts to come.

A host makes one `HostSession` with the extensions it offers, starts it with what only
the host knows (working directory, project trust, where notices go), runs tools, provider
streams and commands through it, and shuts it down once. The session owns what must be one
per host session rather than one per extension: the overflow budget (one
`OutputSession`) and the recovery of stale private state left by
dead processes. Shutdown is idempotent and always runs every extension's shutdown (every
connection closed, every child stopped) before the overflow files are removed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from hostlink.host import (
    Ask,
    CancelSignal,
    CommandFailed,
    Context,
    ErrorEvent,
    Extension,
    ModelSpec,
    Notifier,
    Registry,
    Session,
    StreamEvent,
    ToolResult,
)
from hostlink.host.output import OutputSession
from hostlink.host.platform.console import TERMINATING_SIGNALS, capture, stop_name
from hostlink.host.private import PrivateStateError, recover_stale

T = TypeVar("T")


class Terminated(Exception):
    """The host was asked to stop (SIGTERM, SIGHUP; on Windows Ctrl+Break or the console
    closing) while it worked; cleanup has run."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {stop_name(signum)}")
        self.signum = signum


class HostSession:
    """One host session over `extensions`; `command` is how a person runs this host's
    commands (`hostlink`, `llm`), so advice names the right one.

    `lasting=False` is for one-shot hosts (a CLI command): nothing is left to finish later —
    output beyond the inline bounds is not kept in files that would vanish when the process
    exits, and a missing sign-in names the command that signs in rather than a link.
    `keep_output` keeps it all the same, for a one-shot host that writes a result out whole
    before it exits (`OutputSession.overflows` says where each cut text went).
    `conversations`: how many conversations it carries on at once (see `Session`).
    """

    def __init__(self, extensions: Sequence[Extension], *, command: str = "hostlink",
                 lasting: bool = True, keep_output: bool = False, conversations: int = 1) -> None:
        self.registry = Registry()
        for extension in extensions:
            extension.register(self.registry)
        self.command = command
        self._lasting = lasting
        self._keep_output = keep_output
        self._conversations = conversations
        self.output: OutputSession | None = None
        self._state = "new"  # -> started -> closed

    @property
    def started(self) -> bool:
        return self._state == "started"

    async def start(self, *, cwd: Path, project_trusted: bool, notifier: Notifier, ask: Ask | None = None,
                    trust_again: Callable[[], bool] | None = None) -> None:
        """Recover stale private state, open the output budget, start every extension
        (`trust_again`: see `Session`)."""
        if self._state != "new":
            raise RuntimeError(f"the host session is already {self._state}")
        self._state = "started"
        try:
            recover_stale()
        except (PrivateStateError, OSError) as error:  # a planted root: the session still runs
            shown = str(error) if isinstance(error, PrivateStateError) else type(error).__name__
            notifier.notify(f"stale private state was not recovered: {shown}", "warning")
        self.output = OutputSession() if self._lasting or self._keep_output else None
        await self.registry.start_session(Session(cwd=cwd, project_trusted=project_trusted, notifier=notifier, ask=ask,
                                                  complete=self.complete, trust_again=trust_again,
                                                  output=self.output, command=self.command, lasting=self._lasting,
                                                  provider_hooks=self.registry, conversations=self._conversations))

    async def run_tool(self, name: str, arguments: Mapping[str, Any], signal: CancelSignal) -> ToolResult:
        return await self._registered(self.registry.tools, name, "tool").execute(arguments, signal)

    def stream(self, provider: str, model: ModelSpec, context: Context,
               signal: CancelSignal) -> AsyncIterator[StreamEvent]:
        return self._registered(self.registry.providers, provider, "provider").stream(model, context, signal)

    async def complete(self, model: str, context: Context, signal: CancelSignal) -> AsyncIterator[StreamEvent]:
        """The answer of `model` (`provider/model-id`, a model a registered provider
        offers) to `context`: for extensions that need a model answer (MCP sampling)."""
        provider_name, _, model_id = model.partition("/")
        provider = self.registry.providers.get(provider_name)
        spec = provider.model(model_id) if provider is not None else None
        if provider is None or spec is None:
            yield ErrorEvent(f"this host has no model {model!r}", code="unknown_model")
            return
        if provider.unavailable:
            yield ErrorEvent(provider.unavailable, code="unavailable")
            return
        async for event in provider.stream(spec, context, signal):
            yield event

    async def run_command(self, name: str, argv: Sequence[str], signal: CancelSignal) -> str:
        """A command's text; raises `CommandFailed` with a message safe to show."""
        return await self._registered(self.registry.commands, name, "command").run(argv, signal)

    def _registered(self, table: Mapping[str, T], name: str, kind: str) -> T:
        if self._state != "started":
            raise RuntimeError(f"the host session is {self._state}, not started")
        try:
            return table[name]
        except KeyError:
            raise CommandFailed(f"no {kind} named {name!r} is registered in this host") from None

    async def shutdown(self) -> None:
        """Shut every extension down, then remove the overflow files. Idempotent."""
        state, self._state = self._state, "closed"
        if state != "started":
            return
        try:
            await self.registry.shutdown_session()
        finally:
            if self.output is not None:
                self.output.close()

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run `work()` and shut down after it, whatever happens; SIGTERM or SIGHUP stop it
        as Ctrl-C would (work cancelled, cleanup run) and raise `Terminated`.

        For hosts whose event loop runs in the main thread (the CLI).
        """
        import asyncio

        import anyio

        loop = asyncio.get_running_loop()
        received: list[int] = []
        try:
            with anyio.CancelScope() as scope:
                def stop(signum: int) -> None:
                    received.append(signum)
                    scope.cancel()

                with capture(loop, TERMINATING_SIGNALS, stop):
                    result = await work()
        finally:
            with anyio.CancelScope(shield=True):
                await self.shutdown()
            if received:
                raise Terminated(received[0])
        return result  # bound: only a signal cancels the scope, and then Terminated was raised
