"""Starting a request's `claude` child, now or ahead of its request (prewarmed).

What "start" is, on Claude Code 2.1.332 (measured against a local fake API): from spawn to
the answer of the `initialize` control request takes 0.5–1.0 s — Node's start, settings,
and the proposal server started and listed, all before the CLI reads a prompt. From the
prompt's write, `system/init` follows in 0.06–0.3 s and a short answer's `result` in
0.15–0.4 s. So the start is most of a short request, and everything up to the control
answer (auth, slash commands, permission mode) can be validated before a prompt exists;
only `system/init` (the tool inventory, the connected proposal server, no plugins) must
wait for the prompt, and is still validated for every prewarmed child.

When a request's answer proposes tool calls the host is about to run them and ask again with
the same model and tools, so the provider asks its session's `Prewarmer` to start that next
child at once, as soon as the proposal is known (before the answer is published). A request
that itself answers tool results is inside a tool loop: its provider starts the next child as
just before its own prompt is written, so that even a host whose tools return at once finds
it up; a round that ends the loop (an answer without tool calls) stops that child at once. A prewarmed
child runs with its own private directory holding only what a start reads (the system
prompt, the catalog, the MCP config, an empty TMPDIR) and no prompt. The next request
takes its conversation's child (the request whose messages its own extend started it) when
its `ChildSpec` is equal, and stops it otherwise; else the oldest one for an equal spec; else it
starts a fresh child. A session holds at most one prewarmed child per conversation it carries on at once
(its `slots`): each request starts at most one, and with every slot held the oldest is
stopped (its conversation most likely ended). A prewarmed child not taken within
`IDLE_SECONDS`, or still there at session shutdown, is stopped with its process group and
its directory removed, exactly like a finished one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from hostlink.claude_code.catalog import SERVER_NAME, Catalog
from hostlink.claude_code.conversation import Conversation, ConversationError, Expectation, check_cancelled
from hostlink.claude_code.preflight import CliUnsupported, checked_argv
from hostlink.claude_code.process import (
    ClaudeProcess,
    ClaudeTransportOptions,
    ProcessError,
    build_argv,
    child_environment,
    mcp_config,
    private_dirs,
)
from hostlink.host import CancelSignal, Message, Notifier
from hostlink.host.cancel import cancelled_by
from hostlink.host.private import PrivateStateError, create_private_dir, remove_private_dir, write_private_file

# A follow-up comes as soon as the host's tools have run. 30 s covers a tool that used the MCP
# client's whole default request timeout (15 s) twice over; a child idle for longer is more
# likely abandoned than about to be used, and holds a Node process (~150 MB) meanwhile.
IDLE_SECONDS = 30.0
CONTROL_ID = "hostlink-init"


@dataclass(frozen=True)
class ChildSpec:
    """Everything a child's start depends on: requests with equal specs can use one child.

    `environment` is the child's allowlisted environment without its private TMPDIR.
    """

    executable: str
    model: str
    effort: str | None
    cwd: Path
    environment: tuple[tuple[str, str], ...]
    options: ClaudeTransportOptions
    system_prompt: str
    catalog_json: bytes
    tools: tuple[str, ...]

    @classmethod
    def of(cls, executable: str, model: str, effort: str | None, cwd: Path, environ: Mapping[str, str],
           options: ClaudeTransportOptions, system_prompt: str, catalog: Catalog,
           max_output_tokens: int | None = None) -> ChildSpec:
        environment = tuple(sorted(child_environment(environ, options, max_output_tokens=max_output_tokens).items()))
        return cls(executable, model, effort, cwd, environment, options, system_prompt, catalog.to_json(),
                   catalog.tool_names())


@dataclass
class Child:
    """A started child and its private directory; nothing has been prompted yet."""

    directory: Path
    process: ClaudeProcess
    conversation: Conversation
    cli_version: str | None = None  # what the preflight read from ``claude --version``

    async def close(self) -> str | None:
        """Stop the group and remove the directory; a message when either failed."""
        error = None
        try:
            await self.process.terminate()
        except ProcessError as exc:
            error = str(exc)
        try:
            remove_private_dir(self.directory)
        except (PrivateStateError, OSError):
            error = "could not remove the request's private files"
        return error


async def start_child(spec: ChildSpec) -> Child:
    """Write what a start reads into a new private directory and start the child there.

    The argv is first checked against the CLI (`checked_argv`),
    so a CLI that lacks a needed flag is refused before anything starts, prewarmed or not.
    Raises `ConversationError`; nothing is left behind when it does.
    """
    try:
        directory = create_private_dir("claude-request")
    except (PrivateStateError, OSError) as exc:
        raise ConversationError(f"could not prepare the request's private files ({type(exc).__name__})",
                                code="private_state") from None
    try:
        try:
            prompt_path = write_private_file(directory, "system-prompt.txt", spec.system_prompt)
            catalog_path = write_private_file(directory, "catalog.json", spec.catalog_json)
            config = mcp_config(catalog_path, directory / "violation.json", SERVER_NAME)
            config_path = write_private_file(directory, "mcp.json", config)
            (directory / "tmp").mkdir(mode=0o700)
        except (PrivateStateError, OSError) as exc:
            raise ConversationError(f"could not prepare the request's private files ({type(exc).__name__})",
                                    code="private_state") from None
        argv = build_argv(spec.executable, model=spec.model, system_prompt_file=prompt_path,
                          mcp_config_file=config_path, effort=spec.effort)
        try:
            argv, cli = await checked_argv(argv, dict(spec.environment))
        except CliUnsupported as exc:
            raise ConversationError(str(exc), code=exc.code) from None
        env = {**dict(spec.environment), **private_dirs(directory / "tmp")}
        try:
            process = await ClaudeProcess.start(argv, env, spec.cwd, directory / "stderr.log")
        except ProcessError as exc:
            raise ConversationError(str(exc), code="unavailable") from None
    except BaseException:
        try:  # synchronous: no checkpoint, so no cancellation can cut it short (no shield needed)
            remove_private_dir(directory)
        except (PrivateStateError, OSError):
            pass
        raise
    expect = Expectation(tools=spec.tools, mcp_servers=(SERVER_NAME,), testing=spec.options.testing)
    return Child(directory, process, Conversation(process, expect, CONTROL_ID), cli.shown_version)


@dataclass(eq=False)
class _Warm:
    spec: ChildSpec
    owner: object  # the request it was started ahead of the follow-up of
    messages: tuple[Message, ...]  # that request's: its follow-up's messages extend them
    scope: anyio.CancelScope  # the owner's: its deadline is the idle bound; cancelled when taken or stopped
    child: Child | None = None
    state: str = "starting"  # -> ready -> taken | stopped
    ready: anyio.Event = field(default_factory=anyio.Event)  # set once the state is no longer "starting"
    task: asyncio.Task[None] | None = None


class Prewarmer:
    """At most `slots` prewarmed children for a session (see the module docstring), one per
    request whose follow-up is expected: one for a host that runs a session per
    conversation, one per request slot for `hostlink serve`, whose one session serves
    every client's conversations at once.

    Each child is held by an owner task that starts it, has it answer its `initialize`
    control request and stops it unless a request took it. `take` also says how the
    request gets its child: `prewarmed`, `replaced` (its conversation's child did not match
    it and was stopped) or `fresh`.
    """

    def __init__(self, notifier: Notifier | None = None, slots: int = 1) -> None:
        if slots < 1:
            raise ValueError("a prewarmer needs at least one slot")
        self._notifier = notifier
        self._slots = slots
        self._idle_seconds = IDLE_SECONDS
        self._waiting: list[_Warm] = []  # started or ready, not taken: oldest first
        self._owned: set[_Warm] = set()
        self._closed = False

    @property
    def slots(self) -> int:
        return self._slots

    @property
    def waiting(self) -> int:
        """How many prewarmed children wait for their request (starting or ready)."""
        return len(self._waiting)

    def start(self, spec: ChildSpec, owner: object, messages: Sequence[Message]) -> None:
        """Start the child `spec` describes in the background, for the follow-up of the request
        `owner` (whose messages are `messages`); one per owner (a second call is that child).
        With every slot held, the oldest waiting child is stopped: it is the one most likely
        abandoned."""
        if self._closed or any(warm.owner is owner for warm in self._waiting):
            return
        if len(self._waiting) >= self._slots:
            self._discard(self._waiting[0])
        warm = _Warm(spec, owner, tuple(messages),
                     anyio.CancelScope(deadline=anyio.current_time() + self._idle_seconds))
        self._waiting.append(warm)
        self._owned.add(warm)
        warm.task = asyncio.get_running_loop().create_task(self._own(warm))

    def stop(self, owner: object) -> None:
        """Stop the prewarmed child started for `owner`'s follow-up, if no request took it: the
        round it was started ahead of ended its loop, so nobody is about to ask for it."""
        for warm in self._waiting:
            if warm.owner is owner:
                self._discard(warm)
                return

    def _discard(self, warm: _Warm) -> None:
        self._waiting.remove(warm)
        warm.scope.cancel()

    async def take(self, spec: ChildSpec, messages: Sequence[Message], signal: CancelSignal,
                   deadline: float) -> tuple[Child | None, str]:
        """A prewarmed child for `spec` if one started cleanly (None otherwise), and how the
        request gets its child: the one of the conversation `messages` continue, else the
        oldest for an equal spec (a client that rewrote its history still finds one). The
        conversation's own child, when it does not match, is stopped: nobody else will ask
        for it."""
        own = next((warm for warm in self._waiting if continues(messages, warm.messages)), None)
        if own is not None and own.spec != spec:
            self._discard(own)
        warm = own if own is not None and own.spec == spec else next(
            (warm for warm in self._waiting if warm.spec == spec), None)
        if warm is None:
            return None, "fresh" if own is None else "replaced"
        self._waiting.remove(warm)
        try:
            with cancelled_by(signal) as scope:
                scope.deadline = deadline
                await warm.ready.wait()
        finally:
            if warm.state != "ready":
                warm.scope.cancel()  # cancelled or late: its owner stops it, even mid-start
        check_cancelled(signal)
        if warm.state != "ready":  # its start failed or timed out: a fresh child reports why
            return None, "fresh"
        warm.state = "taken"
        warm.scope.cancel()
        assert warm.child is not None
        warm.child.conversation.signal = signal
        return warm.child, "prewarmed"

    async def aclose(self) -> None:
        """Stop every prewarmed child and wait until each is gone; no more start after this."""
        self._closed = True
        self._waiting.clear()
        owned = list(self._owned)
        for warm in owned:
            warm.scope.cancel()
        with anyio.CancelScope(shield=True):
            for warm in owned:
                if warm.task is not None:
                    await asyncio.wait([warm.task])

    async def _own(self, warm: _Warm) -> None:
        try:
            with warm.scope:
                warm.child = await start_child(warm.spec)
                await warm.child.conversation.initialize()
                warm.state = "ready"
                warm.ready.set()
                await anyio.sleep_forever()  # until taken, stopped or past the idle bound
        except Exception:  # noqa: BLE001 - not usable: the next request starts a fresh child,
            pass  # which reports the failure (a refused start, a bug) on a request that can show it
        finally:
            if warm in self._waiting:
                self._waiting.remove(warm)
            if warm.state != "taken":
                warm.state = "stopped"
                warm.ready.set()
                if warm.child is not None:
                    with anyio.CancelScope(shield=True):
                        error = await warm.child.close()
                    if error is not None and self._notifier is not None:
                        self._notifier.notify(f"a prewarmed claude was not stopped cleanly: {error}", "warning")
            self._owned.discard(warm)  # only now: shutdown waits for a child still being stopped


def continues(messages: Sequence[Message], earlier: tuple[Message, ...]) -> bool:
    """Whether `messages` are a later round of the conversation whose request had `earlier`
    (its history, then the answer and what came after it)."""
    return len(messages) > len(earlier) and tuple(messages[: len(earlier)]) == earlier
