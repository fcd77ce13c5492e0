"""`hostlink mcp add|add-json|remove|get` (and `llm mcp …`): edit the configuration files.

The habits of `claude mcp add`: an entry from flags or from JSON, written to hostlink's
user file (`--scope user`, the default) or the project's `.mcp.json` (`--scope
project`). Every write goes through `hostlink.mcp.config.edit`: checked as a load
would check it, all or nothing, atomic. Nothing here connects to a server.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from hostlink.cli.session import Fail, command_path

if TYPE_CHECKING:
    from hostlink.mcp.config.edit import ConfigFile

SCOPE_OPTION = click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
                            help="user: hostlink's own mcp.json; project: .mcp.json in the working directory.")
LITERAL_OPTION = click.option("--literal", is_flag=True,
                              help="Store values that look like secrets as given (plain text) instead of refusing.")
MAX_STDIN_BYTES = 1024 * 1024


def open_target(scope: str, locked: bool = True) -> ConfigFile:
    """The scope's file, read for an edit under the edit lock (held until the command ends);
    a broken file is a usage failure. Unlocked (a dry run) it only reads: the lock would
    create the file's directory."""
    from hostlink.mcp.config.edit import EditRefused, lock_for_edit, open_file, target_file

    path = target_file(scope, os.environ, Path.cwd())
    if locked:
        try:
            release = lock_for_edit(path, lambda: warn([f"waiting for another edit of {path} to finish"]))
        except OSError as exc:
            raise Fail(f"cannot edit {path} ({exc.strerror or type(exc).__name__})", "error") from None
        click.get_current_context().call_on_close(release)
    try:
        return open_file(path)
    except EditRefused as exc:
        raise Fail(f"{exc}; nothing was written", "invalid_config") from None


def write(file: ConfigFile, document: dict[str, Any]) -> bool:
    """Save, as a one-line failure that says the file is unchanged."""
    from hostlink.mcp.config.edit import EditRefused, check_count, save

    try:
        check_count(file.path, document, os.environ, Path.cwd())
        return save(file, document)
    except EditRefused as exc:
        raise Fail(f"{exc}; nothing was written", "invalid_config") from None
    except OSError as exc:
        raise Fail(f"cannot write {file.path} ({exc.strerror or type(exc).__name__}); the file is unchanged",
                   "error") from None


def check(file: ConfigFile, name: str, raw: Any, literal: bool) -> list[str]:
    """The entry's warnings, or its refusal as a failure."""
    from hostlink.mcp.config.edit import EditRefused, check_entry

    try:
        return check_entry(name, raw, file.path, os.environ, literal=literal)
    except EditRefused as exc:
        raise Fail(f"{exc}; nothing was written", "invalid_config") from None


def warn(lines: list[str]) -> None:
    for line in lines:
        click.echo(f"{command_path()}: {line}", err=True)


def configured_in(name: str, unreadable: list[str] | None = None) -> list[tuple[Path, Any]]:
    """Each configuration file (user and project, in load order) whose mcpServers has
    `name`, with that entry as written; why a file could not be read goes to `unreadable`."""
    from hostlink.mcp.config.load import ConfigError, load_json, project_config_files, read_text, user_config_files

    found = []
    for path in [*user_config_files(os.environ), *project_config_files(Path.cwd())]:
        try:
            text = read_text(path)
            document = load_json(text, path) if text is not None else None
        except ConfigError as exc:
            (unreadable if unreadable is not None else []).append(str(exc))
            continue
        servers = document.get("mcpServers") if isinstance(document, dict) else None
        if isinstance(servers, dict) and name in servers:
            found.append((path, servers[name]))
    return found


def shadowing(path: Path, name: str) -> list[str]:
    """Which other configuration file has `name` too, and which entry wins (a later file)."""
    from hostlink.mcp.config.load import project_config_files, user_config_files

    order = [p.absolute() for p in [*user_config_files(os.environ), *project_config_files(Path.cwd())]]
    mine = order.index(path.absolute()) if path.absolute() in order else -1
    return [f"{name}: the entry in {other} takes precedence over this one" if order.index(other.absolute()) > mine
            else f"{name}: this entry replaces the one in {other}"
            for other, _ in configured_in(name) if other.absolute() != path.absolute()]


