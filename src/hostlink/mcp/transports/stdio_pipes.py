"""A stdio server process and its pipes, as the SDK client's transport streams.

The SDK's own stdio client rebuilds its buffer on every chunk (a long line costs quadratic
time), decodes strictly (one invalid byte ends the reader while the session still looks
connected) and signals the server's process group only when the server outlives its stdin.
Here the same protocol framing (one JSON-RPC message a line) is read linearly into a bounded
buffer, decoded with replacement characters, and every close stops the server's whole tree
(`hostlink.host.platform.processes`: its process group on POSIX, its Job Object on Windows)
and every process the server started, whether or not the server itself has exited.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import anyio
import anyio.abc

from hostlink.host.platform.commands import resolve
from hostlink.host.platform.processes import ChildTree, end_process, start_child
from hostlink.mcp.errors import CallFailed, McpError

if TYPE_CHECKING:
    from hostlink.mcp.config.schema import StdioServer

MAX_LINE_BYTES = 64 * 1024 * 1024  # one message, as for HTTP
MAX_TYPED_ITEMS = 100_000  # "type" keys in one message: a million content items took 2 GiB as SDK models
_LEADING_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")')
READ_BYTES = 1024 * 1024
STDIN_GRACE_SECONDS = 2.0  # after stdin closes, before the group is signalled (the MCP spec's order)
KILL_GRACE_SECONDS = 1.0
NOISE_BYTES, NOISE_CHARS = 1024, 200  # of the first stdout line that is not JSON-RPC, for a person


class LineReader:
    """Splits a byte stream into lines in time linear in its size; a line over `limit` is
    reported as `None`, and its reader ends the stream there (what follows is not split)."""

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self._buffer = bytearray()
        self._scanned = 0  # where the search for the next newline resumes
        self._limit = limit

    def feed(self, chunk: bytes) -> list[bytes | None]:
        self._buffer += chunk
        lines: list[bytes | None] = []
        start = 0
        while (end := self._buffer.find(b"\n", max(start, self._scanned))) >= 0:
            with memoryview(self._buffer) as view:  # one copy of a long line, not two
                lines.append(bytes(view[start:end]))
            start = end + 1
        del self._buffer[:start]
        self._scanned = len(self._buffer)
        if len(self._buffer) > self._limit:
            self._buffer.clear()
            self._scanned = 0
            lines.append(None)
        return lines


def _server_tree(leader: int) -> dict[int, str]:
    """The live processes of the server, by pid with their start time: its process group
    (which outlives the leader) and every descendant, also those that left the group with
    setsid (Linux /proc). The start time tells a process from a later one with its pid."""
    table: dict[int, tuple[int, int, str, str]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return {}
    for entry in entries:
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                table[int(entry)] = (int(fields[1]), int(fields[2]), fields[0], fields[19])  # ppid pgrp state start
            except (OSError, IndexError, ValueError):
                continue
    tree = {pid for pid, (_, group, _, _) in table.items() if group == leader} | {leader}
    queue = [leader]
    while queue:
        parent = queue.pop()
        for pid, (ppid, _, _, _) in table.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                queue.append(pid)
    return {pid: table[pid][3] for pid in tree if pid in table and table[pid][2] != "Z"}


def _still_running(known: dict[int, str], leader: int) -> dict[int, str]:
    """The server's tree now, with the `known` processes that still run (same start time)."""
    now = _server_tree(leader)
    for pid, started in known.items():
        if pid not in now and _server_tree(pid).get(pid) == started:
            now[pid] = started
    return now


