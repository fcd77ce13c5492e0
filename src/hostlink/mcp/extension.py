"""The MCP client as a host extension: the `mcp` tool and the `/mcp` command.

Registration does no I/O. Configuration is read at session start, connections are made at
first use, and shutdown closes every client, stops every server process and removes the
session's overflow files.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hostlink.host import CancelSignal, CommandFailed, CommandSpec, Notifier, Registry, Session, meters
from hostlink.host.output import bound_text
from hostlink.mcp import render
from hostlink.mcp.errors import McpError
from hostlink.mcp.runtime.visibility import model_visible
from hostlink.mcp.tool import mcp_tool

if TYPE_CHECKING:
    from hostlink.host.output import OutputSession
    from hostlink.mcp.auth.manager import AuthManager
    from hostlink.mcp.config.schema import ServerConfig
    from hostlink.mcp.metering import ServerNumbers
    from hostlink.mcp.runtime.cache import ToolCache
    from hostlink.mcp.runtime.clients import McpRuntime
    from hostlink.mcp.runtime.roots import Offered

COMMAND_USAGE = ("usage: /mcp status | reload | tools SERVER | connect SERVER | disconnect SERVER"
                 " | reconnect SERVER | auth SERVER | logout SERVER  (--verbose: all a failing server said)")
SignedIn = Callable[[str], Awaitable[None]]
AuthFactory = Callable[["Mapping[str, ServerConfig]", "Notifier | None", "SignedIn | None", str, bool],
                       "AuthManager | None"]


def default_auth(servers: Mapping[str, ServerConfig], notifier: Notifier | None = None,
                 on_signed_in: SignedIn | None = None, command: str = "hostlink",
                 links: bool = True) -> AuthManager | None:
    """An AuthManager only when some enabled HTTP server uses auth (it loads keyring and the SDK).

    `notifier` hears when a sign-in whose link was handed out ends; `on_signed_in(name)`
    runs once its tokens are stored; `command` is the host's, for advice; `links` whether
    the session lasts for a sign-in by link started in the background.
    """
    if not any(getattr(config, "auth", None) and not config.disabled for config in servers.values()):
        return None
    from hostlink.mcp.auth.manager import AuthManager

    return AuthManager(notifier=notifier, on_signed_in=on_signed_in, command=command, links=links)


def tool_cache(servers: Mapping[str, ServerConfig], environ: Mapping[str, str] | None = None) -> ToolCache | None:
    """The tool cache, only when some server opted in with `cacheTools` (none: no file at all)."""
    if not any(config.cache_tools for config in servers.values()):
        return None
    import os

    from hostlink.mcp.runtime.cache import ToolCache, cache_directory

    return ToolCache(cache_directory(os.environ if environ is None else environ))


class McpExtension:
    """`servers` replaces reading the configuration files (the demo and tests use it);
    `roots` is a host's own roots, offered to servers with `"roots": true` when it has
    them (see `hostlink.mcp.runtime.roots`); `auto_restart` restarts a crashed server at a
    later use, for a host that cannot ask for a reconnect (see `hostlink.mcp.runtime.restart`)."""

    def __init__(self, *, servers: Mapping[str, ServerConfig] | None = None,
                 environ: Mapping[str, str] | None = None, auth_factory: AuthFactory = default_auth,
                 broken: Mapping[str, str] | None = None, roots: Offered | None = None,
                 auto_restart: bool = False) -> None:
        self._roots = roots
        self._auto_restart = auto_restart
        self._fixed_servers = dict(servers) if servers is not None else None
        self._fixed_broken = dict(broken or {})  # with ``servers``: the entries that cannot be used
        self._environ = environ
        self._auth_factory = auth_factory
        self.runtime: McpRuntime | None = None
        self.numbers: ServerNumbers | None = None  # its servers' states and reconnects, for metrics
        self.output: OutputSession | None = None
        self.sources: dict[str, Any] = {}
        self._auth: AuthManager | None = None
        self._problem: str | None = None
        self._session: Session | None = None  # what a reload reads the files for

    def register(self, registry: Registry) -> None:
        registry.register_tool(mcp_tool(self._state, self._reload))
        registry.register_command(CommandSpec("mcp", "MCP servers: " + COMMAND_USAGE[7:], self._command))
        registry.on_session_start(self._start)
        registry.on_session_shutdown(self._shutdown)

    def _state(self) -> tuple[McpRuntime, OutputSession | None] | None:
        if self._problem is not None:
            raise McpError(self._problem)
        if self.runtime is None:
            return None
        return self.runtime, self.output

    async def _start(self, session: Session) -> None:
        from hostlink.mcp.runtime.clients import McpRuntime

        self._session = session
        servers: Mapping[str, ServerConfig] = {}
        broken: Mapping[str, str] = {}
        if self._fixed_servers is not None:
            servers = self._fixed_servers
        else:
            from hostlink.mcp.config.load import ConfigError, load_config

            try:
                loaded = load_config(session.cwd, session.project_trusted, self._environ)
            except ConfigError as exc:
                self._problem = f"the MCP configuration is invalid: {exc}"
                session.notifier.notify(self._problem, "error")
            else:
                servers, broken, self.sources = loaded.servers, loaded.broken, dict(loaded.sources)
                for name in sorted(broken):
                    session.notifier.notify(f"MCP server {name!r} is misconfigured: {broken[name]}", "warning")
                if loaded.ignored_project_servers:
                    session.notifier.notify(
                        "MCP servers from the untrusted project were ignored: "
                        + ", ".join(loaded.ignored_project_servers), "warning")
        if session.lasting:
            from hostlink.mcp.runtime.prefetch import import_in_background

            import_in_background(servers)
        self._auth = self._auth_factory(servers, session.notifier, self._signed_in, session.command, session.lasting)
        elicitation = sampling = None
        if session.ask is not None:  # a server may ask the person only where someone can answer
            from hostlink.mcp.runtime.elicitation import elicitation_for

            elicitation = elicitation_for(session.ask, session.notifier)
            if session.complete is not None:
                from hostlink.mcp.runtime.sampling import sampling_for

                sampling = sampling_for(session.ask, session.complete, session.notifier)
        from hostlink.mcp.metering import ServerNumbers
        from hostlink.mcp.runtime.restart import Restarts
        from hostlink.mcp.runtime.roots import Roots

        directory = session.cwd if session.project_trusted else None
        restarts = Restarts(session.notifier, auto=self._auto_restart)
        self.runtime = McpRuntime(servers, auth=self._auth, command=session.command, elicitation=elicitation,
                                  sampling=sampling, broken={**self._fixed_broken, **broken},
                                  root=Roots(directory, self._roots),
                                  cache=tool_cache(servers, self._environ), restarts=restarts)
        self.numbers = ServerNumbers(self.runtime, restarts)
        meters.watch(self.numbers)  # held weakly: gone with the session
        self.output = session.output

    async def _signed_in(self, name: str) -> None:
        """A sign-in finished: a setup that failed for want of it is reset, so the next use connects."""
        runtime = self.runtime
        if runtime is not None and name in runtime.servers and runtime.snapshot(name).state == "failed":
            await runtime.reconnect(name)

    async def _shutdown(self) -> None:
        runtime, auth = self.runtime, self._auth
        self.runtime = self._auth = self.output = self.numbers = None
        try:
            if runtime is not None:
                await runtime.aclose()
        finally:
            if auth is not None:
                await auth.aclose()

    async def _command(self, argv: Sequence[str], signal: CancelSignal) -> str:
        verbose = "--verbose" in argv
        if list(argv) == ["reload"]:
            return await self._reload()
        try:
            state = self._state()
            if state is None:
                raise CommandFailed("the MCP client is not running")
            return await run_command(state[0], [arg for arg in argv if arg != "--verbose"])
        except McpError as exc:  # for a person: the one line, then what the server said
            # ``from exc``: a host can tell the kind of failure (error_code) by its cause
            raise CommandFailed("\n".join([str(exc), *render.server_words(exc, verbose=verbose)])) from exc

    async def _reload(self) -> str:
        """`/mcp reload`: read the files again; a broken file changes nothing and says why."""
        from hostlink.mcp.config.load import ConfigError, load_config

        session, runtime = self._session, self.runtime
        if session is None or runtime is None:
            raise CommandFailed("the MCP client is not running")
        if self._fixed_servers is not None:
            raise CommandFailed("this host gave the MCP client its servers: there is no configuration file to reload")
        trusted = session.trust_again() if session.trust_again is not None else session.project_trusted
        try:
            loaded = load_config(session.cwd, trusted, self._environ)
        except ConfigError as exc:
            raise CommandFailed(
                f"the MCP configuration was not reloaded (the previous one stays in use): {exc}") from None
        if self._auth is None:
            self._auth = self._auth_factory(loaded.servers, session.notifier, self._signed_in, session.command,
                                            session.lasting)
        changes = await runtime.reconfigure(loaded.servers, loaded.broken, auth=self._auth,
                                            cache=tool_cache(loaded.servers, self._environ))
        self._problem, self.sources = None, dict(loaded.sources)
        lines = [f"MCP configuration reloaded: {sum(map(len, changes.values()))} server(s) changed"]
        lines += [f"{kind}: {', '.join(names)}" + (" (reset: the next use connects)" if kind == "changed" else "")
                  for kind, names in changes.items() if names]
        lines += [f"{name}: misconfigured: {loaded.broken[name]}" for name in sorted(loaded.broken)]
        if loaded.ignored_project_servers:
            lines.append("ignored, from the untrusted project: " + ", ".join(loaded.ignored_project_servers))
        return "\n".join(lines)


async def run_command(runtime: McpRuntime, argv: list[str]) -> str:
    """`/mcp …` for interactive hosts: short human lines, never schemas."""
    if argv in ([], ["status"]):
        return "\n".join(render.status_lines(runtime))
    if len(argv) != 2 or argv[0] not in ("tools", "connect", "disconnect", "reconnect", "auth", "logout"):
        return COMMAND_USAGE
    verb, name = argv
    if verb in ("auth", "logout"):
        return await _sign_in_command(runtime, verb, name)
    if verb == "tools":
        listed = await runtime.list_tools(name)
        tools = [tool for tool in listed if model_visible(tool, runtime.snapshot(name).task_tools)]
        # the same bounds as the model's answers: 50 KiB / 2,000 lines, said where cut
        return bound_text("\n".join(render.tool_line(tool) for tool in tools), None) or f"{name}: no tools"
    if verb == "connect":
        await runtime.connect(name)
        await runtime.list_tools(name)
        return render.snapshot_line(runtime.snapshot(name))
    if verb == "disconnect":
        return render.snapshot_line(await runtime.disconnect(name))
    return render.reconnected(await runtime.reconnect(name))


async def _sign_in_command(runtime: McpRuntime, verb: str, name: str) -> str:
    """`/mcp auth` answers the authorization link (never opens a browser); `/mcp logout`
    reports success only after the keyring confirmed the record is gone."""
    from hostlink.mcp.auth.signin import link_signer, sign_in, sign_in_prompt, signed_out

    config = runtime.config(name)
    if verb == "auth":
        return sign_in_prompt(name, await sign_in(runtime.auth, name, config))
    signer, server = link_signer(runtime.auth, name, config)
    revocation = await signer.logout(name, server)
    await runtime.reconnect(name)  # the connection must not keep using the removed sign-in
    return signed_out(name, revocation)
