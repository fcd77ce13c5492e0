"""Metrics through the OpenTelemetry metrics API, called with plain, bounded values by extensions.

The same numbers `/metrics` of `hostlink serve` and of the gateway shows, for every host: the
application configures a MeterProvider (Logfire, an OTLP exporter) and reads them; until it
does, nothing is recorded and a call costs one check. The API is imported on first use and the
instruments are made once, when a provider is first seen. Names follow the GenAI and MCP
semantic conventions where they name something; the rest are `hostlink.*`.

Labels are bounded by their callers: a model a registry knows, a configured server, an
advertised tool, an error code; never an id, a prompt or free text.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, Observation

METER_NAME = "hostlink"
# Seconds: the OpenTelemetry default buckets stop at 10 s; a provider request often takes longer.
SECONDS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
TOKENS = (16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576)


class Servers(Protocol):
    """What a running MCP client shows when the numbers are read (the MCP extension's)."""

    def states(self) -> Iterable[tuple[str, str]]:
        """Each configured server with its connection state now."""

    def reconnects(self) -> Mapping[tuple[str, str], int]:
        """Restarts and reconnects so far, by server and kind."""


_loaded: dict[str, Any] = {}  # the API module and the instruments, once made
_servers: weakref.WeakSet[Servers] = weakref.WeakSet()  # read when the application collects


def _api() -> Any:
    metrics = _loaded.get("metrics")
    if metrics is None:
        import opentelemetry.metrics as metrics
        from opentelemetry.metrics._internal import _ProxyMeterProvider  # what the API answers until one is set

        _loaded.update(metrics=metrics, proxy=_ProxyMeterProvider)
    return metrics


def recording() -> bool:
    """Whether the application set a meter provider (in code or by `OTEL_PYTHON_METER_PROVIDER`)."""
    provider = _api().get_meter_provider()
    return not isinstance(provider, (_loaded["proxy"], _loaded["metrics"].NoOpMeterProvider))


def _instruments() -> dict[str, Any]:
    made: dict[str, Any] | None = _loaded.get("instruments")
    if made is None:
        meter = _api().get_meter(METER_NAME)
        made = _loaded["instruments"] = {
            "duration": meter.create_histogram(
                "gen_ai.client.operation.duration", "s", "Time of each provider request",
                explicit_bucket_boundaries_advisory=SECONDS),
            "first_token": meter.create_histogram(
                "gen_ai.client.operation.time_to_first_chunk", "s",
                "Time from a provider request to its first token or tool call",
                explicit_bucket_boundaries_advisory=SECONDS),
            "tokens": meter.create_histogram(
                "gen_ai.client.token.usage", "{token}", "Tokens of each answered provider request",
                explicit_bucket_boundaries_advisory=TOKENS),
            "prewarm": meter.create_counter(
                "hostlink.provider.prewarm", "{request}", "Provider requests by whether a prewarmed child answered"),
            "mcp_call": meter.create_histogram(
                "mcp.client.operation.duration", "s", "Time of each MCP tool call, by server, tool and outcome",
                explicit_bucket_boundaries_advisory=SECONDS),
            "states": meter.create_observable_gauge(
                "hostlink.mcp.server.state", [_states], "1", "Each configured MCP server's connection state (1: now)"),
            "reconnects": meter.create_observable_counter(
                "hostlink.mcp.reconnects", [_reconnects], "{reconnect}",
                "Restarts of crashed MCP servers and asked-for reconnects"),
        }
    return made


def provider_request(provider: str, model: str, *, seconds: float, error: str | None,
                     first_token: float | None = None, response_model: str | None = None,
                     tokens: tuple[int, int] | None = None, prewarmed: bool | None = None) -> None:
    """One provider request for `model` (a registered id): `error` its code when it failed,
    `first_token` seconds to its first token or call, `tokens` (input, output) when answered.
    Called only while `recording()`: the caller checks first, to skip gathering the values."""
    made = _instruments()
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": model}
    if response_model is not None:
        attributes["gen_ai.response.model"] = response_model
    if error is not None:
        attributes["error.type"] = error
    made["duration"].record(seconds, attributes)
    if first_token is not None:
        made["first_token"].record(first_token, attributes)
    if tokens is not None:
        for kind, count in zip(("input", "output"), tokens, strict=True):
            made["tokens"].record(count, {**attributes, "gen_ai.token.type": kind})
    if prewarmed is not None:
        made["prewarm"].add(1, {"gen_ai.provider.name": provider, "hostlink.outcome": "hit" if prewarmed else "miss"})


def mcp_call(server: str, tool: str, outcome: str, seconds: float) -> None:
    """One MCP tool call: `outcome` is `ok`, `tool_error` or hostlink's error code. Called only
    while `recording()`, as `provider_request`."""
    attributes = {"mcp.method.name": "tools/call", "hostlink.mcp.server": server, "gen_ai.tool.name": tool}
    if outcome != "ok":
        attributes["error.type"] = outcome
    _instruments()["mcp_call"].record(seconds, attributes)


def watch(servers: Servers) -> None:
    """Report `servers` while it lives (held weakly: a closed client drops out)."""
    _servers.add(servers)
    if recording():
        _instruments()


def _states(options: CallbackOptions) -> Iterator[Observation]:
    counted: Counter[tuple[str, str]] = Counter()
    for servers in list(_servers):
        counted.update(servers.states())
    observation = _api().Observation
    for (server, state), count in sorted(counted.items()):
        yield observation(count, {"hostlink.mcp.server": server, "hostlink.mcp.state": state})


def _reconnects(options: CallbackOptions) -> Iterator[Observation]:
    counted: Counter[tuple[str, str]] = Counter()
    for servers in list(_servers):
        counted.update(servers.reconnects())
    observation = _api().Observation
    for (server, kind), count in sorted(counted.items()):
        yield observation(count, {"hostlink.mcp.server": server, "hostlink.mcp.reconnect.kind": kind})
