"""`GET /metrics`: the endpoint's numbers and the plan's last rate-limit report, in Prometheus
text format, from `prometheus-client`.

Behind the same Host / Origin / key check as every route. Each app has a registry of its own
(two servers in one process never mix their numbers). Labels are bounded: the route from a
fixed set (`hostlink.serve.tracing.route`), the status code, and the model as the alias the
provider resolves it to (`other` for a name it does not know), never an id, a prompt or a
client's free text.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from hostlink.serve import access_log
from hostlink.serve.core import model_alias, provider_spec
from hostlink.serve.tracing import route

if TYPE_CHECKING:
    from hostlink.claude_code import PlanUsage

Scope = MutableMapping[str, Any]
_UNSAFE = re.compile(r"[^a-z0-9_]")
_SECONDS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class _Plan(Collector):
    """The plan's last report, read when scraped: each window's share used and its reset time
    (window names are the CLI's own few, `five_hour`, `seven_day` …, cut to plain characters)."""

    def __init__(self, latest: Callable[[], PlanUsage | None]) -> None:
        self._latest = latest

    def collect(self) -> Iterator[GaugeMetricFamily]:
        used = GaugeMetricFamily("hostlink_plan_utilization", "Share of each plan window used (1 = all)",
                                 labels=["window"])
        resets = GaugeMetricFamily("hostlink_plan_resets_at_seconds", "When each plan window resets (Unix time)",
                                   labels=["window"])
        usage = self._latest()
        for window in usage.windows if usage is not None else ():
            name = _UNSAFE.sub("_", window.name)[:32]
            if window.utilization is not None:
                used.add_metric([name], window.utilization)
            if window.resets_at is not None:
                resets.add_metric([name], window.resets_at)
        yield used
        yield resets


class ServeMetrics:
    """The numbers of one `hostlink serve` app; `in_flight` and `slots` are read when scraped."""

    def __init__(self, in_flight: Callable[[], int], slots: int, plan: Callable[[], PlanUsage | None]) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=True)
        registry.register(_Plan(plan))
        self.requests = Counter("hostlink_serve_requests", "HTTP requests answered, by route, status and model",
                                ["endpoint", "status", "model"], registry=registry)
        self.duration = Histogram("hostlink_serve_request_duration_seconds", "Time to the end of each answer",
                                  ["endpoint"], buckets=_SECONDS, registry=registry)
        self.first_token = Histogram("hostlink_serve_time_to_first_token_seconds",
                                     "Time from a generation request to its first token or tool call",
                                     ["endpoint"], buckets=_SECONDS, registry=registry)
        self.tokens = Counter("hostlink_serve_tokens", "Tokens of answered generation requests",
                              ["direction"], registry=registry)
        self.prewarm = Counter("hostlink_serve_prewarm", "Generation requests by whether a prewarmed claude answered",
                               ["outcome"], registry=registry)
        Gauge("hostlink_serve_in_flight", "Generation requests running now", registry=registry).set_function(
            lambda: float(in_flight()))
        Gauge("hostlink_serve_slots", "Generation requests allowed at once (--max-concurrent)",
              registry=registry).set(slots)

    def record(self, endpoint: str, status: int, model: str, seconds: float, facts: dict[str, Any],
               started: float) -> None:
        self.requests.labels(endpoint, str(status), model).inc()
        self.duration.labels(endpoint).observe(seconds)
        if "first_token" in facts:
            self.first_token.labels(endpoint).observe(max(0.0, facts["first_token"] - started))
        if "input_tokens" in facts:
            self.tokens.labels("input").inc(facts["input_tokens"])
            self.tokens.labels("output").inc(facts["output_tokens"])
        if facts.get("prewarmed") is not None:
            self.prewarm.labels("hit" if facts["prewarmed"] else "miss").inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)


class CountRequests:
    """ASGI middleware: each HTTP request counted once its answer is sent (`/metrics` too)."""

    def __init__(self, app: Callable[..., Awaitable[None]], metrics: ServeMetrics, providers: Any) -> None:
        self.app = app
        self.metrics = metrics
        self.providers = providers

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = [0]

        async def sending(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            facts = access_log.facts(scope)
            self.metrics.record(route(scope.get("path", "")), status[0], self._model(facts.get("model")),
                                time.monotonic() - started, facts, started)

    def _model(self, name: Any) -> str:
        if not isinstance(name, str):
            return "-"
        spec = model_alias(provider_spec(self.providers), name)
        return "other" if spec is None else spec.id


def metrics_route(metrics: ServeMetrics) -> Callable[[Any], Awaitable[Any]]:
    async def answer(request: Any) -> Any:
        from starlette.responses import Response

        return Response(metrics.text(), media_type=CONTENT_TYPE_LATEST)

    return answer