def _message(line: bytes) -> Any:
    """The SDK message on one line, or None when it is none; invalid UTF-8 is replaced."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        pass
    try:  # the bytes as given failed: with bad UTF-8 replaced the message may still stand
        return SessionMessage(jsonrpc_message_adapter.validate_json(line.decode("utf-8", "replace"), by_name=False))
    except ValueError:
        return None


class ServerPipes:
    """One server process. `refusal` says why the transport gave up on the server's output
    (a message over the bound); `pid` is the server's, once started."""

    def __init__(self, config: StdioServer, errlog: TextIO) -> None:
        self._config = config
        self._errlog = errlog
        self.pid: int | None = None
        self.refusal: McpError | None = None
        self.ended = False  # the server's stdout is closed (or was given up on)
        self.refusals = 0
        self.noise = 0  # lines on stdout that are not JSON-RPC: dropped, never handed on
        self.first_noise: str | None = None  # the first of them, sanitized and cut: for a person only

    @asynccontextmanager
    async def streams(self) -> AsyncIterator[tuple[Any, Any]]:
        from mcp.client.stdio import get_default_environment
        from mcp.shared.message import SessionMessage

        config = self._config
        env = get_default_environment() | dict(config.env)
        process, tree = await start_child(resolve(config.command, config.args, env), env=env,
                                          stderr=self._errlog, cwd=config.cwd)
        self.pid = process.pid
        read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as group:
            group.start_soon(self._read, process, read_in)
            group.start_soon(self._write, process, write_out)
            try:
                yield read_out, write_in
            finally:
                with anyio.CancelScope(shield=True):
                    await self._stop(process, tree)
                    for stream in (read_out, write_in, read_in, write_out):
                        await stream.aclose()
                group.cancel_scope.cancel()

    async def _read(self, process: anyio.abc.Process, sink: Any) -> None:
        try:
            async with sink:
                try:
                    await self._pump(process, sink)
                finally:
                    self.ended = True  # before the session hears the end
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the session is gone

    async def _pump(self, process: anyio.abc.Process, sink: Any) -> None:
        """Every line of stdout as a message until it closes, or until one is over the bound."""
        assert process.stdout is not None
        lines = LineReader()
        while True:
            try:
                chunk = await process.stdout.receive(READ_BYTES)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                return  # the server closed stdout: the session sees the connection end
            for line in lines.feed(chunk):
                if line is None:
                    self._refuse(CallFailed(f"the server sent a message over {MAX_LINE_BYTES // 2**20} MiB; "
                                            "the connection was closed"))
                    return
                if line.count(b'"type"') > MAX_TYPED_ITEMS:
                    answer = self._refuse(CallFailed(
                        f"the server sent a message of more than {MAX_TYPED_ITEMS:,} items; it was not read"), line)
                    if answer is None:  # nobody to answer: the connection cannot go on
                        return
                    await sink.send(answer)
                    continue
                message = _message(line)
                if message is None:
                    self._noted(line)
                    continue
                await sink.send(message)

    def _refuse(self, error: McpError, line: bytes = b"") -> Any:
        """Record a refused message; the error answer for the request it answered, if its id
        leads the line (so that request fails now rather than at its timeout)."""
        self.refusal, self.refusals = error, self.refusals + 1
        found = _LEADING_ID.match(line[:512])
        if found is None:
            return None
        from mcp.shared.message import SessionMessage
        from mcp_types import ErrorData, JSONRPCError

        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=json.loads(found.group(1)),
                                           error=ErrorData(code=-32603, message=str(error))))

    def _noted(self, line: bytes) -> None:
        from hostlink.host.output import one_line

        self.noise += 1
        if self.first_noise is None:
            self.first_noise = one_line(line[:NOISE_BYTES].decode("utf-8", "replace"), NOISE_CHARS)

    async def _write(self, process: anyio.abc.Process, source: Any) -> None:
        assert process.stdin is not None
        try:
            async with source:
                async for message in source:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8", "replace"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return

    async def _stop(self, process: anyio.abc.Process, tree: ChildTree) -> None:
        """Close stdin, give the server its grace, then stop its tree and its descendants —
        those seen before stdin closed too, which an exiting server leaves orphaned (a
        POSIX process table walk; on Windows the job holds them all)."""
        assert process.stdin is not None and process.stdout is not None
        known = _server_tree(process.pid)
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        with anyio.move_on_after(STDIN_GRACE_SECONDS):
            while process.returncode is None:
                await anyio.sleep(0.02)
        try:
            for forced in (False, True):
                known = _still_running(known, process.pid)
                if not known and not tree.alive():
                    break
                tree.stop(forced=forced)
                for pid in known:
                    end_process(pid, forced=forced)
                with anyio.move_on_after(KILL_GRACE_SECONDS):
                    while _still_running(known, process.pid) or tree.alive():
                        await anyio.sleep(0.02)
        finally:
            tree.close()
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()
        with anyio.move_on_after(KILL_GRACE_SECONDS), suppress(ProcessLookupError):
            await process.aclose()
