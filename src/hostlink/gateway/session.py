"""The gateway's host session: the MCP extension, project trust decided as every host
decides it, the MCP host as the one who answers questions, and configuration re-read when
its files change."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hostlink.host import CancelSignal, CommandFailed, Context, Extension, StreamEvent
from hostlink.host.output import strip_controls
from hostlink.host.session import HostSession
from hostlink.host.trust import project_trust

if TYPE_CHECKING:
    from hostlink.gateway.peer import Peer

Fingerprint = tuple[tuple[str, int, int] | None, ...]
WATCH_SECONDS = 1.0  # between two looks at the configuration files while nothing asks


class StderrNotifier:
    """Notices on stderr, never on the protocol stream (stdout)."""

    def notify(self, message: str, level: str = "info") -> None:
        print(f"hostlink mcp serve {level}: {strip_controls(message)}", file=sys.stderr, flush=True)


class GatewaySession(HostSession):
    """A host session whose model answers (MCP sampling) come from the MCP host."""

    def __init__(self, extensions: Sequence[Extension], peer: Peer) -> None:
        super().__init__(extensions, command="hostlink", lasting=True)
        self._peer = peer

    def complete(self, model: str, context: Context, signal: CancelSignal) -> AsyncIterator[StreamEvent]:
        return self._peer.complete(model, context, signal)


class ConfigWatch:
    """Whether the configuration changed since the last look: the size and mtime of the few
    files a load reads (the user's, the project's) and of the trust records (trusting the
    project brings its files in).

    Looked at on every request and once every `WATCH_SECONDS` while serving: five `stat`
    calls a second cost nothing measurable, work alike on Linux, macOS and Windows, and see
    a file that does not exist yet, a directory made later and an editor's replace-by-rename,
    which file notifications (inotify, FSEvents, ReadDirectoryChangesW) each handle their
    own way and would need a watcher per missing parent directory."""

    def __init__(self, cwd: Path, environ: Mapping[str, str]) -> None:
        from hostlink.host.trust import records_file
        from hostlink.mcp import project_config_files, user_config_files

        self._files = [*user_config_files(environ), *project_config_files(cwd), records_file(environ)]
        self._seen = self._fingerprint()

    def _fingerprint(self) -> Fingerprint:
        def one(path: Path) -> tuple[str, int, int] | None:
            try:
                stat = path.stat()
            except OSError:
                return None
            return (str(path), stat.st_mtime_ns, stat.st_size)

        return tuple(one(path) for path in self._files)

    def changed(self) -> bool:
        now = self._fingerprint()
        changed, self._seen = now != self._seen, now
        return changed


async def start(host: HostSession, peer: Peer, *, cwd: Path, environ: Mapping[str, str], trust_flag: bool,
                notifier: StderrNotifier) -> None:
    """Start `host` in `cwd` with project trust decided as for every host (records,
    `--trust-project`, HOSTLINK_TRUST_PROJECT), decided anew at a reload."""
    decided = project_trust(cwd, environ, flag=trust_flag)
    if decided.warning:
        notifier.notify(decided.warning, "warning")
    await host.start(cwd=cwd, project_trusted=decided.trusted, notifier=notifier, ask=peer.ask,
                     trust_again=lambda: project_trust(cwd, environ, flag=trust_flag).trusted)


async def reload(host: HostSession, notifier: StderrNotifier) -> None:
    """Read the configuration again (a broken file keeps the previous one, and says why)."""
    try:
        notifier.notify((await host.run_command("mcp", ["reload"], CancelSignal())).replace("\n", "; "))
    except CommandFailed as failed:
        notifier.notify(str(failed), "warning")