def _add(scope: str, name: str, raw: dict[str, Any], literal: bool, *, about: str = "", notes: Sequence[str] = (),
         updates: Callable[[Any], bool] = lambda existing: False) -> None:
    """Write NAME's entry; an existing one only when `updates` says it may be replaced.
    `about` follows the name in the line that says so, then `notes`, each a line."""
    file = open_target(scope)
    existing = file.servers.get(name)
    if existing is not None and not updates(existing):
        raise Fail(f"{name!r} is already configured in {file.path}; remove it first "
                   f"(`{command_path()} remove {name}{'' if scope == 'user' else ' --scope project'}`); "
                   "nothing was written", "invalid_config")
    warnings = check(file, name, raw, literal)
    from hostlink.mcp.config.edit import with_entries

    write(file, with_entries(file, {name: raw}))
    click.echo(f"updated MCP server {name!r}{about} in {file.path}" if existing is not None
               else f"added MCP server {name!r}{about} to {file.path}")
    for line in notes:
        click.echo(f"  {line}")
    warn(warnings + shadowing(file.path, name))


def _pairs(values: tuple[str, ...], sep: str, what: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, found, rest = value.partition(sep)
        if not found or not key.strip():
            raise Fail(f"{what} must be given as {'K=V' if sep == '=' else 'NAME: VALUE'}", "usage")
        key = key.strip()
        if key in pairs:
            raise Fail(f"{what} {key!r} is given twice", "usage")
        pairs[key] = rest if sep == "=" else rest.strip()
    return pairs


@click.command(name="add")
@click.argument("name")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND [ARG…]]")
@click.option("--env", "env", multiple=True, metavar="K=V", help="An environment variable of a stdio server.")
@click.option("--cwd", help="The working directory of a stdio server.")
@click.option("--url", help="The URL of a Streamable HTTP server.")
@click.option("--header", "headers", multiple=True, metavar="'K: V'", help="An HTTP header of a URL server.")
@click.option("--auth", type=click.Choice(["bearer", "oauth"]), help="The authentication of a URL server.")
@click.option("--bearer-env", metavar="VAR", help='With --auth bearer: the variable that holds the token.')
@click.option("--client-id", help="With --auth oauth: a registered client id.")
@click.option("--tasks", is_flag=True, help='Let the server run calls as tasks ("tasks": true): a long call '
                                           "leaves a handle to check later.")
@click.option("--from-registry", "from_registry", metavar="SERVER[@VERSION]",
              help="Build the entry from the MCP registry's server.json (see `search`).")
@click.option("--package", type=click.Choice(["npm", "pypi", "oci", "nuget", "mcpb", "remote"]),
              help="With --from-registry: which way to run it (default: the first of npm, pypi, oci, nuget, "
                   "mcpb, remote it offers).")
@click.option("--input", "inputs", multiple=True, metavar="KEY=VALUE",
              help="With --from-registry: an input of the server (again for a repeated one).")
@SCOPE_OPTION
@LITERAL_OPTION
def add_command(name: str, command: tuple[str, ...], env: tuple[str, ...], cwd: str | None, url: str | None,
                headers: tuple[str, ...], auth: str | None, bearer_env: str | None, client_id: str | None,
                tasks: bool, from_registry: str | None, package: str | None, inputs: tuple[str, ...],
                scope: str, literal: bool) -> None:
    """Add server NAME: a command after --, --url, or --from-registry.

    \b
    add NAME [--env K=V]… [--cwd DIR] [--tasks] -- COMMAND [ARG…]
    add NAME --url URL [--tasks] [--header 'K: V']… [--auth bearer --bearer-env VAR | --auth oauth [--client-id ID]]
    add NAME --from-registry SERVER[@VERSION] [--package KIND] [--input KEY=VALUE]… [--tasks]
    """
    if from_registry is not None:
        if command or url or env or cwd is not None or headers or auth or bearer_env or client_id:
            raise Fail("--from-registry builds the whole entry: give no command, --url, --env, --cwd, --header "
                       "or --auth with it", "usage")
        from hostlink.cli.mcp.registry import entry_from_registry, inputs_of, same_source

        built = entry_from_registry(name, from_registry, package, inputs_of(inputs))
        built.entry.update({"tasks": True} if tasks else {})
        _add(scope, name, built.entry, literal, about=built.about, notes=built.notes,
             updates=lambda existing: same_source(existing, built.entry))
        return
    if package or inputs:
        raise Fail("--package and --input go with --from-registry", "usage")
    if bool(command) == bool(url):
        raise Fail("give exactly one of a command (after --) or --url", "usage")
    raw: dict[str, Any]
    if command:
        if headers or auth or bearer_env or client_id:
            raise Fail("--header, --auth, --bearer-env and --client-id are for a --url server", "usage")
        raw = {"command": command[0]}
        raw.update({"args": list(command[1:])} if command[1:] else {})
        raw.update({"env": _pairs(env, "=", "--env")} if env else {})
        raw.update({"cwd": cwd} if cwd is not None else {})
    else:
        if env or cwd is not None:
            raise Fail("--env and --cwd are for a command (stdio) server", "usage")
        if (auth == "bearer") != (bearer_env is not None):
            raise Fail("--auth bearer and --bearer-env VAR go together", "usage")
        if client_id is not None and auth != "oauth":
            raise Fail("--client-id needs --auth oauth", "usage")
        raw = {"url": url}
        raw.update({"headers": _pairs(headers, ":", "--header")} if headers else {})
        raw.update({"auth": auth} if auth else {})
        raw.update({"bearerTokenEnv": bearer_env} if bearer_env else {})
        raw.update({"oauth": {"clientId": client_id}} if client_id else {})
    raw.update({"tasks": True} if tasks else {})
    _add(scope, name, raw, literal)


@click.command(name="add-json")
@click.argument("name")
@click.argument("entry", metavar="JSON")
@SCOPE_OPTION
@LITERAL_OPTION
def add_json_command(name: str, entry: str, scope: str, literal: bool) -> None:
    """Add server NAME from its JSON entry (as in mcpServers; "-": read it from stdin)."""
    import json

    text = sys.stdin.read(MAX_STDIN_BYTES + 1) if entry == "-" else entry
    if len(text) > MAX_STDIN_BYTES:
        raise Fail("the entry is larger than 1 MiB", "usage")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise Fail(f"the entry is not valid JSON{where}", "usage") from None
    if not isinstance(raw, dict):
        raise Fail('the entry must be a JSON object, such as {"command": "…", "args": […]}', "usage")
    _add(scope, name, raw, literal)


@click.command(name="remove")
@click.argument("name")
@SCOPE_OPTION
def remove_command(name: str, scope: str) -> None:
    """Remove server NAME from the scope's file."""
    from hostlink.mcp.config.edit import without_entry

    file = open_target(scope)
    if name not in file.servers:
        elsewhere = ", ".join(str(path) for path, _ in configured_in(name))
        raise Fail(f"{file.path} has no server named {name!r}" + (f"; it is configured in {elsewhere}" if elsewhere
                                                                  else ""), "unknown_server")
    write(file, without_entry(file, name))
    click.echo(f"removed MCP server {name!r} from {file.path}")
    warn([f"{name}: still configured in {other}" for other, _ in configured_in(name)])


@click.command(name="get")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help='{"name", "source", "entry"} on stdout.')
@click.pass_context
def get_command(ctx: click.Context, name: str, as_json: bool) -> None:
    """Show server NAME as configured (secrets only as their ${VAR} references)."""
    import json

    from hostlink.mcp.config.edit import hide_secrets
    from hostlink.mcp.config.load import project_config_files

    project = project_config_files(Path.cwd())
    trusted = bool((ctx.obj or {}).get("trust_project"))
    unreadable: list[str] = []
    found = configured_in(name, unreadable)
    if not found and unreadable:
        raise Fail(f"no readable configuration file has a server named {name!r}; {unreadable[0]}", "invalid_config")
    if not found:
        raise Fail(f"no configuration file has a server named {name!r}", "unknown_server")
    source, raw = ([item for item in found if trusted or item[0] not in project] or found)[-1]
    shown = hide_secrets(raw)
    if as_json:
        click.echo(json.dumps({"name": name, "source": str(source), "entry": shown}, ensure_ascii=True))
        return
    click.echo(f"{name}: {source}" + ("" if trusted or source not in project
                                      else " (not used: the project is not trusted; --trust-project)"))
    click.echo(json.dumps(shown, indent=2, ensure_ascii=True))
    warn([f"{name}: also in {path}" for path, _ in found if path != source])
